"""Dispatch: from a call's arguments to a launch (spec stages 2, 4 and 6).

The slow path classifies the arguments, builds or finds the variant, and
records a :class:`Bound` under the call's *signature* (argument types, the
shapes the variant bakes in, writability, the device). A later call with the
same signature goes straight to ``Bound.run``: no IR work, no key derivation.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from .. import types as T
from ..ir import expressions as E
from ..ir.access import write_only_params
from ..ir.passes.common import ArgSpec, kernel_error
from ..ir.passes.infer import check_arguments, default_float
from ..ir.passes.resolve import runtime_extents
from ..ir.statements import Store
from ..ir.traversal import walk
from ..lang.device_class import serial as class_serial
from . import values
from .array import Array
from .host_eval import extent_evaluator
from .launcher import (PackBuffers, compile_runner, disjoint, fused_head, generate,
                       pack_format, rows_stream)
from .print_buffer import printing_launch


def _scalar_kind(value):
    """The signature entry of a scalar argument (None if not a scalar)."""
    t = type(value)
    if t is int or t is bool:
        return T.int_type_for(int(value))
    if t is float:
        return float
    if isinstance(value, (int, np.integer)):   # also int subclasses (IntEnum)
        return T.int_type_for(int(value))
    if isinstance(value, (float, np.floating)):
        return float
    return None


# what _scalar_kind answers for these, without its calls: every warm call
# with a Python int or a NumPy float scalar argument asks
_NP_FLOATS = frozenset({np.float16, np.float32, np.float64, np.longdouble})
# the types _scalar_entry hands to _scalar_kind first (NumPy's bool is no number)
_NUMBER_TYPES = frozenset({int, bool, float} | set(_NP_FLOATS) | {
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.longlong, np.ulonglong})


def signature(args, shape_params) -> tuple:
    """What selects a Bound: array types, baked shapes, scalar kinds."""
    return signature_function(len(args), shape_params)(args)


def _scalar_entry(value, dims: tuple = ()):
    """The signature entry of an argument that is neither an Array nor a float."""
    kind = type(value)
    if kind in _NUMBER_TYPES:
        return _scalar_kind(value)
    if kind is tuple or kind is list:   # a vector or matrix value (ndarray: in the key)
        return _value_entry(value)
    # A device-class instance enters by its class's serial number, so the table
    # never keeps a class alive (see expanding.py); asked before the checks
    # below, which every warm call with such an argument would make in vain.
    if getattr(kind, "_device_class", False) is True:
        return ("class", class_serial(kind))
    if isinstance(value, Array):   # a subclass: keyed as an Array is, and by its class
        return (id(type(value)), value._sig, tuple(value._shape[d:d + 1] for d in dims))
    if kind is np.ndarray or kind is tuple or kind is list:   # a vector or matrix value
        return _value_entry(value)
    return _scalar_kind(value) or id(kind)


def _value_entry(value):
    """The signature entry of a NumPy array, tuple or list, a vector or matrix
    value or not (``values.py``): what its element type and its flattening
    depend on. For a tuple or list, each component's kind as a scalar's
    (or each row's, a row being any tuple or list, as ``values`` takes them):
    no other check on a warm call."""
    if type(value) is np.ndarray:
        return ("value", value.dtype.char, value.shape)
    if value and isinstance(value[0], _ROWS):
        rows = tuple(tuple(map(_entry_kind, row)) if isinstance(row, _ROWS) else type(row)
                     for row in value)
        if any(type(row) is tuple and T.u64 in row for row in rows):
            return ("value", type(value), rows, _negative(
                x for row in value if isinstance(row, _ROWS) for x in row))
        return ("value", type(value), rows)
    kinds = tuple(map(_entry_kind, value))
    if T.u64 in kinds:
        return ("value", type(value), kinds, _negative(value))
    return ("value", type(value), kinds)


_ROWS = (tuple, list)


def _entry_kind(x):
    """A component's kind: a number's by its value (int and float subclasses
    too, an IntEnum's member say), a bool's and anything else's by its type
    (no component of a value: the cold path refuses them)."""
    t = type(x)
    if t in _NUMBER_TYPES and t is not bool:
        return _scalar_kind(x)
    if isinstance(x, (int, float, np.integer, np.floating)) and \
            not isinstance(x, (bool, np.bool_)):
        return _scalar_kind(x)
    return t


def _negative(components) -> bool:
    """Whether a value with a component past the i64 range has a negative one
    too (an error, not a u64 value): such a value has a key of its own."""
    return any(isinstance(x, (int, np.integer)) and x < 0 for x in components)


@functools.lru_cache(maxsize=None)
def signature_function(n_args: int, shape_params: frozenset):
    """``key(args)``: the signature of ``n_args`` arguments, written out as
    straight-line code (it runs on every warm call); None for another count.
    ``shape_params`` holds the ``(position, dim)`` of each extent a variant
    bakes in."""
    entries = []
    for k in range(n_args):
        # the extents a variant bakes in, as slices (an array of fewer
        # dimensions takes the slow path and its error, not an IndexError)
        dims = tuple(sorted(d for position, d in shape_params if position == k))
        extents = "".join(f"a{k}._shape[{d}:{d + 1}], " for d in dims)
        array = f"(a{k}._sig, {extents})" if dims else f"a{k}._sig"
        entries.append(f"{array} if (t := type(a{k})) is Array else "
                       f"float if t is float or t in NP_FLOATS else "
                       f"I32 if t is int and -2147483648 <= a{k} <= 2147483647 else "
                       f"('value', a{k}.dtype.char, a{k}.shape) if t is ndarray else "
                       f"scalar(a{k}, {dims})")
    names = "".join(f"a{k}, " for k in range(n_args))
    lines = ["def key(args):",
             f"    if len(args) != {n_args}:",
             "        return None"]
    if n_args:
        lines.append(f"    {names}= args")
    lines.append("    return (" + "".join(f"\n        {e}," for e in entries) + ")")
    scope = {"Array": Array, "scalar": _scalar_entry, "I32": T.i32,
             "NP_FLOATS": _NP_FLOATS, "ndarray": np.ndarray}   # (_value_entry's)
    exec(compile("\n".join(lines) + "\n", "<tack signature>", "exec"), scope)
    return scope["key"]


def element_spec(args, arrays=frozenset()) -> tuple:
    """``((position, array ndim, element type), ...)`` for the vector and matrix
    array arguments, and ``(position, "value", element type)`` for the vector
    and matrix values, but at ``arrays`` (the positions the kernel writes as
    arrays, where a NumPy array is refused as one): what selects a lowering
    specialization besides debug mode."""
    spec = [(k, len(a.shape), a.dtype) for k, a in enumerate(args)
            if type(a) is Array and type(a.dtype) is T.CompositeType]
    given = [k for k, a in enumerate(args) if k not in arrays and values.is_value(a)]
    if given:
        floats = T.f64 if any(type(a) is Array and a._scalar == T.f64 for a in args) \
            else T.f32   # the default float (see ir/passes/infer.py)
        spec += [(k, "value", values.element_of(args[k], floats)) for k in given]
    return tuple(sorted(spec, key=lambda entry: entry[0]))


def placement(kernel_name: str, args, default):
    """The device a launch runs on (spec: launch placement)."""
    arrays = [a for a in args if isinstance(a, Array)]
    domain = default.backend.memory_domain
    if all(a._device.backend.memory_domain == domain for a in arrays):
        return default
    first = arrays[0]._device
    for a in arrays[1:]:
        if a._device.backend.memory_domain != first.backend.memory_domain:
            raise ValueError(
                f"Kernel '{kernel_name}' was given arrays on two devices ({first} and "
                f"{a._device}); a launch runs on one. Copy them to one device first "
                f"(a.to_device(...)).")
    return first


VALUES = ("a NumPy array of 2 to 4 numbers, or 2x2 to 4x4 of them, or a tuple or "
          "list of those shapes")


def _type_name(value) -> str:
    """``str``, or ``numpy.bool``: a builtin's bare name, another type's with its
    module (a NumPy bool reported as ``bool`` read as if Python's were refused)."""
    kind = type(value)
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def classify(kernel_name: str, params, args) -> tuple:
    """One ArgSpec per argument (spec: Calling a kernel)."""
    specs = []
    for param, a in zip(params, args):
        if isinstance(a, Array):   # vector and matrix arrays: their scalar storage
            specs.append(ArgSpec(a._scalar, a._storage, "array"))
            continue
        kind = _scalar_kind(a)
        if kind is not None and not param.is_array and param.dtype is not None:
            specs.append(ArgSpec(param.dtype))   # a value's component: its own type
            continue
        if kind is None:
            hint = ""
            if not isinstance(a, np.generic) and (
                    hasattr(a, "__array_interface__") or hasattr(a, "__dlpack__")):
                if param.is_array:
                    hint = ("; make it a tack.Array first: tack.asarray(a) (a copy on "
                            "the default device), or tack.from_dlpack(a) (no copy on "
                            "the CPU)")
                elif isinstance(a, np.ndarray) and a.ndim == 0:
                    hint = "; the kernel uses it as a number: pass a.item()"
                else:
                    hint = (f"; the kernel uses it as a number, or as a vector or "
                            f"matrix value, which is {VALUES} (this one has shape "
                            f"{np.shape(a)} and dtype {a.dtype})")
            elif type(a) in (tuple, list) and not param.is_array:
                hint = f"; a vector or matrix value is {VALUES}"
            elif type(a) in (tuple, list):
                hint = ("; the kernel uses it as an array: make it a tack.Array first: "
                        "tack.asarray(a)")
            raise TypeError(f"Kernel '{kernel_name}': Unsupported argument type for "
                            f"parameter '{param.name}': {_type_name(a)}{hint}")
        specs.append(kind)
    floats = default_float([s for s in specs if isinstance(s, ArgSpec)])
    return tuple(s if isinstance(s, ArgSpec) else
                 ArgSpec(floats if s is float else s) for s in specs)


def call_specs(kernel_name: str, fn, args) -> tuple:
    """``(specs, extents)`` of a call of ``fn`` with ``args``, after the checks
    that need nothing else (argument kinds, then a float or ``// 0`` in the
    range), in the order a call makes them: the slow path and inspection share it."""
    specs = classify(kernel_name, fn.params, args)
    check_arguments(fn, specs)   # before the range reads array extents
    check_extent_types(kernel_name, fn, specs)
    positions = {p.name: k for k, p in enumerate(fn.params)}
    extents = tuple(extent_evaluator(e, positions, kernel_name)(args)
                    for e in fn.parallel_for.extents)
    return specs, extents


def atomic_params(fn) -> frozenset:
    return frozenset(node.array for stmt in fn.body for node in walk(stmt)
                     if isinstance(node, E.Atomic))


def written_params(fn) -> frozenset:
    written = set()
    for stmt in fn.body:
        for node in walk(stmt):
            if isinstance(node, (Store, E.Atomic)):
                written.add(node.array)
    return frozenset(written)


# What a variant was built for: aliased arrays, disjoint ones, or disjoint
# ones with streaming stores into its write-only arrays (a large launch).
ALIASED, DISJOINT, STREAMING = 0, 1, 2


def variant_mode(backend, fn, args, specs) -> int:
    """The mode a call of ``fn`` with ``args`` takes: what the generated runner
    computes (``launcher._mode``), for inspection."""
    arrays = [a for a, s in zip(args, specs) if s.is_array]
    if not (backend.specialize_disjoint and disjoint(arrays)):
        return ALIASED
    if not backend.supports_streaming:
        return DISJOINT
    positions = {p.name: k for k, p in enumerate(fn.params)}
    written = write_only_params(fn)
    size = sum(args[positions[name]].nbytes for name in written)
    extents = fn.parallel_for.extents
    rows = len(extents) == 1 or rows_stream(
        extent_evaluator(extents[-1], positions, fn.name)(args),
        *(args[positions[name]] for name in written))
    return STREAMING if written and size >= backend.streaming_bytes and rows else DISJOINT


class Variant:
    """A compiled variant: the backend's program, and the parameters it may write
    and those it targets with atomics (from its optimized IR, or, for one the
    disk cache loaded, from the entry: ``ir`` is None then)."""

    __slots__ = ("ir", "program", "written", "atomic_targets")

    def __init__(self, ir, program, written=None, atomic_targets=None):
        self.ir = ir
        self.program = program
        self.written = written_params(ir) if written is None else written
        self.atomic_targets = atomic_params(ir) if atomic_targets is None \
            else atomic_targets


class BoundProgram:
    """A variant made ready for one backend: its packer, buffers and launcher."""

    __slots__ = ("variant", "pack", "buffers", "launch", "prints")

    def __init__(self, variant, backend, device):
        self.variant = variant
        self.launch = backend.launcher(variant.program)
        self.prints = getattr(variant.program, "prints", ())
        if self.prints:   # a GPU variant that prints: a buffer of records, read after
            self.launch = printing_launch(self.launch, device, self.prints,
                                          variant.program.name)
        if backend.launch_style == "packed":
            layout = pack_format(variant.program.kernel.pack_fields)
            self.pack = layout.pack_into
            self.buffers = PackBuffers(layout.size)


class Bound:
    """Everything a warm call needs, resolved once per signature.

    ``run(args)`` is generated for this signature (see ``launcher.py``). On a
    device backend that writes fused runners, the first variant bound makes
    ``run`` the runner with that variant's launch written in; the plain runner
    (``generic``) stays for the calls it hands over.
    """

    __slots__ = ("kernel", "device", "default", "backend", "specs", "epilogue",
                 "template", "runtime", "shape_params", "programs", "source",
                 "generic", "run", "fusing")

    def __init__(self, kernel, device, default, specs, template, epilogue=False,
                 result=None, baking=None):
        self.kernel = kernel
        self.template = template    # the kernel's Template this call lowers with
        # which extents its variants take at run time and which they bake (and
        # its signature keys on): ``baking``, the template's as the caller read
        # it once for a kernel and its return epilogue alike, or as it is now
        self.runtime, self.shape_params = baking or template.baking
        self.device = device
        self.default = default
        self.backend = device.backend
        self.specs = specs
        self.epilogue = epilogue
        self.programs = [None, None, None]  # ALIASED, DISJOINT, STREAMING
        arrays = tuple(k for k, s in enumerate(specs) if s.is_array)
        lowered = template.lowered
        function = lowered.epilogue if epilogue else lowered.kernel
        positions = {p.name: k for k, p in enumerate(function.params)}
        streamed = (tuple(positions[name] for name in write_only_params(function))
                    if self.backend.supports_streaming else ())
        packed = self.backend.launch_style == "packed"
        hidden = tuple((positions[a], d) for a, d in runtime_extents(function,
                                                                    self.runtime))
        self.source = generate(len(specs), arrays, function.parallel_for.extents,
                               positions, self.backend.specialize_disjoint,
                               result is not None, packed, streamed,
                               self.backend.streaming_bytes, hidden)
        self.run = self.generic = compile_runner(kernel.name, self.source, self.programs,
                                                 self.program, result)
        # what fused_head needs (None: this signature's runner stays plain)
        self.fusing = None if packed or result is not None else (
            kernel.name, len(specs), arrays, function.parallel_for.extents, positions,
            self.backend.specialize_disjoint, hidden)

    def program(self, mode: int) -> BoundProgram:
        """The program of variant ``mode`` (ALIASED, DISJOINT or STREAMING)."""
        variant = self.kernel._variant(self.backend, self.specs, mode,
                                       self.epilogue, self.template, self.runtime)
        bound = self.programs[mode] = BoundProgram(variant, self.backend, self.device)
        if self.fusing is not None and self.run is self.generic and not bound.prints:
            head = fused_head(*self.fusing, mode, self.generic)
            self.run = self.backend.fused_launcher(variant.program, head) or self.generic
        return bound


def epilogue_specs(lowered, specs) -> tuple:
    """``(specs, dtype, count)`` of a return epilogue: the kernel's argument
    specs and the hidden result array's (not an argument), its element type
    and its length."""
    dtype = T.scalar_of(lowered.result_type)
    count = lowered.result_type.count if lowered.result_kind == "array" else 1
    return specs + (ArgSpec(dtype, (count,), "result"),), dtype, count


class ResultReader:
    """Runs a kernel's return epilogue and reads the hidden result element."""

    __slots__ = ("inner", "device", "dtype", "kind", "count", "shape", "results")

    def __init__(self, kernel, device, specs, template, baking):
        lowered = template.lowered
        full, self.dtype, self.count = epilogue_specs(lowered, specs)
        self.inner = Bound(kernel, device, device, full, template, epilogue=True,
                           baking=baking)
        self.device = device
        self.kind = lowered.result_kind
        self.shape = T.element_shape(lowered.result_type)
        self.results = _Results(self.count, self.dtype, device)

    def check_writable(self, args) -> None:
        """``check_writable`` for the epilogue's own stores and atomics, on the
        variant the first run takes (a scratch result array stands in)."""
        from .creation import empty
        inner, fn = self.inner, self.inner.template.lowered.epilogue
        full = tuple(args) + (empty(self.count, self.dtype, device=self.device),)
        mode = variant_mode(inner.backend, fn, full, inner.specs)
        check_writable(inner.kernel.name, inner.program(mode).variant, fn.params, full)

    def __call__(self, args):
        results = self.results
        result = results.array   # this thread's: read before the next call writes it
        self.inner.run(tuple(args) + (result,))
        if self.kind == "array":
            return result.numpy().reshape(self.shape)
        view = results.view
        value = view[0].item() if view is not None else result[0]
        if self.kind == "bool":
            return bool(value)
        return float(value) if self.kind == "float" else int(value)


class _Results(threading.local):
    """A return epilogue's result array, one per thread, made once; ``view``:
    a NumPy view of it where its memory is the host's (a CPU device), which
    reads the value without a copy (a launch there has finished when it
    returns)."""

    def __init__(self, count: int, dtype, device):
        from .creation import empty
        self.array = empty(count, dtype, device=device)
        buffer = self.array._buffer
        self.view = (buffer.host_view()[:self.array.nbytes].view(dtype.numpy)
                     if device.backend.memory_domain == "host" and
                     hasattr(buffer, "host_view") else None)


def check_writable(kernel_name, variant, params, args) -> None:
    """Refuse read-only arrays the kernel may store to, and atomic targets that
    are not naturally aligned (both before anything runs)."""
    for param, a in zip(params, args):
        if (isinstance(a, Array) and param.name in variant.atomic_targets
                and a._ptr % a._scalar.itemsize):
            raise ValueError(
                f"Kernel '{kernel_name}': parameter '{param.name}' is an atomic target, "
                f"but its array is not aligned to its {a._scalar.itemsize}-byte "
                f"elements "
                f"(address {a._ptr:#x}); atomics need naturally aligned memory")
        if isinstance(a, Array) and not a._writable and param.name in variant.written:
            raise ValueError(
                f"Kernel '{kernel_name}': parameter '{param.name}' may be written, but "
                f"its array is read-only. Pass a writable array: a copy (a.copy()), "
                f"memory wrapped with array_from_ptr(..., writable=True), or a "
                f"writable DLPack tensor imported with tack.from_dlpack.")


def check_extent_types(kernel_name, template, specs) -> None:
    loop = template.parallel_for
    types = {p.name: s for p, s in zip(template.params, specs)}
    for extent in loop.extents:
        for node in walk(extent):
            if isinstance(node, E.Name) and types[node.id].dtype.is_float:
                raise kernel_error(TypeError, kernel_name, f"the parallel loop's range "
                                   f"uses '{node.id}', a float; ranges take integers",
                                   node.span)


__all__ = ["signature", "signature_function", "placement", "classify", "call_specs", "Bound",
           "Variant", "ResultReader",
           "check_writable", "check_extent_types",
           "write_only_params", "ALIASED", "DISJOINT", "STREAMING",
           "extent_evaluator"]
