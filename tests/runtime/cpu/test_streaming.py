"""Streaming stores on the CPU (runtime/cpu/streaming.py).

A disjoint call whose write-only arrays hold at least the backend's
``streaming_bytes`` takes a variant whose vector stores into them are
non-temporal, fenced before the chunk returns. Results must not depend on
it: every case is checked against NumPy, across sizes (0, 1, odd, fanned
out), element types, and the calls that must keep ordinary stores (small
arrays, arrays the kernel also reads, aliased arguments).
"""

import numpy as np
import pytest

import tack


@tack.kernel
def smooth(u, out):
    for i in range(1, len(u) - 1):
        out[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1]


@tack.kernel
def scale_into(x, y, a):
    for i, j in tack.ndindex(x.shape[0], x.shape[1]):
        y[i, j] = x[i, j] * a


@tack.kernel
def accumulate(x, y):
    for i in range(len(x)):
        y[i] = y[i] + x[i]


def _device(threshold: int):
    """A CPU device of its own whose streaming threshold is ``threshold`` bytes,
    made the default (a CPU launch runs on the default device)."""
    dev = tack.device("cpu", num_threads=2)
    dev.backend.streaming_bytes = threshold
    tack.set_default_device(dev)   # restored by the conftest fixture
    return dev


def _smooth_reference(u):
    want = np.zeros_like(u)
    if len(u) > 2:
        want[1:-1] = (np.float32(0.25) * u[:-2] + np.float32(0.5) * u[1:-1]
                      + np.float32(0.25) * u[2:])
    return want


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1001, 65537, 1 << 20])
def test_streaming_variant_matches_numpy(rng, n):
    dev = _device(0)   # every disjoint call streams
    u = rng.gen.standard_normal(n).astype(np.float32)
    a, out = tack.array(u, device=dev), tack.zeros(n, device=dev)
    smooth(a, out)
    np.testing.assert_allclose(out.numpy(), _smooth_reference(u), rtol=1e-6, atol=1e-6,
                               err_msg=repr(rng))


@pytest.mark.parametrize("dtype", [tack.f32, tack.f64, tack.i32, tack.i16, tack.u8,
                                   tack.i64])
def test_streaming_stores_of_every_width(rng, dtype):
    dev = _device(0)
    x = rng.values(dtype, 301 * 67).reshape(301, 67)
    a, y = tack.array(x, device=dev), tack.zeros((301, 67), dtype, device=dev)
    scale_into(a, y, 1)
    np.testing.assert_array_equal(y.numpy(), x, err_msg=repr(rng))


def test_large_write_only_arrays_get_nontemporal_stores():
    dev = _device(1 << 16)
    big, small = tack.zeros(1 << 15, device=dev), tack.zeros(100, device=dev)
    streamed = tack.inspect(smooth, big, tack.zeros(1 << 15, device=dev),
                            mode="optimized")
    assert "!nontemporal" in streamed and "fence seq_cst" in streamed
    plain = tack.inspect(smooth, small, tack.zeros(100, device=dev), mode="optimized")
    assert "!nontemporal" not in plain and "fence seq_cst" not in plain


def test_arrays_that_are_read_or_aliased_keep_ordinary_stores(rng):
    dev = _device(0)
    n = 1 << 15
    x = rng.gen.standard_normal(n).astype(np.float32)
    a, y = tack.array(x, device=dev), tack.array(x, device=dev)
    assert "!nontemporal" not in tack.inspect(accumulate, a, y, mode="optimized")
    accumulate(a, y)
    np.testing.assert_array_equal(y.numpy(), x + x, err_msg=repr(rng))
    assert "!nontemporal" not in tack.inspect(smooth, a, a, mode="optimized")
    smooth(a, a)   # aliased: the ordinary variant, in place
    assert np.isfinite(a.numpy()).all()


def test_the_threshold_picks_the_variant_at_each_call(rng):
    dev = _device(4 * 5000)
    for n in (4999, 5000, 5001, 10, 20000):
        u = rng.gen.standard_normal(n).astype(np.float32)
        a, out = tack.array(u, device=dev), tack.zeros(n, device=dev)
        smooth(a, out)
        np.testing.assert_allclose(out.numpy(), _smooth_reference(u), rtol=1e-6,
                                   atol=1e-6, err_msg=f"n={n} {rng!r}")
