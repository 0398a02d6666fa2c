"""``radix_sort_pairs``: a stable LSD radix sort of integer keys with values.

Eight-bit digits, least significant first. Each pass: every chunk counts its
digits (``digit_counts``); the counts are turned into write positions,
digit-major then chunk order (``digit_offsets``), which is what makes the
sort stable; every chunk then scatters its elements (``scatter``). A pass in
which every key has the same digit is skipped. Signed keys flip the sign bit
of their top digit so negative keys sort first.
"""

from __future__ import annotations

from .. import types as T
from ..runtime.creation import empty
from ..runtime.kernel import library_kernel
from .common import chunks_of, require_1d, require_array, same_device

_KEY_TYPES = (T.i32, T.u32, T.i64, T.u64)
CHUNK = 1 << 15
RADIX = 256


@library_kernel
def digit_counts(keys, counts, chunk, shift, flip, n):
    for c in range(counts.shape[0]):
        for b in range(256):
            counts[c, b] = 0
        lo = c * chunk
        hi = min(lo + chunk, n)
        for i in range(lo, hi):
            d = ((keys[i] >> shift) & 255) ^ flip
            counts[c, d] += 1


@library_kernel
def digit_offsets(counts, n, flag, chunks) -> int:
    for _ in range(1):
        position = 0
        trivial = 0
        for b in range(256):
            column = 0
            for c in range(chunks):   # not counts.shape[0]: that would be baked
                k = counts[c, b]
                counts[c, b] = position
                position += k
                column += k
            if column == n:
                trivial = 1
        flag[0] = trivial
    return flag[0]


@library_kernel
def scatter(keys, values, keys_out, values_out, offsets, chunk, shift, flip, n):
    for c in range(offsets.shape[0]):
        lo = c * chunk
        hi = min(lo + chunk, n)
        for i in range(lo, hi):
            k = keys[i]
            d = ((k >> shift) & 255) ^ flip
            p = offsets[c, d]
            offsets[c, d] = p + 1
            keys_out[p] = k
            values_out[p] = values[i]


def radix_sort_pairs(keys, values):
    """``(sorted keys, values in the same order)``, stable, as new arrays.

    ``keys``: one-dimensional i32, u32, i64 or u64; ``values``: one-dimensional,
    any dtype, the same length.
    """
    name = "radix_sort_pairs"
    keys = require_1d(name, "keys", require_array(name, "keys", keys))
    values = require_1d(name, "values", require_array(name, "values", values,
                                                      elements=True))
    if keys.dtype not in _KEY_TYPES:
        raise TypeError(f"{name}() takes i32, u32, i64 or u64 keys, not {keys.dtype}")
    if values.size != keys.size:
        raise ValueError(f"{name}() needs as many values as keys, got {values.size} "
                         f"and {keys.size}")
    same_device(name, keys, values)
    n = keys.size
    device = keys.device
    src_k, src_v = keys.copy(), values.copy()
    if n < 2:
        return src_k, src_v
    dst_k = empty(n, keys.dtype, device=device)
    dst_v = empty(n, values.dtype, device=device)
    counts = empty((chunks_of(n, CHUNK), RADIX), T.i64, device=device)
    flag = empty(1, T.i32, device=device)
    bits = keys.dtype.bits
    for shift in range(0, bits, 8):
        flip = 128 if keys.dtype.is_signed and shift == bits - 8 else 0
        digit_counts(src_k, counts, CHUNK, shift, flip, n)
        if digit_offsets(counts, n, flag, counts.shape[0]):
            continue  # every key has the same digit: the order is unchanged
        scatter(src_k, src_v, dst_k, dst_v, counts, CHUNK, shift, flip, n)
        src_k, dst_k = dst_k, src_k
        src_v, dst_v = dst_v, src_v
    return src_k, src_v
