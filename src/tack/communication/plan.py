"""``Plan``: a fixed pattern of element copies between blocks, checked once, run often.

The constructor checks, across ranks, that every send has a receive of its
length and the other way round, and orders each rank pair's messages by
(source, destination) on both sides. ``run`` then moves the elements: the
first call allocates one send and one receive buffer per peer rank (and makes
persistent requests for the messages under 64 KiB where the communicator has
them; MPICH moves larger ones faster as ``Isend``/``Irecv``, which every run
posts before its gathers); later calls allocate no buffers, reuse the checks
and NumPy views of the last few sets of arrays they saw (a time stepper's two
or three) and only gather, start, wait and scatter. Every element this rank
sends, to itself included, is read before any element is written.

Arrays in host memory are gathered and scattered with NumPy through views,
and so are whole copies of arrays the host cannot read while all of a
rank's are under ``WHOLE`` bytes (written back after the run). Larger ones
go through kernels: with GPU-aware MPI the device buffers they fill are the
messages (``_DirectState``); without, each buffer is copied into its part
of the host message of its rank pair, the same message ``_State`` sends
(``_StagedState``), so only the elements that move leave the device.

After the first run every run speculates (see :mod:`.world`): the receives
and the gathered sends start while the agreement's sum travels, and the
elements are written (local copies and scatters) only when it says every rank
ran this plan with its last element type and no rank failed. A rank that
cannot send (an error, another element type) sends empty messages instead;
the run then drains and raises, or runs again without speculating.
"""

from __future__ import annotations

import sys

import numpy as np

from .. import types as T
from ..runtime.array import Array
from ..runtime.creation import array, empty
from ..runtime.host_ops import copyto
from . import kernels, transport
from .errors import (fault, require_array, require_dict, require_every_local,
                     require_gid, require_on_device, the_blocks)
from .world import _EMPTY, plan_tag, start_all, wait_all

CALL = "Plan()"
# Value sets whose checks and views a plan keeps: time steppers alternate two
# or three arrays (u, v = v, u), and each set's checks cost several times the
# copies of a small halo.
RECENT = 4
RUN = "Plan.run()"
_THE_PLAN, _THE_TYPE = f"{RUN}: the plan", f"{RUN}: the element type"
_THE_OP = f"{RUN}: the op"
OPS = ("copy", "sum")
# Arrays the host cannot read move their planned elements through kernels
# and per-message buffers (_StagedState) when one of a rank's holds this many
# bytes or more; below, a whole copy each way costs less than a launch and a
# copy per message (PoCL: a 32 KiB array 0.5 ms a run by kernels, 0.3 ms whole).
WHOLE = 1 << 18


