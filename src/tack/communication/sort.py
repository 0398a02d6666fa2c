"""``Blocks.sort_by_key``: a stable distributed sort with exact splitters.

1. Each rank sorts its blocks' keys, concatenated in order of global id. With
   payloads the sort is ``tack.algorithms.radix_sort_pairs`` of the keys and
   their positions, which gives the permutation that carries the payloads and
   keeps the sort stable. Keys alone are sorted with NumPy on a host view: the
   order of equal keys cannot be seen then.
2. Block ``b`` should start at global position ``b N / B``. The key at each such
   position is found exactly in two gathers (see ``_boundaries``): regular
   samples of the sorted runs, which bracket each position's key between two
   sample values, then the few keys between them and exact counts. A
   boundary inside a run of equal keys moves to the nearer end of the run.
3. Each rank sends every destination rank the contiguous slice of its sorted
   run that falls in that rank's blocks (every rank knows every slice's
   length from step 2); the receiver merges the runs, in order of source rank,
   with a stable sort, and cuts them into its blocks.
"""

from __future__ import annotations

import math

import numpy as np

from .. import types as T
from ..algorithms import radix_sort_pairs
from ..runtime.creation import arange
from ..runtime.host_ops import concat
from . import transport
from .errors import (agreed_error, error_record, fault, require_array,
                     require_every_local, require_on_device, row_layout,
                     the_blocks)
from .world import TAG_DATA, wait_all

CALL = "Blocks.sort_by_key()"
KEY_TYPES = (T.i32, T.u32, T.i64, T.u64)


def sort_by_key(blocks, keys, values):
    world = blocks.world
    checked, error = fault(_check, blocks, keys, values)
    key_type, layout = checked if checked else (None, None)
    payload = values is not None
    # The agreement travels while this rank sorts its own keys (which reads and
    # writes nothing of the caller's); a rank with an error does not sort.
    world.begin(CALL, error, [
        the_blocks(blocks, CALL), (key_type, TypeError, f"{CALL}: the keys' type"),
        (payload, ValueError, f"{CALL}: whether values are given"),
        (layout, TypeError,
         f"{CALL}: the layout of the values (names, types, trailing shapes)")])
    sorted_, late = (None, None) if error else fault(_local_sort, blocks, keys, values)
    world.finish()
    run, rows = sorted_ or (None, None)
    positions, cuts = _boundaries(blocks, run, late)
    run, rows = _redistribute(blocks, run, rows, cuts)
    out_keys, out_values = _cut(blocks, run, rows, positions, layout)
    return (out_keys, out_values) if payload else out_keys


def _check(blocks, keys, values) -> tuple:
    """``(key type name or None, payload layout or None)`` after the local checks."""
    if not isinstance(keys, dict):
        raise TypeError(f"{CALL} takes a dict of block ids to key arrays, not "
                        f"{type(keys).__name__}")
    require_every_local(blocks, CALL, "the keys", keys)
    types = set()
    for gid in blocks.local:
        k = require_array(CALL, f"the keys of block {gid}", keys[gid])
        if k.dtype not in KEY_TYPES:
            raise TypeError(f"{CALL} takes i32, u32, i64 or u64 keys; the keys of "
                            f"block {gid} are {k.dtype}")
        if k.ndim != 1:
            raise ValueError(f"{CALL}: the keys of block {gid} must be one-dimensional, "
                             f"not of shape {k.shape}")
        require_on_device(blocks, CALL, f"the keys of block {gid}", gid, k)
        types.add(k.dtype.name)
    if len(types) > 1:
        raise TypeError(f"{CALL}: the keys have different types on different blocks "
                        f"({', '.join(sorted(types))})")
    layout = None if values is None else _payload_layout(blocks, keys, values)
    return (types.pop() if types else None), layout


def _payload_layout(blocks, keys, values) -> tuple:
    rows = {gid: keys[gid].size for gid in blocks.local}
    return row_layout(blocks, CALL, values, rows, _VALUE_WORDS)


_VALUE_WORDS = {
    "type": "values as a dict of block ids to dicts of arrays", "what": "the values",
    "block": lambda g: f"the values of block {g}",
    "bad": lambda g, name, shape, rows: (f"values[{g}][{name!r}] has shape {shape}; its "
                                         f"first extent must be the block's key count "
                                         f"({rows})"),
    "differ": "the values",
}


