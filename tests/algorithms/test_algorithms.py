"""tack.algorithms against NumPy: scans, reductions, radix sort, histogram."""

import re
import secrets

import numpy as np
import pytest

import tack
import tack.algorithms as A

SEED = secrets.randbits(32)
SIZES = [0, 1, 7, 65536, 65537, 200_003]
SCAN_TYPES = [np.int32, np.int64, np.uint32, np.float32, np.float64]


def _values(rng, n, dtype):
    if np.dtype(dtype).kind == "f":
        return (rng.random(n) * 100 - 50).astype(dtype)
    return rng.integers(0, 100, n).astype(dtype)


@pytest.mark.parametrize("dtype", SCAN_TYPES)
@pytest.mark.parametrize("n", SIZES)
def test_scans(n, dtype):
    rng = np.random.default_rng(SEED)
    x = _values(rng, n, dtype)
    inclusive = A.inclusive_scan(tack.array(x)).numpy()
    exclusive = A.exclusive_scan(tack.array(x)).numpy()
    if x.dtype.kind == "f":
        # Compare with an f64 scan; the bound grows with the running sum of |x|.
        reference = np.cumsum(x, dtype=np.float64)
        bound = 4 * np.finfo(x.dtype).eps * np.cumsum(np.abs(x), dtype=np.float64) + 1e-30
    else:
        reference = np.cumsum(x, dtype=x.dtype)
        bound = 0
    assert (np.abs(inclusive - reference) <= bound).all(), f"seed {SEED}"
    if n:
        assert exclusive[0] == 0
        assert (np.abs(exclusive[1:] - reference[:-1]) <= np.asarray(bound)[:-1]
                if x.dtype.kind == "f" else exclusive[1:] == reference[:-1]).all(), \
            f"seed {SEED}"


def test_scan_in_place_and_out():
    x = tack.array(np.arange(10, dtype=np.int32))
    A.inclusive_scan(x, out=x)
    np.testing.assert_array_equal(x.numpy(), np.cumsum(np.arange(10)))
    with pytest.raises(ValueError, match="out must have shape"):
        A.exclusive_scan(x, out=tack.zeros(3, tack.i32))


@pytest.mark.parametrize("dtype", SCAN_TYPES + [np.int8, np.uint64])
@pytest.mark.parametrize("n", SIZES)
def test_reductions(n, dtype):
    rng = np.random.default_rng(SEED)
    x = _values(rng, n, dtype)
    t = tack.array(x)
    if x.dtype.kind == "f":
        assert A.sum(t) == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-12,
                                         abs=1e-9)
    else:
        assert A.sum(t) == int(x.astype(np.int64).sum())
    if n == 0:
        with pytest.raises(ValueError, match="min reduction requires a nonempty array"):
            A.min(t)
        with pytest.raises(ValueError, match="max reduction requires a nonempty array"):
            A.max(t)
    else:
        assert A.min(t) == x.min() and A.max(t) == x.max()


def test_reductions_of_nan_and_nd():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    x[1, 2] = np.nan
    assert np.isnan(A.min(tack.array(x))) and np.isnan(A.max(tack.array(x)))
    assert A.sum(tack.array(np.ones((3, 5), np.float32))) == 15.0


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
@pytest.mark.parametrize("n", [0, 1, 2, 1000, 70_001])
@pytest.mark.parametrize("spread", ["full", "few"])
def test_radix_sort_pairs_is_stable(n, dtype, spread):
    rng = np.random.default_rng(SEED)
    info = np.iinfo(dtype)
    if spread == "full":
        keys = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    else:
        keys = rng.integers(0, 5, n).astype(dtype)
    values = np.arange(n, dtype=np.int64)
    sorted_keys, sorted_values = A.radix_sort_pairs(tack.array(keys), tack.array(values))
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(sorted_keys.numpy(), keys[order], err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(sorted_values.numpy(), order, err_msg=f"seed {SEED}")


def test_radix_sort_leaves_inputs_and_checks_arguments():
    keys = tack.array(np.array([3, 1, 2], np.int32))
    values = tack.array(np.array([1.5, 2.5, 3.5], np.float32))
    k, v = A.radix_sort_pairs(keys, values)
    np.testing.assert_array_equal(keys.numpy(), [3, 1, 2])
    np.testing.assert_array_equal(v.numpy(), [2.5, 3.5, 1.5])
    with pytest.raises(TypeError, match="radix_sort_pairs\\(\\) takes i32, u32, i64 or u64"):
        A.radix_sort_pairs(tack.zeros(3, tack.f32), values)
    with pytest.raises(ValueError, match="as many values as keys"):
        A.radix_sort_pairs(keys, tack.zeros(2))
    with pytest.raises(TypeError, match="takes a tack.Array"):
        A.radix_sort_pairs(np.zeros(3, np.int32), values)


def test_histogram():
    rng = np.random.default_rng(SEED)
    keys = rng.integers(-3, 40, 100_001).astype(np.int64)
    counts = A.histogram(tack.array(keys), 32).numpy()
    inside = keys[(keys >= 0) & (keys < 32)]
    np.testing.assert_array_equal(counts, np.bincount(inside, minlength=32))
    with pytest.raises(TypeError, match="histogram\\(\\) takes i32"):
        A.histogram(tack.zeros(3), 4)


def test_histogram_out_must_match_the_bins():
    keys = tack.array(np.array([0, 1, 1], np.int32))
    with pytest.raises(ValueError, match="out must have 4 elements"):
        A.histogram(keys, 4, out=tack.zeros(20, tack.i64))
    with pytest.raises(TypeError, match="histogram\\(\\) counts into i32, u32, i64 or u64"):
        A.histogram(keys, 4, out=tack.zeros(4, tack.f32))
    counts = A.histogram(keys, 2, out=tack.full(2, 5, tack.i32))
    np.testing.assert_array_equal(counts.numpy(), [6, 7])


@pytest.mark.parametrize("n", [0, 1, 7, 1001])
def test_radix_sort_carries_vector_values(n):
    rng = np.random.default_rng(SEED)
    keys = rng.integers(0, 50, n).astype(np.int64)
    values = rng.standard_normal((n, 3)).astype(np.float32)
    sorted_keys, sorted_values = A.radix_sort_pairs(
        tack.array(keys), tack.array(values, dtype=tack.vec3()))
    order = np.argsort(keys, kind="stable")
    assert sorted_values.dtype == tack.vec3()
    np.testing.assert_array_equal(sorted_keys.numpy(), keys[order], err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(sorted_values.numpy(), values[order], err_msg=f"seed {SEED}")


@pytest.mark.parametrize("call, name", [(A.inclusive_scan, "inclusive_scan"),
                                        (A.exclusive_scan, "exclusive_scan"),
                                        (A.sum, "sum"), (A.min, "min"), (A.max, "max")])
def test_scans_and_reductions_refuse_vector_elements(call, name):
    v = tack.zeros(4, tack.vec3())
    message = (f"{name}() takes an array of scalars for values, not of vec3(f32) elements "
               f"(use one array per component)")
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        call(v)