class Plan:
    """Copies of elements between blocks, set up once and run many times.

    Args:
        blocks: the :class:`Blocks`.
        sends: ``{gid: {destination: index array}}`` for this rank's blocks: the
            positions (in C order) of the elements sent.
        receives: ``{gid: {source: index array}}`` for this rank's blocks: where
            the received elements are written, in the order they were sent.

    Index arrays are one-dimensional integer Tack arrays, NumPy arrays or
    sequences. Raises ``ValueError`` on every rank when a send and its receive
    differ in length or one of them is missing.
    """

    def __init__(self, blocks, sends: dict, receives: dict):
        self.blocks = blocks
        world = blocks.world
        parsed, error = fault(_parse, blocks, sends, receives)
        world.agree(CALL, error, [the_blocks(blocks, CALL)])
        self._sends, self._receives = parsed
        self.id = world.next_serial()
        self.tag = plan_tag(self.id)
        claims = world.alltoall(self._claims())
        problem = _mismatch(blocks, self._sends, self._receives, claims)
        world.agree(CALL, None if problem is None else ValueError(problem))
        self._schedule()
        self._state = None
        self._recent = []   # checked value sets, newest first (_views)
        self._copies = ()   # (array, its whole host copy) to write back after a run

    # -- set-up -----------------------------------------------------------------------
    def _claims(self) -> list:
        """What each rank must confirm: its blocks' sends and receives of ours."""
        claims = [[] for _ in range(self.blocks.world.size)]
        for (s, d), index in self._sends.items():
            claims[self.blocks.rank_of(d)].append(("send", s, d, index.size))
        for (d, s), index in self._receives.items():
            claims[self.blocks.rank_of(s)].append(("receive", s, d, index.size))
        return claims

    def _schedule(self) -> None:
        blocks, rank = self.blocks, self.blocks.world.rank
        self._local = [(s, d, self._sends[s, d], self._receives[d, s])
                       for (s, d) in sorted(self._sends) if d in blocks.local]
        self._out, self._in = {}, {}
        for (s, d) in sorted(self._sends):
            peer = blocks.rank_of(d)
            if peer != rank:
                self._out.setdefault(peer, []).append((s, self._sends[s, d]))
        for (d, s) in sorted(self._receives, key=lambda k: (k[1], k[0])):
            peer = blocks.rank_of(s)
            if peer != rank:
                self._in.setdefault(peer, []).append((d, self._receives[d, s], s))
        # op="copy" writes the parts of an element received from several source
        # blocks in order of source block (the last wins, on any layout)
        by_block = {}
        for (d, _), j in self._receives.items():
            by_block.setdefault(d, []).append(j)
        self._ordered = any(_received_twice(parts) for parts in by_block.values())
        self._highest = {}
        for (g, _), index in list(self._sends.items()) + list(self._receives.items()):
            if index.size:
                self._highest[g] = max(self._highest.get(g, -1), int(index.max()))

    # -- running ----------------------------------------------------------------------
    def run(self, values: dict, op: str = "copy") -> None:
        """Copy the planned elements, in place.

        Args:
            values: ``{gid: Array}`` for every block of this rank, one element type
                on every block of the world.
            op: ``"copy"`` writes each received element over the value there;
                ``"sum"`` adds it (a reverse halo: ghosts added into their
                owners), the parts from each source block in ascending order.
        """
        world = self.blocks.world
        # op as a plain str, or None: any other op (a NumPy array, say) must not
        # raise here, before the agreement the other ranks wait in, and the
        # agreement codes repr(op), which differs for NumPy's str_
        known = str(op) if isinstance(op, str) and op in OPS else None
        views, error = fault(self._checked, values, known, op)
        dtype = None if error or views is None else self._dtype
        fields = [(self.id, ValueError, _THE_PLAN), (dtype, TypeError, _THE_TYPE),
                  (known, ValueError, _THE_OP)]
        add = known == "sum"
        key = (RUN, self.id, dtype, known)  # names the fields' values for World.begin
        state = self._state
        # how this run moves its elements: _views chose it for these arrays (a
        # host-unreadable array crossing WHOLE bytes changes it between runs)
        make = None if error else _DirectState if world.gpu_aware else \
            _StagedState if self._staged else _State
        if state is not None and world.overlaps:
            ready = error is None and state.type_name == dtype and type(state) is make
            bundle = state.bundle if ready else None
            if bundle is not None:          # the sends start with the agreement
                state.gather(views)
            world.begin(RUN, error, fields, count=int(not ready), speculative=True,
                        bundle=bundle, key=key)
            state.start(views if ready else None, speculative=True,
                        started=bundle is not None)
            if world.finish()[1]:
                self._complete(state, views, add)
                return
        else:
            world.agree(RUN, error, fields)
        if state is None or state.type_name != self._dtype or type(state) is not make:
            if state is not None:
                state.free()
            state = self._state = make(self, self._dtype)
        state.start(views)
        self._complete(state, views, add)

    def _complete(self, state, views, add: bool) -> None:
        """Write the received elements, and copy back the small arrays the
        host cannot read that it wrote whole copies of."""
        state.complete(views, add)
        for given, copy in self._copies:
            copyto(given, copy.reshape(given.storage_shape))

    def _checked(self, values, known, op):
        if known is None:
            raise ValueError(f"{RUN}: op must be one of {', '.join(map(repr, OPS))}, "
                             f"not {op!r}")
        return self._views(values)

    def _views(self, values):
        """``{gid: (array, host values by elements or None)}``: None where
        kernels move the elements (GPU-aware transport, or memory the host
        cannot read, where any such array holds ``WHOLE`` bytes or more);
        a whole copy of a smaller one (one read and one write cost less than
        a launch per message), written back after the run; else a view,
        reused while the same arrays come back."""
        blocks = self.blocks
        for known, dtype, staged in self._recent:
            if _same_arrays(known, values):
                self._dtype, self._staged, self._copies = dtype, staged, ()
                return known
        require_dict(RUN, "the values", values)
        require_every_local(blocks, RUN, "the values", values)
        found, types, staged = {}, set(), False
        gpu_aware = blocks.world.gpu_aware
        for g in blocks.local:
            array = require_array(RUN, f"the values of block {g}", values[g])
            require_on_device(blocks, RUN, f"the values of block {g}", g, array)
            types.add(T.type_name(array.dtype))
            if self._highest.get(g, -1) >= array.size:
                raise ValueError(f"{RUN}: the values of block {g} have {array.size} "
                                 f"elements, but the plan uses element "
                                 f"{self._highest[g]}")
            receives = any(d == g for d, _ in self._receives)
            if receives and not array.writable:
                raise ValueError(f"{RUN}: the values of block {g} are read-only, but "
                                 f"the block receives elements")
            view = None if gpu_aware else transport.host_view(array)
            found[g] = (array, view, receives)
            staged = staged or (view is None and not gpu_aware and array.nbytes >= WHOLE)
        if len(types) > 1:
            raise TypeError(f"{RUN}: the values have different element types on "
                            f"different blocks ({', '.join(sorted(types))})")
        views, copies, copied = {}, [], False
        for g, (array, view, receives) in found.items():
            if view is None and not (gpu_aware or staged):   # small: a whole copy
                view, copied = array.numpy(), True
                if receives:
                    copies.append((array, view))
            rows = (-1,) + T.element_shape(array.dtype)   # an element per row
            views[g] = (array, None if view is None else view.reshape(rows))
        self._dtype = types.pop() if types else None
        self._staged, self._copies = staged, copies
        if not copied:   # a copy is taken again at every run
            self._recent = [(views, self._dtype, staged)] + self._recent[:RECENT - 1]
        return views

    def free(self) -> None:
        """Release the buffers and persistent requests; a later ``run`` makes
        them again."""
        if self._state is not None:
            self._state.free()
        self._state = None
        self._recent = []

    def __enter__(self) -> "Plan":
        return self

    def __exit__(self, *exc) -> None:
        self.free()