def _local_sort(blocks, keys, values):
    """This rank's keys sorted (host NumPy), and payload rows in the same order."""
    parts = [keys[g] for g in blocks.local]
    if not parts:
        return None, None
    if values is None:
        run = np.concatenate([transport.host_values(k) for k in parts])
        run.sort()
        return run, None
    if all(k.device is parts[0].device for k in parts):
        joined = concat(parts) if len(parts) > 1 else parts[0]
        positions = arange(joined.size, dtype=T.i64, device=joined.device)
        sorted_keys, order = radix_sort_pairs(joined, positions)
        order = transport.host_values(order)
        run = transport.host_values(sorted_keys)
    else:   # this rank's blocks on several devices: the same stable order, on the host
        joined = np.concatenate([transport.host_values(k) for k in parts])
        order = np.argsort(joined, kind="stable")
        run = joined[order]
    rows = {}
    for name in values[blocks.local.start]:
        stacked = np.concatenate([transport.host_values(values[g][name])
                                  for g in blocks.local])
        rows[name] = np.take(stacked, order, axis=0)
    return run, rows


def _boundaries(blocks, run, late=None) -> tuple:
    """Where the blocks start: ``(positions, cuts)``, ``positions`` the global
    start of blocks 0..B, ``cuts[r]`` the same B + 1 boundaries as offsets into
    rank ``r``'s sorted run, so every rank knows what every rank sends where.

    Two gathers, whatever the keys. First every rank's regular samples (its
    first and last key among them) and their positions: a rank's count of keys
    up to a value ``v`` lies between one past the position of its last sample
    ``<= v`` and the position of its first sample ``> v``, so the sums of these
    bounds bracket each boundary key between two sample values ``lo < key <=
    hi``. Then each rank's exact counts up to ``lo`` and ``hi`` and its keys
    strictly between them, as distinct keys and counts (a few sample spacings'
    worth of distinct keys per rank, however long a run of equal keys): the
    boundary key is one of those keys or ``hi``, and where it splits a run of
    equal keys, the boundary moves to the nearer end of the run.

    ``late``: an exception this rank's local sort raised; the first gather
    carries it, and every rank raises it."""
    world, count = blocks.world, blocks.count
    n = 0 if run is None else run.size
    spacing = max(1, n // max(16, math.isqrt(max(1, count - 1) * n)))
    info = world.allgather((n, spacing, run[_places(n, spacing)] if n else None)
                           if late is None else error_record(late))
    faults = [None if isinstance(i[0], int) else i for i in info]
    if any(faults):
        raise agreed_error(late, faults, world.rank)
    sizes = [i[0] for i in info]
    total = sum(sizes)
    if total == 0:
        return [0] * (count + 1), [[0] * (count + 1) for _ in info]
    values = np.sort(np.concatenate([v for _, _, v in info if v is not None]))
    values = values[np.r_[True, values[1:] != values[:-1]]]
    low = np.zeros(values.size, np.int64)     # bounds on the keys <= each value
    high = np.zeros(values.size, np.int64)
    for size, step, samples in info:
        if size:
            at = _places(size, step)
            k = np.searchsorted(samples, values, "right")
            low += np.where(k > 0, at[k - 1] + 1, 0)
            high += np.where(k < at.size, at[np.minimum(k, at.size - 1)], size)
    targets = [b * total // count for b in range(1, count)]
    brackets = []
    for t in targets:
        i = int(np.searchsorted(low, t, "right"))          # low[i] > t: the key <= hi
        j = int(np.searchsorted(high, t, "right")) - 1     # high[j] <= t: the key > lo
        brackets.append((values[j] if j >= 0 else None, values[i]))
    mine = None
    if n:
        mine = []
        for lo, hi in brackets:
            start = 0 if lo is None else int(np.searchsorted(run, lo, "right"))
            stop = int(np.searchsorted(run, hi, "left"))
            mine.append((start, int(np.searchsorted(run, hi, "right")),
                         *_runs(run[start:stop])))
    gathered = world.allgather(mine)
    positions = [0]
    cuts = [[0] for _ in gathered]
    for b, t in enumerate(targets):
        parts = [(r, part[b]) for r, part in enumerate(gathered) if part is not None]
        base = sum(p[0] for _, p in parts)             # keys <= lo
        keys, counts = _merge_runs([p[2] for _, p in parts], [p[3] for _, p in parts])
        upto = np.cumsum(counts)                       # keys in (lo, each key]
        inside = upto.size and t - base < upto[-1]     # else the key is hi
        if inside:
            i = int(np.searchsorted(upto, t - base, "right"))
            key = keys[i]
            start, end = base + (int(upto[i - 1]) if i else 0), base + int(upto[i])
        else:
            start = base + (int(upto[-1]) if upto.size else 0)
            end = sum(p[1] for _, p in parts)
        left = t - start <= end - t
        positions.append(start if left else end)
        for r, (upto_lo, upto_hi, values_r, counts_r) in parts:   # rank r's offset
            if not inside:
                cuts[r].append(upto_lo + int(counts_r.sum()) if left else upto_hi)
            else:
                k = int(np.searchsorted(values_r, key, "left" if left else "right"))
                cuts[r].append(upto_lo + int(counts_r[:k].sum()))
        for r, part in enumerate(gathered):
            if part is None:
                cuts[r].append(0)
    positions.append(total)
    for r, size in enumerate(sizes):
        cuts[r].append(size)
    return positions, cuts


def _runs(keys: np.ndarray) -> tuple:
    """Sorted ``keys`` as ``(distinct keys, their counts)``."""
    if not keys.size:
        return keys, np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return keys[starts], np.diff(np.r_[starts, keys.size])


def _merge_runs(values: list, counts: list) -> tuple:
    """Several ``_runs`` results as one: distinct keys ascending, counts summed."""
    if not values:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    values, counts = np.concatenate(values), np.concatenate(counts)
    order = np.argsort(values, kind="stable")
    values, counts = values[order], counts[order]
    if not values.size:
        return values, counts
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    return values[starts], np.add.reduceat(counts, starts)


def _places(n: int, spacing: int) -> np.ndarray:
    """The positions of a run's samples: every ``spacing``-th and the last."""
    places = np.arange(0, n, spacing)
    return places if places[-1] == n - 1 else np.append(places, n - 1)


def _redistribute(blocks, run, rows, cuts):
    """This rank's share of the global order: every rank's slices received straight
    into one array per field, in order of source rank, then merged stably."""
    world = blocks.world
    size, me = world.size, world.rank
    if run is None:           # no blocks here: nothing to send or receive
        return None, None
    first, last = blocks.first_of(me), blocks.first_of(me + 1)
    ranges = [(cuts[me][blocks.first_of(r)], cuts[me][blocks.first_of(r + 1)])
              for r in range(size)]
    incoming = [cuts[r][last] - cuts[r][first] for r in range(size)]
    names = list(rows) if rows is not None else []
    fields = [run] + [rows[n] for n in names]
    total = sum(incoming)
    merged = [np.empty((total,) + f.shape[1:], f.dtype) for f in fields]
    requests, start = [], 0
    for peer, count in enumerate(incoming):
        if peer != me and count:
            requests.extend(world.irecv(m[start:start + count], peer, TAG_DATA)
                            for m in merged)
        start += count
    for peer, (lo, hi) in enumerate(ranges):
        if hi > lo and peer != me:
            requests.extend(world.isend(f[lo:hi], peer, TAG_DATA) for f in fields)
    lo, hi = ranges[me]
    at = sum(incoming[:me])
    for m, f in zip(merged, fields):
        m[at:at + hi - lo] = f[lo:hi]
    wait_all(requests)
    keys = merged[0]
    if rows is None:
        keys.sort(kind="stable")     # a merge of the sorted runs (NumPy finds them)
        return keys, None
    permutation = np.argsort(keys, kind="stable")
    return keys[permutation], {n: m[permutation] for n, m in zip(names, merged[1:])}


def _cut(blocks, run, rows, positions, layout):
    """Per block of this rank: its keys and payload rows, on its device (rows of
    vector or matrix payloads become arrays of those elements again)."""
    types = {name: T.from_type_name(dtype) for name, dtype, _ in layout or ()}
    if not len(blocks.local):
        return {}, {}
    start = positions[blocks.local.start]
    keys, values = {}, {}
    for gid in blocks.local:
        lo, hi = positions[gid] - start, positions[gid + 1] - start
        device = blocks.device(gid)
        keys[gid] = _place(run[lo:hi], device)
        if rows is not None:
            values[gid] = {n: _place(r[lo:hi], device, types.get(n)) for n, r in rows.items()}
    return keys, values


def _place(values: np.ndarray, device, dtype=None):
    values = np.ascontiguousarray(values)
    dtype = dtype or T.from_numpy(values.dtype)
    shape = values.shape[:values.ndim - len(T.element_shape(dtype))]
    return transport.wrap(values.reshape(-1).view(np.uint8), 0, dtype, shape, device)
