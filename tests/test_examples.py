"""The examples run and check themselves against NumPy."""

import os
import subprocess
import sys

import pytest

import tack

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(name):
    done = subprocess.run([sys.executable, os.path.join(ROOT, "examples", name)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_quickstart():
    out = _run("quickstart.py")
    assert "saxpy       ok" in out and "vectorized saxpy: True" in out


def test_workgroup_stencil():
    if not tack.device_count("opencl"):
        pytest.skip("no OpenCL device (pip install pyopencl; apt install pocl-opencl-icd)")
    out = _run("workgroup_stencil.py")
    assert "tiled stencil ok" in out and "block reduction ok" in out


def test_nbody_vectors_and_device_class():
    out = _run("nbody.py")
    assert "nbody ok" in out


def test_nbody_on_opencl():
    if not tack.device_count("opencl"):
        pytest.skip("no OpenCL device (pip install pyopencl; apt install pocl-opencl-icd)")
    done = subprocess.run([sys.executable, os.path.join(ROOT, "examples", "nbody.py"),
                           "--device", "opencl", "--bodies", "65", "--steps", "3"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0 and "nbody ok" in done.stdout, done.stdout + done.stderr
