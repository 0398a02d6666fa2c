"""``Blocks.exchange``: arrays from blocks to blocks, one message per rank pair.

A call has three steps. The agreement (:meth:`World.agree`) checks that
every rank is in the same call and that no rank found an error; it also sums
a flag saying whether any rank's headers (which arrays go where, with their
types and shapes) differ from its previous call on the same channel. Only
then are the headers sent (one ``alltoall``); otherwise each rank reuses the
headers it received last time, so a repeated pattern costs one small
reduction plus the data. Last, each rank pair's arrays travel as one message
(host-staged) or one message per array (GPU-aware).
"""

from __future__ import annotations

import functools
import math

from .. import types as T
from . import transport
from .errors import fault, require_dict, require_gid, require_named_arrays
from .world import TAG_DATA, wait_all

CALL = "Blocks.exchange()"
LARGE = 1 << 16     # arrays from this size on travel in messages of their own


def exchange(blocks, messages, call: str = CALL, error=None, fields=()) -> dict:
    """See :meth:`Blocks.exchange`.

    Args:
        call: the public call this is part of; it names the agreement and keys
            the header cache, so each call keeps its own pattern.
        error: an exception this rank found before, raised on every rank.
        fields: more values that must agree across ranks (see ``World.agree``).
    """
    world = blocks.world
    outgoing, problem = fault(_outgoing, blocks, messages)
    error = error or problem
    cache = world.cache.setdefault(("exchange", call), {"out": None, "in": None})
    headers = None if error else {r: tuple(h for h, _ in items)
                                  for r, items in outgoing.items()}
    changed = int(error is None and headers != cache["out"])
    if world.agree(call, error, fields, count=changed):
        sent = [headers.get(r, ()) if r != world.rank else () for r in range(world.size)]
        cache["in"] = world.alltoall(sent)
        cache["out"] = headers
    received = _transfer(blocks, outgoing, cache["in"])
    return _assemble(blocks, outgoing.get(world.rank, []), received)


def _outgoing(blocks, messages) -> dict:
    """``{destination rank: [(header, array or None)]}`` in (source, destination)
    order; a header is ``(source, destination, name, dtype name, shape)``."""
    require_dict(CALL, "the messages", messages)
    per_rank = {}
    for src in sorted(messages, key=_order):
        src_id = require_gid(blocks, CALL, src)
        per_dst = messages[src]
        if not isinstance(per_dst, dict):
            raise TypeError(f"{CALL}: the messages of block {src_id} must be a dict of "
                            f"destination blocks to messages, not "
                            f"{type(per_dst).__name__}")
        for dst in sorted(per_dst, key=_order):
            dst_id = require_gid(blocks, CALL, dst, local=False)
            named = require_named_arrays(
                blocks, CALL, f"the message from block {src_id} to block {dst_id}",
                src_id, per_dst[dst])
            items = per_rank.setdefault(blocks.rank_of(dst_id), [])
            if not named:
                items.append(((src_id, dst_id, None, None, ()), None))
            for name, array in named.items():
                items.append(((src_id, dst_id, name, array.dtype.name, array.shape),
                              array))
    return per_rank


def _order(key):
    return (0, key) if isinstance(key, int) and not isinstance(key, bool) else (1, 0)


def _transfer(blocks, outgoing: dict, incoming: list) -> list:
    """Send ``outgoing`` to the other ranks; ``[(header, array)]`` received.

    Receives are posted first and sends right after, so that the peers can
    move on; the received arrays are made while the messages travel."""
    world = blocks.world
    if world.size == 1:
        return []
    requests, keep, posted = [], [], []
    direct = world.gpu_aware
    for peer, headers in enumerate(incoming):
        if peer == world.rank or not headers:
            continue
        if direct:
            posted.extend((h, _receive_direct(blocks, h, peer, requests)) for h in headers)
        else:
            posted.append((headers, _post_staged(world, headers, peer, requests, keep)))
    staging = world.cache.get("staging")
    if staging is None:
        staging = world.cache["staging"] = transport.Staging()
    for peer, items in outgoing.items():
        if peer == world.rank:
            continue
        if direct:
            requests.extend(world.isend(a, peer, TAG_DATA) for _, a in items
                            if a is not None and a.nbytes)
            continue
        for buffer in _send_staged(items, staging, peer):
            keep.append(buffer)
            requests.append(world.isend(buffer, peer, TAG_DATA))
    received = posted if direct else [
        pair for headers, buffers in posted
        for pair in _wrap_staged(blocks, headers, buffers)]
    wait_all(requests)
    return received


