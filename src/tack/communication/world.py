"""``World``: the processes that share blocks, and the low-level calls on them.

A world is one process (``World()``, no MPI at all) or an MPI communicator
(``World(comm)``), which it duplicates so that Tack's messages never meet the
caller's. Tack does not import ``mpi4py`` for this (only a GPU-aware CUDA
world asks mpi4py's MPI library whether it takes device memory,
``transport.mpi_refuses_cuda``): it calls the methods of the object it is
given (``Dup``, ``Get_rank``, ``Get_size``, ``allgather``, ``alltoall``,
``Isend``, ``Irecv``; ``Allreduce``, ``Send_init`` and ``Recv_init`` are used
when present, and replaced by the required ones when not).

Every collective call starts with :meth:`World.agree`, a fixed-size sum over
the ranks that carries a call counter, the operation, an error flag and
fields that must be equal everywhere. So calls made in a different order, an
error found on one rank, or a value that differs across ranks raise on every
rank instead of hanging or giving a wrong answer.

The sum is a persistent ``Allreduce_init`` request, made with the world,
where the communicator has one (MPI 4), else an ``Iallreduce``; every rank
makes the same choice, so the agreements of all ranks always match. A
repeated call writes only the call counter and the flags into the vector and
recognises the usual answer (every rank gave the same vector) with one
comparison, so an agreement costs little more than its message time.

Where the communicator has ``Iallreduce`` the sum is nonblocking, and a call
that repeats what every rank agreed to last time (``exchange`` with the same
headers, ``Plan.run`` with the same element type) may *speculate*: it posts
its data messages between :meth:`World.begin` and :meth:`World.finish`, so
they travel while the sum does. A rank that cannot send what it sent last
time (an error, a new pattern) sends empty messages in their place. The data
is used only when the sum says that every rank speculated, nothing changed
and nothing failed; otherwise every rank drains the speculative messages
(:meth:`World._drain`: each rank says what it posted, the missing messages are
sent empty and the unreceived ones received) before it raises or takes the
slow path, so nothing is left in flight. Speculative messages travel on a tag
of their own per channel (exchange call or plan), which only that channel's
messages, agreed the same way on every rank, use.
"""

from __future__ import annotations

import hashlib
import weakref
import zlib

import numpy as np

from .errors import agreed_error, error_record, mismatch_message

REQUIRED = ("Dup", "Get_rank", "Get_size", "allgather", "alltoall", "Isend", "Irecv")
MAX_FIELDS = 4
_FIELD = 1 << 20           # field values are reduced modulo this before squaring
# Tags: agreement messages, then one band per kind of data message.
TAG_AGREE, TAG_DATA, TAG_TREE, TAG_PLAN, TAG_IO = 11, 12, 64, 13, 14   # TAG_IO: tack.io
# Channels: each exchange call and each Plan has a tag of its own (MPI allows
# tags up to at least 32767).
TAG_CHANNELS, CHANNELS = 1024, 1024
TAG_PLANS, PLANS = 4096, 16384
# Vector slots before the codes: error flag, count, speculating flag.
_SLOTS = 3
_EMPTY = np.empty(0, np.uint8)


def channel_tag(call: str) -> int:
    """The tag of an exchange channel (the same on every rank)."""
    return TAG_CHANNELS + zlib.crc32(call.encode()) % CHANNELS


def plan_tag(serial: int) -> int:
    """The tag of the plan with serial number ``serial``."""
    return TAG_PLANS + serial % PLANS


def field_codes(value) -> tuple:
    """Two small deterministic integers for ``value``: equal values, equal codes;
    different values, different codes but for a chance of about 2**-40 (two
    independent 20-bit codes: one alone, 2**-20, let real pairs of shapes
    through). A small int is its own code; -0.0 is 0.0."""
    if isinstance(value, int) and 0 <= value < _FIELD:
        return value + 1, value + 1
    if isinstance(value, float):
        value += 0.0                       # -0.0 + 0.0 is 0.0: equal values
    digest = int.from_bytes(hashlib.blake2b(repr(value).encode(), digest_size=8).digest(),
                            "little")
    return digest % (_FIELD - 1) + 1, (digest >> 32) % (_FIELD - 1) + 1


