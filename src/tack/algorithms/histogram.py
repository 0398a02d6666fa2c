"""``histogram(keys, bins)``: how many keys fall on each integer value."""

from __future__ import annotations

from .. import types as T
from ..lang.intrinsics import atomic_add
from ..runtime.array import shares_memory
from ..runtime.creation import zeros
from ..runtime.kernel import library_kernel
from .common import (require_1d, require_array, require_count, require_writable,
                     same_device)

_KEY_TYPES = (T.i32, T.u32, T.i64, T.u64)


@library_kernel
def count_keys(keys, counts, bins):
    for i in range(len(keys)):
        k = keys[i]
        # compared as u64: a u64 key past 2**63 compared with the i64 length
        # would be compared as a negative i64, and counted far out of bounds.
        # bins, not len(counts): an extent the body reads is baked into the
        # variant, and every new bin count compiled one
        if k >= 0 and T.u64(k) < T.u64(bins):
            atomic_add(counts, k, 1)


def histogram(keys, bins: int, out=None):
    """``out[b]`` = the number of keys equal to ``b``, for ``0 <= b < bins``
    (i64 counts; keys outside the range are not counted). ``out`` is added to
    when given."""
    keys = require_1d("histogram", "keys", require_array("histogram", "keys", keys))
    if keys.dtype not in _KEY_TYPES:
        raise TypeError(f"histogram() takes i32, u32, i64 or u64 keys, not {keys.dtype}")
    bins = require_count("histogram", "bins", bins)
    if out is None:
        out = zeros(bins, T.i64, device=keys.device)
    require_1d("histogram", "out", require_array("histogram", "out", out))
    require_writable("histogram", "out", out)
    if shares_memory(out, keys):   # the counts would land in the keys being read
        raise ValueError("histogram() out must not be keys: the counts would change "
                         "the keys as they are counted")
    if out.size != bins:
        raise ValueError(f"histogram() out must have {bins} elements (one per bin), "
                         f"got {out.size}")
    if out.dtype not in _KEY_TYPES:
        raise TypeError(f"histogram() counts into i32, u32, i64 or u64 arrays, not "
                        f"{out.dtype}")
    same_device("histogram", keys, out)
    if out._ptr % out._scalar.itemsize:
        raise ValueError(f"histogram() out is not aligned to its {out._scalar.itemsize}-"
                         f"byte elements (address {out._ptr:#x}); the counts are atomic "
                         f"adds, which need naturally aligned memory")
    count_keys(keys, out, bins)
    return out