class _Requests:
    """Receives and sends of one state: persistent requests where the
    communicator makes them and the message is under ``transport.PERSISTENT``
    bytes (MPICH moves larger ones faster as ``Isend``/``Irecv``), else posted
    per run; speculative ones are told to the world."""

    def __init__(self, world, tag, recvs, sends):
        self.world, self.tag = world, tag
        self.recvs, self.sends = recvs, sends         # (buffer, peer)
        comm, persistent = world.comm, world.persistent

        def small(buffer):
            return persistent and buffer.nbytes < transport.PERSISTENT
        self.recv_init = [comm.Recv_init(b, p, tag) if small(b) else None for b, p in recvs]
        self.send_init = [comm.Send_init(b, p, tag) if small(b) else None for b, p in sends]
        world.hold(self)   # freed with the world, or when collected (__del__)
        self.recv_made, self.recv_posts, self.recv_told = self._split(self.recv_init,
                                                                      recvs, 0)
        self.send_made, self.send_posts, self.send_told = self._split(self.send_init,
                                                                      sends, 1)
        made = self.both = self.recv_made + self.send_made
        agreement = world.agreement_request
        # What World.begin starts with the agreement (see there).
        self.bundle = [agreement] + made if agreement is not None and made else None
        self.pending = self.sent = ()

    def _split(self, made, pairs, kind) -> tuple:
        """``(persistent requests, (buffer, peer) posted per run, what the world is
        told of the persistent ones)``."""
        return ([r for r in made if r is not None],
                [pair for r, pair in zip(made, pairs) if r is None],
                [(kind, p, self.tag, b.nbytes) for r, (b, p) in zip(made, pairs)
                 if r is not None])

    def _start(self, made, posts, told, post, spec_post, speculative, started) -> list:
        """Start the persistent requests (unless ``started``) and post the others.
        Each peer has one message each way, so their order does not matter."""
        if made and not started:
            start_all(made)
        requests = made
        if posts:
            post = spec_post if speculative else post
            requests = made + [post(buffer, peer, self.tag) for buffer, peer in posts]
        if speculative and told:
            self.world.spec_started(made, told)
        return requests

    def start_receives(self, speculative: bool, started: bool = False) -> None:
        world = self.world
        self.pending = self._start(self.recv_made, self.recv_posts, self.recv_told,
                                   world.irecv, world.spec_irecv, speculative, started)

    def start_sends(self, speculative: bool, empty: bool = False,
                    started: bool = False) -> None:
        """Start the sends, or (``empty``) an empty message in place of each."""
        world = self.world
        if empty:
            self.sent = [world.spec_isend(_EMPTY, p, self.tag) for _, p in self.sends]
            return
        self.sent = self._start(self.send_made, self.send_posts, self.send_told,
                                world.isend, world.spec_isend, speculative, started)

    def wait_receives(self) -> None:
        wait_all(self.pending)

    def wait_sends(self) -> None:
        wait_all(self.sent)

    def wait(self) -> None:
        """Complete the receives and the sends."""
        if self.pending is self.recv_made and self.sent is self.send_made:
            wait_all(self.both)     # persistent requests only: one call
        else:
            wait_all(self.pending)
            wait_all(self.sent)

    def __del__(self):
        """A plan dropped without ``free()``: its requests go with it (not at
        exit, after MPI has finalized). mpi4py is only looked up, never
        imported: importing it would initialize MPI in a process whose World()
        has none (and a stand-in communicator's requests need no MPI)."""
        mpi = sys.modules.get("mpi4py.MPI")
        if mpi is not None and mpi.Is_finalized():
            return
        self.free()

    def free(self) -> None:
        for request in self.recv_init + self.send_init:
            if request is not None and hasattr(request, "Free"):
                request.Free()
        self.recv_init = [None] * len(self.recvs)
        self.send_init = [None] * len(self.sends)
        self.recv_made, self.send_made, self.bundle = [], [], None


