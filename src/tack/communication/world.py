"""``World``: the processes that share blocks, and the low-level calls on them.

A world is one process (``World()``, no MPI at all) or an MPI communicator
(``World(comm)``), which it duplicates so that Tack's messages never meet the
caller's. Tack never imports ``mpi4py``: it calls the methods of the object it
is given (``Dup``, ``Get_rank``, ``Get_size``, ``allgather``, ``alltoall``,
``Isend``, ``Irecv``; ``Allreduce``, ``Send_init`` and ``Recv_init`` are used
when present, and replaced by the required ones when not).

Every collective call starts with :meth:`World.agree`, a fixed-size sum over
the ranks that carries a call counter, the operation, an error flag and
fields that must be equal everywhere. So calls made in a different order, an
error found on one rank, or a value that differs across ranks raise on every
rank instead of hanging or giving a wrong answer.
"""

from __future__ import annotations

import zlib

import numpy as np

from .errors import agreed_error, mismatch_message

REQUIRED = ("Dup", "Get_rank", "Get_size", "allgather", "alltoall", "Isend", "Irecv")
MAX_FIELDS = 4
_FIELD = 1 << 20           # field values are reduced modulo this before squaring
# Tags: agreement messages, then one band per kind of data message.
TAG_AGREE, TAG_DATA, TAG_TREE, TAG_PLAN = 11, 12, 64, 13


def field_code(value) -> int:
    """A small deterministic integer for ``value`` (equal values, equal codes)."""
    if isinstance(value, int) and 0 <= value < _FIELD:
        return value + 1
    return zlib.crc32(repr(value).encode()) % (_FIELD - 1) + 1


class World:
    """The processes a :class:`Blocks` spreads over.

    Args:
        comm: an mpi4py communicator, or any object with ``Dup``, ``Get_rank``,
            ``Get_size``, ``allgather``, ``alltoall``, ``Isend`` and ``Irecv``;
            ``None`` for one process without MPI.
        gpu_aware: hand MPI the arrays themselves through DLPack instead of
            staging them through host buffers.
    """

    def __init__(self, comm=None, gpu_aware: bool = False):
        if comm is None:
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
            self._comm = comm.Dup()
            self.rank, self.size = self._comm.Get_rank(), self._comm.Get_size()
        self.gpu_aware = bool(gpu_aware)
        self._calls = 0
        self._freed = False
        self._serial = 0
        self._vector = np.zeros(2 + 3 * (2 + MAX_FIELDS), np.int64)
        self._total = np.zeros_like(self._vector)
        self.cache = {}          # per-world state of the calls (header caches, staging)
        self._codes = {}

    # -- life cycle -----------------------------------------------------------------
    @property
    def comm(self):
        """The duplicated communicator (``None`` for ``World()``)."""
        return self._comm

    def free(self) -> None:
        """Release the duplicated communicator; the world cannot be used after."""
        if self._freed:
            return
        self._freed = True
        self.cache.clear()
        if self._comm is not None and hasattr(self._comm, "Free"):
            self._comm.Free()
        self._comm = None

    def __enter__(self) -> "World":
        return self

    def __exit__(self, *exc) -> None:
        self.free()

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
            fields: up to ``MAX_FIELDS`` tuples ``(value, exc_type, what)``;
                ``value`` (None where this rank has none) must be equal on every
                rank, else every rank raises ``exc_type`` naming ``what``.
            count: a number summed over the ranks.

        Returns:
            The sum of ``count`` over the ranks.
        """
        if self._freed:
            self.require_open(operation)
        self._calls += 1
        if self.size == 1:
            if error is not None:
                raise error
            return count
        codes = [self._calls % (_FIELD - 1) + 1, self._code(operation)]
        codes += [None if value is None else field_code(value) for value, _, _ in fields]
        slots = [1 if error is not None else 0, count]
        for code in codes:
            slots += (0, 0, 0) if code is None else (1, code, code * code)
        vector = self._vector
        vector[:len(slots)] = slots
        vector[len(slots):] = 0
        total = self._sum(vector).tolist()
        if not (_all_equal(total, 0) and _all_equal(total, 1)):
            names = self.allgather((operation, self._calls))
            raise ValueError(mismatch_message(names))
        if total[0]:
            faults = self.allgather(None if error is None else
                                    (type(error).__name__, str(error)))
            raise agreed_error(error, faults)
        for i, (value, exc_type, what) in enumerate(fields, start=2):
            if not _all_equal(total, i):
                values = self.allgather(value)
                seen = sorted({repr(x) for x in values if x is not None})
                raise exc_type(f"{what} differs between ranks: {', '.join(seen)}")
        return total[1]

    def _code(self, operation: str) -> int:
        code = self._codes.get(operation)
        if code is None:
            code = self._codes[operation] = field_code(operation)
        return code

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


def _all_equal(total: list, slot: int) -> bool:
    """Whether every rank that gave slot ``slot`` gave the same value (the sums of
    the codes and of their squares meet Cauchy-Schwarz with equality)."""
    n, s, q = total[2 + 3 * slot: 5 + 3 * slot]
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
