"""Debug mode: every access bounds-checked, the first violation raised as IndexError."""

import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import tack


@pytest.fixture
def debug():
    tack.set_debug(True)
    yield
    tack.set_debug(False)


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
def grid_read(g, out):
    for i in range(len(out)):
        out[i] = g[i, i + 2]


@tack.kernel
def bump(counts, keys):
    for i in range(len(keys)):
        tack.atomic_add(counts, keys[i], 1)


@tack.kernel
def first_of(a) -> float:
    for i in range(len(a)):
        a[i] = a[i] + 1.0
    return a[len(a)]


def test_load_out_of_bounds_names_the_access(debug):
    a = tack.arange(10, dtype=tack.f32)
    out = tack.zeros(10)
    message = ("Kernel 'read_next': index 10 is out of bounds (extent 10) in a[i + 1] "
               "in device function 'shifted' at ")
    with pytest.raises(IndexError, match=re.escape(message)) as info:
        read_next(a, out)
    assert f"{__file__}, line 24, column 12" in str(info.value)
    # the bad load gave 0, the rest ran
    np.testing.assert_array_equal(out.numpy(), list(range(1, 10)) + [0])


def test_stores_are_skipped_and_counted(debug):
    out = tack.zeros(4)
    with pytest.raises(IndexError, match=r"index 4 is out of bounds \(extent 4\) in "
                                         r"out\[i\] at .*; 2 more out-of-bounds accesses "
                                         r"were skipped"):
        write_past(out, 3)
    np.testing.assert_array_equal(out.numpy(), [1, 1, 1, 1])


def test_dimension_is_named_for_multi_dimensional_access(debug):
    g = tack.zeros((5, 4))
    with pytest.raises(IndexError, match=r"index 4 is out of bounds in dimension 1 "
                                         r"\(extent 4\) in g\[i, i \+ 2\]"):
        grid_read(g, tack.zeros(3))


def test_atomic_targets_are_checked(debug):
    counts = tack.zeros(3, tack.i32)
    keys = tack.array(np.array([0, 2, 5, 1, 2], np.int32))
    with pytest.raises(IndexError, match=r"index 5 is out of bounds \(extent 3\) in "
                                         r"counts\[keys\[i\]\]"):
        bump(counts, keys)
    np.testing.assert_array_equal(counts.numpy(), [1, 1, 2])


@tack.kernel
def bump_diagonal_right(grid, v):
    for i in range(len(v)):
        tack.atomic_add(grid, (i, i + 1), v[i])


def test_an_atomic_with_a_tuple_index_is_named_as_a_subscript(debug):
    with pytest.raises(IndexError, match=re.escape(
            "index 3 is out of bounds in dimension 1 (extent 3) in grid[i, i + 1]")):
        bump_diagonal_right(tack.zeros((3, 3)), tack.ones(3))


def test_returned_value_is_checked(debug):
    with pytest.raises(IndexError, match=r"in a\[len\(a\)\]"):
        first_of(tack.zeros(3))


def test_in_bounds_launches_are_silent_and_correct(debug):
    a = tack.arange(11, dtype=tack.f32)
    out = tack.zeros(10)
    read_next(a, out)
    np.testing.assert_array_equal(out.numpy(), np.arange(1, 11))


def test_no_variant_per_length(debug):
    grid_read(tack.zeros((5, 7)), tack.zeros(5))
    before = len(grid_read._variants)
    for rows in (6, 9, 13):
        grid_read(tack.zeros((rows, rows + 2)), tack.zeros(rows))
    assert len(grid_read._variants) == before


def test_threads_report_their_own_violations(debug):
    results = {}

    def run(name, n):
        try:
            write_past(tack.zeros(n), 1)
        except IndexError as exc:
            results[name] = str(exc)

    threads = [threading.Thread(target=run, args=(k, 3 + k)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        assert f"index {3 + k} is out of bounds (extent {3 + k})" in results[k]


def test_inspect_shows_the_checks(debug):
    text = tack.inspect(read_next, tack.zeros(3), tack.zeros(2), mode="ir")
    assert "checked#0" in text and "__tack_errors__" in text


def test_turning_it_off_stops_checking():
    tack.set_debug(True)
    tack.set_debug(False)
    assert not tack.debug_enabled()
    out = tack.zeros(10)
    read_next(tack.arange(11, dtype=tack.f32), out)  # in bounds: plain variant
    np.testing.assert_array_equal(out.numpy(), np.arange(1, 11))


def test_a_warm_signature_is_checked_once_debug_is_on():
    @tack.kernel
    def copy_next(a, out):
        for i in range(len(out)):
            out[i] = a[i + 1]
    a, out = tack.arange(10, dtype=tack.f32), tack.zeros(10)
    copy_next(tack.arange(11, dtype=tack.f32), out)   # warm, plain variant
    tack.set_debug(True)
    try:
        with pytest.raises(IndexError, match="index 10 is out of bounds"):
            copy_next(a, out)
    finally:
        tack.set_debug(False)
    copy_next(tack.arange(11, dtype=tack.f32), out)   # warm again, unchecked
    np.testing.assert_array_equal(out.numpy(), np.arange(1, 11))


def test_tack_debug_environment_variable(tmp_path):
    script = tmp_path / "k.py"
    script.write_text(
        "import tack\n"
        "@tack.kernel\n"
        "def k(a):\n"
        "    for i in range(len(a)):\n"
        "        a[i + 1] = 0\n"
        "print(tack.debug_enabled())\n"
        "try:\n"
        "    k(tack.zeros(2))\n"
        "except IndexError as e:\n"
        "    print('IndexError', e)\n")
    env = dict(os.environ, TACK_DEBUG="1")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.stdout.startswith("True\nIndexError Kernel 'k': index 2 is out of bounds")
    env["TACK_DEBUG"] = "off"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.stdout.startswith("False\n")


def test_tacks_own_kernels_run_unchecked(debug, opencl):
    # host operations run kernels of Tack's own, which debug mode leaves alone
    # (OpenCL has no debug mode: they used to fail there once it was on)
    big = tack.zeros(1 << 16, device=opencl)          # a fill kernel from 256 KiB
    assert big.copy().astype(tack.i32).numpy().sum() == 0
    assert tack.array(big, dtype=tack.f64, device=opencl).device == opencl
    out = tack.zeros(10)
    with pytest.raises(IndexError, match="out of bounds"):   # the user's kernels still are
        read_next(tack.arange(10, dtype=tack.f32), out)


@tack.kernel
def add_one_up_to(a, out):
    n = min(len(a), out.shape[0])
    for i in range(n):
        out[i] = a[i] + 1.0


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
