"""``tack.Array``: a typed, shaped buffer on one device.

An array records its device, element dtype and shape; its storage is a
buffer the device's backend allocated (host memory for the CPU). Host code
reads it through ``numpy()`` (always a copy) and single-element reads;
kernels read and write it in place.

The element dtype is a scalar type or a vector/matrix type
(:class:`~tack.types.CompositeType`, ``tack.vec3()``). ``shape`` and ``size``
count elements; the storage is ``storage_shape = shape + element shape``
scalars of ``scalar_dtype``, row-major, components innermost.
"""

from __future__ import annotations

import math
import operator
import threading

import numpy as np

from .. import types as T
from .buffers import ExternalBuffer
from .device import device as _resolve_device
from .device import get_default_device


class Array:
    """A device array. Create one with ``tack.zeros``, ``tack.array``, ..."""

    __slots__ = ("_buffer", "_ptr", "_shape", "_dtype", "_scalar", "_storage",
                 "_device", "_writable", "_size", "_sig", "_lo", "_hi", "__weakref__")

    def __init__(self, buffer, shape: tuple, dtype, device,
                 writable: bool = True, address: int = None):
        self._buffer = buffer
        self._ptr = buffer.address if address is None else address
        self._shape = shape
        self._dtype = dtype            # the element type: scalar, vector or matrix
        self._scalar = T.scalar_of(dtype)
        # Storage: shape + component dims (the same tuple for a scalar array).
        self._storage = shape + dtype.shape if self._scalar is not dtype else shape
        self._device = device
        self._writable = writable
        self._size = math.prod(shape)
        # What a kernel call's signature needs, computed once, as a small int
        # (a warm call hashes the signature: ints hash at once, tuples do not).
        aligned = self._ptr % self._scalar.itemsize == 0  # atomics: natural alignment
        # The device itself, not only its memory domain: where the default
        # device cannot address the arrays, a call runs on theirs, and two CPU
        # devices (num_threads) share a domain. (Its slot is never reused while
        # a runner made for it holds it: Device.slot.)
        self._sig = _sig_number((dtype, len(shape), device.backend.memory_domain,
                                 device.slot, writable, aligned))
        self._lo = self._ptr
        self._hi = self._ptr + self._size * dtype.itemsize

    def rebased(self, address: int, owner) -> "Array":
        """A new array with this one's shape, type, device and writability over
        host memory at ``address`` that ``owner`` keeps alive: for runtime code
        that hands out many arrays of one layout (the exchange's express path),
        without re-deriving what the constructor derives."""
        nbytes = self._hi - self._lo
        new = Array.__new__(Array)
        new._buffer, new._ptr = ExternalBuffer(address, nbytes, owner), address
        new._shape, new._dtype, new._scalar = self._shape, self._dtype, self._scalar
        new._storage, new._device = self._storage, self._device
        new._writable, new._size = self._writable, self._size
        sig = self._sig
        described = _SIG_TUPLES[sig]
        if (address % self._scalar.itemsize == 0) is not described[5]:
            sig = _sig_number(described[:5] + (not described[5],))
        new._sig = sig
        new._lo, new._hi = address, address + nbytes
        return new

    # -- metadata -------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def dtype(self):
        """The element type: a ScalarType, or a CompositeType such as ``tack.vec3()``."""
        return self._dtype

    @property
    def scalar_dtype(self) -> T.ScalarType:
        """The scalar type of the storage (``dtype`` itself for a scalar array)."""
        return self._scalar

    @property
    def scalar_size(self) -> int:
        """The number of scalars in the storage (``size`` times the component count)."""
        return math.prod(self._storage)

    @property
    def storage_shape(self) -> tuple:
        """``shape`` followed by the element's component dimensions: ``numpy().shape``."""
        return self._storage

    @property
    def device(self):
        return self._device

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        return self._size * self._dtype.itemsize

    @property
    def writable(self) -> bool:
        return self._writable

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    def __repr__(self) -> str:
        return (f"tack.Array(shape={self._shape}, dtype={self._dtype}, "
                f"device='{self._device}')")

    # -- Python's protocols, as NumPy users reach for them ---------------------------
    # Arrays are hashed and compared by identity only as keys (``==`` is refused,
    # with the other operators, below); NumPy's operators and ufuncs defer to
    # them (``__array_ufunc__ = None``), so ``a += np_array`` cannot quietly
    # rebind ``a`` to a NumPy array.
    __hash__ = object.__hash__
    __array_ufunc__ = None

    def __bool__(self) -> bool:
        return bool(self._only_value("bool()"))

    def __copy__(self) -> "Array":
        return self.copy()

    def __deepcopy__(self, memo) -> "Array":
        return self.copy()

    def __reduce__(self):
        raise TypeError("a tack.Array cannot be pickled (its memory belongs to a "
                        "device of this process); pickle a.numpy() and make the array "
                        "again with tack.array(values, device=...)")

    # -- host access ----------------------------------------------------------
    def _values(self, copy: bool = False) -> np.ndarray:
        """The values as NumPy: a view where the storage is host memory and
        ``copy`` is false (internal: callers never write to it), else a copy.
        Waits for the launches queued before it."""
        self._device.backend.synchronize()
        raw = self._buffer.read(self.nbytes, copy, self._offset())
        return raw.view(self._scalar.numpy).reshape(self._storage)

    def _store(self, values: np.ndarray) -> None:
        """Replace every value (``values`` has this array's scalar dtype and
        storage shape)."""
        data = np.ascontiguousarray(values, dtype=self._scalar.numpy)
        self._buffer.write(data.reshape(-1).view(np.uint8), self._offset())

    def _view(self) -> np.ndarray:
        """A writable NumPy view of host storage (CPU buffers only)."""
        self._device.backend.synchronize()
        start = self._offset()
        raw = self._buffer.host_view()[start:start + self.nbytes]
        return raw.view(self._scalar.numpy).reshape(self._storage)

    def _offset(self) -> int:
        """Where this array starts in its buffer, in bytes: not 0 for a range
        view (``a[start:stop]``) of memory with addresses."""
        return self._ptr - self._buffer.address

    def numpy(self) -> np.ndarray:
        """A new NumPy array holding a copy of the values."""
        return self._values(copy=True)

    async def numpy_async(self) -> np.ndarray:
        """``numpy()`` for asyncio code: waits without blocking the event loop."""
        from .aio import numpy_async
        return await numpy_async(self)

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("a tack.Array cannot be viewed as a NumPy array without "
                             "a copy; use np.asarray(a) or a.numpy()")
        values = self.numpy()
        return values if dtype is None else values.astype(dtype, copy=False)

    def __getitem__(self, key):
        if type(key) is slice and key.step is None and self._shape:
            return self._host_range(key)   # a[start:stop]: per step, in particle codes
        # a[()] of a 0-d array is the empty index: one integer per dimension.
        index = key if isinstance(key, tuple) else (key,)
        if index and isinstance(index[0], slice) and self._shape:
            return self._range_view(index)
        if len(index) != len(self._shape) or not all(_is_int(i) for i in index):
            raise TypeError(f"a tack.Array is read on the host with one integer per "
                            f"dimension ({len(self._shape)} here), or viewed with "
                            f"a[start:stop] (a range of the first dimension); use "
                            f"a[()] for a 0-d array and a.numpy() for anything else")
        position = []
        for i, extent in zip(index, self._shape):
            i = operator.index(i)
            if not -extent <= i < extent:
                raise IndexError(f"index {i} is out of bounds for a dimension of "
                                 f"length {extent}")
            position.append(i % extent)
        flat = 0
        for i, extent in zip(position, self._shape):
            flat = flat * extent + i
        size = self._dtype.itemsize   # only this element's bytes travel
        self._device.backend.synchronize()
        raw = self._buffer.read(size, False, self._offset() + flat * size)
        value = raw.view(self._scalar.numpy)
        # A vector or matrix element is a NumPy array of the element's shape (a copy).
        return value[0].item() if self._scalar is self._dtype else \
            value.reshape(self._dtype.shape).copy()

    # A 0-d array of scalars converts to a Python number, as NumPy's does, so
    # float(a), range(a) and np.array([a, b]) of 0-d arrays work.
    def __float__(self) -> float:
        return float(self._only_value("float()"))

    def __int__(self) -> int:
        return int(self._only_value("int()"))

    def __index__(self) -> int:
        value = self._only_value("an index")
        if not self._scalar.is_int:
            raise TypeError(f"only an integer tack.Array is an index, not one of "
                            f"{self._dtype}")
        return value

    def _only_value(self, what: str):
        if self._shape or self._scalar is not self._dtype:
            raise TypeError(f"{what} takes a 0-d tack.Array of scalars, not one of shape "
                            f"{self._shape} and {self._dtype} elements; read one "
                            f"element with a[i] or all of them with a.numpy()")
        return self[()]

    def __setitem__(self, key, value):
        raise TypeError("tack.Array does not support host assignment: write it in a "
                        "kernel, or use tack.copyto(a, values) or a.fill(value)")

    def __iter__(self):
        raise TypeError("tack.Array is not iterable on the host; use a.numpy()")

    def fill(self, value) -> None:
        """Set every element to ``value``, converted and refused as ``ndarray.fill``
        would. A vector or matrix array also takes one element's components (a
        sequence or NumPy array of the element's shape); a scalar sets every
        component. Large arrays (256 KiB or more) are filled by a parallel kernel."""
        self._require_writable("fill()")
        if isinstance(value, Array):   # one element's components, say
            value = value.numpy()
        if (isinstance(value, _SCALARS) and self.nbytes < FILL_KERNEL_BYTES
                and hasattr(self._buffer, "host_view")):
            self._view().fill(value)   # converts (or refuses) once, before writing
            return
        sequence = not isinstance(value, (str, bytes)) and np.ndim(value) > 0
        if sequence and self._scalar is self._dtype:
            raise TypeError("fill() of a scalar array takes a scalar, not a sequence")
        if sequence:
            exact = _components(value, self._dtype, "fill()")
        else:
            exact = np.empty((), self._scalar.numpy)
            exact.fill(value)
        if self.nbytes >= FILL_KERNEL_BYTES:
            if exact.ndim == 0:
                on_device(self._device, _late.fill_value, self._scalars(), exact[()])
            else:
                pattern = _late.array(exact.reshape(-1), device=self._device)
                on_device(self._device, _late.fill_pattern, self._scalars(), pattern)
        elif hasattr(self._buffer, "host_view"):
            self._view()[...] = exact
        else:
            self._store(np.broadcast_to(exact, self._storage))

    def _require_writable(self, operation: str) -> None:
        if not self._writable:
            raise RuntimeError(f"{operation} on a read-only array (wrapped with "
                               f"writable=False or imported read-only)")

    # -- views and copies ---------------------------------------------------------
    def _flat(self) -> "Array":
        """A 1-D view of the elements (same element type)."""
        return self._derived((self._size,))

    def _scalars(self) -> "Array":
        """A 1-D scalar view of the whole storage: what the host kernels copy,
        convert and fill, so one scalar variant serves every element type."""
        return Array(self._buffer, (self.scalar_size,), self._scalar, self._device,
                     self._writable, address=self._ptr)

    def _derived(self, shape: tuple) -> "Array":
        return Array(self._buffer, shape, self._dtype, self._device, self._writable,
                     address=self._ptr)

    def _host_range(self, key: slice) -> "Array":
        """``_range_view`` of ``a[start:stop]``, without re-deriving what the
        constructor derives: a row is a whole number of elements, so the view's
        alignment, and with it the signature, is this array's."""
        shape = self._shape
        n = shape[0]
        start, stop, _ = key.indices(n)
        count = stop - start if stop > start else 0
        row = (self._hi - self._lo) // n if n else 0
        new = Array.__new__(Array)
        new._buffer, new._dtype, new._scalar = self._buffer, self._dtype, self._scalar
        new._device, new._writable, new._sig = self._device, self._writable, self._sig
        if len(shape) == 1 and self._storage is shape:   # 1-D scalars: most views
            new._shape = new._storage = (count,)
            new._size = count
        else:
            new._shape = (count,) + shape[1:]
            new._storage = (count,) + self._storage[1:]
            new._size = self._size // n * count if n else 0
        new._ptr = new._lo = self._ptr + start * row
        new._hi = new._lo + count * row
        return new

    def _range_view(self, index: tuple) -> "Array":
        """``a[start:stop]`` (and ``a[start:stop, :, ...]``): a view of a range
        of the first dimension sharing this array's buffer, type, writability
        and any DLPack hold, as NumPy's basic slicing makes one."""
        first, rest = index[0], index[1:]
        if len(index) > len(self._shape) or any(
                not isinstance(s, slice) or s.indices(n) != (0, n, 1)
                for s, n in zip(rest, self._shape[1:])):
            raise TypeError(f"a tack.Array is viewed with a[start:stop], a range of "
                            f"its first dimension (later dimensions whole, as ':'); "
                            f"got {_index_text(index)}")
        start, stop, step = first.indices(self._shape[0])
        if step != 1:
            written = ":".join("" if v is None else str(v)
                               for v in (first.start, first.stop, first.step))
            raise ValueError(f"a view of a tack.Array is a contiguous range: a[start:"
                             f"stop] takes no step (got {step}); copy with tack.array("
                             f"a.numpy()[{written}], device=a.device) or index in a kernel")
        count = max(stop - start, 0)
        row = self._dtype.itemsize * math.prod(self._shape[1:])
        # (an OpenCL buffer has no address: positions count bytes from the start
        # of the allocation, which a kernel receives with the view's offset)
        return Array(self._buffer, (count,) + self._shape[1:], self._dtype, self._device,
                     self._writable, address=self._ptr + start * row)

    def reshape(self, *shape) -> "Array":
        """A view with another shape sharing this array's buffer (one extent may
        be -1). The shape counts elements: a vector or matrix array keeps its
        element type and component dimensions."""
        dims = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) \
            else shape
        dims = [operator.index(d) for d in dims]
        if dims.count(-1) > 1:
            raise ValueError("reshape() takes at most one -1 extent")
        if -1 in dims:
            known = math.prod(d for d in dims if d != -1)
            if known == 0 or self._size % known:
                raise ValueError(f"cannot reshape an array of {self._size} elements "
                                 f"into shape {tuple(dims)}")
            dims[dims.index(-1)] = self._size // known
        if any(d < 0 for d in dims) or math.prod(dims) != self._size:
            raise ValueError(f"cannot reshape an array of {self._size} elements into "
                             f"shape {tuple(dims)}")
        return self._derived(tuple(dims))

    def copy(self) -> "Array":
        """A new array with the same values, copied on this array's device."""
        return self.astype(self._dtype)

    def astype(self, dtype) -> "Array":
        """A new array converted to ``dtype`` with the kernel conversion rules
        (float to int saturates, NaN becomes 0). A scalar dtype keeps a vector
        or matrix array's element dimensions (``vec3(f32)`` to ``vec3(f64)``);
        a vector or matrix dtype must have this array's element shape."""
        target = converted_type(self._dtype, dtype, "astype()")
        out = _late.empty(self._shape, target, device=self._device)
        on_device(self._device, _late.copy_convert, self._scalars(), out._scalars())
        return out

    def to_device(self, device) -> "Array":
        """This array if ``device`` can address its memory, else a copy."""
        target = _resolve_device(device)
        if target.backend.memory_domain == self._device.backend.memory_domain:
            return self
        return _late.array(self.numpy(), self._dtype, device=target)

    def export_memory(self):
        """An ExportedMemory handle (a POSIX file descriptor) that another API or
        process imports: CUDA only; an array not made with ``exportable=True``
        is copied once, so its export is a snapshot (``runtime/exported.py``)."""
        from .exported import export_memory
        return export_memory(self)

    # -- reductions ---------------------------------------------------------------
    # A vector or matrix array reduces component by component over its elements
    # and returns a float64 NumPy array of the element's shape, each component
    # computed as the scalar reduction computes its Python float.
    def sum(self, axis=None, dtype=None, out=None):
        """Sum of every element as a Python float (f32 accumulates in f64); for a
        vector or matrix array, the component-wise sum as a float64 NumPy array.
        ``axis``, ``dtype`` and ``out`` are NumPy's (``np.sum(a)`` passes them):
        only their defaults are taken."""
        _whole_array("sum", axis, dtype, out)
        shape = T.element_shape(self._dtype)
        if self._size == 0:
            return np.zeros(shape) if shape else 0.0
        if self._on_device_reduction():
            return self._device.backend.reduce(self, "sum")
        acc = _accumulator(self._scalar)
        if shape:
            values = self._host_values().reshape((self._size,) + shape)
            return values.sum(axis=0, dtype=acc).astype(np.float64)
        return float(self._host_values().sum(dtype=acc))

    def min(self, axis=None, out=None):
        _whole_array("min", axis, None, out)
        return self._extreme("min")

    def max(self, axis=None, out=None):
        _whole_array("max", axis, None, out)
        return self._extreme("max")

    def mean(self, axis=None, dtype=None, out=None):
        """``sum() / size`` in binary64; NaN for an empty array (component-wise
        for a vector or matrix array)."""
        _whole_array("mean", axis, dtype, out)
        if self._size == 0:
            shape = T.element_shape(self._dtype)
            return np.full(shape, np.nan) if shape else float("nan")
        return self.sum() / self._size

    def _extreme(self, which: str):
        if self._size == 0:
            raise ValueError(f"{which} reduction requires a nonempty array")
        if self._on_device_reduction():
            return self._device.backend.reduce(self, which)
        values = self._host_values()
        shape = T.element_shape(self._dtype)
        if shape:
            values = values.reshape((self._size,) + shape)
            found = values.min(axis=0) if which == "min" else values.max(axis=0)
            return found.astype(np.float64)
        return float(values.min() if which == "min" else values.max())

    def _on_device_reduction(self) -> bool:
        """Whether this array reduces on its device: f32 scalars on a backend
        with device reductions (spec 003 Reductions)."""
        return self._dtype is T.f32 and self._device.backend.supports_device_reductions

    def _host_values(self) -> np.ndarray:
        return self._values()

    # -- DLPack -------------------------------------------------------------------
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from .dlpack import export
        return export(self, max_version, copy)

    def __dlpack_device__(self):
        from .dlpack import device_of
        return device_of(self)


