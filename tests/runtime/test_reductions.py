"""Spec 003, Reductions: a.sum(), a.min(), a.max(), a.mean() return Python floats.

On the CPU every reduction runs in NumPy on the host: floats accumulate in
binary64 (f32 included), signed integers in i64 and unsigned ones in u64.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import tack

ALL_TYPES = (tack.i8, tack.i16, tack.i32, tack.i64, tack.u8, tack.u16, tack.u32,
             tack.u64, tack.f32, tack.f64)
NAMES = [t.name for t in ALL_TYPES]


def sample(rng, dtype, n):
    """Values whose exact integer sum fits the accumulator."""
    if dtype.bits == 64 and dtype.is_int:
        lo = -(2 ** 52) if dtype.is_signed else 0
        return rng.gen.integers(lo, 2 ** 52, size=n, dtype=dtype.numpy)
    return rng.values(dtype, n)


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=NAMES)
@pytest.mark.parametrize("n", [1, 2, 7, 1000, 4097])
def test_reductions_match_numpy(rng, dtype, n):
    host = sample(rng, dtype, n)
    a = tack.array(host)
    results = {name: getattr(a, name)() for name in ("sum", "min", "max", "mean")}
    for name, value in results.items():
        assert type(value) is float, f"{name} {dtype}"
    wide = host.astype(np.float64)
    if dtype.is_int:
        exact = sum(int(v) for v in host)
        assert results["sum"] == float(exact), rng
        assert results["mean"] == float(exact) / n, rng
    else:
        expected = float(np.sum(wide))
        bound = 1e-14 * float(np.sum(np.abs(wide))) + 1e-300
        assert abs(results["sum"] - expected) <= bound, rng
        assert results["mean"] == results["sum"] / n, rng
    assert results["min"] == float(host.min()), rng
    assert results["max"] == float(host.max()), rng


def test_reductions_of_n_dimensional_arrays(rng):
    host = rng.values(tack.i16, 60).reshape(3, 4, 5)
    a = tack.array(host)
    assert a.sum() == float(host.astype(np.int64).sum())
    assert (a.min(), a.max()) == (float(host.min()), float(host.max()))
    assert tack.full((), 2.5).sum() == 2.5 and tack.full((), 7).mean() == 7.0


def test_f32_sums_accumulate_in_f64():
    # An f32 accumulator would lose every +1 against 2**24.
    host = np.concatenate([[2.0 ** 24], np.ones(1000)]).astype(np.float32)
    assert tack.array(host).sum() == 2.0 ** 24 + 1000
    tenth = np.float32(0.1)
    total = tack.full(3, tenth).sum()
    assert total == 3 * float(tenth)  # a binary64 value, not rounded to f32
    assert total != float(np.float32(total))
    assert tack.full(3, tenth).mean() == float(tenth)


def test_integer_sums_are_exact_beyond_the_element_type():
    assert tack.full(5, 2 ** 31 - 1, tack.i32).sum() == 5.0 * (2 ** 31 - 1)
    assert tack.full(3, 255, tack.u8).sum() == 765.0
    assert tack.full(4, -128, tack.i8).mean() == -128.0
    assert tack.full(3, 2 ** 62, tack.u64).sum() == float(3 * 2 ** 62)


def test_empty_arrays():
    for dtype in ALL_TYPES:
        a = tack.zeros((0, 3), dtype)
        assert a.sum() == 0.0 and type(a.sum()) is float
        assert math.isnan(a.mean())
        with pytest.raises(ValueError, match=re.escape(
                "min reduction requires a nonempty array")):
            a.min()
        with pytest.raises(ValueError, match=re.escape(
                "max reduction requires a nonempty array")):
            a.max()


def test_reduction_runs_on_the_arrays_device_whatever_the_default():
    d = tack.device("cpu", num_threads=1)
    a = tack.arange(10, dtype=tack.f64, device=d)
    with tack.device("cpu", num_threads=2):
        assert (a.sum(), a.min(), a.max(), a.mean()) == (45.0, 0.0, 9.0, 4.5)
