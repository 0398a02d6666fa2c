"""A small harness for the communication tests that run under ``mpiexec``.

A test file defines ``test_*(comm, rng)`` functions and ends with
``main(globals())``. Every rank runs every test in file order; the seed is
drawn on rank 0 and shared, so every rank builds the same global data.
A failure on any rank fails the test on every rank (an allreduce after each
test), and the last line is ``N passed, M failed``; the exit status is 1
when anything failed. Run a file with ``mpiexec -n N python -m mpi4py FILE``
so that an uncaught error aborts every rank instead of leaving them waiting.
"""

from __future__ import annotations

import faulthandler
import os
import re
import secrets
import sys
import time
import traceback

import numpy as np
from mpi4py import MPI


def layouts(size: int, total: int = None) -> list:
    """Block counts per rank to try on ``size`` ranks, 1 to 3 blocks per rank
    first, then layouts that leave some ranks empty."""
    out = [[1] * size, [(r % 3) + 1 for r in range(size)], [3 - (r % 3) for r in range(size)]]
    if total is not None:
        out = []
        for per in (1, 2, 3, 6):
            ranks = total // per
            if total % per == 0 and ranks <= size:
                out.append([per] * ranks + [0] * (size - ranks))
        if size >= 2:
            uneven = [0] * size
            for i in range(total):
                uneven[(i * 7) % size if size > 1 else 0] += 1
            out.append(uneven)
    return out


def blocks_for(comm, counts, world=None, device="cpu"):
    import tack
    world = world or tack.World(comm)
    return tack.Blocks([device] * counts[comm.Get_rank()], world), world


def raises(exc_type, message: str, fn, *args, **kwargs):
    """Call ``fn``; it must raise ``exc_type`` whose message contains ``message``."""
    try:
        fn(*args, **kwargs)
    except exc_type as exc:
        if not re.search(re.escape(message), str(exc)):
            raise AssertionError(f"{exc_type.__name__} message {str(exc)!r} does not "
                                 f"contain {message!r}") from exc
        return exc
    raise AssertionError(f"{fn} did not raise {exc_type.__name__}({message!r})")


def main(namespace: dict) -> None:
    comm = MPI.COMM_WORLD
    own = comm.Dup()     # the harness's messages never pair with a test's
    rank = comm.Get_rank()
    seed = own.bcast(secrets.randbits(63) if rank == 0 else None, root=0)
    tests = [(n, f) for n, f in namespace.items() if n.startswith("test_") and callable(f)]
    only = sys.argv[1:] or None
    passed = failed = 0
    for name, test in tests:
        if only and name not in only:
            continue
        start = time.perf_counter()
        # A test that hangs prints every rank's stack and exits, failing the run
        # (120 s: the 2,100 worlds of test_comm_plan.py took 18 s on 4 ranks of 2
        # quiet cores, and past 60 s with other jobs on them).
        faulthandler.dump_traceback_later(float(os.environ.get("TACK_MPI_TEST_TIMEOUT",
                                                               "120")), exit=True)
        error = None
        try:
            test(comm, np.random.default_rng(seed))
        except Exception:   # any failure fails the test, on every rank
            error = traceback.format_exc()
        errors = own.allgather(error)
        faulthandler.cancel_dump_traceback_later()
        bad = [(r, e) for r, e in enumerate(errors) if e]
        if rank == 0:
            took = time.perf_counter() - start
            if bad:
                failed += 1
                print(f"FAIL {name} (seed {seed}, {comm.Get_size()} ranks)", flush=True)
                for r, e in bad:
                    print(f"--- rank {r}:\n{e}", flush=True)
            else:
                passed += 1
                print(f"ok   {name} ({took:.2f} s)", flush=True)
        elif bad:
            failed += 1
        else:
            passed += 1
    if rank == 0:
        print(f"{passed} passed, {failed} failed", flush=True)
    sys.stdout.flush()
    own.Barrier()
    if failed:
        sys.exit(1)
