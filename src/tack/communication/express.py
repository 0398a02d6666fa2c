"""The express path of a repeated exchange: one generated function per layout.

An exchange whose arrays are the very objects of the previous call, on a
channel whose previous call was also a repeat, moves the same messages as
before. ``Express`` lays such a call out once: the receive buffers and the
arrays each holds, the sends, what the world must be told of the speculative
messages, the local messages' places and the result's shape. From that it
writes ``run(fields, sent, key)``, straight-line Python with no loop over the
layout and no branch on it (as the kernels' warm launches are written, see
``runtime/launcher.py``): start, agree, wait, hand out arrays made from
templates (``Array.rebased``) and return the result as one dict display.

Host-staged transport only, with every array readable, and every
destination device addressing, host memory. Where the communicator makes
persistent requests, the small messages (each under
``transport.PERSISTENT`` bytes, received together in at most ``COPIED``
bytes) travel by persistent requests started in one call with the
agreement: they are received into a region of the express's own and copied
out to a new buffer, which is cheaper than posting receives. Other messages
are posted per call, received into new buffers.
"""

from __future__ import annotations

from ..runtime.backend import Backend
from . import pairs, transport
from .world import _EMPTY, start_all, wait_all

COPIED = 1 << 14    # the most bytes a repeated call receives by copying


