"""Differential tests of loops, control flow, n-d indexing and shape access.

Each kernel is checked against the same computation written in plain
Python/NumPy, on fresh random inputs of sizes 0, 1, 7, 33, 1000 and 4097
(or n-d shapes with zero and odd extents).
"""

from __future__ import annotations

import numpy as np
import pytest

import tack

SIZES = (0, 1, 7, 33, 1000, 4097)
SHAPES_2D = ((0, 3), (3, 0), (1, 1), (7, 33), (33, 7), (64, 65))
SHAPES_3D = ((0, 2, 3), (1, 1, 1), (2, 3, 4), (7, 5, 3), (5, 1, 33))


def check(got, want, what, rng):
    np.testing.assert_array_equal(got.numpy(), want, err_msg=f"{what} {rng}")


@tack.kernel
def nested_ranges(lo, hi, step, out):
    for i in range(len(out)):
        total = 0
        for j in range(lo[i], hi[i], step[i]):
            for k in range(j % 3):
                total += k + 1
            total += j
        out[i] = total


def test_nested_for_with_variable_ranges(rng):
    for n in SIZES:
        lo, hi = rng.ints(tack.i32, n, -20, 20), rng.ints(tack.i32, n, -20, 20)
        step = rng.ints(tack.i32, n, -4, 4)
        step[step == 0] = 1
        out = tack.zeros(n, dtype=tack.i64)
        nested_ranges(tack.asarray(lo), tack.asarray(hi), tack.asarray(step), out)
        want = []
        for a, b, s in zip(lo.tolist(), hi.tolist(), step.tolist()):
            total = 0
            for j in range(a, b, s):
                total += sum(k + 1 for k in range(j % 3)) + j
            want.append(total)
        check(out, np.array(want, dtype=np.int64), f"n={n}", rng)


@tack.kernel
def counted_steps(lo, hi, step, out):
    for i in range(len(out)):
        count = 0
        for j in range(lo[i], hi[i], step[i]):
            count += 1
            if count > 1000:   # a loop that would never end stops here
                break
        out[i] = count


def test_a_zero_step_held_in_a_variable_runs_no_iterations(rng):
    """Where Python raises ValueError: zero iterations on every backend, either
    way round (the CPU used to loop for ever when start > stop)."""
    for n in (1, 7):
        lo, hi = rng.ints(tack.i32, n, -20, 20), rng.ints(tack.i32, n, -20, 20)
        lo[0], hi[0] = 5, 0   # start > stop
        out = tack.zeros(n, dtype=tack.i64)
        counted_steps(tack.asarray(lo), tack.asarray(hi),
                      tack.asarray(np.zeros(n, np.int32)), out)
        check(out, np.zeros(n, np.int64), f"n={n}", rng)


@tack.kernel
def range_args_once(m, calls, out):
    for i in range(len(out)):
        count = 0
        stop = m[i]
        for j in range(tack.atomic_add(calls, i, 1), stop):
            stop = stop - 1  # the range keeps the value read on entry
            count += 1
        out[i] = count


def test_range_arguments_are_evaluated_once(rng):
    for n in SIZES:
        m = rng.ints(tack.i32, n, -3, 40)
        calls, out = tack.zeros(n, dtype=tack.i32), tack.zeros(n, dtype=tack.i32)
        range_args_once(tack.asarray(m), calls, out)
        check(calls, np.ones(n, dtype=np.int32), f"calls n={n}", rng)
        check(out, np.maximum(m, 0), f"trip counts n={n}", rng)


@tack.kernel
def collatz(x, steps, peak):
    for i in range(len(x)):
        v = x[i]
        count = 0
        top = v
        while v != 1:
            if v % 2 == 0:
                v = v // 2
                count += 1
                continue
            v = 3 * v + 1
            top = max(top, v)
            count += 1
            if count >= 500:
                break
        steps[i] = count
        peak[i] = top