@functools.lru_cache(maxsize=512)
def pair_layout(headers: tuple) -> tuple:
    """How one rank pair's arrays travel, from their headers: arrays under
    ``LARGE`` bytes packed into one message at aligned offsets, each larger one
    in a message of its own, after the packed one.

    Returns:
        ``(items, packed, packed bytes, large)``: per header ``(dtype, shape,
        bytes)`` or None for an empty message; ``(index, offset)`` of the packed
        arrays; the indices of the large ones.
    """
    items, packed, large, offset = [], [], [], 0
    for i, (_, _, name, dtype, shape) in enumerate(headers):
        if name is None:
            items.append(None)
            continue
        dt = T.scalar_type(dtype)
        nbytes = math.prod(shape) * dt.itemsize
        items.append((dt, shape, nbytes))
        if nbytes >= LARGE:
            large.append(i)
        elif nbytes:
            packed.append((i, offset))
            offset += transport.aligned(nbytes)
    return tuple(items), tuple(packed), offset, tuple(large)


def _send_staged(items, staging, peer) -> list:
    """The host buffers that carry one pair's arrays, in message order."""
    items_layout, packed, total, large = pair_layout(tuple(h for h, _ in items))
    buffers = []
    if len(packed) == 1:
        buffers.append(transport.host_bytes(items[packed[0][0]][1]))
    elif packed:
        buffer = staging.get(peer, total)
        for i, offset in packed:
            values = transport.host_bytes(items[i][1])
            buffer[offset: offset + values.nbytes] = values
        buffers.append(buffer)
    buffers.extend(transport.host_bytes(items[i][1]) for i in large)
    return buffers


def _post_staged(world, headers, peer, requests, keep) -> list:
    """Post the receives of one pair's messages; their buffers, in message order."""
    _, packed, total, large = pair_layout(headers)
    sizes = ([total] if packed else []) + [pair_layout(headers)[0][i][2] for i in large]
    buffers = [transport.new_buffer(n) for n in sizes]
    keep.extend(buffers)
    requests.extend(world.irecv(b, peer, TAG_DATA) for b in buffers)
    return buffers


def _wrap_staged(blocks, headers, buffers) -> list:
    """``(header, array)`` for one pair: arrays that wrap the receive buffers (they
    are read only after the wait)."""
    items, packed, _, large = pair_layout(headers)
    arrays = [None] * len(headers)
    rest = iter(buffers)
    if packed:
        buffer = next(rest)
        for i, offset in packed:
            dtype, shape, _ = items[i]
            arrays[i] = transport.wrap(buffer, offset, dtype, shape,
                                       blocks.device(headers[i][1]))
    for i, buffer in zip(large, rest):
        dtype, shape, _ = items[i]
        arrays[i] = transport.wrap(buffer, 0, dtype, shape, blocks.device(headers[i][1]))
    for i, item in enumerate(items):
        if item is not None and arrays[i] is None:     # zero bytes: nothing travels
            dtype, shape, _ = item
            arrays[i] = transport.wrap(transport.new_buffer(0), 0, dtype, shape,
                                       blocks.device(headers[i][1]))
    return list(zip(headers, arrays))


def _receive_direct(blocks, header, peer, requests):
    src, dst, name, dtype, shape = header
    if name is None:
        return None
    array = transport.empty_on(blocks.device(dst), T.scalar_type(dtype), shape)
    if array.nbytes:
        requests.append(blocks.world.irecv(array, peer, TAG_DATA))
    return array


def _assemble(blocks, local_items, received) -> dict:
    """``{destination: {source: {name: Array}}}``, sources ascending."""
    result = {gid: {} for gid in blocks.local}
    entries = [(h, None if a is None else a.to_device(blocks.device(h[1])))
               for h, a in local_items]
    entries.extend(received)
    entries.sort(key=lambda entry: entry[0][0])   # stable: keeps the names' order
    for (src, dst, name, _, _), array in entries:
        message = result[dst].setdefault(src, {})
        if name is not None:
            message[name] = array
    return result
