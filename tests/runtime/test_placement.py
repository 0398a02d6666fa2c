"""Spec 003, Where arrays live and kernels run: a.device, device= on every
constructor, to_device, and launch placement.

Every CPU device shares one memory domain, so a kernel runs on the default
device whenever the default is a CPU device. Launches are observed by wrapping
the backend's ``launch`` (the ``count_launches`` fixture).
"""

from __future__ import annotations

import numpy as np
import pytest

import tack


@tack.kernel
def double(a, out):
    for i in range(len(out)):
        out[i] = a[i] * 2


@tack.kernel
def count_to(n, out) -> int:
    for i in range(n):
        tack.atomic_add(out, 0, 1)
    return out[0]


@pytest.fixture
def other():
    """A second CPU device (its own backend, the same memory domain)."""
    return tack.device("cpu", num_threads=1)


CONSTRUCTORS = {
    "empty": lambda d: tack.empty(3, device=d),
    "zeros": lambda d: tack.zeros((2, 2), tack.i32, device=d),
    "ones": lambda d: tack.ones(3, device=d),
    "full": lambda d: tack.full(3, 2.5, device=d),
    "arange": lambda d: tack.arange(4, device=d),
    "array": lambda d: tack.array([1, 2], device=d),
    "asarray": lambda d: tack.asarray(np.zeros(3), device=d),
    "empty_like": lambda d: tack.empty_like(np.zeros(3), device=d),
    "zeros_like": lambda d: tack.zeros_like(tack.zeros(3), device=d),
    "ones_like": lambda d: tack.ones_like(np.zeros(3), device=d),
    "full_like": lambda d: tack.full_like(np.zeros(3), 7, device=d),
    "array_from_ptr": lambda d: tack.array_from_ptr(np.zeros(3), 3, tack.f64, device=d),
    "from_dlpack": lambda d: tack.from_dlpack(np.zeros(3), device=d),
    "from_dlpack_copy": lambda d: tack.from_dlpack(np.zeros(3), device=d, copy=True),
}


@pytest.mark.parametrize("name", sorted(CONSTRUCTORS))
def test_every_constructor_takes_device(name, other):
    make = CONSTRUCTORS[name]
    assert make(other).device is other
    assert make("cpu").device is tack.device("cpu")
    assert make(None).device is tack.get_default_device()
    with other:
        assert make(None).device is other


def test_memory_space_takes_device(other):
    host = np.zeros(4)
    assert tack.memory_space(host.ctypes.data, device=other) == "cpu"
    assert tack.memory_space(host.ctypes.data, device="cpu") == "cpu"


def test_like_constructors_default_to_a_tack_prototypes_device(other):
    proto = tack.zeros(3, device=other)
    for make in (tack.empty_like, tack.zeros_like, tack.ones_like):
        assert make(proto).device is other
    assert tack.full_like(proto, 1).device is other
    assert tack.empty_like(np.zeros(3)).device is tack.get_default_device()


def test_derived_arrays_stay_on_their_device(other):
    a = tack.arange(6, dtype=tack.f32, device=other)
    assert a.copy().device is other
    assert a.astype(tack.f64).device is other
    assert a.reshape(2, 3).device is other
    assert tack.concat([a, tack.zeros(2)]).device is other  # the first array's
    assert tack.concat([tack.zeros(2), a]).device is tack.device("cpu")


def test_to_device_returns_the_array_when_the_memory_is_usable(other):
    a = tack.arange(5)
    assert a.to_device(other) is a
    assert a.to_device("cpu") is a
    assert tack.asarray(a, device=other) is a
    moved = tack.array(a, device=other)  # tack.array always copies
    assert moved is not a and moved.device is other
    np.testing.assert_array_equal(moved.numpy(), np.arange(5))


def test_to_device_on_a_device_that_cannot_start():
    with pytest.raises(RuntimeError, match="Cannot start the 'cuda' device"):
        tack.arange(5).to_device("cuda")


def test_kernel_runs_on_the_default_device_when_it_can_address_the_arrays(
        rng, other, count_launches):
    home = tack.device("cpu", num_threads=2)
    host = rng.values(tack.i32, 1001) // 4
    a, out = tack.array(host, device=home), tack.empty(1001, tack.i32, device=home)
    on_home, on_other = count_launches(home), count_launches(other)
    with other:  # arrays made before, on another CPU device: one memory domain
        double(a, out)
        double(a, out)  # the fast path too
    assert (len(on_home), len(on_other)) == (0, 2)
    np.testing.assert_array_equal(out.numpy(), host * 2, err_msg=repr(rng))
    with home:
        double(out, a)
    assert (len(on_home), len(on_other)) == (1, 2)
    np.testing.assert_array_equal(a.numpy(), host * 4, err_msg=repr(rng))


def test_set_default_device_with_num_threads_runs_kernels_on_earlier_arrays(
        rng, count_launches):
    host = rng.values(tack.i32, 7) // 2
    a, out = tack.array(host), tack.zeros(7, tack.i32)
    one = tack.device("cpu", num_threads=1)
    launches = count_launches(one)
    tack.set_default_device(one)
    double(a, out)
    assert len(launches) == 1
    np.testing.assert_array_equal(out.numpy(), host * 2, err_msg=repr(rng))


def test_kernel_without_arrays_in_its_range_runs_on_the_default(count_launches, other):
    out = tack.zeros(1, tack.i32)
    launches = count_launches(other)
    with other:
        assert count_to(37, out) == 37
    assert len(launches) == 2  # the loop and its return epilogue


def test_host_operations_launch_on_their_arrays_device(count_launches):
    d = tack.device("cpu", num_threads=2)
    calls = count_launches(d)
    a = tack.arange(70000, dtype=tack.f32, device=d)
    b = tack.empty(70000, tack.f32, device=d)
    a.fill(1.5)                 # 280 KB: the kernel fill
    a.copy()
    a.astype(tack.f64)
    tack.copyto(b, a)
    tack.concat([a, b])
    assert len(calls) == 6      # concat copies each array with one launch
    np.testing.assert_array_equal(b.numpy(), np.full(70000, 1.5, np.float32))


def test_kernel_runs_on_the_arrays_own_device_when_the_default_cannot_address_them(
        rng, opencl, count_launches):
    first, second = tack.device("cpu", num_threads=1), tack.device("cpu", num_threads=2)
    on_first, on_second = count_launches(first), count_launches(second)
    host = rng.values(tack.i32, 301) // 4
    with opencl:   # a default that cannot address host memory
        for device, expected in ((first, (1, 0)), (second, (1, 1)), (second, (1, 2)),
                                 (first, (2, 2))):
            a = tack.array(host, device=device)
            out = tack.empty(301, tack.i32, device=device)
            double(a, out)
            assert (len(on_first), len(on_second)) == expected, device
            np.testing.assert_array_equal(out.numpy(), host * 2, err_msg=repr(rng))