class _State:
    """Buffers and requests of one element type."""

    def __init__(self, plan: Plan, type_name):
        world = plan.blocks.world
        self.type_name = type_name
        element = T.from_type_name(type_name) if type_name else T.u8
        dtype, rows = T.scalar_of(element).numpy, T.element_shape(element)
        self.local = [(s, d, _indexer(i), _indexer(j), np.empty((i.size,) + rows, dtype))
                      for s, d, i, j in plan._local]
        self.gathers, self.scatters, sends, recvs = [], [], [], []
        for peer, items in plan._out.items():
            buffer = np.empty((sum(item[1].size for item in items),) + rows, dtype)
            self.gathers.extend(_pieces(buffer, items))
            sends.append((buffer, peer))
        for peer, items in plan._in.items():
            buffer = np.empty((sum(item[1].size for item in items),) + rows, dtype)
            self.scatters.extend(_pieces(buffer, items))
            recvs.append((buffer, peer))
        self.gathers = [(g, _indexer(i), out, x) for g, i, out, x in self.gathers]
        self.scatters = [(g, _indexer(i), data, x) for g, i, data, x in self.scatters]
        self.requests = _Requests(world, plan.tag, recvs, sends)
        # op="sum": every received part, local and remote, added in order of
        # destination and then source block (the same order on any layout)
        parts = [(d, s, j, data) for s, d, _, j, data in self.local] + \
                [(d, s, j, data) for d, j, data, s in self.scatters]
        self.adds = [(d, j, data) for d, s, j, data in
                     sorted(parts, key=lambda p: (p[0], p[1]))]
        self.ordered = plan._ordered     # op="copy" takes the same order

    @property
    def bundle(self):
        """The persistent requests that may start with the agreement, or None."""
        return self.requests.bundle

    def gather(self, views) -> None:
        """Fill the send buffers. Only reads ``views``."""
        for g, index, out, _ in self.gathers:
            _take(views[g][1], index, out)

    def start(self, views, speculative: bool = False, started: bool = False) -> None:
        """Start the receives, gather and start the sends (empty ones where
        ``views`` is None); ``started``: the bundle was gathered and started with
        the agreement. Only reads ``views``."""
        requests = self.requests
        requests.start_receives(speculative, started)
        if views is None:
            requests.start_sends(speculative, empty=True)
            return
        if not started:
            self.gather(views)
        requests.start_sends(speculative, started=started)
        for s, _, index, _, out in self.local:
            _take(views[s][1], index, out)

    def complete(self, views, add: bool = False) -> None:
        """Write (or ``add``) the local copies and the received elements; wait
        for the sends."""
        if add or self.ordered:
            self.requests.wait()
            for d, index, data in self.adds:
                (_add if add else _put)(views[d][1], index, data)
            return
        for _, d, _, index, data in self.local:
            _put(views[d][1], index, data)
        self.requests.wait()
        for g, index, data, _ in self.scatters:
            _put(views[g][1], index, data)

    def free(self) -> None:
        self.requests.free()


