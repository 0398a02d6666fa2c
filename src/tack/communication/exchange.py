"""``Blocks.exchange``: arrays from blocks to blocks, one message per rank pair.

A call has three steps. The agreement (:meth:`World.agree`) checks that
every rank is in the same call and that no rank found an error; it also sums
a flag saying whether any rank's headers (which arrays go where, with their
types and shapes) differ from its previous call on the same channel. Only
then are the headers sent (one ``alltoall``); otherwise each rank reuses the
headers it received last time, so a repeated pattern costs one small
reduction plus the data. Last, each rank pair's arrays travel as one message
(host-staged) or one message per array (GPU-aware).

Once a channel's last call repeated the pattern before it, the next call
speculates (see :mod:`.world`): it posts the receives of the agreed pattern
and sends its arrays while the agreement's sum travels, and uses them only
when the sum says every rank did the same with nothing changed or failed.
A rank whose headers changed, or that found an error, sends empty messages
instead, and the call falls back to the steps above after the drain. Where
the call also repeats the previous one's very arrays, host-staged, it takes
the express path (:mod:`.express`): the same protocol, laid out once and run
as one generated function.
"""

from __future__ import annotations

import weakref

from .. import types as T
from . import pairs, transport
from .errors import (fault, require_dict, require_gid, require_named_arrays,
                     the_blocks)
from .express import Express
from .world import _EMPTY, channel_tag, wait_all

CALL = "Blocks.exchange()"


class _Channel:
    """What one exchange call (by name) agreed last time, the same on every rank."""

    def __init__(self, call: str):
        self.call, self.tag = call, channel_tag(call)
        self.out = None         # {rank: headers} this rank sent
        self.incoming = None    # per rank, the headers this rank receives
        self.receiving = []     # per peer that sends here: (peer, headers, sizes)
        self.hot = False        # the last call repeated the pattern: speculate
        self.blocks = None      # the Blocks of the last call: speculate only through it
        self.sizes = {}         # per peer, the bytes of the messages sent (mirrors)
        self.repeat = None      # the last call's messages, to recognise a repeat

    def remember(self, repeat) -> None:
        if self.repeat is not None:
            self.repeat.drop_express()
        self.repeat = repeat

    def free(self) -> None:
        """Release the hot path's requests (the world is being freed)."""
        self.remember(None)


class _Repeat:
    """A successful call's messages, recognised at the next call by identity: dicts
    of the same keys holding the same array objects, through the same ``Blocks``
    (arrays are immutable in shape, type and device, so such a call has the
    same, already checked, headers; another ``Blocks`` may place the blocks on
    other ranks and devices). Arrays are held weakly; the host views that send
    them are made at the first repeat and then kept."""

    def __init__(self, messages, outgoing, blocks):
        self.blocks = blocks
        self.flat, position = [], {}
        for src, per_dst in messages.items():   # the keys' types too: 1.0 == 1
            self.flat.append((src, None, len(per_dst), type(src)))
            for dst, named in per_dst.items():
                self.flat.append((src, dst, len(named), type(dst)))
                for name, array in named.items():
                    position[id(array), src, dst, name] = len(self.flat)
                    self.flat.append((name, weakref.ref(array)))
        self.template = {r: [(h, None if a is None else
                              position[id(a), h[0], h[1], h[2]]) for h, a in items]
                         for r, items in outgoing.items()}
        self.sends = None       # per peer, how its messages are made from the views
        self.express = None     # the hot path's layout (False where it has none)

    def drop_express(self) -> None:
        if self.express:
            self.express.free()
        self.express = None

    def match(self, messages):
        """The arrays of ``messages`` by position (see :meth:`outgoing`) when it
        repeats the recorded call, else None."""
        flat, n, i = self.flat, len(self.flat), 0
        arrays = [None] * n
        if type(messages) is not dict:
            return None
        for src, per_dst in messages.items():
            if type(per_dst) is not dict or i >= n or \
                    flat[i] != (src, None, len(per_dst), type(src)):
                return None
            i += 1
            for dst, named in per_dst.items():
                if type(named) is not dict or i >= n or \
                        flat[i] != (src, dst, len(named), type(dst)):
                    return None
                i += 1
                for name, array in named.items():
                    entry = flat[i]
                    if entry[0] != name or entry[1]() is not array:
                        return None
                    arrays[i] = array
                    i += 1
        return arrays if i == n else None

    def outgoing(self, arrays) -> dict:
        """The call's ``outgoing`` (see ``_outgoing``) from what :meth:`match` found."""
        return {r: [(h, None if j is None else arrays[j]) for h, j in items]
                for r, items in self.template.items()}


