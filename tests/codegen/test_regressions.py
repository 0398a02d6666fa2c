"""The named regressions of spec 000 (LC1, LC4-LC8), each run against NumPy/Python."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tack

SIZES = (0, 1, 7, 33, 1000, 4097)


@pytest.fixture(scope="module", params=[1, 2], ids=["1thread", "2threads"])
def device(request):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TACK_CPU_MARGIN", "0")  # two threads really split every launch
        return tack.device("cpu", num_threads=request.param)


def check(got, want, what, rng):
    np.testing.assert_array_equal(got.numpy(), want, err_msg=f"{what} {rng}")


# -- LC1: a second shape recomputes the strides ------------------------------------

@tack.kernel
def row_sums(a, out):
    for i in range(len(out)):
        s = 0
        for j in range(a.shape[1]):
            s += a[i, j] * (j + 1)
        out[i] = s


def test_lc1_second_shape_builds_a_new_variant(rng):
    shapes = [(4, 6), (6, 4), (3, 8), (24, 1), (1, 24), (5, 0), (33, 7), (7, 33), (4, 6)]
    sources = set()
    for shape in shapes:
        a_np = rng.ints(tack.i64, shape[0] * shape[1], -100, 100).reshape(shape)
        a, out = tack.asarray(a_np), tack.zeros(shape[0], dtype=tack.i64)
        row_sums(a, out)
        weights = np.arange(1, shape[1] + 1)
        check(out, (a_np * weights).sum(axis=1), f"shape {shape}", rng)
        sources.add(tack.inspect(row_sums, a, out, mode="ir"))
    # one variant per row length (the stride a constant in each) until the
    # fourth, after which the next call's variant reads the stride at run time
    assert len(sources) == 3 + 1, sources
    assert sum("__tack_shape1_a" in s for s in sources) == 1, sources


@tack.kernel
def row_sums_counted(a, out) -> int:
    for i in range(len(out)):
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j]
        out[i] = s
    return len(a)


def test_a_return_reading_another_extent_keeps_the_bodys_stride(rng):
    """The body bakes ``a.shape[1]`` and the return reads ``len(a)``: the
    second row length used to run the first one's stride (the return's
    extents replaced the body's in the signature), silently wrong."""
    for m in (2, 3, 5):
        host = rng.values(tack.f64, 4 * m).reshape(4, m)
        out = tack.zeros(4, tack.f64)
        assert row_sums_counted(tack.array(host), out) == 4
        want = np.array([sum(row) for row in host.tolist()])   # left to right
        np.testing.assert_array_equal(out.numpy(), want, err_msg=f"rows of {m} {rng}")


# -- LC4: an assert is rejected, not dropped ---------------------------------------

@tack.kernel
def with_assert(a):
    for i in range(len(a)):
        assert a[i] > 0
        a[i] = 1


def test_lc4_assert_is_rejected():
    a = tack.zeros(3, dtype=tack.i32)
    message = "Kernel 'with_assert': unsupported Assert at line 4, column 9"
    with pytest.raises(tack.UnsupportedSyntaxError, match=re.escape(message)):
        with_assert(a)
    np.testing.assert_array_equal(a.numpy(), np.zeros(3, np.int32))


# -- LC5: nonzero start and step in the parallel loop ----------------------------------

@tack.kernel
def strided(out, start):
    for i in range(start, len(out), 3):
        out[i] = i * 10 + 1


@tack.kernel
def backwards(out):
    for i in range(len(out) - 1, -1, -2):
        out[i] = i + 1


@tack.kernel
def negative_step(out, start, stop):
    for i in range(start, stop, -3):
        out[i] += 1


def test_lc5_start_and_step(rng, device):
    for n in SIZES:
        start = int(rng.gen.integers(0, 5))
        with device:
            out = tack.zeros(n, dtype=tack.i64)
            strided(out, start)
            want = np.zeros(n, np.int64)
            want[start::3] = np.arange(n)[start::3] * 10 + 1
            check(out, want, f"range({start}, {n}, 3)", rng)

            out = tack.zeros(n, dtype=tack.i64)
            backwards(out)
            want = np.zeros(n, np.int64)
            idx = np.arange(n - 1, -1, -2)
            want[idx] = idx + 1
            check(out, want, f"range({n - 1}, -1, -2)", rng)

            hi = int(rng.gen.integers(-2, n + 1)) if n else 0
            lo = int(rng.gen.integers(-1, max(hi + 1, 0))) if n else 0
            hi = min(hi, n - 1)
            out = tack.zeros(max(n, 1), dtype=tack.i64)
            negative_step(out, hi, lo)
            want = np.zeros(max(n, 1), np.int64)
            for i in range(hi, lo, -3):
                want[i] += 1
            check(out, want, f"range({hi}, {lo}, -3)", rng)


# -- LC6: outer scalars assigned in the loop do not leak between iterations -------------

@tack.kernel
def outer_scalars(x, out, s):
    t = 0
    u = 7
    for i in range(len(x)):
        if x[i] > 0:
            s = 100
            t = t + 5
        u += 1
        out[i] = s + t * 1000 + u * 100000


def test_lc6_outer_scalar_and_parameter_do_not_leak(rng, device):
    for n in SIZES:
        x_np = rng.ints(tack.i32, n, -3, 3)
        with device:
            out = tack.zeros(n, dtype=tack.i64)
            outer_scalars(tack.asarray(x_np), out, 3)
        pos = x_np > 0
        want = np.where(pos, 100, 3) + np.where(pos, 5000, 0) + 800000
        check(out, want, f"n={n}", rng)