class _DirectState:
    """GPU-aware: a device buffer per message, filled and emptied by Tack kernels and
    handed to MPI through DLPack."""

    bundle = None       # the kernels gather after the receives start

    def __init__(self, plan: Plan, type_name):
        blocks, world = plan.blocks, plan.blocks.world
        self.type_name = type_name
        dtype = T.from_type_name(type_name) if type_name else T.u8

        def on(g, index):
            device = blocks.device(g)
            return (array(index.astype(np.int64), device=device),
                    empty(index.size, dtype, device=device))
        self.local = [(s, d, *on(s, i), *on(d, j)) for s, d, i, j in plan._local]
        self.out = [(peer, s, *on(s, i)) for peer, items in plan._out.items()
                    for s, i in items]
        self.into = [(peer, d, *on(d, i)) for peer, items in plan._in.items()
                     for d, i, _ in items]
        self.adds = self._adds(plan)
        self.ordered = plan._ordered     # op="copy" takes the order of adds
        self.requests = self.messages(plan, world)

    def _adds(self, plan: Plan) -> list:
        """op="sum": as ``_State.adds``, each part with the kernel that adds it
        (in parallel where no index comes twice) and, for a received part, its
        message's number."""
        parts = [(d, s, index, data, None, host)
                 for (s, d, _, data, index, _), (_, _, _, host) in zip(self.local,
                                                                       plan._local)]
        received = [item for _, items in plan._in.items() for item in items]
        parts += [(d, s, index, data, k, host) for k, ((_, _, index, data), (d, host, s))
                  in enumerate(zip(self.into, received))]
        return [(d, index, data, k, _adder(host)) for d, s, index, data, k, host in
                sorted(parts, key=lambda p: (p[0], p[1]))]

    def messages(self, plan: Plan, world) -> _Requests:
        """A message per buffer: the device buffers themselves (mpi4py takes
        them through DLPack; every rank of a GPU-aware world does the same)."""
        return _Requests(world, plan.tag, [(b, p) for p, _, _, b in self.into],
                         [(b, p) for p, _, _, b in self.out])

    def sent(self) -> None:
        """Every message's elements are gathered into its buffer (queued)."""

    def received(self, k: int, buffer) -> None:
        """Message ``k`` has arrived; ``buffer`` is about to be scattered."""

    def start(self, views, speculative: bool = False, started: bool = False) -> None:
        requests = self.requests        # never ``started``: no bundle
        requests.start_receives(speculative)
        if views is None:
            requests.start_sends(speculative, empty=True)
            return
        flat = self.flat = {g: a.reshape(-1) for g, (a, _) in views.items()}
        for _, s, index, buffer in self.out:
            kernels.gather(flat[s], index, buffer)
        self.sent()
        requests.start_sends(speculative)
        for s, _, index, buffer, _, _ in self.local:
            kernels.gather(flat[s], index, buffer)

    def complete(self, views, add: bool = False) -> None:
        flat = self.flat
        if add or self.ordered:
            self.requests.wait_receives()
            for d, index, data, k, adder in self.adds:
                if k is not None:
                    self.received(k, data)
                elif data.device.backend.memory_domain != \
                        index.device.backend.memory_domain:
                    data = data.to_device(index.device)
                (adder if add else kernels.scatter)(flat[d], index, data)
            self.requests.wait_sends()
            return
        for _, d, _, data, index, _ in self.local:
            if data.device.backend.memory_domain != index.device.backend.memory_domain:
                data = data.to_device(index.device)   # blocks on a GPU and the CPU
            kernels.scatter(flat[d], index, data)
        self.requests.wait_receives()
        for k, (_, d, index, data) in enumerate(self.into):
            self.received(k, data)
            kernels.scatter(flat[d], index, data)
        self.requests.wait_sends()

    def free(self) -> None:
        self.requests.free()