def test_while_break_continue(rng):
    for n in SIZES:
        x = rng.ints(tack.i64, n, 1, 100_000)
        steps, peak = tack.zeros(n, dtype=tack.i32), tack.zeros(n, dtype=tack.i64)
        collatz(tack.asarray(x), steps, peak)
        want_steps, want_peak = [], []
        for v in x.tolist():
            count, top = 0, v
            while v != 1:
                if v % 2 == 0:
                    v //= 2
                    count += 1
                    continue
                v = 3 * v + 1
                top = max(top, v)
                count += 1
                if count >= 500:
                    break
            want_steps.append(count)
            want_peak.append(top)
        check(steps, np.array(want_steps, np.int32), f"steps n={n}", rng)
        check(peak, np.array(want_peak, np.int64), f"peak n={n}", rng)


@tack.kernel
def nested_break_continue(x, out):
    for i in range(len(x)):
        hits = 0
        for j in range(10):
            if j == x[i]:
                continue
            k = 0
            while True:
                k += 1
                if k > j:
                    break
                if k % 2 == 0:
                    continue
                hits += 1
            if hits > 12:
                break
        out[i] = hits


def test_break_and_continue_target_the_innermost_loop(rng):
    for n in SIZES:
        x = rng.ints(tack.i32, n, 0, 12)
        out = tack.zeros(n, dtype=tack.i32)
        nested_break_continue(tack.asarray(x), out)
        want = []
        for v in x.tolist():
            hits = 0
            for j in range(10):
                if j == v:
                    continue
                k = 0
                while True:
                    k += 1
                    if k > j:
                        break
                    if k % 2 == 0:
                        continue
                    hits += 1
                if hits > 12:
                    break
            want.append(hits)
        check(out, np.array(want, np.int32), f"n={n}", rng)


@tack.kernel
def transpose_scale(a, out):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[j, i] = a[i, j] * 2 + i - j


@tack.kernel
def ndindex_2d(a, b, out):
    for i, j in tack.ndindex(a.shape[0], a.shape[1]):
        out[i, j] = a[i, j] * b[j, i] + out.shape[1] * 1000 + len(b)


def test_2d_indexing_and_ndindex(rng):
    for shape in SHAPES_2D:
        a_np = rng.floats(tack.f64, shape[0] * shape[1]).reshape(shape)
        out = tack.zeros(shape[::-1], dtype=tack.f64)
        transpose_scale(tack.asarray(a_np), out)
        i, j = np.indices(shape)
        check(out, (a_np * 2 + i - j).T, f"range 2-D {shape}", rng)
        b_np = rng.floats(tack.f64, shape[0] * shape[1]).reshape(shape[::-1])
        out = tack.zeros(shape, dtype=tack.f64)
        ndindex_2d(tack.asarray(a_np), tack.asarray(b_np), out)
        check(out, a_np * b_np.T + shape[1] * 1000 + shape[1], f"ndindex 2-D {shape}",
              rng)


@tack.kernel
def ndindex_3d(a, out):
    for i, j, k in tack.ndindex(a.shape[0], a.shape[1], a.shape[2]):
        out[k, i, j] = a[i, j, k] + 100 * i + 10 * j + k


@tack.kernel
def sum_3d(a, out):
    for i in range(len(a)):
        s = 0
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                s += a[i, j, k] * (j + 1)
        out[i] = s


def test_3d_indexing_and_ndindex(rng):
    for shape in SHAPES_3D:
        a_np = rng.ints(tack.i32, int(np.prod(shape)), -1000, 1000).reshape(shape)
        out = tack.zeros((shape[2], shape[0], shape[1]), dtype=tack.i32)
        ndindex_3d(tack.asarray(a_np), out)
        i, j, k = np.indices(shape)
        check(out, np.transpose(a_np + 100 * i + 10 * j + k, (2, 0, 1)),
              f"ndindex 3-D {shape}", rng)
        out = tack.zeros(shape[0], dtype=tack.i64)
        sum_3d(tack.asarray(a_np), out)
        weights = np.arange(1, shape[1] + 1).reshape(1, -1, 1)
        check(out, (a_np.astype(np.int64) * weights).sum(axis=(1, 2)), f"sum 3-D {shape}",
              rng)


