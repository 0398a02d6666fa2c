"""Array constructors: ``empty``, ``zeros``, ``ones``, ``full``, ``arange``,
``array``, ``asarray``. Each takes ``device=`` (default: the default device).

``dtype`` may be a vector or matrix element type (``tack.vec3()``): shapes
count elements, and host values carry the element's component dimensions
last (``tack.array(values, dtype=tack.vec3())`` takes values of shape
``(..., 3)``)."""

from __future__ import annotations

import math
import operator

import numpy as np

from .. import types as T
from .array import Array, converted_type
from .device import device as _device
from .device import get_default_device


def _resolve_device(device):
    return get_default_device() if device is None else _device(device)


def _shape(shape) -> tuple:
    if type(shape) is int and shape >= 0:   # the common case, at once
        return (shape,)
    dims = (shape,) if isinstance(shape, (int, np.integer)) and not isinstance(
        shape, bool) else shape
    try:
        dims = tuple(dims)
    except TypeError:
        raise TypeError(f"shape must be an integer or a tuple of integers, "
                        f"not {type(shape).__name__}") from None
    out = []
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"array extents must be integers, got {d!r}")
        d = operator.index(d)
        if d < 0:
            raise ValueError(f"negative dimensions are not allowed: {tuple(dims)}")
        out.append(d)
    return tuple(out)


def empty(shape, dtype=T.f32, *, device=None, exportable=False) -> Array:
    """A new array with unspecified contents (the CPU does not touch its pages).
    ``exportable=True`` allocates memory ``export_memory()`` shares without a
    copy (CUDA only: elsewhere ``RuntimeError``)."""
    dev = _resolve_device(device)
    backend = dev.backend
    if exportable and not hasattr(backend, "allocate_exportable"):
        _shape(shape)   # a bad shape is reported first
        raise RuntimeError(f"empty(exportable=True) is not supported on {dev}: only "
                           f"CUDA devices have exportable memory (export_memory() "
                           f"raises RuntimeError on the {backend.class_name} too)")
    return _allocated(backend.allocate_exportable if exportable else backend.allocate,
                      shape, dtype, dev)


def zeros(shape, dtype=T.f32, *, device=None) -> Array:
    """A new array of ``shape`` and ``dtype`` (default f32) on ``device`` (default:
    the default device), every element zero."""
    dev = _resolve_device(device)
    zeroed = getattr(dev.backend, "allocate_zeroed", None)   # the CPU's calloc
    if zeroed is not None:
        return _allocated(zeroed, shape, dtype, dev)
    out = empty(shape, dtype, device=dev)
    out.fill(0)
    return out


def _allocated(allocate, shape, dtype, device) -> Array:
    """A new array whose memory ``allocate(nbytes)`` gives."""
    dims, dt = _shape(shape), T.as_element_type(dtype)
    return Array(allocate(math.prod(dims) * dt.itemsize), dims, dt, device)


def ones(shape, dtype=T.f32, *, device=None) -> Array:
    """A new array of ``shape`` and ``dtype`` (default f32) on ``device`` (default:
    the default device), every element one."""
    out = empty(shape, dtype, device=device)
    out.fill(1)
    return out


def _scalar_dtype(value) -> T.ScalarType:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError("Tack has no boolean arrays; pass dtype=tack.i32 or convert "
                        "the values to integers")
    if isinstance(value, int):
        return T.int_type_for(value)
    if isinstance(value, np.generic):
        return T.from_numpy(value.dtype)
    if isinstance(value, float):
        return T.f32
    raise TypeError(f"cannot infer a Tack dtype from {type(value).__name__}")


def full(shape, fill_value, dtype=None, *, device=None) -> Array:
    """``empty`` then ``fill(fill_value)``; a sequence ``fill_value`` (one vector
    or matrix element's components) needs an element dtype such as ``tack.vec3()``."""
    if dtype is None and isinstance(fill_value, (list, tuple, np.ndarray)) \
            and np.ndim(fill_value) > 0:
        raise TypeError(f"cannot infer a Tack dtype from {type(fill_value).__name__}: "
                        f"a sequence fill_value needs an element dtype, such as "
                        f"dtype=tack.vec3()")
    dt = _scalar_dtype(fill_value) if dtype is None else dtype
    out = empty(shape, dt, device=device)
    out.fill(fill_value)
    return out


