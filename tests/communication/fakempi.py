"""A communicator made of threads: ``FakeComm`` has only the methods Tack requires
(``Dup``, ``Get_rank``, ``Get_size``, ``allgather``, ``alltoall``, ``Isend``,
``Irecv``), so the tests that use it run the fallbacks a minimal communicator
gets (no ``Allreduce``, no persistent requests, requests waited one by one).

Messages match at post time, first in first out per (source, tag), as in MPI.
Every wait has a timeout, so a hang fails the test instead of blocking it.
"""

from __future__ import annotations

import threading
from collections import defaultdict, deque

import numpy as np

TIMEOUT = 30.0


def _bytes(buffer) -> np.ndarray:
    values = buffer if isinstance(buffer, np.ndarray) else np.from_dlpack(buffer)
    return values.reshape(-1).view(np.uint8)


class _Hub:
    def __init__(self, size: int):
        self.size = size
        self.barrier = threading.Barrier(size, timeout=TIMEOUT)
        self.slots = [None] * size
        self.lock = threading.Lock()
        self.unexpected = defaultdict(deque)   # (src, dst, tag) -> sent bytes
        self.posted = defaultdict(deque)       # (src, dst, tag) -> receive requests
        self.children = []


class _Done:
    def Wait(self):
        return None


class _Receive:
    def __init__(self, buffer):
        self.buffer = buffer
        self.event = threading.Event()

    def deliver(self, data: np.ndarray) -> None:
        target = _bytes(self.buffer)
        if data.size > target.size:
            raise RuntimeError(f"message of {data.size} bytes into {target.size}")
        target[:data.size] = data
        self.event.set()

    def Wait(self):
        if not self.event.wait(TIMEOUT):
            raise TimeoutError("a receive was never matched")


class FakeComm:
    def __init__(self, hub: _Hub, rank: int):
        self._hub, self._rank, self._dups = hub, rank, 0

    def Dup(self):
        hub = self._hub
        with hub.lock:
            while len(hub.children) <= self._dups:
                hub.children.append(_Hub(hub.size))
            child = hub.children[self._dups]
        self._dups += 1
        return FakeComm(child, self._rank)

    def Get_rank(self) -> int:
        return self._rank

    def Get_size(self) -> int:
        return self._hub.size

    def allgather(self, value) -> list:
        hub = self._hub
        hub.slots[self._rank] = value
        hub.barrier.wait()
        out = list(hub.slots)
        hub.barrier.wait()
        return out

    def alltoall(self, values) -> list:
        hub = self._hub
        hub.slots[self._rank] = list(values)
        hub.barrier.wait()
        out = [hub.slots[r][self._rank] for r in range(hub.size)]
        hub.barrier.wait()
        return out

    def Isend(self, buffer, dest: int, tag: int):
        data = _bytes(buffer).copy()
        hub, key = self._hub, (self._rank, dest, tag)
        with hub.lock:
            if hub.posted[key]:
                hub.posted[key].popleft().deliver(data)
            else:
                hub.unexpected[key].append(data)
        return _Done()

    def Irecv(self, buffer, source: int, tag: int):
        hub, key = self._hub, (source, self._rank, tag)
        request = _Receive(buffer)
        with hub.lock:
            if hub.unexpected[key]:
                request.deliver(hub.unexpected[key].popleft())
            else:
                hub.posted[key].append(request)
        return request


def run_ranks(size: int, fn):
    """``fn(comm)`` on ``size`` threads; the results per rank, or the first error."""
    hub = _Hub(size)
    results, errors = [None] * size, [None] * size

    def main(rank):
        try:
            results[rank] = fn(FakeComm(hub, rank))
        except BaseException as exc:      # re-raised below, in the test's thread
            errors[rank] = exc
            hub.barrier.abort()

    threads = [threading.Thread(target=main, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT * 4)
    for error in errors:
        if error is not None and not isinstance(error, threading.BrokenBarrierError):
            raise error
    for error in errors:
        if error is not None:
            raise error
    return results
