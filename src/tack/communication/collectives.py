"""Reproducible collectives over blocks: all_reduce, exclusive_scan, all_gather,
and the box neighbour graph (link_by_bounds).

all_reduce and exclusive_scan combine over a fixed binary tree of global ids:
node ``(k, j)`` covers ids ``[j 2^k, (j+1) 2^k)`` and is ``(k-1, 2j) op
(k-1, 2j+1)``. The association depends on the number of blocks only, so a
float sum has the same bits for any number of ranks and any assignment. The
rank holding a node's first id computes it; a right child held elsewhere is
sent up by its rank, at most one message per level and rank (``O(log
blocks)``), and the root is broadcast down a binomial tree of ranks. The scan
sends prefixes back down the same tree.
"""

from __future__ import annotations

import numpy as np

from . import values as V
from .errors import fault, require_every_local, the_blocks
from .world import TAG_TREE, wait_all

TAG_SCAN, TAG_BCAST = TAG_TREE + 64, TAG_TREE + 128


def _levels(count: int) -> int:
    return max(0, (count - 1).bit_length())


def _begin(blocks, call: str, values, op: str, lengths: bool = False):
    """Check locally, agree on the kind, return ``(kind, host values)``
    (``lengths``: arrays may differ in their first extent)."""
    def check():
        return V.require_op(call, op), V.local_values(blocks, call, values, lengths)
    found, error = fault(check)
    checked = None if error else found[1]
    kind = None if error else checked[0]
    blocks.world.agree(call, error, [(kind, TypeError, f"{call}: the values' type or "
                                                        f"shape", V.describe),
                                     (None if error else found[0], ValueError,
                                      f"{call}: op"),
                                     the_blocks(blocks, call)])
    return checked


def _kind_everywhere(blocks, kind):
    """Ranks without blocks learn the kind from one that has some."""
    if all(blocks.counts):
        return kind
    known = [k for k in blocks.world.allgather(kind) if k is not None]
    return known[0] if known else None