class World:
    """The processes a :class:`Blocks` spreads over.

    Args:
        comm: an mpi4py communicator, or any object with ``Dup``, ``Get_rank``,
            ``Get_size``, ``allgather``, ``alltoall``, ``Isend`` and ``Irecv``;
            ``None`` for one process without MPI.
        gpu_aware: hand MPI the arrays themselves through DLPack instead of
            staging them through host buffers.

    A program uses ``rank``, ``size``, ``gpu_aware``, ``comm``, ``free()`` and
    the ``with`` block. The other methods (``agree``, ``begin``, ``finish``,
    ``isend``, ...) are the protocol the layer's calls share: a program that
    called them would number its messages out of step with the other ranks.
    """

    def __init__(self, comm=None, gpu_aware: bool = False):
        flag = None if isinstance(gpu_aware, (bool, np.bool_)) else TypeError(
            f"tack.World(): gpu_aware must be True or False, not {gpu_aware!r}")
        if comm is None:
            if flag is not None:
                raise flag
            if gpu_aware:
                raise ValueError("World(gpu_aware=True) needs a communicator: a world "
                                 "of one process sends no messages")
            self._comm, self.rank, self.size = None, 0, 1
        else:
            missing = [m for m in REQUIRED if not hasattr(comm, m)]
            if missing:
                raise TypeError(f"World() takes an mpi4py communicator or an object "
                                f"with {', '.join(REQUIRED)}; "
                                f"{type(comm).__name__} has no {', '.join(missing)}")
            self._comm = _duplicate(comm)
            self.rank, self.size = self._comm.Get_rank(), self._comm.Get_size()
        self.gpu_aware = bool(gpu_aware)
        self._calls = 0
        self._freed = False
        self._out_of_step = False   # ranks were found in different calls
        self._serial = 0
        # slots: the flags, then the call counter and two codes for the operation
        # and for each field, each as (ranks, sum, sum of squares)
        self._vector = np.zeros(_SLOTS + 3 * (1 + 2 * (1 + MAX_FIELDS)), np.int64)
        self._vector[_SLOTS] = 1                  # the call counter's count slot
        self._slots = memoryview(self._vector)    # cheap writes of single slots
        self._total = np.zeros_like(self._vector)
        self._written = None       # the tail the vector holds
        self._expect = None        # the total when every rank gives this vector
        # Whether agreements are nonblocking, so that calls may speculate.
        self.overlaps = self._comm is not None and self.size > 1 and \
            hasattr(self._comm, "Iallreduce")
        self._persistent = self._persistent_sum() if self.overlaps else None
        self._start_all = None if self._persistent is None else \
            getattr(type(self._persistent), "Startall", start_all)
        self._open = None          # the agreement begun and not finished
        self._request = None       # its request (Iallreduce or the persistent one)
        self._posted = []          # speculative messages: (kind, peer, tag, nbytes)
        self._requests = []        # and their requests
        self.cache = {}          # per-world state of the calls (header caches, staging)
        # holders of persistent requests on the communicator (plans' states):
        # MPI frees a communicator only once its requests are freed
        self._holders = weakref.WeakSet()
        self._codes = {}
        self._tails = {}
        if self._comm is not None:   # one transport for every rank
            try:
                self.agree("tack.World()", flag, [(self.gpu_aware, ValueError,
                                                   "tack.World(): gpu_aware")])
            except BaseException:
                self._release()      # every rank raises, each releases its own
                raise
            self._calls = 0          # messages number the user's calls from 1

    # -- life cycle -----------------------------------------------------------------
    @property
    def comm(self):
        """The duplicated communicator (``None`` for ``World()``)."""
        return self._comm

    def free(self) -> None:
        """Release the duplicated communicator; the world cannot be used after.

        Collective, as MPI's ``Comm_free`` is: every rank frees its world, after
        the same calls. It agrees first, as every call does, so that a rank that
        skipped a call and frees while the others wait in it raises the
        "collective calls differ" ``ValueError``, there and on the others,
        instead of leaving them waiting. The world is released either way."""
        if self._freed:
            return
        error = None
        if self._comm is not None and self.size > 1 and self._open is None and \
                not self._out_of_step:
            try:
                self.agree("World.free()")
            except BaseException as exc:   # noqa: BLE001 (raised below, once freed)
                error = exc
        self._release()
        if error is not None:
            raise error

    def _release(self) -> None:
        """Free the requests and the communicator, without agreeing."""
        if self._freed:
            return
        self._freed = True
        for holder in list(self._holders):
            holder.free()
        for state in list(self.cache.values()):
            if hasattr(state, "free"):
                state.free()
        self.cache.clear()
        if self._persistent is not None:
            self._persistent.Free()
            self._persistent = None
        if self._comm is not None and hasattr(self._comm, "Free"):
            self._comm.Free()
        self._comm = None

    def hold(self, holder) -> None:
        """Note ``holder`` (with ``free()``) as holding persistent requests on
        the communicator: :meth:`free` frees them first."""
        self._holders.add(holder)

    def __enter__(self) -> "World":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        # An exception leaving the block (on this rank only, perhaps, while the
        # others wait elsewhere) goes on at once, to mpi4py's abort under
        # ``python -m mpi4py``: the world is released without agreeing.
        if exc_type is None:
            self.free()
        else:
            self._release()

    def __repr__(self) -> str:
        kind = "MPI" if self._comm is not None else "one process"
        return f"tack.World(rank={self.rank}, size={self.size}, {kind})"

    def require_open(self, call: str) -> None:
        if self._freed:
            raise RuntimeError(f"{call} on a World that was freed")

    def next_serial(self) -> int:
        """A number every rank gives to the same collectively made object."""
        self._serial += 1
        return self._serial

    # -- agreement ------------------------------------------------------------------
    def agree(self, operation: str, error=None, fields=(), count: int = 0) -> int:
        """Start a collective call: raise on every rank if any rank found a problem.

        Args:
            operation: the call's name; every rank must be in the same call.
            error: the exception this rank found before communicating, or None.
            fields: up to ``MAX_FIELDS`` tuples ``(value, exc_type, what)`` or
                ``(value, exc_type, what, show)``, ``show`` spelling a value in
                the message (default ``repr``);
                ``value`` (None where this rank has none) must be equal on every
                rank, else every rank raises ``exc_type`` naming ``what``.
            count: a number summed over the ranks.

        Returns:
            The sum of ``count`` over the ranks.
        """
        self.begin(operation, error, fields, count)
        return self.finish()[0]

    def begin(self, operation: str, error=None, fields=(), count: int = 0,
              speculative: bool = False, bundle=None, key=None) -> None:
        """Post the agreement of :meth:`agree` without waiting for it.

        Between ``begin`` and :meth:`finish` a speculating call (``speculative``,
        only where :attr:`overlaps`) posts its messages with :meth:`spec_irecv`,
        :meth:`spec_isend` and :meth:`spec_started`. Nothing between the two may
        raise: every rank counts on this rank's messages.

        ``bundle``: a list that starts with :attr:`agreement_request` and goes on
        with the call's persistent speculative requests, all started at once
        (where the agreement is persistent); the call tells them with
        :meth:`spec_started`. ``key``: a hashable value that names ``operation``
        and the fields' values (equal keys, equal values), saving their lookup.
        """
        if self._freed:
            self.require_open(operation)
        self._calls += 1
        self._open = (operation, error, fields, count)
        if self.size == 1:
            return
        call = self._calls % (_FIELD - 1) + 1
        tail, expect = pair = self._tail(operation, fields, key)
        slots = self._slots
        slots[0] = 1 if error is not None else 0
        slots[1] = count
        slots[2] = 1 if speculative else 0
        slots[_SLOTS + 1] = call
        slots[_SLOTS + 2] = call * call
        if pair is not self._written:
            self._vector[_SLOTS + 3:] = tail
            self._written = pair
        self._expect = (call, speculative, expect)
        if self._persistent is not None:
            if bundle is None:
                self._persistent.Start()
            else:
                self._start_all(bundle)
            self._request = self._persistent
        elif self.overlaps:
            self._request = self._comm.Iallreduce(self._vector, self._total)

    def finish(self) -> tuple:
        """Wait for the agreement begun by :meth:`begin`; raise on every rank if it
        failed.

        Returns:
            ``(sum of count, hit)``: ``hit`` when every rank speculated, the
            counts sum to zero and nothing failed, so that the speculative
            messages are the call's; the caller then waits for them. Otherwise
            they are complete (drained) when this returns or raises.
        """
        operation, error, fields, count = self._open
        self._open = None
        if self.size == 1:
            if error is not None:
                raise error
            return count, False
        if self._request is not None:
            self._request.Wait()
            self._request = None
            total = self._total.tolist()
        else:
            total = self._sum(self._vector).tolist()
        call, speculative, expect = self._expect
        size, speculated = self.size, total[2]
        if total[0] == 0 and speculated == (size if speculative else 0) and \
                total[_SLOTS] == size and total[_SLOTS + 1] == size * call and \
                total[_SLOTS + 2] == size * call * call and total[_SLOTS + 3:] == expect:
            # The usual answer, every rank gave this vector but for the count:
            # one call, equal fields, no error (what the checks below find).
            hit = speculated == size and total[1] == 0
            posted, self._posted = self._posted, []
            requests, self._requests = self._requests, []
            if speculated and not hit:
                self._drain(posted, requests)
            return total[1], hit
        same_call = _all_equal(total, 0) and _code_equal(total, 0)
        same_fields = same_call and all(_code_equal(total, i)
                                        for i in range(1, 1 + len(fields)))
        hit = same_fields and not total[0] and not total[1] and speculated == self.size
        posted, self._posted = self._posted, []
        requests, self._requests = self._requests, []
        if not hit and speculated:
            self._drain(posted, requests)
        if not same_call:
            names = self.allgather((operation, self._calls))
            self._out_of_step = True    # free() cannot agree with ranks out of step
            raise ValueError(mismatch_message(names))
        if total[0]:
            faults = self.allgather(None if error is None else error_record(error))
            raise agreed_error(error, faults, self.rank)
        for i, (value, exc_type, what, *show) in enumerate(fields, start=1):
            if not _code_equal(total, i):
                values = self.allgather(value)
                seen = sorted({(show[0] if show else repr)(x) for x in values
                               if x is not None})
                raise exc_type(f"{what} differs between ranks: {', '.join(seen)}")
        return total[1], hit

    @property
    def agreement_request(self):
        """The persistent request of the agreement's sum, or None (see ``begin``)."""
        return self._persistent

    # -- speculative messages ---------------------------------------------------------
    def spec_irecv(self, buffer, peer: int, tag: int):
        """``Irecv`` of a speculative message (see :meth:`begin`)."""
        request = self._comm.Irecv(buffer, peer, tag)
        self._posted.append((0, peer, tag, 0))
        self._requests.append(request)
        return request

    def spec_isend(self, buffer, peer: int, tag: int):
        """``Isend`` of a speculative message (see :meth:`begin`)."""
        request = self._comm.Isend(buffer, peer, tag)
        self._posted.append((1, peer, tag, buffer.nbytes))
        self._requests.append(request)
        return request

    def spec_started(self, requests, posted) -> None:
        """Speculative persistent requests, started by the caller; ``posted`` as
        ``(kind, peer, tag, nbytes)``, kind 0 for a receive and 1 for a send."""
        self._requests.extend(requests)
        self._posted.extend(posted)

    def _drain(self, posted, requests) -> None:
        """Complete every rank's speculative messages: each rank tells each peer
        the sizes it sent and how many receives it posted, per tag; a receive
        nothing was sent for gets an empty message, a message nothing was posted
        for is received into a scratch buffer. Messages of one peer and tag
        arrive in order, so the posted receives take the first ones."""
        told = [({}, {}) for _ in range(self.size)]      # per peer: (sent, received)
        for kind, peer, tag, nbytes in posted:
            if kind:
                told[peer][0].setdefault(tag, []).append(nbytes)
            else:
                told[peer][1][tag] = told[peer][1].get(tag, 0) + 1
        heard = self._comm.alltoall(told)
        requests = list(requests)
        for peer, (sent_here, received_there) in enumerate(heard):
            sent_there, received_here = told[peer]
            for tag, sizes in sent_here.items():
                for nbytes in sizes[received_here.get(tag, 0):]:
                    requests.append(self._comm.Irecv(np.empty(nbytes, np.uint8), peer,
                                                     tag))
            for tag, wanted in received_there.items():
                for _ in range(wanted - len(sent_there.get(tag, ()))):
                    requests.append(self._comm.Isend(_EMPTY, peer, tag))
        wait_all(requests)

    def _tail(self, operation: str, fields, key=None) -> tuple:
        """The vector's slots after the call counter's: the operation's and the
        fields' codes, zero-padded, and their sums when every rank gives the same
        (kept for the operations and values seen)."""
        try:
            if key is None:
                key = (operation,) + tuple([(type(f[0]), f[0]) for f in fields]) \
                    if fields else operation
            tail = self._tails.get(key)
        except TypeError:              # a value that cannot be a key
            key, tail = None, None
        if tail is None:
            tail = []
            for codes in [self._code(operation)] + [None if v is None else field_codes(v)
                                                    for v, *_ in fields]:
                tail += (0,) * 6 if codes is None else \
                    (1, codes[0], codes[0] ** 2, 1, codes[1], codes[1] ** 2)
            tail += [0] * (self._vector.size - _SLOTS - 3 - len(tail))
            tail = (tail, [self.size * x for x in tail])
            if key is not None:
                if len(self._tails) >= 1024:   # many Blocks, Plans or Routings made
                    self._tails.clear()
                self._tails[key] = tail
        return tail

    def _code(self, operation: str) -> tuple:
        codes = self._codes.get(operation)
        if codes is None:
            codes = self._codes[operation] = field_codes(operation)
        return codes

    def _persistent_sum(self):
        """A persistent sum of the agreement vector (``Allreduce_init``, MPI 4), or
        None where the communicator or the MPI library has none. Made while the
        world is (collectively) made, so every rank makes it at the same point."""
        make = getattr(self._comm, "Allreduce_init", None)
        if make is None:
            return None
        try:
            return make(self._vector, self._total)
        except NotImplementedError:     # mpi4py on an MPI 3 library
            return None

    def _sum(self, vector: np.ndarray) -> np.ndarray:
        if hasattr(self._comm, "Allreduce"):
            self._comm.Allreduce(vector, self._total)   # mpi4py's default op is SUM
            return self._total
        return np.sum(self._comm.allgather(vector.copy()), axis=0)

    # -- thin wrappers --------------------------------------------------------------
    def sum_ints(self, vector: np.ndarray) -> np.ndarray:
        """The element-wise sum over the ranks of an int64 vector of one length."""
        vector = np.ascontiguousarray(vector, np.int64)
        if self.size == 1:
            return vector.copy()
        if hasattr(self._comm, "Allreduce"):
            out = np.empty_like(vector)
            self._comm.Allreduce(vector, out)
            return out
        return np.sum(self._comm.allgather(vector), axis=0)

    def allgather(self, value) -> list:
        return [value] if self._comm is None else self._comm.allgather(value)

    def alltoall(self, values: list) -> list:
        return list(values) if self._comm is None else self._comm.alltoall(values)

    def isend(self, buffer, rank: int, tag: int):
        return self._comm.Isend(buffer, rank, tag)

    def irecv(self, buffer, rank: int, tag: int):
        return self._comm.Irecv(buffer, rank, tag)

    @property
    def persistent(self) -> bool:
        """Whether the communicator makes persistent requests."""
        return hasattr(self._comm, "Send_init") and hasattr(self._comm, "Recv_init")


