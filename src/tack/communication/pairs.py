"""How one rank pair's arrays travel in an exchange, host-staged.

Arrays under ``LARGE`` bytes are packed into one message at 64-byte aligned
offsets; each larger one is a message of its own, after the packed one.
These helpers lay that out from a pair's headers (``(source, destination,
name, dtype name, shape)``, a name of None for an empty message), make the
host buffers that send it, and wrap the buffers that receive it. Both the
general exchange (``exchange.py``) and its express path (``express.py``) use
them.
"""

from __future__ import annotations

import functools
import math

from .. import types as T
from . import transport
from .world import _EMPTY

LARGE = 1 << 16     # arrays from this size on travel in messages of their own


@functools.lru_cache(maxsize=512)
def pair_layout(headers: tuple) -> tuple:
    """How one rank pair's arrays travel, from their headers.

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
        dt = T.from_type_name(dtype)
        nbytes = math.prod(shape) * dt.itemsize
        items.append((dt, shape, nbytes))
        if nbytes >= LARGE:
            large.append(i)
        elif nbytes:
            packed.append((i, offset))
            offset += transport.aligned(nbytes)
    return tuple(items), tuple(packed), offset, tuple(large)


def message_sizes(headers: tuple, direct: bool) -> list:
    """The bytes of each message of one rank pair, in message order (``direct``:
    GPU-aware transport, one message per array)."""
    items, packed, total, large = pair_layout(headers)
    if direct:
        return [item[2] for item in items if item is not None and item[2]]
    return ([total] if packed else []) + [items[i][2] for i in large]


def send_plans(world, outgoing):
    """Per peer ``(peer, [(offset, view)] to pack, packed bytes, [views sent as
    they are])`` for ``outgoing`` (``{rank: [(header, array)]}``), or False where
    an array has no host view."""
    plans = []
    for peer, items in outgoing.items():
        if peer == world.rank:
            continue
        _, packed, total, large = pair_layout(tuple(h for h, _ in items))
        views = {}
        for i in [i for i, _ in packed] + list(large):
            view = transport.host_view(items[i][1])
            if view is None:
                return False
            views[i] = view.reshape(-1).view("u1")
        single = [views[i] for i in large]
        if len(packed) == 1:
            plans.append((peer, (), 0, [views[packed[0][0]]] + single))
        else:
            plans.append((peer, [(offset, views[i]) for i, offset in packed], total,
                          single))
    return plans


def send_staged(items, staging, peer) -> list:
    """The host buffers that carry one pair's ``(header, array)`` items, in
    message order."""
    _, packed, total, large = pair_layout(tuple(h for h, _ in items))
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


def wrap_staged(blocks, headers, held) -> list:
    """``(header, array)`` for one pair: arrays that wrap the receive buffers, given
    as ``(buffer, address)`` (they are read only after the wait)."""
    items, packed, _, large = pair_layout(headers)
    arrays = [None] * len(headers)
    rest = iter(held)
    wrap = transport.wrap
    if packed:
        buffer, address = next(rest)
        for i, offset in packed:
            dtype, shape, _ = items[i]
            arrays[i] = wrap(buffer, offset, dtype, shape, blocks.device(headers[i][1]),
                             address)
    for i, (buffer, address) in zip(large, rest):
        dtype, shape, _ = items[i]
        arrays[i] = wrap(buffer, 0, dtype, shape, blocks.device(headers[i][1]), address)
    for i, item in enumerate(items):
        if item is not None and arrays[i] is None:     # zero bytes: nothing travels
            dtype, shape, _ = item
            arrays[i] = wrap(_EMPTY, 0, dtype, shape, blocks.device(headers[i][1]), 0)
    return list(zip(headers, arrays))


def template(blocks, header, item):
    """An array of a received message's type, shape and device, for
    ``Array.rebased``; its storage is a placeholder, never read."""
    dtype, shape, _ = item
    return transport.wrap(_EMPTY, 0, dtype, shape, blocks.device(header[1]), 0)


def staging(world) -> transport.Staging:
    """The world's send buffers, one per peer rank."""
    return _world_state(world, "staging", transport.Staging)


def carver(world) -> transport.Carver:
    """The world's carver of receive buffers for small messages."""
    return _world_state(world, "carver", transport.Carver)


def _world_state(world, key: str, make):
    found = world.cache.get(key)
    if found is None:
        found = world.cache[key] = make()
    return found
