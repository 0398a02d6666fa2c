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
