"""``Blocks.redistribute``: a block's arrays follow it to its rank in a new layout.

Rebalancing keeps the blocks (global ids, and so the pieces of the domain
they stand for) and changes which rank, and which device, holds each: a new
``Blocks`` of the same world and block count, with other counts per rank.
Each block's arrays go from its rank in the old layout to its rank in the
new one, through the exchange's transport (``exchange.py``): one agreement,
one ``alltoall`` of headers, then one message per rank pair (host-staged) or
per array (GPU-aware). A block that stays on its rank keeps its arrays (the
same objects, or copies where the new device cannot address them). Small
arrays arrive packed in one buffer per rank pair; each is copied out, so
that a field kept for many steps holds only its own memory.

A header is ``(gid, gid, name, dtype name, shape)``, as an exchange's with
the block as both source and destination; a block's value given as a bare
array travels under the name ``0`` (names of a dict are strings), which
tells the receiver to hand it out bare too.
"""

from __future__ import annotations

from .. import types as T
from ..runtime.array import Array
from . import exchange, pairs, transport
from .errors import (fault, require_dict, require_every_local, require_named_arrays,
                     require_on_device, the_blocks)

CALL = "Blocks.redistribute()"
BARE = 0    # the name a bare array travels under


def redistribute(old, new, values) -> dict:
    """See :meth:`Blocks.redistribute`."""
    world = old.world
    outgoing, error = fault(_outgoing, old, new, values)
    fields = [the_blocks(old, CALL),
              (getattr(new, "id", None), ValueError, f"{CALL}: the new Blocks")]
    world.agree(CALL, error, fields)
    headers = [tuple(h for h, _ in outgoing.get(r, ())) if r != world.rank else ()
               for r in range(world.size)]
    channel = exchange._Channel(CALL)
    channel.receiving = exchange._receive_plan(world, world.alltoall(headers))
    received = exchange._transfer(new, outgoing, channel)
    if not world.gpu_aware:     # a field outlives the call: no shared receive buffer
        received = [(h, _own(a)) for h, a in received]
    result = {gid: {} for gid in new.local}
    staying = [(h, a.to_device(new.device(h[0]))) for h, a in outgoing.get(world.rank, ())]
    for (gid, _, name, _, _), array in staying + received:
        if isinstance(name, int):
            result[gid] = array
        else:
            result[gid][name] = array
    return result


def _own(array):
    """``array``, or a copy where it wraps part of a packed receive buffer, which
    it would keep alive whole (the small arrays of one rank pair share one)."""
    if array is not None and 0 < array.nbytes < pairs.LARGE and \
            transport.addresses_host(array.device):
        return array.copy()
    return array


def _outgoing(old, new, values) -> dict:
    """``{rank in the new layout: [(header, array)]}``, blocks ascending."""
    from .blocks import Blocks
    if not isinstance(new, Blocks):
        raise TypeError(f"{CALL} takes the new layout as a tack.Blocks, not "
                        f"{type(new).__name__}")
    if new.world is not old.world:
        raise ValueError(f"{CALL}: the new Blocks belongs to another World; both "
                         f"layouts must be made on the same World")
    if new.count != old.count:
        raise ValueError(f"{CALL}: the new Blocks has {new.count} blocks and this one "
                         f"{old.count}; a redistribution moves the same blocks between "
                         f"ranks, so the counts must be equal")
    require_dict(CALL, "the values", values)
    require_every_local(old, CALL, "the values", values)
    per_rank = {}
    for gid in old.local:
        items = per_rank.setdefault(new.rank_of(gid), [])
        value = values[gid]
        if isinstance(value, Array):
            require_on_device(old, CALL, f"the value of block {gid}", gid, value)
            named = {BARE: value}
        elif not isinstance(value, dict):
            raise TypeError(f"{CALL}: the value of block {gid} must be a tack.Array or "
                            f"a dict of names to tack.Arrays, not {type(value).__name__}")
        else:
            named = require_named_arrays(old, CALL, f"the value of block {gid}", gid,
                                         value)
        items.extend(((gid, gid, name, T.type_name(a.dtype), a.shape), a)
                     for name, a in named.items())
    return per_rank