def _host_values(obj, dtype) -> np.ndarray:
    """``obj`` as a NumPy array with Tack's dtype inference."""
    if dtype is not None:
        dt = T.scalar_of(T.as_element_type(dtype))
        return np.asarray(obj, dtype=dt.numpy)
    values = np.asarray(obj)
    if isinstance(obj, (np.ndarray, np.generic)) or _typed_leaves(obj):
        T.from_numpy(values.dtype)   # their own dtype, as np.array keeps it
        return values
    if values.dtype.kind in "fO":   # NumPy's answer for ints past i64 (or u64)
        ints = _python_ints(obj)
        if ints is not None:
            return ints
    kind = values.dtype.kind
    if kind == "b":
        raise TypeError("Tack has no boolean arrays; pass dtype=tack.i32 or convert "
                        "the values to integers")
    if kind == "f":
        return values.astype(np.float32)
    if kind in "iu":
        if values.size == 0 or (values.min() >= -(1 << 31) and values.max() < (1 << 31)):
            return values.astype(np.int32)
        if values.max() < (1 << 63):
            return values.astype(np.int64)
        return values  # uint64: values past the i64 range, as for kernel scalars
    T.from_numpy(values.dtype)
    return values


def _typed_leaves(obj) -> bool:
    """Whether a (nested) list or tuple holds NumPy arrays or scalars, or Tack
    arrays: values with a dtype of their own, which NumPy's promotion keeps."""
    if isinstance(obj, (list, tuple)):
        return any(_typed_leaves(item) for item in obj)
    return isinstance(obj, (np.ndarray, np.generic, Array))


def _python_ints(obj):
    """Python ints (nested lists of them) in the narrowest of i32, i64 and u64
    that holds them all, where NumPy would make floats or objects of them (a
    mix of negative values and values past i64, or past u64); None for
    anything else. TypeError where no 64-bit type holds them."""
    shaped = np.asarray(obj, dtype=object)
    items = shaped.ravel().tolist()
    if not items or not all(type(v) is int for v in items):
        return None
    lo, hi = min(items), max(items)
    dtype = _integer_type(lo, hi)
    if dtype is None:
        raise TypeError(f"the integers {lo} and {hi} fit no one 64-bit type (i64 "
                        f"holds the first, u64 the second)")
    return np.array(items, dtype.numpy).reshape(shaped.shape)


def _integer_type(lo: int, hi: int):
    """The narrowest of i32, i64 and u64 that holds every integer from ``lo`` to
    ``hi``; None where none does (negative values and values past i64);
    TypeError for an end outside the 64-bit range."""
    for limit in (lo, hi):
        T.int_type_for(limit)   # TypeError outside the 64-bit range
    if lo < 0 and hi >= (1 << 63):
        return None
    if -(1 << 31) <= lo and hi < (1 << 31):
        return T.i32
    return T.i64 if hi < (1 << 63) else T.u64


def element_dims(shape: tuple, dtype, operation: str) -> tuple:
    """The array shape of host values of ``shape`` holding ``dtype`` elements:
    ``shape`` less the element's component dimensions, which must end it."""
    element = T.element_shape(dtype)
    if not element:
        return shape
    k = len(element)
    if len(shape) < k or tuple(shape[len(shape) - k:]) != element:
        raise ValueError(f"{operation} with dtype {dtype} takes values whose last "
                         f"dimensions are the element shape {element}; got values of "
                         f"shape {tuple(shape)}")
    return tuple(shape[:len(shape) - k])


def _from_host(values: np.ndarray, dev, dtype=None, operation="array()") -> Array:
    """A new array of ``values``; with a vector or matrix ``dtype`` the last
    dimensions of ``values`` are the components."""
    element = T.from_numpy(values.dtype) if dtype is None else dtype
    out = empty(element_dims(values.shape, element, operation), element, device=dev)
    out._store(values.astype(out.scalar_dtype.numpy, copy=False))
    return out


