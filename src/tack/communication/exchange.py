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

from .. import types as T
from . import transport
from .errors import fault, require_dict, require_gid, require_named_arrays
from .world import TAG_DATA, wait_all

CALL = "Blocks.exchange()"


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
    """Send ``outgoing`` to the other ranks; ``[(header, array)]`` received."""
    world = blocks.world
    if world.size == 1:
        return []
    requests, keep, received = [], [], []
    direct = world.gpu_aware
    for peer, headers in enumerate(incoming):
        if peer == world.rank or not headers:
            continue
        if direct:
            for header in headers:
                array = _receive_direct(blocks, header, peer, requests)
                received.append((header, array))
        else:
            received.extend(_receive_staged(blocks, headers, peer, requests, keep))
    staging = world.cache.setdefault("staging", transport.Staging())
    for peer, items in outgoing.items():
        if peer == world.rank:
            continue
        arrays = [a for _, a in items if a is not None]
        if direct:
            requests.extend(world.isend(a, peer, TAG_DATA) for a in arrays if a.nbytes)
        elif any(a.nbytes for a in arrays):
            buffer = transport.outgoing(arrays, staging, peer)
            keep.append(buffer)
            requests.append(world.isend(buffer, peer, TAG_DATA))
    wait_all(requests)
    return received


def _receive_staged(blocks, headers, peer, requests, keep) -> list:
    world = blocks.world
    sizes = [_nbytes(h) for h in headers]
    offsets, total = transport.layout(sizes)
    buffer = transport.new_buffer(total)
    if total:
        keep.append(buffer)
        requests.append(world.irecv(buffer, peer, TAG_DATA))
    out = []
    for header, offset in zip(headers, offsets):
        src, dst, name, dtype, shape = header
        array = None if name is None else transport.wrap(
            buffer, offset, T.scalar_type(dtype), shape, blocks.device(dst))
        out.append((header, array))
    # The wrapped arrays view the buffer: they are read only after the wait.
    return out


def _receive_direct(blocks, header, peer, requests):
    src, dst, name, dtype, shape = header
    if name is None:
        return None
    array = transport.empty_on(blocks.device(dst), T.scalar_type(dtype), shape)
    if array.nbytes:
        requests.append(blocks.world.irecv(array, peer, TAG_DATA))
    return array


def _nbytes(header) -> int:
    src, dst, name, dtype, shape = header
    if name is None:
        return 0
    count = 1
    for extent in shape:
        count *= extent
    return count * T.scalar_type(dtype).itemsize


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