def _refused_operator(symbol: str):
    def refused(self, *other):
        raise TypeError(f"tack.Array has no host operator {symbol}: compute in a "
                        f"kernel, or on a.numpy()")
    return refused


for _names, _symbol in (
        (("add", "radd", "iadd"), "+"), (("sub", "rsub", "isub"), "-"),
        (("mul", "rmul", "imul"), "*"), (("truediv", "rtruediv", "itruediv"), "/"),
        (("floordiv", "rfloordiv", "ifloordiv"), "//"), (("mod", "rmod", "imod"), "%"),
        (("pow", "rpow", "ipow"), "**"), (("matmul", "rmatmul", "imatmul"), "@"),
        (("and", "rand", "iand"), "&"), (("or", "ror", "ior"), "|"),
        (("xor", "rxor", "ixor"), "^"), (("lshift", "rlshift", "ilshift"), "<<"),
        (("rshift", "rrshift", "irshift"), ">>"), (("neg",), "-"), (("pos",), "+"),
        (("abs",), "abs()"), (("invert",), "~"), (("eq",), "=="), (("ne",), "!="),
        (("lt",), "<"), (("le",), "<="), (("gt",), ">"), (("ge",), ">=")):
    for _name in _names:
        setattr(Array, f"__{_name}__", _refused_operator(_symbol))


