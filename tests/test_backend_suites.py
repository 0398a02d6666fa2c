"""The backend matrix: the kernel suites again, with OpenCL as the default device.

The suites under tests/lang, tests/codegen and tests/algorithms make their
arrays on the default device, so running them with TACK_TEST_DEVICE=opencl
checks every language feature on the OpenCL backend (PoCL in CI), where a
feature a backend lacks is an asserted error, never a skip. Without an
OpenCL device this test skips with the reason, unless TACK_REQUIRE_OPENCL=1
(set by CI), which makes that a failure.
"""

import os
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