def array(obj, dtype=None, *, device=None) -> Array:
    """A new array holding a copy of ``obj`` (a Tack array, NumPy array, sequence
    or scalar). A vector or matrix ``dtype`` consumes the element's dimensions
    at the end of ``obj``'s shape. A Tack array keeps its element type unless
    ``dtype`` is given; a scalar ``dtype`` keeps a vector or matrix array's
    element dimensions, as ``astype`` does."""
    return _array(obj, dtype, device, "array()")


def _array(obj, dtype, device, operation: str) -> Array:
    dev = _resolve_device(device)
    if isinstance(obj, Array):   # copied (and converted) on its own device
        element = obj.dtype if dtype is None else converted_type(obj.dtype, dtype,
                                                                 operation)
        copied = obj.astype(element)   # the kernel's conversion rules, as astype
        if copied.device is dev:
            return copied
        return _from_host(copied.numpy(), dev, element, operation)
    element = None if dtype is None else T.as_element_type(dtype)
    return _from_host(_host_values(obj, element), dev, element, operation)


def asarray(obj, dtype=None, *, device=None) -> Array:
    """``obj`` itself when it is a Tack array of that dtype on that device's memory,
    else a converted copy, on ``obj``'s own device when no device is given (a
    scalar ``dtype`` on a vector or matrix array names its element type with
    that scalar type, as ``astype`` does)."""
    if isinstance(obj, Array):
        same_type = dtype is None or converted_type(obj.dtype, dtype,
                                                    "asarray()") == obj.dtype
        target = None if device is None else _device(device)
        addressable = target is None or (
            target.backend.memory_domain == obj.device.backend.memory_domain)
        if same_type and addressable:
            return obj
        if device is None:   # as when nothing is converted: it stays where it is
            device = obj.device
    return _array(obj, dtype, device, "asarray()")


def arange(*args, dtype=None, device=None) -> Array:
    """Like ``numpy.arange``: int arguments give i32 (i64 if needed), floats f32."""
    if not 1 <= len(args) <= 3:
        raise TypeError(f"arange() takes 1 to 3 positional arguments, got {len(args)}")
    if dtype is not None and isinstance(T.as_element_type(dtype), T.CompositeType):
        raise TypeError(f"arange() makes scalar arrays, not {T.as_element_type(dtype)} "
                        f"arrays; build the components with numpy and copy them in "
                        f"with tack.array(values, dtype=...)")
    if len(args) == 3 and args[2] == 0:
        raise ValueError("arange() step must not be zero")
    values = _arange_values(args)
    if dtype is None:
        if values.dtype.kind == "f":
            values = values.astype(np.float32)
        elif values.dtype.kind in "iu":
            small = values.size == 0 or (values.min() >= -(1 << 31)
                                          and values.max() < (1 << 31))
            values = values.astype(np.int32) if small else values   # else i64 or u64
    else:
        values = values.astype(T.as_scalar_type(dtype).numpy)
    return _from_host(values, _resolve_device(device))


def _require_host_size(args) -> None:
    """``MemoryError`` for an ``arange`` longer than any host array (NumPy
    would raise ``OverflowError`` or ``ValueError``): its values are made on
    the host first."""
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
    try:
        count = math.ceil((stop - start) / step)
    except (TypeError, OverflowError, ValueError):
        return   # not numbers, or not finite: NumPy's own error follows
    if count * 8 > np.iinfo(np.intp).max:
        raise MemoryError(f"arange() of {count} elements is larger than any array "
                          f"(its values are made on the host first)")


def _arange_values(args) -> np.ndarray:
    """``np.arange(*args)``, exact for integer arguments: in i64, or u64 for
    values past i64 (NumPy makes floats of those); TypeError past 64 bits."""
    if not all(type(a) is int or isinstance(a, np.integer) for a in args):
        _require_host_size(args)
        return np.arange(*args)
    r = range(*(int(a) for a in args))
    if not r:
        return np.zeros(0, np.int64)
    lo, hi = min(r[0], r[-1]), max(r[0], r[-1])
    dtype = _integer_type(lo, hi)
    if dtype is None:
        raise TypeError(f"arange() from {lo} to {hi} fits no one 64-bit type")
    _require_host_size(args)
    if dtype is not T.u64:
        return np.arange(r.start, r.stop, r.step, dtype=np.int64)
    return np.fromiter(r, np.uint64, (hi - lo) // abs(r.step) + 1)
