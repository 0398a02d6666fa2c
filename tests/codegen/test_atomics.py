"""Atomics under heavy contention: many iterations hitting a few slots.

Each launch runs on a two-thread CPU device whose fan-out threshold is zero
(``TACK_CPU_MARGIN=0``), so every launch really is split between threads,
and once on a device sized by ``TACK_CPU_THREADS``. The returned old values
are checked as a chain: for each slot, the old values plus the final value
are exactly the initial value plus each old value combined with its operand.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

import tack

BACKEND = tack.get_default_device().backend.class_name

ATOMIC_TYPES = (tack.i32, tack.i64, tack.u32, tack.u64, tack.f32, tack.f64)
SIZES = (0, 1, 7, 33, 1000, 4097, 60_000)
SLOTS = 3


@pytest.fixture(scope="module")
def two_threads():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TACK_CPU_MARGIN", "0")  # fan out every launch, however small
        return tack.device("cpu", num_threads=2)


@pytest.fixture(scope="module")
def env_threads():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TACK_CPU_THREADS", "2")
        mp.setenv("TACK_CPU_MARGIN", "0")
        dev = tack.device("cpu", num_threads=None)
    assert repr(dev.backend) == "CPUBackend(num_threads=2)"
    return dev


@tack.kernel
def add_sub(acc, sub, v, old_add, old_sub):
    for i in range(len(v)):
        old_add[i] = tack.atomic_add(acc, i % 3, v[i])
        old_sub[i] = tack.atomic_sub(sub, (i * 7) % 3, v[i])


@tack.kernel
def min_max(lo, hi, v, old_min, old_max):
    for i in range(len(v)):
        old_min[i] = tack.atomic_min(lo, i % 3, v[i])
        old_max[i] = tack.atomic_max(hi, i % 3, v[i])


def _operands(dtype, n, rng):
    if dtype.is_float:  # small integers: every partial sum is exact
        return rng.ints(tack.i32, n, -50, 50).astype(dtype.numpy)
    return rng.values(dtype, n)


def _combine(dtype, a, b, op):
    """``a op b`` elementwise in the element type (integers wrap)."""
    a, b = np.asarray(a, dtype=dtype.numpy), np.asarray(b, dtype=dtype.numpy)
    with np.errstate(over="ignore"):
        return (a + b if op == "+" else a - b).tolist()


def _total(dtype, init, operands, op):
    """The final value of a slot; operands are exact in float, wrap in int."""
    sign = 1 if op == "+" else -1
    if dtype.is_float:
        return float(init + sign * np.sum(operands, dtype=np.float64))
    info = np.iinfo(dtype.numpy)
    raw = int(init) + sign * sum(int(x) for x in operands.tolist())
    return (raw - int(info.min)) % (1 << dtype.bits) + int(info.min)


def _run_add_sub(device, dtype, rng):
    for n in SIZES:
        v = _operands(dtype, n, rng)
        init = _operands(dtype, SLOTS, rng)
        with device:
            acc, sub = tack.asarray(init.copy()), tack.asarray(init.copy())
            old_add, old_sub = tack.zeros(n, dtype=dtype), tack.zeros(n, dtype=dtype)
            add_sub(acc, sub, tack.asarray(v), old_add, old_sub)
        idx = np.arange(n)
        for slots, olds, op, target in ((idx % 3, old_add.numpy(), "+", acc),
                                        ((idx * 7) % 3, old_sub.numpy(), "-", sub)):
            for s in range(SLOTS):
                mine = slots == s
                first, final = init[s].item(), target.numpy()[s].item()
                what = f"atomic {op} {dtype} slot {s} n={n} {rng}"
                assert final == _total(dtype, init[s], v[mine], op), what
                # each returned old value is a state the slot passed through
                chained = Counter([first] + _combine(dtype, olds[mine], v[mine], op))
                assert chained == Counter(olds[mine].tolist() + [final]), \
                    f"{what}: old values do not chain from {first} to {final}"


def _run_min_max(device, dtype, rng):
    for n in SIZES:
        v = rng.values(dtype, n)
        init = rng.values(dtype, SLOTS)
        with device:
            lo, hi = tack.asarray(init.copy()), tack.asarray(init.copy())
            old_min, old_max = tack.zeros(n, dtype=dtype), tack.zeros(n, dtype=dtype)
            min_max(lo, hi, tack.asarray(v), old_min, old_max)
        slots = np.arange(n) % 3
        for s in range(SLOTS):
            mine = v[slots == s].tolist()
            seen = set(mine) | {init[s].item()}
            for name, target, olds, pick in (("min", lo, old_min, min),
                                             ("max", hi, old_max, max)):
                what = f"atomic_{name} {dtype} slot {s} n={n} {rng}"
                final = target.numpy()[s].item()
                assert final == pick([init[s].item()] + mine), what
                returned = olds.numpy()[slots == s].tolist()
                assert set(returned) <= seen, f"{what}: an old value never stored"
                assert all(pick(o, final) == final for o in returned), \
                    f"{what}: an old value beyond the final one"
                if mine and init[s].item() != final:  # someone saw the initial value
                    assert init[s].item() in returned, f"{what}: initial value lost"


@pytest.mark.parametrize("dtype", ATOMIC_TYPES, ids=[t.name for t in ATOMIC_TYPES])
def test_atomic_add_sub_two_threads(dtype, rng, two_threads):
    _run_add_sub(two_threads, dtype, rng)


@pytest.mark.parametrize("dtype", ATOMIC_TYPES, ids=[t.name for t in ATOMIC_TYPES])
def test_atomic_min_max_two_threads(dtype, rng, two_threads):
    _run_min_max(two_threads, dtype, rng)


@pytest.mark.parametrize("dtype", (tack.i64, tack.u32, tack.f32),
                         ids=["i64", "u32", "f32"])
def test_atomics_with_tack_cpu_threads(dtype, rng, env_threads):
    _run_add_sub(env_threads, dtype, rng)
    _run_min_max(env_threads, dtype, rng)


@tack.kernel
def histogram(x, bins):
    for i, j in tack.ndindex(x.shape[0], x.shape[1]):
        tack.atomic_add(bins, (x[i, j] % 2, x[i, j] % 3), 1)


def test_atomic_with_tuple_index_on_2d_array(rng, two_threads):
    for shape in ((0, 5), (1, 1), (7, 33), (300, 200)):
        x = rng.ints(tack.i64, shape[0] * shape[1], 0, 1000).reshape(shape)
        with two_threads:
            bins = tack.zeros((2, 3), dtype=tack.u64)
            histogram(tack.asarray(x), bins)
        want = np.zeros((2, 3), dtype=np.uint64)
        np.add.at(want, (x % 2, x % 3), 1)
        np.testing.assert_array_equal(bins.numpy(), want, err_msg=f"{shape} {rng}")


@tack.kernel
def atomic_on(acc):
    for i in range(len(acc)):
        tack.atomic_add(acc, 0, 1)


@tack.kernel
def atomic_max_on(acc):
    for i in range(len(acc)):
        tack.atomic_max(acc, i, 1)


UNSUPPORTED = (tack.i8, tack.i16, tack.u8, tack.u16)


@pytest.mark.parametrize("dtype", UNSUPPORTED, ids=[t.name for t in UNSUPPORTED])
def test_atomics_on_narrow_ints_name_the_dtype(dtype):
    for kernel, name, col in ((atomic_on, "atomic_add", 9), (atomic_max_on, "atomic_max", 9)):
        message = (f"Kernel '{kernel.name}': tack.{name} on 'acc' of dtype {dtype} is "
                   f"not supported on {BACKEND} (atomics take i32, i64, u32, u64, f32, "
                   f"f64) at line 4, column {col}")
        with pytest.raises(TypeError, match=re.escape(message)):
            kernel(tack.zeros(3, dtype=dtype))


# -- float min/max: Python's min(old, v) and max(old, v) --------------------------------------

@tack.kernel
def min_max_each(lows, highs, v):
    for i in range(len(v)):
        tack.atomic_min(lows, i, v[i])
        tack.atomic_max(highs, i, v[i])


@tack.kernel
def min_max_all(low, high, v):
    for i in range(len(v)):
        tack.atomic_min(low, 0, v[i])
        tack.atomic_max(high, 0, v[i])


@pytest.mark.parametrize("dtype", [tack.f32, tack.f64])
def test_float_min_max_keep_the_old_value_on_nan_and_tied_zeros(dtype):
    nan = float("nan")
    old = [nan, 0.0, -0.0, 1.0, nan, 2.0, -0.0]
    v = [1.0, -0.0, 0.0, nan, nan, 1.0, -0.0]
    lows, highs = tack.array(old, dtype=dtype), tack.array(old, dtype=dtype)
    min_max_each(lows, highs, tack.array(v, dtype=dtype))
    for got, pick in ((lows.numpy(), min), (highs.numpy(), max)):
        expected = np.array([pick(o, x) for o, x in zip(old, v)], dtype.numpy)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
        np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))
        np.testing.assert_array_equal(got[~np.isnan(got)], expected[~np.isnan(expected)])


@pytest.mark.parametrize("dtype", [tack.f32, tack.f64])
@pytest.mark.parametrize("n", [1, 7, 1000])
def test_float_min_max_under_contention_skip_nan_values(dtype, n, rng):
    v = rng.floats(dtype, n)
    v[::3] = np.nan
    low, high = tack.full(1, np.inf, dtype), tack.full(1, -np.inf, dtype)
    min_max_all(low, high, tack.array(v))
    finite = v[~np.isnan(v)]
    assert low[0] == (finite.min() if finite.size else np.inf), f"{rng}"
    assert high[0] == (finite.max() if finite.size else -np.inf), f"{rng}"