def _whole_array(name: str, axis, dtype, out) -> None:
    """Refuse what NumPy's reductions pass beyond their defaults."""
    if axis is not None or dtype is not None or out is not None:
        raise TypeError(f"{name}() of a tack.Array reduces every element, into a new "
                        f"value; for axis=, dtype= or out=, reduce a.numpy()")


FILL_KERNEL_BYTES = 256 * 1024
# values fill() sets without looking for a sequence (np.ndim is a microsecond)
_SCALARS = (int, float, complex, np.generic)   # bool is an int

# Array signatures (element type, ndim, memory domain, device id, writable,
# aligned), each numbered once: ``Array._sig`` is the number.
_SIG_NUMBERS: dict = {}
_SIG_TUPLES: list = []
_SIG_LOCK = threading.Lock()


def _sig_number(described: tuple) -> int:
    number = _SIG_NUMBERS.get(described)
    if number is None:
        with _SIG_LOCK:
            number = _SIG_NUMBERS.get(described)
            if number is None:   # the tuple first: a lock-free reader may index it
                number = len(_SIG_TUPLES)
                _SIG_TUPLES.append(described)
                _SIG_NUMBERS[described] = number
    return number


def _components(value, dtype, operation: str) -> np.ndarray:
    """One element's components of ``dtype`` (a vector or matrix type), each
    converted, and refused, as ``ndarray.fill`` converts a scalar."""
    shape = np.shape(value)
    if shape != dtype.shape:
        raise ValueError(f"{operation} of a {dtype} array takes a scalar or one "
                         f"element's components, of shape {dtype.shape}; got shape "
                         f"{shape}")
    exact = np.empty(dtype.shape, dtype.scalar.numpy)
    cell = np.empty((), dtype.scalar.numpy)
    for k, component in enumerate(np.asarray(value, dtype=object).flat):
        cell.fill(component)
        exact.flat[k] = cell
    return exact