def _duplicate(comm):
    """``comm.Dup()``; where MPI refuses it, the error says what usually runs out
    (MPICH allows about 2048 communicators in a process)."""
    try:
        return comm.Dup()
    except Exception as exc:
        if hasattr(exc, "add_note"):
            exc.add_note("tack.World(comm) works on a duplicate of comm, which it keeps "
                         "until world.free(): a program that makes a World per step "
                         "(or per Blocks) must free each one, or MPI runs out of "
                         "communicators")
        raise


def _code_equal(total: list, index: int) -> bool:
    """Whether every rank gave the same value for the operation (``index`` 0)
    or field ``index`` (from 1): both its codes are equal everywhere."""
    return _all_equal(total, 1 + 2 * index) and _all_equal(total, 2 + 2 * index)


def _all_equal(total: list, slot: int) -> bool:
    """Whether every rank that gave slot ``slot`` gave the same value (the sums of
    the codes and of their squares meet Cauchy-Schwarz with equality)."""
    n, s, q = total[_SLOTS + 3 * slot: _SLOTS + 3 + 3 * slot]
    return s * s == n * q


def wait_all(requests) -> None:
    """Complete ``requests`` (mpi4py's ``Waitall`` when the requests have it)."""
    if not requests:
        return
    waitall = getattr(type(requests[0]), "Waitall", None)
    if waitall is not None:
        waitall(requests)
    else:
        for request in requests:
            request.Wait()


def start_all(requests) -> None:
    if not requests:
        return
    startall = getattr(type(requests[0]), "Startall", None)
    if startall is not None:
        startall(requests)
    else:
        for request in requests:
            request.Start()