class Express:
    """The laid-out hot path of one repeated call; ``run(fields, sent, key)`` returns
    ``(0, result)``, or ``(sum of changed, None)`` when some rank did not repeat
    its call (every speculative message is complete then). ``sent``: the call's
    arrays, as ``_Repeat.match`` found them; ``key``: the agreement's (see
    ``World.begin``), or None."""

    def __init__(self, blocks, channel, repeat, plans):
        world = blocks.world
        self.blocks, self.world = blocks, world
        self.call, self.tag = channel.call, channel.tag
        self.backends = [b for b in {id(b): b for b in (blocks.device(g).backend
                                                         for g in blocks.local)}.values()
                         if type(b).synchronize is not Backend.synchronize]  # queues
        self.local, self.empties, entries, messages = [], [], [], []
        for header, j in repeat.template.get(world.rank, ()):
            if j is not None:
                self.local.append((len(entries), blocks.device(header[1]), j))
            entries.append(header)
        for peer, headers, _ in channel.receiving:
            items, packed, total, large = pairs.pair_layout(headers)
            layouts = ([(total, packed)] if packed else []) + \
                [(items[i][2], ((i, 0),)) for i in large]
            for nbytes, places in layouts:
                messages.append((peer, nbytes, [
                    (len(entries) + i, offset, items[i][2],
                     pairs.template(blocks, headers[i], items[i]))
                    for i, offset in places]))
            for i, item in enumerate(items):
                if item is not None and not item[2]:
                    self.empties.append((len(entries) + i,
                                         pairs.template(blocks, headers[i], item)))
            entries.extend(headers)
        self.shape = _result_shape(blocks, entries)
        self.posted = [(0, peer, self.tag, 0) for peer, _, _ in messages]
        self._receives(messages)
        self._sends(plans)
        agreement = world.agreement_request
        self.bundle = None if agreement is None else [agreement] + self.started
        self.source = self._source()
        self.run = self._compile()

    @classmethod
    def make(cls, blocks, channel, repeat, outgoing):
        """The layout, or False where the express path does not apply."""
        world = blocks.world
        if world.gpu_aware or not all(transport.addresses_host(blocks.device(g))
                                      for g in blocks.local):
            return False
        plans = repeat.sends
        if plans is None:
            plans = repeat.sends = pairs.send_plans(world, outgoing)
        return plans is not False and cls(blocks, channel, repeat, plans)

    def free(self) -> None:
        """Release the persistent requests."""
        started, self.started, self.bundle = self.started, [], None
        for request in started:
            request.Free()

    # -- layout -------------------------------------------------------------------------
    def _receives(self, messages) -> None:
        """The region and its persistent receives, with the layout of what is copied
        out of it; the receives posted per call."""
        world = self.world
        copied = [m for m in messages if m[1] < transport.PERSISTENT]
        offsets, total = transport.layout([n for _, n, _ in copied])
        if not (world.persistent and copied and total <= COPIED):
            copied, total = [], 0
        self.region, self.region_layout, self.started = None, [], []
        if copied:
            self.region = transport.new_buffer(total)
            for (peer, nbytes, layout), at in zip(copied, offsets):
                self.started.append(world.comm.Recv_init(
                    self.region[at: at + nbytes], peer, self.tag))
                self.region_layout.extend((slot, at + offset, n, template)
                                          for slot, offset, n, template in layout)
        taken = {id(m) for m in copied}
        self.posts = [m for m in messages if id(m) not in taken]

    def _sends(self, plans) -> None:
        """Per message: a persistent request (appended to ``started``), or
        ``(buffer, peer)`` sent per call; the packing of the peers that send
        several small arrays."""
        world, comm = self.world, self.world.comm
        self.packs, self.sends = [], []
        for peer, packed, total, single in plans:
            messages = list(single)
            if packed:
                buffer = transport.new_buffer(total)
                self.packs.append((buffer, packed))
                messages.insert(0, buffer)
            for buffer in messages:
                self.posted.append((1, peer, self.tag, buffer.nbytes))
                if world.persistent and buffer.nbytes < transport.PERSISTENT:
                    self.started.append(comm.Send_init(buffer, peer, self.tag))
                else:
                    self.sends.append((buffer, peer))

    # -- the generated run --------------------------------------------------------------
    def _source(self) -> str:
        """The source of ``run(fields, sent, key)`` (kept as ``source``)."""
        self._scope, body = {}, []
        body += [f"sync{k}()" for k in range(len(self.backends))]
        for k, (_, packed) in enumerate(self.packs):
            body += [f"pack{k}[{offset}:{offset + view.nbytes}] = view{k}_{m}"
                     for m, (offset, view) in enumerate(packed)]
        body.append("begin(CALL, None, fields, 0, True, BUNDLE, key)")
        if self.bundle is None and self.started:
            body.append("start_all(STARTED)")
        body.append("requests = list(STARTED)" if self.posts or self.sends else
                    "requests = STARTED")
        for k, (peer, nbytes, _) in enumerate(self.posts):
            body += [f"buffer{k}, at{k} = take({nbytes})",
                     f"requests.append(irecv(buffer{k}, {peer}, TAG))"]
        body += [f"requests.append(isend(send{k}, {peer}, TAG))"
                 for k, (_, peer) in enumerate(self.sends)]
        body += ["spec_started(requests, POSTED)",
                 "total, hit = finish()",
                 "if not hit:",
                 "    return total, None",
                 "wait_all(requests)"]
        held = [(f"buffer{k}", f"at{k}", layout)
                for k, (_, _, layout) in enumerate(self.posts)]
        if self.region is not None:
            body += [f"region, at = take({self.region.nbytes})", "region[:] = REGION"]
            held.append(("region", "at", self.region_layout))
        for buffer, at, layout in held:
            body += [f"x{slot} = T{slot}.rebased({at} + {offset}, {buffer})"
                     for slot, offset, _, _ in layout]
        body += [f"x{slot} = T{slot}.rebased(0, EMPTY)"
                 for slot, _ in self.empties]
        for slot, _, j in self.local:
            body += [f"a = sent[{j}]",
                     f"x{slot} = a if a.device is D{slot} else a.to_device(D{slot})"]
        body.append(f"return 0, {self._display()}")
        return "def run(fields, sent, key):\n" + "".join(f"    {line}\n" for line in body)

    def _display(self) -> str:
        """The result as a dict display over the ``x{slot}`` variables."""
        def key(value) -> str:
            if type(value) in (int, str):
                return repr(value)
            name = f"K{len(self._scope)}"
            self._scope[name] = value
            return name
        return "{" + ", ".join(
            f"{key(dst)}: {{" + ", ".join(
                f"{key(src)}: {{" + ", ".join(f"{key(name)}: x{slot}"
                                              for name, slot in names) + "}"
                for src, names in per_src) + "}"
            for dst, per_src in self.shape) + "}"

    def _compile(self):
        world, comm = self.world, self.world.comm
        scope = self._scope
        scope.update(CALL=self.call, TAG=self.tag, BUNDLE=self.bundle,
                     STARTED=self.started, POSTED=self.posted, REGION=self.region,
                     EMPTY=_EMPTY, begin=world.begin,
                     finish=world.finish, spec_started=world.spec_started,
                     take=pairs.carver(world).take, irecv=comm.Irecv, isend=comm.Isend,
                     wait_all=wait_all, start_all=getattr(
                         type(self.started[0]), "Startall", start_all)
                     if self.started else start_all)
        scope.update({f"sync{k}": b.synchronize for k, b in enumerate(self.backends)})
        for k, (buffer, packed) in enumerate(self.packs):
            scope[f"pack{k}"] = buffer
            scope.update({f"view{k}_{m}": view for m, (_, view) in enumerate(packed)})
        scope.update({f"send{k}": buffer for k, (buffer, _) in enumerate(self.sends)})
        for _, _, layout in self.posts:
            scope.update({f"T{slot}": template for slot, _, _, template in layout})
        scope.update({f"T{slot}": template for slot, _, _, template in self.region_layout})
        scope.update({f"T{slot}": template for slot, template in self.empties})
        scope.update({f"D{slot}": device for slot, device, _ in self.local})
        exec(compile(self.source, f"<tack exchange express of {self.call}>", "exec"), scope)
        return scope["run"]


def _result_shape(blocks, entries) -> list:
    """``[(destination, [(source, [(name, slot)])])]``: the result of a call whose
    messages' headers are ``entries`` (slot k holds entry k's array), in the
    order the general path's ``_assemble`` makes it."""
    shape = {gid: {} for gid in blocks.local}
    for k in sorted(range(len(entries)), key=lambda k: entries[k][0]):
        src, dst, name, _, _ = entries[k]
        names = shape[dst].setdefault(src, [])
        if name is not None:
            names.append((name, k))
    return [(dst, list(per_src.items())) for dst, per_src in shape.items()]