class _StagedState(_DirectState):
    """Host-staged transport of arrays the host cannot read (a GPU's, without
    GPU-aware MPI): as ``_DirectState``, kernels gather the sent elements into
    a device buffer per block pair and scatter the received ones, but the
    messages are ``_State``'s (one host buffer per peer rank, the pairs one
    after another), which a peer whose arrays are in host memory sends and
    expects. Only the elements that move cross to the host, never the whole
    array."""

    def messages(self, plan: Plan, world) -> _Requests:
        element = T.from_type_name(self.type_name) if self.type_name else T.u8
        dtype, rows = T.scalar_of(element).numpy, T.element_shape(element)
        self.sent_hosts, self.received_hosts, sends, recvs = [], [], [], []
        for peer, items in plan._out.items():   # the order of self.out and self.into
            buffer = np.empty((sum(item[1].size for item in items),) + rows, dtype)
            self.sent_hosts += [part for _, _, part, _ in _pieces(buffer, items)]
            sends.append((buffer, peer))
        for peer, items in plan._in.items():
            buffer = np.empty((sum(item[1].size for item in items),) + rows, dtype)
            self.received_hosts += [part for _, _, part, _ in _pieces(buffer, items)]
            recvs.append((buffer, peer))
        return _Requests(world, plan.tag, recvs, sends)

    def sent(self) -> None:
        """Copy every gathered buffer to its part of a host message: the first
        read waits for all the gathers, queued before it."""
        for (_, _, _, buffer), host in zip(self.out, self.sent_hosts):
            np.copyto(host, buffer._values())

    def received(self, k: int, buffer) -> None:
        buffer._store(self.received_hosts[k])


def _adder(index: np.ndarray):
    """The kernel that adds a part at ``index``: in parallel where no index
    comes twice, else one iteration adding in order."""
    return kernels.scatter_add if np.unique(index).size == index.size else \
        kernels.scatter_add_in_order


def _same_arrays(views: dict, values) -> bool:
    """Whether ``values`` holds, block by block, the arrays ``views`` was made of."""
    if type(values) is not dict or len(values) != len(views):
        return False
    for g, (given, _) in views.items():
        if values.get(g) is not given:
            return False
    return True


