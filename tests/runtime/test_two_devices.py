"""Arrays in two memory domains: every entry point refuses them under its own name.

Needs a second memory domain, which the OpenCL backend provides (PoCL in CI).
"""

import re

import numpy as np
import pytest

import tack
import tack.algorithms as A

pytestmark = pytest.mark.skipif(not tack.device_count("opencl"),
                                reason="needs an OpenCL device for a second memory domain")


@tack.kernel
def add(a, b):
    for i in range(len(a)):
        a[i] = a[i] + b[i]


def _pair():
    cpu = tack.device("cpu")
    gpu = tack.device("opencl")
    return tack.ones(4, device=cpu), tack.ones(4, device=gpu), cpu, gpu


def test_kernel_refuses_two_devices():
    a, b, cpu, gpu = _pair()
    with pytest.raises(ValueError, match=re.escape(
            f"Kernel 'add' was given arrays on two devices ({cpu} and {gpu}); a launch "
            f"runs on one. Copy them to one device first (a.to_device(...)).")):
        add(a, b)
    np.testing.assert_array_equal(a.numpy(), 1)


@pytest.mark.parametrize("name,call", [
    ("exclusive_scan", lambda a, b: A.exclusive_scan(a, out=b)),
    ("inclusive_scan", lambda a, b: A.inclusive_scan(a, out=b)),
    ("histogram", lambda a, b: A.histogram(a.astype(tack.i32), 4,
                                           out=tack.zeros(4, tack.i64, device=b.device))),
    ("radix_sort_pairs", lambda a, b: A.radix_sort_pairs(a.astype(tack.i32), b)),
    ("copyto", lambda a, b: tack.copyto(a, b)),
    ("concat", lambda a, b: tack.concat([a, b])),
])
def test_host_operations_name_themselves(name, call):
    a, b, cpu, gpu = _pair()
    with pytest.raises(ValueError, match=re.escape(
            f"{name}() was given arrays on two devices ({cpu} and {gpu})")):
        call(a, b)


def test_to_device_copies_between_domains():
    a, b, cpu, gpu = _pair()
    moved = a.to_device(gpu)
    assert moved.device == gpu and moved is not a
    np.testing.assert_array_equal(moved.numpy(), 1)
    assert b.to_device(gpu) is b


def test_opencl_arrays_share_no_pointers():
    gpu = tack.device("opencl")
    with pytest.raises(TypeError, match="array_from_ptr\\(\\) on the OpenCLBackend wraps "
                                        "no pointers"):
        tack.array_from_ptr(np.zeros(4, np.float32), (4,), tack.f32, device=gpu)
    a = tack.ones(4, device=gpu)
    with pytest.raises(BufferError, match="cannot be exported through DLPack"):
        a.__dlpack__()
    with pytest.raises(BufferError):
        np.from_dlpack(a)


TWO_OPENCL = """
import numpy as np, tack

@tack.kernel
def saxpy(x, y, a):
    for i in range(len(x)):
        y[i] = a * x[i] + y[i]

for k in range(2):
    with tack.device(f"opencl:{k}"):
        x, y = tack.array(np.ones(300, np.float32)), tack.zeros(300, tack.f32)
        saxpy(x, y, 2.0)
        print(k, y.numpy()[:3].tolist())
"""


def test_two_identical_opencl_devices_each_build_their_own_program(tmp_path):
    # Regression: the variant key named the device model only, so opencl:1 got
    # opencl:0's kernel object (CL_INVALID_CONTEXT at the launch).
    import os
    import subprocess
    import sys
    script = tmp_path / "two.py"
    script.write_text(TWO_OPENCL)
    env = dict(os.environ, POCL_DEVICES="pthread pthread")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=300)
    if "opencl:1: this machine has 1 OpenCL devices" in done.stderr:
        pytest.skip("the OpenCL driver is not PoCL: POCL_DEVICES made no second device")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["0 [2.0, 2.0, 2.0]", "1 [2.0, 2.0, 2.0]"]
