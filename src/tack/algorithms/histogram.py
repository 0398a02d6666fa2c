"""``histogram(keys, bins)``: how many keys fall on each integer value."""

from __future__ import annotations

from .. import types as T
from ..lang.intrinsics import atomic_add
from ..runtime.array import shares_memory
from ..runtime.creation import empty, zeros
from ..runtime.kernel import library_kernel
from .common import (one_thread, require_1d, require_array, require_count,
                     require_writable, same_device)

_KEY_TYPES = (T.i32, T.u32, T.i64, T.u64)


# On devices other than the CPU, up to this many bins, each chunk of keys
# counts into a row of its own and the rows are summed (no atomics); the rows
# take at most PRIVATE_CELLS counts.
# One atomic add per key, which many keys on few bins make contended between
# threads, ran 10M keys into 16 bins 74 times as long as a serial loop.
PRIVATE_BINS = 4096
PRIVATE_CELLS = 1 << 21
CHUNK = 1 << 15
# On the CPU rows serve threads, not a fixed number of keys: at most
# ROWS_PER_THREAD rows per thread of the device, each of at least CHUNK keys
# and four keys per bin (zeroing and summing a row then costs little beside its
# keys). Counts are integers, so any chunking gives the same result. Then more
# bins count privately too: an atomic per key (a locked add) cost 3.9 times a
# serial loop at 65,536 bins. With four rows per thread the launch looked too
# small to the threading decision: it took as long as on one thread (4M keys
# into 16 bins: 6.5 ms, against 2.5 ms with 16 rows per thread).
ROWS_PER_THREAD = 16


@library_kernel
def chunk_counts(keys, rows, chunk, bins, n):
    for c in range(len(rows) // bins):
        base = c * bins
        for b in range(bins):
            rows[base + b] = 0
        lo = c * chunk
        hi = min(lo + chunk, n)
        for i in range(lo, hi):
            k = keys[i]
            if k >= 0 and T.u64(k) < T.u64(bins):   # as in count_keys
                rows[base + k] += 1


@library_kernel
def add_rows(rows, out, chunks, bins):
    for b in range(bins):
        total = rows[b]
        for c in range(1, chunks):
            total += rows[c * bins + b]
        out[b] += total


@library_kernel
def serial_counts(keys, counts, bins, n):
    for _ in range(1):   # one iteration: one thread adds without atomics
        for i in range(n):
            k = keys[i]
            if k >= 0 and T.u64(k) < T.u64(bins):   # as in count_keys
                counts[k] += 1


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
    _count(keys, out, bins)
    return out


def _count(keys, out, bins: int) -> None:
    """Private rows summed where there are few bins (or, on the CPU, enough keys
    per bin), one atomic add per key elsewhere (the rows would take too much
    memory, or cost more than the keys). A CPU device of one thread, or fewer
    keys than one chunk, counts in one serial pass straight into ``out``."""
    n = keys.size
    if n == 0 or bins == 0:
        count_keys(keys, out, bins)
        return
    if keys.device.type == "cpu":
        if one_thread(keys.device) or n < CHUNK:   # one thread counts into out itself
            serial_counts(keys, out, bins, n)
            return
        rows = ROWS_PER_THREAD * keys.device.backend.num_threads
        chunks = min(rows, n // max(CHUNK, 4 * bins))
        if chunks < 2 and bins > PRIVATE_BINS:
            count_keys(keys, out, bins)
            return
        chunks = max(1, chunks)
        chunk = -(-n // chunks)
    elif bins > PRIVATE_BINS:
        count_keys(keys, out, bins)
        return
    else:
        chunk = max(CHUNK, -(-n * bins // PRIVATE_CELLS))
        chunks = -(-n // chunk)
    rows = empty(chunks * bins, T.i64, device=keys.device)
    chunk_counts(keys, rows, chunk, bins, n)
    add_rows(rows, out, chunks, bins)
