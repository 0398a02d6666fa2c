"""``Blocks.sort_by_key``: a stable distributed sort with exact splitters.

1. Each rank sorts its blocks' keys, concatenated in order of global id. With
   payloads the sort is ``tack.algorithms.radix_sort_pairs`` of the keys and
   their positions, which gives the permutation that carries the payloads and
   keeps the sort stable. Keys alone are sorted with NumPy on a host view: the
   order of equal keys cannot be seen then.
2. Block ``b`` should start at global position ``b N / B``. The key at each such
   position is found exactly by a many-way search over key values, counting
   with ``searchsorted`` on the sorted runs and summing the counts over ranks
   (one small reduction per round, about 11 rounds for 64-bit keys). A
   boundary inside a run of equal keys moves to the nearer end of the run.
3. Each rank sends every destination rank the contiguous slice of its sorted
   run that falls in that rank's blocks; the receiver merges the runs, in order
   of source rank, with a stable sort, and cuts them into its blocks.
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from ..algorithms import radix_sort_pairs
from ..runtime.creation import arange
from ..runtime.host_ops import concat
from . import transport
from .errors import (fault, require_array, require_every_local, require_on_device,
                     row_layout)
from .world import TAG_DATA, wait_all

CALL = "Blocks.sort_by_key()"
KEY_TYPES = (T.i32, T.u32, T.i64, T.u64)
PROBES = 255


def sort_by_key(blocks, keys, values):
    world = blocks.world
    checked, error = fault(_check, blocks, keys, values)
    key_type, layout = checked if checked else (None, None)
    world.agree(CALL, error, [
        (key_type, TypeError, f"{CALL}: the keys' type"),
        (layout, TypeError, f"{CALL}: the values' names, types or trailing shapes")])
    payload = values is not None
    run, rows = _local_sort(blocks, keys, values if payload else None)
    positions = _boundaries(blocks, run)
    run, rows = _redistribute(blocks, run, rows, positions)
    out_keys, out_values = _cut(blocks, run, rows, positions)
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
    joined = concat(parts) if len(parts) > 1 else parts[0]
    positions = arange(joined.size, dtype=T.i64, device=joined.device)
    sorted_keys, order = radix_sort_pairs(joined, positions)
    order = transport.host_values(order)
    rows = {}
    for name in values[blocks.local.start]:
        stacked = np.concatenate([transport.host_values(values[g][name])
                                  for g in blocks.local])
        rows[name] = np.take(stacked, order, axis=0)
    return transport.host_values(sorted_keys), rows


def _boundaries(blocks, run) -> list:
    """Global start positions of blocks 0..B (B + 1 numbers)."""
    world, count = blocks.world, blocks.count
    n = 0 if run is None else run.size
    info = world.allgather((n, None if not n else (int(run[0]), int(run[-1]))))
    total = sum(i[0] for i in info)
    ends = [e for _, e in info if e is not None]
    if total == 0:
        return [(0, None)] * (count + 1)
    low, high = min(e[0] for e in ends), max(e[1] for e in ends)
    dtype = run.dtype if run is not None else None
    targets = [b * total // count for b in range(1, count)]
    search = [[low, high] for _ in targets]   # smallest v with count_le(v) > target
    while any(lo < hi for lo, hi in search):
        probes = []
        for lo, hi in search:
            span = hi - lo
            probes.append([lo + span * i // (PROBES + 1) for i in range(1, PROBES + 1)])
        counts = _count(world, run, dtype, probes, "right").reshape(len(targets), PROBES)
        for (target, interval, row, found) in zip(targets, search, probes, counts):
            for probe, c in zip(row, found):
                if c > target:
                    interval[1] = min(interval[1], probe)
                else:
                    interval[0] = max(interval[0], probe + 1)
    values = [[lo] for lo, _ in search]
    both = _count(world, run, dtype, values, ("left", "right"))
    before, through = both[:len(values)], both[len(values):]
    positions = [0]
    for target, start, end in zip(targets, before, through):
        positions.append(int(start) if target - start <= end - target else int(end))
    positions.append(total)
    return _with_rules(positions, before, [v[0] for v in values])


def _count(world, run, dtype, probes, sides) -> np.ndarray:
    """How many keys of the world lie below (``"left"``) or up to (``"right"``)
    each probe, summed over the ranks; several sides give the counts one after
    the other."""
    flat = [p for row in probes for p in row]
    sides = (sides,) if isinstance(sides, str) else sides
    if run is None or not run.size:
        local = np.zeros(len(flat) * len(sides), np.int64)
    else:
        at = np.array(flat, dtype=dtype)
        local = np.concatenate([np.searchsorted(run, at, side) for side in sides])
    return world.sum_ints(local.astype(np.int64))


def _with_rules(positions, before, keys):
    """Positions plus, per inner boundary, the key and side that split a run."""
    rules = [None]
    for b, key in enumerate(keys, start=1):
        rules.append((key, "left" if positions[b] == int(before[b - 1]) else "right"))
    rules.append(None)
    return list(zip(positions, rules))


def _split(run, boundaries) -> list:
    """Local start offsets of blocks 0..B in this rank's sorted run."""
    n = 0 if run is None else run.size
    out = []
    for position, rule in boundaries:
        if rule is None:
            out.append(0 if position == 0 else n)
        elif n == 0:
            out.append(0)
        else:
            key, side = rule
            out.append(int(np.searchsorted(run, np.array(key, run.dtype), side)))
    return out


def _redistribute(blocks, run, rows, boundaries):
    """This rank's share of the global order: every rank's slices received straight
    into one array per field, in order of source rank, then merged stably."""
    world = blocks.world
    cuts = _split(run, boundaries)
    size, me = world.size, world.rank
    ranges = [(cuts[blocks.first_of(r)], cuts[blocks.first_of(r + 1)])
              for r in range(size)]
    incoming = world.alltoall([hi - lo for lo, hi in ranges])
    if run is None:           # no blocks here: nothing to send or receive
        return None, None
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
        keys.sort()
        return keys, None
    permutation = np.argsort(keys, kind="stable")
    return keys[permutation], {n: m[permutation] for n, m in zip(names, merged[1:])}


def _cut(blocks, run, rows, boundaries):
    """Per block of this rank: its keys and payload rows, on its device."""
    if not len(blocks.local):
        return {}, {}
    start = boundaries[blocks.local.start][0]
    keys, values = {}, {}
    for gid in blocks.local:
        lo, hi = boundaries[gid][0] - start, boundaries[gid + 1][0] - start
        device = blocks.device(gid)
        keys[gid] = _place(run[lo:hi], device)
        if rows is not None:
            values[gid] = {n: _place(r[lo:hi], device) for n, r in rows.items()}
    return keys, values


def _place(values: np.ndarray, device):
    values = np.ascontiguousarray(values)
    return transport.wrap(values.reshape(-1).view(np.uint8), 0,
                          T.from_numpy(values.dtype), values.shape, device)