def exchange(blocks, messages, call: str = CALL, error=None, fields=()) -> dict:
    """See :meth:`Blocks.exchange`.

    Args:
        call: the public call this is part of; it names the agreement and keys
            the header cache, so each call keeps its own pattern.
        error: an exception this rank found before, raised on every rank.
        fields: more values that must agree across ranks (see ``World.agree``).
    """
    world = blocks.world
    # the agreement's key (see World.begin) where its only field is the Blocks
    key = None if fields else (call, blocks.id)
    fields = [the_blocks(blocks, call), *fields]
    channel = world.cache.get(("exchange", call))
    if channel is None:
        channel = world.cache[("exchange", call)] = _Channel(call)
    repeat, total = channel.repeat, None
    arrays = (None if error or repeat is None or repeat.blocks is not blocks
              else repeat.match(messages))
    if arrays is not None:          # the headers are channel.out's
        if channel.hot and world.overlaps:
            express = repeat.express
            if express is None or (express and express.blocks is not blocks):
                express = _express_for(blocks, channel, repeat, arrays)
            if express:
                total, result = express.run(fields, arrays, key)
                if result is not None:
                    return result
        outgoing, headers, changed = repeat.outgoing(arrays), channel.out, 0
    else:
        repeat = None
        outgoing, problem = fault(_outgoing, blocks, messages)
        error = error or problem
        headers = None if error else {r: tuple(h for h, _ in items)
                                      for r, items in outgoing.items()}
        changed = int(error is None and headers != channel.out)
    if total is not None:
        pass                        # the express path missed: agreed and drained
    elif channel.hot and world.overlaps and channel.blocks is blocks:
        # (another Blocks may have moved the blocks the agreed receives are for;
        # Blocks are made collectively, so every rank takes the same branch)
        total, received = _speculate(blocks, channel, outgoing, changed, error, fields,
                                     repeat)
        if received is not None:
            if repeat is None:
                channel.remember(_Repeat(messages, outgoing, blocks))
            return _assemble(blocks, outgoing.get(world.rank, []), received)
    else:
        total = world.agree(call, error, fields, count=changed)
    channel.hot, channel.blocks = not total, blocks
    if total:
        sent = [headers.get(r, ()) if r != world.rank else () for r in range(world.size)]
        channel.incoming = world.alltoall(sent)
        channel.receiving = _receive_plan(world, channel.incoming)
        channel.out = headers
        if repeat is not None:      # other ranks' messages changed: a new layout
            repeat.drop_express()
        channel.sizes = {r: pairs.message_sizes(h, world.gpu_aware)
                         for r, h in headers.items() if r != world.rank}
    if repeat is None:
        channel.remember(_Repeat(messages, outgoing, blocks))
    received = _transfer(blocks, outgoing, channel)
    return _assemble(blocks, outgoing.get(world.rank, []), received)


def _express_for(blocks, channel, repeat, arrays):
    """A new express path for the repeat (False where it has none)."""
    repeat.drop_express()
    repeat.express = Express.make(blocks, channel, repeat, repeat.outgoing(arrays))
    return repeat.express


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
                items.append(((src_id, dst_id, name, T.type_name(array.dtype), array.shape),
                              array))
    return per_rank


def _order(key):
    return (0, key) if isinstance(key, int) and not isinstance(key, bool) else (1, 0)


