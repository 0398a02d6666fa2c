"""examples/heat2d.py and examples/particles.py print the same checksum bits as one
plain process and under ``mpiexec -n 4`` (skipped, saying why, without MPI)."""

import importlib.util
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNER = os.path.join(ROOT, "mpi_tests", "run.py")


def _runner():
    spec = importlib.util.spec_from_file_location("mpi_tests_run_examples", RUNNER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(command) -> subprocess.CompletedProcess:
    env = dict(os.environ, HYDRA_LAUNCHER="fork")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(ROOT, "src"),
                                                      env.get("PYTHONPATH")]))
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _checksum(command) -> str:
    done = _run(command)
    lines = [line for line in done.stdout.splitlines() if line.startswith("checksum ")]
    assert len(lines) == 1, done.stdout
    return lines[0]


@pytest.mark.parametrize("name", ["heat2d.py", "particles.py"])
def test_same_bits_with_and_without_mpi(name):
    path = os.path.join(ROOT, "examples", name)
    alone = _checksum([sys.executable, path])
    runner = _runner()
    missing = runner.available()
    if missing:
        pytest.skip(f"the mpiexec half needs MPI: {missing}")
    assert _checksum(runner.launcher() + ["-n", "4", sys.executable, path]) == alone


def test_heat2d_restarts_from_a_checkpoint_on_other_rank_counts(tmp_path):
    """Saved at step 120 by 3 ranks, finished by one process and by 2 ranks,
    or taken to step 160 by 2 ranks and finished by one: the checksum bits of
    a run without a stop."""
    pytest.importorskip("h5py")
    path = os.path.join(ROOT, "examples", "heat2d.py")
    checkpoint = str(tmp_path / "heat.h5")
    runner = _runner()
    missing = runner.available()
    if missing:
        pytest.skip(f"the mpiexec half needs MPI: {missing}")
    done = _run(runner.launcher() + ["-n", "3", sys.executable, path, "--save-at", "120",
                                     "--checkpoint", checkpoint])
    assert "saved step 120" in done.stdout, done.stdout
    alone = _checksum([sys.executable, path])
    assert _checksum([sys.executable, path, "--checkpoint", checkpoint]) == alone
    assert _checksum(runner.launcher() + ["-n", "2", sys.executable, path, "--checkpoint",
                                          checkpoint]) == alone
    # a chain's middle job starts from the file and saves a later step to it
    middle = _run(runner.launcher() + ["-n", "2", sys.executable, path, "--save-at", "160",
                                       "--checkpoint", checkpoint])
    assert "saved step 160" in middle.stdout, middle.stdout
    assert _checksum([sys.executable, path, "--checkpoint", checkpoint]) == alone
