"""Fan-out of one launch over worker threads, each running a contiguous chunk.

The compiled entry point is called through ctypes, which releases the GIL
for the duration of the native call, so chunks run in parallel. The caller
runs the first chunk itself. A native pool with no Python per chunk is the
CPU-performance issue's work; this ``ThreadPoolExecutor`` pool stays as the
``TACK_CPU_POOL=python`` fallback.
"""

from __future__ import annotations

import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor


def chunks(count: int, parts: int):
    """``parts`` contiguous ``[start, end)`` ranges covering ``[0, count)``."""
    base, extra = divmod(count, parts)
    start = 0
    for k in range(parts):
        end = start + base + (1 if k < extra else 0)
        if end > start:
            yield start, end
        start = end


class PythonPool:
    def __init__(self, threads: int):
        self.threads = threads
        self._executor = None
        self._lock = threading.Lock()
        _live_pools.add(self)

    def _forget_workers(self) -> None:
        """In a forked child: the parent's worker threads do not exist there."""
        self._executor = None
        self._lock = threading.Lock()

    def _workers(self) -> ThreadPoolExecutor:
        if self._executor is None:
            with self._lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(
                        max_workers=self.threads - 1, thread_name_prefix="tack-cpu")
        return self._executor

    def fanout_seconds(self) -> float:
        """Measured cost of one fan-out of an empty kernel over every thread."""
        from . import fastcall, jit
        null = fastcall.builtin(jit.null_entry(), 3)
        return jit.typical_seconds(lambda: self.run(null, 0, self.threads))

    def job(self, entry) -> tuple:
        """``(job, owner)`` as the native pool's: here the ctypes entry itself."""
        return entry, None

    def run(self, entry, pack_address: int, count: int) -> None:
        """Run ``entry`` (a ctypes function) over ``[0, count)`` in chunks."""
        ranges = list(chunks(count, self.threads))
        workers = self._workers()
        futures = [workers.submit(entry, pack_address, s, e) for s, e in ranges[1:]]
        entry(pack_address, *ranges[0])
        for future in futures:
            future.result()


_live_pools: weakref.WeakSet = weakref.WeakSet()


def _forget_workers_after_fork() -> None:
    for pool in list(_live_pools):
        pool._forget_workers()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers_after_fork)