def _speculate(blocks, channel, outgoing, changed, error, fields, repeat) -> tuple:
    """Post the agreed pattern's messages with the agreement; ``(sum of changed,
    received)``, received None unless every rank's messages were this call's."""
    world = blocks.world
    direct = world.gpu_aware
    posts = _receives(blocks, channel.receiving, direct)
    if changed or error is not None:     # what the peers expect, empty
        sends = [(peer, [_EMPTY] * len(sizes)) for peer, sizes in channel.sizes.items()]
    elif repeat is not None and not direct:
        sends = _repeat_sends(world, repeat, outgoing)
    else:
        sends = _sends(world, outgoing, direct)
    world.begin(channel.call, error, fields, changed, speculative=True)
    requests, tag = [], channel.tag
    for peer, _, _, buffers in posts:
        for buffer in buffers:
            requests.append(world.spec_irecv(buffer, peer, tag))
    for peer, buffers in sends:
        for buffer in buffers:
            requests.append(world.spec_isend(buffer, peer, tag))
    total, hit = world.finish()
    if not hit:
        return total, None
    wait_all(requests)
    return 0, _received(blocks, posts, direct)


def _transfer(blocks, outgoing: dict, channel) -> list:
    """Send ``outgoing`` to the other ranks; ``[(header, array)]`` received.

    Receives are posted first and sends right after, so that the peers can
    move on. The received arrays are made after the wait: on a device the host
    cannot address they are copies of the receive buffers (on CUDA, made
    before the wait, they copied buffers MPI had not filled yet)."""
    world = blocks.world
    if world.size == 1:
        return []
    direct, tag = world.gpu_aware, channel.tag
    posts = _receives(blocks, channel.receiving, direct)
    requests = [world.irecv(b, peer, tag) for peer, _, _, buffers in posts
                for b in buffers]
    requests.extend(world.isend(b, peer, tag) for peer, buffers in
                    _sends(world, outgoing, direct) for b in buffers)
    wait_all(requests)
    return _received(blocks, posts, direct)


def _receive_plan(world, incoming: list) -> list:
    """``(peer, headers, message sizes)`` per other rank that sends here."""
    return [(peer, headers, pairs.message_sizes(headers, world.gpu_aware))
            for peer, headers in enumerate(incoming) if peer != world.rank and headers]


def _receives(blocks, receiving: list, direct: bool) -> list:
    """``(peer, headers, holders, buffers to post)`` per peer that sends here: host
    buffers with their addresses (staged), or new arrays, None for an empty
    message (direct)."""
    posts = []
    for peer, headers, sizes in receiving:
        if direct:
            arrays = [_receive_direct(blocks, h) for h in headers]
            posts.append((peer, headers, arrays,
                          [a for a in arrays if a is not None and a.nbytes]))
        else:
            held = [transport.new_buffer_at(n) for n in sizes]
            posts.append((peer, headers, held, [b for b, _ in held]))
    return posts


def _sends(world, outgoing: dict, direct: bool) -> list:
    """``(peer, buffers)``: what goes to each other rank, in message order."""
    out, rank = [], world.rank
    for peer, items in outgoing.items():
        if peer == rank:
            continue
        if direct:
            out.append((peer, [transport.for_mpi(a) for _, a in items
                               if a is not None and a.nbytes]))
        else:
            out.append((peer, pairs.send_staged(items, pairs.staging(world), peer)))
    return out


def _repeat_sends(world, repeat, outgoing) -> list:
    """``_sends`` for a repeated call: the arrays' host views, made at the first
    repeat, sent as they are or packed into the staging buffer."""
    plans = repeat.sends
    if plans is None:
        plans = repeat.sends = pairs.send_plans(world, outgoing)
    if plans is False:                  # an array the host cannot read
        return _sends(world, outgoing, False)
    out = []
    for peer, packed, total, single in plans:
        if packed:
            buffer = pairs.staging(world).get(peer, total)
            for offset, view in packed:
                buffer[offset: offset + view.nbytes] = view
            out.append((peer, [buffer] + single))
        else:
            out.append((peer, single))
    return out


def _received(blocks, posts, direct) -> list:
    """``(header, array)`` of every message posted (read only after the wait)."""
    if direct:
        return [pair for _, headers, arrays, _ in posts for pair in zip(headers, arrays)]
    return [pair for _, headers, held, _ in posts
            for pair in pairs.wrap_staged(blocks, headers, held)]


def _receive_direct(blocks, header):
    src, dst, name, dtype, shape = header
    if name is None:
        return None
    return transport.empty_on(blocks.device(dst), T.from_type_name(dtype), shape)


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