def _upsweep(blocks, kind, host: dict, op: str):
    """Tree values of every node whose first id is this rank's, and the sends."""
    world, count = blocks.world, blocks.count
    a, b = blocks.local.start, blocks.local.stop
    levels = _levels(count)
    nodes = {(0, g): host[g] for g in blocks.local}
    shape, dtype = V.shape_of(kind), V.numpy_dtype(kind)
    pending = {}
    for k in range(levels):
        half, size = 1 << k, 2 << k
        for j in range(-(-a // size), -(-b // size)):
            right = j * size + half
            if b <= right < count:
                buffer = np.empty(shape, dtype)
                pending[k, j] = (world.irecv(buffer, blocks.rank_of(right), TAG_TREE + k),
                                 buffer)
    sends = []
    for k in range(levels):
        half, size = 1 << k, 2 << k
        for j in range(-(-a // half), -(-b // half)):
            if j % 2 and (j - 1) * half < a:
                sends.append(world.isend(nodes[k, j], blocks.rank_of((j - 1) * half),
                                         TAG_TREE + k))
        for j in range(-(-a // size), -(-b // size)):
            left, right = nodes[k, 2 * j], j * size + half
            if right >= count:
                nodes[k + 1, j] = left
            elif right < b:
                nodes[k + 1, j] = V.combine(kind, op, left, nodes[k, 2 * j + 1])
            else:
                request, buffer = pending[k, j]
                request.Wait()
                nodes[k + 1, j] = V.combine(kind, op, left, buffer)
    return nodes, sends


def _broadcast(blocks, value, kind):
    """The root's value on every rank (a binomial tree rooted at block 0's rank)."""
    world = blocks.world
    size, root = world.size, blocks.rank_of(0)
    relative = (world.rank - root) % size
    if relative:
        value = np.empty(V.shape_of(kind), V.numpy_dtype(kind))
    mask = 1
    while mask < size:
        if relative & mask:
            world.irecv(value, (world.rank - mask) % size, TAG_BCAST).Wait()
            break
        mask <<= 1
    mask >>= 1
    sends = []
    while mask:
        if relative + mask < size:
            sends.append(world.isend(value, (world.rank + mask) % size, TAG_BCAST))
        mask >>= 1
    wait_all(sends)
    return value


def all_reduce(blocks, values, op: str):
    call = "Blocks.all_reduce()"
    kind, host = _begin(blocks, call, values, op)
    kind = _kind_everywhere(blocks, kind)
    if kind is None:
        return None     # a world without blocks
    nodes, sends = _upsweep(blocks, kind, host, op)
    root = nodes.get((_levels(blocks.count), 0))
    result = _broadcast(blocks, root, kind) if blocks.world.size > 1 else root
    wait_all(sends)
    return V.restore(kind, result, V.result_device(blocks))


def exclusive_scan(blocks, values, op: str) -> dict:
    call = "Blocks.exclusive_scan()"
    kind, host = _begin(blocks, call, values, op)
    kind = _kind_everywhere(blocks, kind)
    if not len(blocks.local):
        return {}
    nodes, sends = _upsweep(blocks, kind, host, op)
    prefixes = _downsweep(blocks, kind, nodes, op)
    wait_all(sends)
    identity = V.identity(kind, op)
    return {g: V.restore(kind, identity if prefixes[0, g] is None else prefixes[0, g],
                         blocks.device(g)) for g in blocks.local}


def _downsweep(blocks, kind, nodes: dict, op: str) -> dict:
    """Each node's prefix (None for the empty prefix of block 0's path)."""
    world, count = blocks.world, blocks.count
    a, b = blocks.local.start, blocks.local.stop
    levels = _levels(count)
    shape, dtype = V.shape_of(kind), V.numpy_dtype(kind)
    prefix = {(levels, 0): None} if a == 0 else {}
    pending = {}
    for k in range(levels):
        half = 1 << k
        for j in range(-(-a // half), -(-b // half)):
            if j % 2 and (j - 1) * half < a:
                buffer = np.empty(shape, dtype)
                pending[k, j] = (world.irecv(buffer, blocks.rank_of((j - 1) * half),
                                             TAG_SCAN + k), buffer)
    sends = []
    for k in range(levels - 1, -1, -1):
        half, size = 1 << k, 2 << k
        for j in range(-(-a // size), -(-b // size)):
            before = prefix[k + 1, j]
            prefix[k, 2 * j] = before
            right = j * size + half
            if right < count:
                left = nodes[k, 2 * j]
                value = left if before is None else V.combine(kind, op, before, left)
                if right < b:
                    prefix[k, 2 * j + 1] = value
                else:
                    sends.append(world.isend(value, blocks.rank_of(right), TAG_SCAN + k))
        for (level, j), (request, buffer) in pending.items():
            if level == k:
                request.Wait()
                prefix[k, j] = buffer
    wait_all(sends)
    return prefix


def all_gather(blocks, values) -> dict:
    call = "Blocks.all_gather()"
    kind, host = _begin(blocks, call, values, "sum", lengths=True)
    kind = _kind_everywhere(blocks, kind)
    world = blocks.world
    device = V.result_device(blocks)
    gathered = world.allgather([(g, host[g]) for g in blocks.local])
    result = {}
    for rank, items in enumerate(gathered):
        for gid, data in items:
            if rank == world.rank:
                result[gid] = values[gid]
            else:
                result[gid] = V.restore(kind, data, device)
    return result


def link_by_bounds(blocks, bounds, margin) -> dict:
    call = "Blocks.link_by_bounds()"
    boxes, error = fault(_boxes, blocks, call, bounds, margin)
    dims = None if error or not boxes else len(boxes[0][1])
    blocks.world.agree(call, error, [(dims, ValueError,
                                      f"{call}: the boxes' number of dimensions"),
                                     (None if error else float(margin), ValueError,
                                      f"{call}: margin"), the_blocks(blocks, call)])
    everything = [box for part in blocks.world.allgather(boxes) for box in part]
    if not everything:
        return {}
    ids = np.array([g for g, _, _ in everything])
    lo = np.array([box for _, box, _ in everything], np.float64)
    hi = np.array([box for _, _, box in everything], np.float64)
    m = float(margin)
    links = {}
    for gid, mine_lo, mine_hi in boxes:
        meets = np.all(lo - m <= np.asarray(mine_hi), axis=1) & \
            np.all(np.asarray(mine_lo) <= hi + m, axis=1)
        links[gid] = sorted(int(g) for g in ids[meets] if g != gid)
    return links


def _boxes(blocks, call, bounds, margin) -> list:
    if isinstance(margin, bool) or not isinstance(margin, (int, float, np.number)):
        raise TypeError(f"{call}: margin must be a number, not {type(margin).__name__}")
    if not margin >= 0:
        raise ValueError(f"{call}: margin must be zero or positive, not {margin}")
    if not isinstance(bounds, dict):
        raise TypeError(f"{call} takes a dict of block ids to (lo, hi), not "
                        f"{type(bounds).__name__}")
    require_every_local(blocks, call, "the bounds", bounds)
    boxes = [(g, *box(call, g, bounds[g])) for g in blocks.local]
    if len({len(lo) for _, lo, _ in boxes}) > 1:
        raise ValueError(f"{call}: the boxes of this rank's blocks have different "
                         f"numbers of dimensions")
    return boxes


def box(call: str, gid: int, value) -> tuple:
    """``(lo, hi)`` of one block as tuples of floats, checked."""
    try:
        lo, hi = value
        lo = tuple(float(x) for x in np.asarray(lo, np.float64).reshape(-1))
        hi = tuple(float(x) for x in np.asarray(hi, np.float64).reshape(-1))
    except (TypeError, ValueError):
        raise TypeError(f"{call}: the box of block {gid} must be a pair (lo, hi) of "
                        f"coordinate sequences, not {value!r}") from None
    if len(lo) != len(hi) or not lo:
        raise ValueError(f"{call}: the box of block {gid} has lo and hi of different "
                         f"lengths ({len(lo)} and {len(hi)})" if lo else
                         f"{call}: the box of block {gid} has no coordinates")
    if any(x != x for x in lo + hi):
        raise ValueError(f"{call}: the box of block {gid} has a coordinate that is not a "
                         f"number: lo {lo}, hi {hi}")
    if any(not l <= h for l, h in zip(lo, hi)):
        raise ValueError(f"{call}: the box of block {gid} has lo {lo} above hi {hi}")
    return lo, hi