def _indexer(index: np.ndarray):
    """``index`` as a :class:`_Grid` where it is one (a 3-D block's face), else
    as runs ``((slice of the array, start, stop in the message), ...)`` where it
    is a few arithmetic progressions with positive steps (a grid's rows: step
    1; its columns: the row length), copied as strided slices instead of
    gathered and scattered (a 1 MiB row took 0.8 ms a run by ``np.take`` and
    ``np.put``; mpiport audit); else ``index`` itself. Runs of 64 copied by a
    Python loop were 2x slower than ``np.take``."""
    grid = _Grid.of(index)
    if grid is not None:
        return grid
    n = index.size
    most = 1 + n // 256    # runs of 256 elements on average: shorter ones lose to np.take
    steps = np.diff(index)
    changes = np.flatnonzero(steps[1:] != steps[:-1]) + 1   # where the step changes
    if changes.size > 2 * most:
        return index
    runs, k = [], 0
    while k < n and len(runs) <= most:
        stop = k + 1
        if k < n - 1 and steps[k] > 0:      # elements k .. the next change, by steps[k]
            later = np.searchsorted(changes, k, side="right")
            stop = (int(changes[later]) if later < changes.size else n - 1) + 1
        step = int(steps[k]) if stop > k + 1 else 1
        first = int(index[k])
        runs.append((slice(first, first + step * (stop - 1 - k) + 1, step), k, stop))
        k = stop
    return tuple(runs) if k == n and len(runs) <= most else index


class _Grid:
    """An index array that is ``first + outer * i + inner * j`` for ``i <
    rows`` and ``j < columns`` in C order, increasing (no element twice): one
    strided 2-D view of the array, which copies a 64 x 64 face of a 3-D block
    2.5x faster than ``np.take`` and 9x faster than ``np.put``."""

    __slots__ = ("first", "shape", "steps", "_seen")

    def __init__(self, first: int, shape: tuple, steps: tuple):
        self.first, self.shape, self.steps = first, shape, steps
        self._seen = ()     # ((view, its strided view), ...), the last four, replaced at once

    @classmethod
    def of(cls, index: np.ndarray):
        """The grid ``index`` is, or None."""
        steps = np.diff(index)
        if steps.size < 2 or steps[0] <= 0:
            return None
        other = np.flatnonzero(steps != steps[0])
        if other.size == 0:      # one progression: a run
            return None
        columns = int(other[0]) + 1
        rows, inner = index.size // columns, int(steps[0])
        outer = int(index[columns] - index[0])
        if index.size % columns or outer <= inner * (columns - 1):
            return None
        made = index[0] + outer * np.arange(rows)[:, None] + inner * np.arange(columns)
        if not np.array_equal(made.ravel(), index):
            return None
        return cls(int(index[0]), (rows, columns), (outer, inner))

    def strided(self, view: np.ndarray) -> np.ndarray:
        """The elements of ``view`` (rows of it) this grid picks, as a 2-D view
        (kept for the views of the plan's last four sets of arrays, as the plan
        keeps those: a time stepper's ``u, v = v, u``)."""
        seen = self._seen
        for known, strided in seen:
            if known is view:
                return strided
        strided = np.lib.stride_tricks.as_strided(
            view[self.first:], self.shape + view.shape[1:],
            tuple(s * view.strides[0] for s in self.steps) + view.strides[1:])
        self._seen = ((view, strided),) + seen[:3]
        return strided

    def part(self, message: np.ndarray) -> np.ndarray:
        """A message's part in the grid's shape."""
        return message.reshape(self.shape + message.shape[1:])


def _take(view: np.ndarray, index, out: np.ndarray) -> None:
    """``out[:] = view[index]`` by rows (elements); indices were checked at run."""
    if type(index) is _Grid:
        np.copyto(index.part(out), index.strided(view))
    elif type(index) is tuple:
        for run, start, stop in index:
            out[start:stop] = view[run]
    else:
        np.take(view, index, axis=0, out=out, mode="clip")


