"""Runs one MPI test file on every rank: ``mpiexec -n N python harness.py FILE``.

An MPI test file is a module whose ``test_*`` functions run in the order they
are defined, on every rank, each taking no argument or ``comm`` (then
``MPI.COMM_WORLD`` is passed). They may use collectives freely: every rank
runs the same sequence. The first exception on any rank prints its traceback
and aborts the whole world (``MPI_Abort``), so a failure never leaves the
other ranks waiting in a collective; ``run.py`` adds a timeout for hangs.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import time
import traceback


def load(path: str):
    name = "mpi_test_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def tests_of(module) -> list:
    found = [f for name, f in vars(module).items()
             if name.startswith("test_") and inspect.isfunction(f)
             and f.__module__ == module.__name__]
    return sorted(found, key=lambda f: f.__code__.co_firstlineno)


def main(path: str) -> int:
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    name = "(import)"
    try:
        module = load(path)
        for test in tests_of(module):
            name = test.__name__
            start = time.perf_counter()
            if inspect.signature(test).parameters:
                test(comm)
            else:
                test()
            comm.Barrier()
            if rank == 0:
                print(f"ok {name} ({size} ranks, {time.perf_counter() - start:.2f} s)",
                      flush=True)
    except BaseException:
        sys.stdout.flush()
        print(f"FAILED {os.path.basename(path)}::{name} on rank {rank} of {size}:\n"
              + traceback.format_exc(), file=sys.stderr, flush=True)
        comm.Abort(1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