def converted_type(source, dtype, operation: str):
    """The element type ``dtype`` names for values of element type ``source``:
    a scalar type keeps a vector or matrix source's element dimensions; a
    vector or matrix type must have the source's element shape."""
    target = T.as_element_type(dtype)
    source_shape = T.element_shape(source)
    if isinstance(target, T.ScalarType):
        if not source_shape:
            return target
        return T.composite(source.kind, source.shape, target)
    if target.shape != source_shape:
        hint = (f"to convert only the scalar type, pass a scalar dtype such as "
                f"tack.{target.scalar}" if source_shape else
                f"to build {target} elements, pass values whose last dimensions "
                f"are the components to tack.array(values, dtype=...)")
        raise TypeError(f"{operation} cannot change the element dimensions: {source} "
                        f"elements have shape {source_shape}, {target} elements have "
                        f"shape {target.shape}; {hint}")
    return target


def _accumulator(dtype):
    if dtype.is_float:
        return np.float64
    return np.int64 if dtype.is_signed else np.uint64


def _index_text(index: tuple) -> str:
    """An index as it was written: ``a[2:5, 1]``."""
    def one(item):
        if not isinstance(item, slice):
            return repr(item)
        text = ":".join("" if v is None else repr(v)
                        for v in (item.start, item.stop))
        return text if item.step is None else f"{text}:{item.step!r}"
    return "a[" + ", ".join(one(item) for item in index) + "]"


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def shares_memory(a: Array, b: Array) -> bool:
    """Whether ``a`` and ``b`` may share a byte. Address ranges compare within
    one memory domain. OpenCL buffers have no addresses: their positions count
    bytes from the start of their allocation (a range view keeps its
    allocation's buffer), so they compare only within one allocation. An empty
    array shares none (as in NumPy)."""
    if a._device.backend.memory_domain != b._device.backend.memory_domain:
        return False
    if a._lo == a._hi or b._lo == b._hi:
        return False
    if a._buffer is not b._buffer and not (a._buffer.address and b._buffer.address):
        return False
    return a._lo < b._hi and b._lo < a._hi


def on_device(device, launch, *args):
    """``launch(*args)`` of a host kernel on ``device``: host operations run on
    their array's device (a ``with`` block only when it is not the default)."""
    if get_default_device() is device:
        return launch(*args)
    with device:
        return launch(*args)


class _Late:
    """Names of the modules that import this one (array creation, the host
    kernels), bound at their first use: an import in a method would run the
    import machinery on every call."""

    def __getattr__(self, name):
        from . import creation, host_kernels
        for module in (creation, host_kernels):
            if hasattr(module, name):
                setattr(self, name, getattr(module, name))
                return getattr(module, name)
        raise AttributeError(name)


_late = _Late()