@tack.kernel
def shape_access(a, out):
    for i in range(len(out)):
        out[i] = len(a) * 10000 + a.shape[1] * 100 + a.shape[2] + i


def test_shape_and_len(rng):
    for shape in SHAPES_3D:
        n = int(rng.gen.integers(0, 9))
        out = tack.zeros(n, dtype=tack.i64)
        shape_access(tack.zeros(shape, dtype=tack.u8), out)
        want = shape[0] * 10000 + shape[1] * 100 + shape[2] + np.arange(n)
        check(out, want, f"shape {shape} n={n}", rng)


@tack.kernel
def accumulate(a, acc) -> float:
    for i in range(len(a)):
        tack.atomic_add(acc, 0, a[i])
    return acc[0] + len(a)


def test_annotated_return_value_reads_what_the_loop_wrote(rng):
    for n in SIZES:
        a_np = rng.ints(tack.i32, n, -1000, 1000).astype(np.float64)
        got = accumulate(tack.asarray(a_np), tack.zeros(1, dtype=tack.f64))
        assert isinstance(got, float)
        assert got == float(a_np.sum()) + n, f"n={n} {rng}"


@tack.kernel
def count_up(start, stop, out):
    for i in range(len(out)):
        c = 0
        for j in range(start, stop, 2):
            c += 1
            if c > 10:
                break
        out[i] = c


@tack.kernel
def count_down(start, stop, out):
    for i in range(len(out)):
        c = 0
        for j in range(start, stop, -2):
            c += 1
            if c > 10:
                break
        out[i] = c


@tack.kernel
def count_by(start, stop, step, out):
    for i in range(len(out)):
        c = 0
        for j in range(start, stop, step):
            c += 1
            if c > 10:
                break
        out[i] = c


@tack.kernel
def count_u64_down(start, out):
    for i in range(len(out)):
        c = 0
        for j in range(start, 0, -9223372036854775808):
            c += 1
            if c > 10:
                break
        out[i] = c


@tack.kernel
def count_u64_up(start, out):
    for i in range(len(out)):
        c = 0
        for j in range(start, 18446744073709551615, 4611686018427387904):
            c += 1
            if c > 10:
                break
        out[i] = c


I32_MAX, I32_MIN, I64_MAX, I64_MIN = 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)


@pytest.mark.parametrize("kernel, args", [
    (count_up, (I32_MAX - 1, I32_MAX)), (count_up, (I32_MAX - 2, I32_MAX)),
    (count_up, (I64_MAX - 1, I64_MAX)), (count_up, (I32_MAX - 5, I32_MAX - 1)),
    (count_down, (I32_MIN + 1, I32_MIN)), (count_down, (I64_MIN + 1, I64_MIN)),
    (count_down, (I32_MIN + 4, I32_MIN)),
    (count_by, (I32_MAX - 1, I32_MAX, 5)), (count_by, (I32_MIN + 1, I32_MIN, -7)),
    (count_by, (I64_MAX - 3, I64_MAX, I64_MAX)), (count_by, (5, -3, -4)),
    (count_u64_down, (2**63 + 5,)), (count_u64_up, (2**63 + 1,)),
], ids=lambda v: getattr(v, "name", None))
def test_sequential_range_near_the_type_limits(kernel, args):
    """Regression: the loop variable wrapped around past the type's limit and the
    loop ran on (Python's range never wraps)."""
    out = tack.zeros(2, dtype=tack.i32)
    kernel(*args, out)
    start, stop = args[0], (args[1] if len(args) > 1 else
                            (0 if kernel is count_u64_down else 2**64 - 1))
    step = {count_up: 2, count_down: -2, count_u64_down: -(2**63),
            count_u64_up: 2**62}.get(kernel) or args[2]
    want = min(len(range(start, stop, step)), 11)
    assert out.numpy().tolist() == [want, want], (args, step)