# -- LC7: early return in a device function ------------------------------------------

@tack.func
def clamp(v, lo, hi):
    if v < lo:
        return lo
    if v > hi:
        return hi
    return v


@tack.func
def classify(v):
    if v < 0:
        if v < -10:
            return -2
        return -1
    elif v == 0:
        return 0
    r = 1
    if v > 10:
        r = 2
    return r


@tack.kernel
def early_return(x, clamped, kind):
    for i in range(len(x)):
        clamped[i] = clamp(x[i], -5, 5)
        kind[i] = classify(x[i])


def test_lc7_device_function_early_return(rng):
    for n in SIZES:
        x_np = rng.ints(tack.i32, n, -20, 20)
        clamped, kind = tack.zeros(n, dtype=tack.i32), tack.zeros(n, dtype=tack.i32)
        early_return(tack.asarray(x_np), clamped, kind)
        check(clamped, np.clip(x_np, -5, 5), f"clamp n={n}", rng)
        want = np.select([x_np < -10, x_np < 0, x_np == 0, x_np > 10], [-2, -1, 0, 2], 1)
        check(kind, want, f"classify n={n}", rng)


# -- LC8: continue in the parallel loop ends that iteration only -------------------------

@tack.kernel
def skip_negative(x, out):
    for i in range(len(x)):
        if x[i] < 0:
            continue
        out[i] = x[i] * 2
        for j in range(3):
            if j == 1:
                continue
            out[i] += j


@tack.kernel
def skip_2d(x, out):
    for i, j in tack.ndindex(x.shape[0], x.shape[1]):
        if x[i, j] % 2 == 0:
            continue
        out[i, j] = x[i, j]


@tack.kernel
def skip_strided(x, out):
    for i in range(len(x) - 1, 0, -2):
        if x[i] < 0:
            continue
        out[i] = x[i]


def test_lc8_continue_ends_one_iteration(rng, device):
    for n in SIZES:
        x_np = rng.ints(tack.i32, n, -50, 50)
        with device:
            out = tack.full(n, -1, dtype=tack.i32)
            skip_negative(tack.asarray(x_np), out)
        check(out, np.where(x_np < 0, -1, x_np * 2 + 2), f"n={n}", rng)
        with device:
            out = tack.full(n, -1, dtype=tack.i32)
            skip_strided(tack.asarray(x_np), out)
        want = np.full(n, -1, np.int32)
        for i in range(n - 1, 0, -2):
            want[i] = -1 if x_np[i] < 0 else x_np[i]
        check(out, want, f"strided n={n}", rng)
    for shape in ((0, 4), (1, 1), (7, 33), (40, 3)):
        x_np = rng.ints(tack.i32, shape[0] * shape[1], -50, 50).reshape(shape)
        with device:
            out = tack.full(shape, 99, dtype=tack.i32)
            skip_2d(tack.asarray(x_np), out)
        check(out, np.where(x_np % 2 == 0, 99, x_np), f"shape {shape}", rng)


# -- argument errors found while writing these tests ----------------------------------

@tack.kernel
def indexed_twice(a, out):
    for i in range(len(out)):
        out[i] = a[i, 0]


@tack.kernel
def scalar_use(s, out):
    for i in range(len(out)):
        out[i] = s + 1


def test_argument_rank_and_kind_errors():
    out = tack.zeros(3, dtype=tack.f32)
    # was "a.shape[1] of an array with 1 dimension(s)", an expression never written
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'indexed_twice': parameter 'a' is indexed with 2 indices, but its "
            "array has 1 dimension(s)")):
        indexed_twice(tack.zeros(3, dtype=tack.f32), out)
    # was RuntimeError "failed on CPUBackend: unknown array 'a' in resolve"
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'indexed_twice': parameter 'a' is used as an array, but the argument "
            "is a f32 scalar")):
        indexed_twice(1.5, out)
    # was the internal exception annotate._Unknown
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'scalar_use': parameter 's' is used as a scalar, but the argument is "
            "an array")):
        scalar_use(tack.zeros(3, dtype=tack.f32), out)
    scalar_use(2.5, out)
    np.testing.assert_array_equal(out.numpy(), np.full(3, 3.5, np.float32))


@tack.kernel
def reciprocal_of_scalar(out, v):
    for i in range(len(out)):
        out[i] = 1.0 / v


def test_a_negative_zero_scalar_after_a_positive_one_is_passed_as_itself():
    # OpenCL reused the previous launch's scalars when equal, and 0.0 == -0.0.
    out = tack.zeros(3, tack.f32)
    reciprocal_of_scalar(out, 0.0)
    assert (out.numpy() == np.inf).all()
    reciprocal_of_scalar(out, -0.0)
    assert (out.numpy() == -np.inf).all()


@tack.kernel
def mark_corner(out):
    for i, j in tack.ndindex(out.shape[0] - 5, out.shape[1] - 5):
        out[0, 0] = 7.0


def test_two_negative_extents_launch_nothing():
    # Their product is positive: OpenCL used to launch that many iterations.
    out = tack.zeros((2, 3), tack.f32)
    mark_corner(out)
    assert out.numpy().sum() == 0.0
