"""``compact``: the elements whose flag is set, in order (stream compaction,
Thrust's ``copy_if``): an exclusive scan of the flags gives each kept
element its place, and one kernel moves it there."""

from __future__ import annotations

from .. import types as T
from ..runtime.creation import empty
from ..runtime.kernel import library_kernel
from .common import require_1d, require_array, same_device
from .scan import exclusive_scan

_FLAG_TYPES = (T.i8, T.i16, T.i32, T.i64, T.u8, T.u16, T.u32, T.u64)


@library_kernel
def nonzero(flags, places):
    for i in range(len(flags)):
        places[i] = 1 if flags[i] != 0 else 0


@library_kernel
def move_kept(values, flags, places, out):
    for i in range(len(flags)):
        if flags[i] != 0:
            out[places[i]] = values[i]


def compact(values, flags):
    """A new array of the elements of ``values`` whose flag is not zero, in
    their order, on ``values``' device (``values`` one-dimensional, of any
    element type; ``flags`` integers of the same length)."""
    values = require_1d("compact", "values",
                        require_array("compact", "values", values, elements=True))
    flags = require_1d("compact", "flags", require_array("compact", "flags", flags))
    if flags.dtype not in _FLAG_TYPES:
        raise TypeError(f"compact() takes integer flags (i8 to u64: 1 keeps an "
                        f"element, 0 drops it), not {flags.dtype}")
    if flags.size != values.size:
        raise ValueError(f"compact() needs a flag per value: {values.size} values, "
                         f"{flags.size} flags")
    same_device("compact", values, flags)
    n = values.size
    if n == 0:
        return empty(0, values.dtype, device=values.device)
    places = empty(n, T.i64, device=values.device)
    nonzero(flags, places)   # 0 or 1, whatever the flag's value and type
    last = places[n - 1]
    exclusive_scan(places, places)
    out = empty(places[n - 1] + last, values.dtype, device=values.device)
    move_kept(values, flags, places, out)
    return out
