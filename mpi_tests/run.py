"""Runs the MPI tests: each ``mpi_tests/test_*.py`` under ``mpiexec -n N`` for
N = 1..4 (oversubscribed: more ranks than cores is fine), with a timeout so a
hang fails instead of blocking. Exits non-zero if any run fails.

    python mpi_tests/run.py [FILE ...] [-n 1,2,3,4] [--timeout SECONDS]

``TACK_MPIEXEC`` overrides the launcher (default: ``mpiexec`` on PATH). Open
MPI gets ``--oversubscribe``; MPICH's Hydra is told to start ranks with fork
(``HYDRA_LAUNCHER=fork``), which needs no ssh. A file may set ``RANKS`` (a
tuple of rank counts) to run under fewer counts.

Two kinds of test file: one that runs itself (it has an ``if __name__ ==
"__main__":`` block, like the ``commtest.main`` files) is started as
``python -m mpi4py FILE``, so an uncaught error aborts every rank; any other
is run by ``harness.py`` (see there).
"""

from __future__ import annotations

import argparse
import ast
import glob
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "harness.py")


def _mpiexec() -> str:
    """mpiexec on PATH, else the one installed beside this Python (the mpich
    wheel's, when a fresh environment's PATH does not list its bin yet)."""
    found = shutil.which("mpiexec")
    if found:
        return found
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    return beside if os.access(beside, os.X_OK) else "mpiexec"


def launcher() -> list:
    """The mpiexec command and the flags that allow oversubscription."""
    command = shlex.split(os.environ.get("TACK_MPIEXEC", "")) or [_mpiexec()]
    try:
        version = subprocess.run(command + ["--version"], capture_output=True,
                                 text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        version = ""
    if "Open MPI" in version or "OpenRTE" in version:
        command.append("--oversubscribe")
        if hasattr(os, "geteuid") and os.geteuid() == 0:   # containers run as root
            command.append("--allow-run-as-root")
    return command


def available() -> str:
    """Why the MPI tests cannot run here, or '' when they can."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "mpi4py is not installed (pip install mpi4py mpich)"
    command = shlex.split(os.environ.get("TACK_MPIEXEC", "")) or [_mpiexec()]
    if not shutil.which(command[0]):
        return f"{command[0]} is not on PATH (pip install mpich, or set TACK_MPIEXEC)"
    return ""


def inspect_file(path: str, default) -> tuple:
    """(rank counts, runs itself): ``RANKS = (...)`` at the top level of the file
    (else ``default``), and whether it has an ``if __name__ == "__main__":``."""
    with open(path) as f:
        tree = ast.parse(f.read())
    counts, runs_itself = tuple(default), False
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                getattr(t, "id", None) == "RANKS" for t in node.targets):
            counts = tuple(n for n in ast.literal_eval(node.value) if n in default)
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            runs_itself = True
    return counts, runs_itself


def run_one(command: list, path: str, ranks: int, timeout: float, runs_itself: bool):
    """(passed, seconds, output) of one file under ``ranks`` ranks."""
    env = dict(os.environ)
    env.setdefault("HYDRA_LAUNCHER", "fork")
    # Test files import their helpers from this folder.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [HERE, env.get("PYTHONPATH")]))
    program = ["-m", "mpi4py", path] if runs_itself else [HARNESS, path]
    start = time.perf_counter()
    process = subprocess.Popen(command + ["-n", str(ranks), sys.executable, *program],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
        passed = process.returncode == 0
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)   # mpiexec and every rank it started
        output, _ = process.communicate()
        output += f"\nTIMEOUT: no result after {timeout:.0f} s (a hang?)"
        passed = False
    return passed, time.perf_counter() - start, output


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="default: mpi_tests/test_*.py")
    parser.add_argument("-n", default="1,2,3,4", help="rank counts (default 1,2,3,4)")
    parser.add_argument("--timeout", type=float, default=180.0,
                        help="seconds per run before it counts as a hang")
    args = parser.parse_args(argv)
    reason = available()
    if reason:
        print(f"cannot run the MPI tests: {reason}", file=sys.stderr)
        return 2
    files = args.files or sorted(glob.glob(os.path.join(HERE, "test_*.py")))
    counts = tuple(int(n) for n in args.n.split(","))
    command = launcher()
    failures = 0
    for path in files:
        ranks_to_run, runs_itself = inspect_file(path, counts)
        for ranks in ranks_to_run:
            passed, seconds, output = run_one(command, os.path.abspath(path), ranks,
                                              args.timeout, runs_itself)
            name = os.path.relpath(path)
            print(f"{'PASS' if passed else 'FAIL'} {name} -n {ranks} ({seconds:.1f} s)",
                  flush=True)
            if not passed:
                failures += 1
                print(output[-8000:], flush=True)
    print(f"{failures} of the MPI runs failed" if failures else "all MPI runs passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