def _put(view: np.ndarray, index, data: np.ndarray) -> None:
    """``view[index] = data`` by rows (elements); indices were checked at run.
    Runs are written in order, so an element that comes twice ends with the
    later value, as with an index array."""
    if type(index) is _Grid:
        np.copyto(index.strided(view), index.part(data))
    elif type(index) is tuple:
        for run, start, stop in index:
            view[run] = data[start:stop]
    elif view.ndim != 1:
        view[index] = data
    else:
        np.put(view, index, data, mode="clip")


def _add(view: np.ndarray, index, data: np.ndarray) -> None:
    """``view[index] += data``, an element that comes twice adding twice, in order."""
    if type(index) is _Grid:
        strided = index.strided(view)
        np.add(strided, index.part(data), out=strided)
    elif type(index) is tuple:
        for run, start, stop in index:
            view[run] += data[start:stop]
    else:
        np.add.at(view, index, data)


def _received_twice(indices) -> bool:
    """Whether two of one block's receive index arrays (from different source
    blocks) share an element."""
    if len(indices) < 2:
        return False
    each = np.concatenate([np.unique(j) for j in indices])
    return len(np.unique(each)) < len(each)


def _pieces(buffer: np.ndarray, items) -> list:
    """``(block, index, part of buffer, source)`` per item ``(block, index[,
    source])`` (a send's source is None), the parts one after another."""
    out, offset = [], 0
    for g, index, *source in items:
        out.append((g, index, buffer[offset: offset + index.size],
                    source[0] if source else None))
        offset += index.size
    return out


# -- checks -----------------------------------------------------------------------------

def _parse(blocks, sends, receives) -> tuple:
    """``({(source, destination): index}, {(destination, source): index})``."""
    out = []
    for what, table in (("sends", sends), ("receives", receives)):
        require_dict(CALL, f"the {what}", table)
        pairs = {}
        for gid, per_block in table.items():
            gid = require_gid(blocks, CALL, gid)
            if not isinstance(per_block, dict):
                raise TypeError(f"{CALL}: the {what} of block {gid} must be a dict of "
                                f"block ids to index arrays, not "
                                f"{type(per_block).__name__}")
            for other, index in per_block.items():
                other = require_gid(blocks, CALL, other, local=False)
                way = "to" if what == "sends" else "from"
                index = _index(f"the {what} of block {gid} ({way} block {other})", index)
                if index.size:
                    pairs[gid, other] = index
        out.append(pairs)
    return tuple(out)


def _index(what: str, index) -> np.ndarray:
    values = index.numpy() if isinstance(index, Array) else np.asarray(index)
    if values.size == 0:
        return np.empty(0, np.intp)
    if values.dtype.kind not in "iu":
        raise TypeError(f"{CALL}: {what} must be integers, not {values.dtype}")
    if values.ndim != 1:
        raise ValueError(f"{CALL}: {what} must be one-dimensional, not of shape "
                         f"{values.shape}")
    if values.min() < 0:
        raise ValueError(f"{CALL}: {what} has a negative index ({values.min()})")
    if values.max() > np.iinfo(np.intp).max:   # u64 past 2**63 would wrap negative
        raise ValueError(f"{CALL}: {what} has an index past any array "
                         f"({values.max()})")
    return values.astype(np.intp)


def _mismatch(blocks, sends, receives, claims):
    """The first disagreement between this rank's blocks and the others' claims."""
    told_sends, told_receives = {}, {}
    for part in claims:
        for kind, s, d, n in part:
            (told_sends if kind == "send" else told_receives)[s, d] = n
    for (s, d), index in sorted(sends.items()):
        n = told_receives.get((s, d))
        if n is None:
            return (f"{CALL}: block {s} sends {index.size} elements to block {d}, "
                    f"which receives nothing from it")
        if n != index.size:
            return (f"{CALL}: block {s} sends {index.size} elements to block {d}, "
                    f"which receives {n} from it")
    for (d, s), index in sorted(receives.items()):
        if (s, d) not in told_sends:
            return (f"{CALL}: block {d} receives {index.size} elements from block "
                    f"{s}, which sends it nothing")
    return None
