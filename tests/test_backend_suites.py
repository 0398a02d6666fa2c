"""The backend matrix: the kernel suites again, with OpenCL, then emulated CUDA,
as the default device.

The suites under tests/lang, tests/codegen and tests/algorithms make their
arrays on the default device, so running them with TACK_TEST_DEVICE=opencl
checks every language feature on the OpenCL backend (PoCL in CI), where a
feature a backend lacks is an asserted error, never a skip. Without an
OpenCL device this test skips with the reason, unless TACK_REQUIRE_OPENCL=1
(set by CI), which makes that a failure.

With the ``emulated_cuda`` plugin the default device is the CUDA backend
over a driver that runs the emitted CUDA C on the CPU (clang++-14,
``tests/emulated_cuda.py``): the same suites check what the CUDA code
computes, where the offline checks only compile it. Without clang++-14 or
cuda-python this skips, unless TACK_REQUIRE_COMPILERS=1 (set by CI).
"""

import os
import shutil
import subprocess
import sys

import pytest

import tack

SUITES = ["tests/lang", "tests/codegen", "tests/algorithms"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _opencl_devices() -> int:
    return tack.device_count("opencl")


def test_kernel_suites_on_opencl():
    if not _opencl_devices():
        reason = ("no OpenCL device (pip install pyopencl and an OpenCL driver such as "
                  "Debian's pocl-opencl-icd)")
        if os.environ.get("TACK_REQUIRE_OPENCL", "").strip() not in ("", "0"):
            pytest.fail(reason + "; TACK_REQUIRE_OPENCL is set")
        pytest.skip(reason)
    env = dict(os.environ, TACK_TEST_DEVICE="opencl")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:warnings", "-p",
         "no:cacheprovider", *SUITES], cwd=ROOT, env=env, capture_output=True,
        text=True, timeout=3000)
    tail = "\n".join(done.stdout.splitlines()[-40:])
    assert done.returncode == 0, f"kernel suites failed on OpenCL:\n{tail}\n{done.stderr[-2000:]}"


def _emulator_missing():
    """Why the CUDA emulator cannot run here, or None."""
    if shutil.which(os.environ.get("EMULATED_CUDA_CXX", "clang++-14")) is None:
        return "no clang++-14 (Debian's clang-14) to compile the emulated CUDA C"
    try:
        import cuda.bindings.driver  # noqa: F401
    except ImportError:
        return "no cuda-python (pip install -e '.[test]')"
    return None


# The GPU half of the CUDA runtime tests runs too, but for exportable memory (the
# emulator has no virtual memory management) and what needs CuPy or PyTorch.
GPU_TESTS = ["tests/runtime/test_cuda_gpu.py", "--deselect", "tests/runtime/test_cuda_gpu.py::"
             "test_gpu_export_memory_shares_exportable_arrays_and_snapshots_others"]


@pytest.mark.parametrize("dialect, suites", [
    ("cuda", SUITES + GPU_TESTS),
    # HIP's C differs from CUDA's in its atomics and header only
    ("hip", ["tests/codegen/test_atomics.py", "tests/codegen/test_int_corners.py"]),
])
def test_kernel_suites_on_emulated_cuda(dialect, suites, tmp_path):
    missing = _emulator_missing()
    if missing:
        if os.environ.get("TACK_REQUIRE_COMPILERS", "").strip() not in ("", "0"):
            pytest.fail(missing + "; TACK_REQUIRE_COMPILERS is set")
        pytest.skip(missing)
    here = os.path.dirname(os.path.abspath(__file__))   # the plugin's folder
    env = dict(os.environ, EMULATED_CUDA_DIR=str(tmp_path), EMULATED_CUDA_DIALECT=dialect,
               PYTHONPATH=os.pathsep.join([here] + [p for p in [
                   os.environ.get("PYTHONPATH")] if p]))
    env.pop("TACK_TEST_DEVICE", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:warnings", "-p",
         "no:cacheprovider", "-p", "emulated_cuda", *suites], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=3000)
    tail = "\n".join(done.stdout.splitlines()[-40:])
    assert done.returncode == 0, (f"kernel suites failed on emulated {dialect}:\n{tail}\n"
                                  f"{done.stderr[-2000:]}")
    assert " 0 problems" in done.stdout, tail


SHARED_BEFORE_WRITE = r'''
extern "C" __global__ void first_reads(int* out) {
  __shared__ int seen[2];
  out[blockIdx.x] = seen[1];      // undefined on a GPU: the emulator's poison
  seen[1] = 7;
}
'''


def test_emulator_poisons_shared_memory_before_each_block(tmp_path, monkeypatch):
    """A kernel that reads ``__shared__`` memory its block has not written reads
    0xff bytes, not zeros or the previous block's values, so that such a read
    in emitted code fails the suites above."""
    missing = _emulator_missing()
    if missing:
        if os.environ.get("TACK_REQUIRE_COMPILERS", "").strip() not in ("", "0"):
            pytest.fail(missing + "; TACK_REQUIRE_COMPILERS is set")
        pytest.skip(missing)
    import ctypes

    import numpy as np

    import emulated_cuda
    monkeypatch.setattr(emulated_cuda, "BUILD", str(tmp_path))
    library = ctypes.CDLL(emulated_cuda.build(SHARED_BEFORE_WRITE))
    out = np.zeros(3, np.int32)
    pointer = ctypes.c_void_p(out.ctypes.data)
    params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(pointer), ctypes.c_void_p))
    assert library.tack_emu_launch_first_reads(3, 1, params) == 0
    assert out.tolist() == [-1, -1, -1]
