"""Debug mode's bounds checks as each backend compiles them.

These kernels run on the default device, so the backend suites run them on the
CPU (LLVM IR) and on OpenCL (C-family source; CUDA, HIP and Level Zero get the
same source, compiled offline from the variants these tests record). Each
checked access gives the flat index, or skips the access (a load reads zero)
after counting the violation; the first one counted is raised as IndexError.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tack


@tack.func
def shifted(a, i):
    return a[i + 1]


@tack.kernel
def read_next(a, out):
    for i in range(len(out)):
        out[i] = shifted(a, i)


@tack.kernel
def write_past(out, extra):
    for i in range(len(out) + extra):
        out[i] = 1.0


@tack.kernel
def read_before(a, out):
    for i in range(len(out)):
        out[i] = a[i - 1]


@tack.kernel
def grid_read(g, out):
    for i in range(len(out)):
        out[i] = g[i, i + 2]


@tack.kernel
def bump(counts, keys):
    for i in range(len(keys)):
        tack.atomic_add(counts, keys[i], 1)


@tack.kernel
def bump_and_keep(counts, keys, old):
    for i in range(len(keys)):
        old[i] = tack.atomic_add(counts, keys[i], 2.5)


@tack.kernel
def bump_diagonal_right(grid, v):
    for i in range(len(v)):
        tack.atomic_add(grid, (i, i + 1), v[i])


@tack.kernel
def first_of(a) -> float:
    for i in range(len(a)):
        a[i] = a[i] + 1.0
    return a[len(a)]


@tack.kernel
def run_length(a, out):
    """A checked load in a while condition, on the right of ``and``: checked
    each time it is evaluated, and only when ``j < len(a)`` holds."""
    for i in range(len(out)):
        j = i
        while j < len(a) and a[j] > 0.0:
            j += 1
        out[i] = j - i


@tack.kernel
def store_of_load(src, dst, shift):
    for i in range(len(dst)):
        dst[i + shift] = src[i + shift] * 2.0


@tack.kernel
def add_one_up_to(a, out):
    n = min(len(a), out.shape[0])
    for i in range(n):
        out[i] = a[i] + 1.0


def _line_of(text: str) -> int:
    with open(__file__) as f:
        return next(k for k, line in enumerate(f, 1) if line.rstrip().endswith(text))


def test_load_out_of_bounds_names_the_access(debug):
    a, out = tack.arange(10, dtype=tack.f32), tack.zeros(10)
    message = ("Kernel 'read_next': index 10 is out of bounds (extent 10) in a[i + 1] "
               "in device function 'shifted' at ")
    with pytest.raises(IndexError, match=re.escape(message)) as info:
        read_next(a, out)
    assert f"{__file__}, line {_line_of('return a[i + 1]')}, column 12" in str(info.value)
    # the bad load gave 0, the rest ran
    np.testing.assert_array_equal(out.numpy(), list(range(1, 10)) + [0])


def test_a_negative_index_is_out_of_bounds(debug):
    out = tack.full(5, 7.0)
    with pytest.raises(IndexError, match=re.escape("index -1 is out of bounds (extent 5) "
                                                   "in a[i - 1]")):
        read_before(tack.arange(5, dtype=tack.f32), out)
    np.testing.assert_array_equal(out.numpy(), [0, 0, 1, 2, 3])


def test_stores_are_skipped_and_counted(debug):
    out = tack.zeros(4)
    with pytest.raises(IndexError, match=r"index \d+ is out of bounds \(extent 4\) in "
                                         r"out\[i\] at .*; 2 more out-of-bounds accesses "
                                         r"were skipped"):
        write_past(out, 3)
    np.testing.assert_array_equal(out.numpy(), [1, 1, 1, 1])


def test_the_value_of_a_skipped_store_is_still_checked(debug):
    src, dst = tack.arange(4, dtype=tack.f32), tack.zeros(4)
    with pytest.raises(IndexError, match=r"; 1 more out-of-bounds access was skipped"):
        store_of_load(src, dst, 1)      # i = 3: src[4] and dst[4] both out of bounds
    np.testing.assert_array_equal(dst.numpy(), [0, 2, 4, 6])


def test_dimension_is_named_for_multi_dimensional_access(debug):
    g = tack.zeros((5, 4))
    with pytest.raises(IndexError, match=r"index 4 is out of bounds in dimension 1 "
                                         r"\(extent 4\) in g\[i, i \+ 2\]"):
        grid_read(g, tack.zeros(3))


def test_the_flat_index_of_a_checked_grid_read(debug, rng):
    g = rng.floats(tack.f32, 35).reshape(5, 7)
    out = tack.zeros(5)
    grid_read(tack.array(g), out)
    np.testing.assert_array_equal(out.numpy(), g[np.arange(5), np.arange(5) + 2],
                                  err_msg=repr(rng))


def test_atomic_targets_are_checked(debug):
    counts = tack.zeros(3, tack.i32)
    keys = tack.array(np.array([0, 2, 5, 1, 2], np.int32))
    with pytest.raises(IndexError, match=r"index 5 is out of bounds \(extent 3\) in "
                                         r"counts\[keys\[i\]\]"):
        bump(counts, keys)
    np.testing.assert_array_equal(counts.numpy(), [1, 1, 2])


def test_a_skipped_atomic_returns_zero(debug):
    counts = tack.full(2, 1.0)
    keys = tack.array(np.array([1, 9, 1], np.int32))
    old = tack.full(3, -1.0)
    with pytest.raises(IndexError, match=r"index 9 is out of bounds \(extent 2\)"):
        bump_and_keep(counts, keys, old)
    np.testing.assert_array_equal(counts.numpy(), [1.0, 6.0])
    assert old.numpy()[1] == 0.0
    assert sorted(old.numpy()[[0, 2]]) == [1.0, 3.5]


def test_an_atomic_with_a_tuple_index_is_named_as_a_subscript(debug):
    with pytest.raises(IndexError, match=re.escape(
            "index 3 is out of bounds in dimension 1 (extent 3) in grid[i, i + 1]")):
        bump_diagonal_right(tack.zeros((3, 3)), tack.ones(3))


def test_returned_value_is_checked(debug):
    with pytest.raises(IndexError, match=r"in a\[len\(a\)\]"):
        first_of(tack.zeros(3))


@pytest.mark.parametrize("n", [0, 1, 7, 300])
def test_a_checked_load_in_a_while_condition(debug, rng, n):
    a = rng.floats(tack.f32, n)
    out = tack.zeros(n, tack.i64)
    run_length(tack.array(a), out)    # in bounds: `and` stops before a[len(a)]
    expected = [next((j for j in range(i, n) if not a[j] > 0), n) - i for i in range(n)]
    np.testing.assert_array_equal(out.numpy(), expected, err_msg=repr(rng))


@pytest.mark.parametrize("n", [0, 1, 7, 1001])
def test_in_bounds_launches_are_silent_and_correct(debug, rng, n):
    a = rng.floats(tack.f32, n + 1)
    out = tack.zeros(n)
    read_next(tack.array(a), out)
    np.testing.assert_array_equal(out.numpy(), a[1:], err_msg=repr(rng))


def test_no_variant_per_length(debug):
    grid_read(tack.zeros((5, 7)), tack.zeros(5))
    before = len(grid_read._variants)
    for rows in (6, 9, 13):
        grid_read(tack.zeros((rows, rows + 2)), tack.zeros(rows))
    assert len(grid_read._variants) == before


@pytest.mark.parametrize("n", [0, 1, 7])
def test_a_range_from_extents_read_before_the_loop(debug, n):
    a, out = tack.arange(n, dtype=tack.f32), tack.zeros(n + 2)
    add_one_up_to(a, out)
    np.testing.assert_array_equal(out.numpy(), list(np.arange(n) + 1.0) + [0.0, 0.0])


@tack.kernel
def previous_or_zero(p, out):
    for i in range(len(out)):
        out[i] = p[i - 1] if i > 0 else tack.vec3(0.0)   # p[-1] is never read


def test_the_side_a_conditional_vector_skips_is_not_checked(debug):
    p = tack.array(np.arange(12, dtype=np.float32).reshape(4, 3), dtype=tack.vec3())
    out = tack.zeros(4, tack.vec3())
    previous_or_zero(p, out)
    np.testing.assert_array_equal(out.numpy()[1:], p.numpy()[:3])
    np.testing.assert_array_equal(out.numpy()[0], 0.0)
