"""The values the collectives combine: scalars and arrays, as host NumPy arrays.

A value's *kind* says how it came and how it goes back: a Python ``int``
(each one in i64, combined exactly: see ``_wide``) or ``float`` (f64), a NumPy
scalar of a Tack type, or a Tack array of some dtype and shape. Every block of
the world must give one kind.
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from ..runtime.array import Array
from ..runtime.creation import array as _to_device
from .errors import require_every_local, require_on_device

OPS = {"sum": np.add, "min": np.minimum, "max": np.maximum}
INT_OPS = {"sum": lambda a, b: a + b, "min": min, "max": max}
_WORD = (1 << 64) - 1


def _wide(value: int) -> np.ndarray:
    """A Python int as 128-bit two's complement, ``[high, low]`` u64 words: the
    sum of any number of blocks' i64 values fits, so Python ints combine
    exactly (as mpi4py's ``allreduce`` of Python ints does), never wrapping."""
    return np.array([(value >> 64) & _WORD, value & _WORD], np.uint64)


def _narrow(words: np.ndarray) -> int:
    high, low = int(words[0]), int(words[1])
    return ((high - (1 << 64) if high >> 63 else high) << 64) | low


def require_op(call: str, op) -> str:
    """``op`` as a plain ``str`` (the agreement codes its ``repr``, and NumPy's
    ``str_`` has another)."""
    if not isinstance(op, str) or op not in OPS:
        raise ValueError(f"{call} takes op 'sum', 'min' or 'max', not {op!r}")
    return str(op)


def kind_of(call: str, gid: int, value) -> tuple:
    """``(kind, host values)`` of one block's value."""
    if isinstance(value, Array):
        return ("array", T.type_name(value.dtype), value.shape), value.numpy()
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{call}: the value of block {gid} is a bool; use an int")
    if isinstance(value, np.generic):   # first: np.float64 is also a float
        try:
            dtype = T.from_numpy(value.dtype)
        except TypeError:
            raise TypeError(f"{call}: the value of block {gid} is a NumPy {value.dtype} "
                            f"scalar, a type Tack has no element of") from None
        return ("numpy", dtype.name), np.array(value)
    if isinstance(value, int):
        if not -(1 << 63) <= value < (1 << 63):
            raise ValueError(f"{call}: the value of block {gid} ({value}) does not fit "
                             f"in i64")
        return ("int",), _wide(value)
    if isinstance(value, float):
        return ("float",), np.array(value, np.float64)
    raise TypeError(f"{call}: the value of block {gid} must be a Python or NumPy scalar "
                    f"or a tack.Array, not {type(value).__name__}")


def any_length(kind) -> tuple:
    """``kind`` with an array's first extent left open (``None``): what
    ``all_gather``'s blocks must agree on, their lengths free."""
    if kind[0] == "array" and kind[2]:
        return kind[:2] + ((None,) + kind[2][1:],)
    return kind


def local_values(blocks, call: str, values, lengths: bool = False) -> tuple:
    """``(kind or None, {gid: host values})`` for this rank's blocks, checked
    (``lengths``: arrays may differ in their first extent; the kind leaves it
    open)."""
    if not isinstance(values, dict):
        raise TypeError(f"{call} takes a dict of block ids to values, not "
                        f"{type(values).__name__}")
    require_every_local(blocks, call, "the values", values)
    kinds, host = {}, {}
    for gid in blocks.local:
        if isinstance(values[gid], Array):
            require_on_device(blocks, call, f"the value of block {gid}", gid, values[gid])
        kinds[gid], host[gid] = kind_of(call, gid, values[gid])
        if lengths:
            kinds[gid] = any_length(kinds[gid])
    distinct = sorted({describe(k) for k in kinds.values()})
    if len(distinct) > 1:
        raise TypeError(f"{call}: the values differ in type or shape between blocks: "
                        f"{', '.join(distinct)}")
    kind = kinds[blocks.local.start] if len(blocks.local) else None
    return kind, host


def describe(kind) -> str:
    if kind[0] == "array" and kind[2][:1] == (None,):
        rest = "".join(f", {d}" for d in kind[2][1:])
        return f"array of {kind[1]} with shape (any{rest}{',' if len(kind[2]) == 1 else ''})"
    if kind[0] == "array":
        return f"array of {kind[1]} with shape {kind[2]}"
    return {"int": "Python int", "float": "Python float"}.get(kind[0], f"NumPy {kind[-1]}")


def numpy_dtype(kind) -> np.dtype:
    if kind[0] in ("int", "float"):
        return np.dtype(np.uint64 if kind[0] == "int" else np.float64)
    return T.scalar_of(T.from_type_name(kind[1])).numpy


def shape_of(kind) -> tuple:
    """The host values' shape: a Python int's two words (``_wide``), a vector
    or matrix array's components."""
    if kind[0] != "array":
        return (2,) if kind[0] == "int" else ()
    return kind[2] + T.element_shape(T.from_type_name(kind[1]))


def identity(kind, op: str) -> np.ndarray:
    """0 for a sum, the type's largest value for min, its smallest for max (a
    Python int's type: i64)."""
    if kind[0] == "int":
        return _wide({"sum": 0, "min": (1 << 63) - 1, "max": -(1 << 63)}[op])
    dtype = numpy_dtype(kind)
    out = np.empty(shape_of(kind), dtype)
    if op == "sum":
        out.fill(0)
    else:
        info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
        big = np.inf if dtype.kind == "f" else info.max
        small = -np.inf if dtype.kind == "f" else info.min
        out.fill(big if op == "min" else small)
    return out


def combine(kind, op: str, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``left op right`` element-wise, in the values' own type (Python ints
    exactly). Overflow and ``inf - inf`` give what NumPy and IEEE 754 give,
    silently: only the rank that combines a pair would see NumPy's warning (or,
    under ``np.seterr(all="raise")`` or ``-W error``, its exception, while the
    others wait)."""
    if kind[0] == "int":
        return _wide(INT_OPS[op](_narrow(left), _narrow(right)))
    with np.errstate(all="ignore"):
        return OPS[op](left, right, out=np.empty_like(left))


def restore(kind, values: np.ndarray, device):
    """The value of ``kind`` that ``values`` hold, as the caller gave it."""
    if kind[0] == "int":
        return _narrow(values)
    if kind[0] == "float":
        return float(values[()])
    if kind[0] == "numpy":
        return values.dtype.type(values[()])
    return _to_device(values, device=device, dtype=T.from_type_name(kind[1]))


def result_device(blocks):
    """Where array results go: this rank's first block's device, else the default."""
    if len(blocks.local):
        return blocks.device(blocks.local.start)
    return None
