"""The disjoint-array specialization and ``tack.inspect``'s modes and errors."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tack

SIZES = (0, 1, 7, 33, 1000, 4097)


@tack.kernel
def saxpy(a, x, y, out):
    for i in range(len(out)):
        out[i] = a * x[i] + y[i]


@tack.kernel
def accumulate(x, y):
    for i in range(len(y)):
        y[i] = x[i] * 2 + y[i]


@tack.kernel
def reread(x, y):
    for i in range(len(y)):
        y[i] = x[i] * 2
        y[i] = y[i] + x[i]  # x[i] is the new value when x is y


def test_aliased_arguments_give_the_right_answer(rng):
    for n in SIZES:
        for dtype in (tack.f32, tack.f64, tack.i32):
            x_np = rng.values(dtype, n)
            x = tack.asarray(x_np)
            saxpy(3, x, x, x)  # every array is the same one
            np.testing.assert_array_equal(x.numpy(), x_np * 3 + x_np,
                                          err_msg=f"saxpy(3, x, x, x) n={n} {rng}")
            x = tack.asarray(x_np)
            accumulate(x, x)
            np.testing.assert_array_equal(x.numpy(), x_np * 2 + x_np,
                                          err_msg=f"accumulate(x, x) n={n} {rng}")
            x = tack.asarray(x_np)
            reread(x, x)
            np.testing.assert_array_equal(x.numpy(), x_np * 4,
                                          err_msg=f"reread(x, x) n={n} {rng}")
            y_np = rng.values(dtype, n)
            x, y = tack.asarray(x_np), tack.asarray(y_np)
            reread(x, y)
            np.testing.assert_array_equal(y.numpy(), x_np * 3,
                                          err_msg=f"reread(x, y) n={n} {rng}")
            y = tack.asarray(y_np)
            accumulate(x, y)  # and disjoint arrays afterwards, with the same types
            np.testing.assert_array_equal(y.numpy(), x_np * 2 + y_np,
                                          err_msg=f"accumulate(x, y) n={n} {rng}")


def _arrays(n=64, dtype=tack.f32, device="cpu"):
    """CPU arrays: noalias, LLVM and O3 are the CPU backend's (inspection runs
    where a launch would, so these run on the CPU whatever the default)."""
    return tuple(tack.zeros(n, dtype=dtype, device=device) for _ in range(3))


def test_source_marks_distinct_arrays_noalias():
    x, y, out = _arrays()
    text = tack.inspect(saxpy, 2.0, x, y, out, mode="source")
    head = next(line for line in text.splitlines() if '@"tack.body"(' in line)
    for name in ("x", "y", "out"):
        assert f'float* noalias %"{name}"' in head, head
    aliased = tack.inspect(saxpy, 2.0, x, x, out, mode="source")
    assert "noalias" not in aliased, aliased


def _vector_body(text):
    match = re.search(r"^vector\.body:[^\n]*\n(.*?)\n\n", text, re.S | re.M)
    assert match, text
    return match.group(1)


def test_optimized_saxpy_is_vectorized():
    x, y, out = _arrays()
    body = _vector_body(tack.inspect(saxpy, 2.0, x, y, out, mode="optimized"))
    widths = {int(w) for w in re.findall(r"fmul <(\d+) x float>", body)}
    assert widths and max(widths) >= 8, body


def test_optimized_f64_is_vectorized():
    x, y, out = _arrays(dtype=tack.f64)
    body = _vector_body(tack.inspect(saxpy, 2.0, x, y, out, mode="optimized"))
    widths = {int(w) for w in re.findall(r"fmul <(\d+) x double>", body)}
    assert widths and max(widths) >= 4, body


@tack.kernel
def scale4(a, out):
    for i, j, k, l in tack.ndindex(a.shape[0], a.shape[1], a.shape[2], a.shape[3]):
        out[i, j, k, l] = 2.0 * a[i, j, k, l] + 1.0


def test_a_4d_loop_vectorizes_its_last_dimension():
    """Only the leading dimensions are flattened: the innermost loop has no
    division and vectorizes (with the last extent 63 it was one // and % per
    index per element, 7.8 times Numba's time)."""
    shape = (3, 4, 5, 63)
    args = (tack.zeros(shape, device="cpu"), tack.zeros(shape, device="cpu"))
    text = tack.inspect(scale4, *args, mode="optimized")
    assert "vector.body" in text


def test_ir_mode_for_saxpy():
    x, y, out = _arrays()
    assert tack.inspect(saxpy, 2.0, x, y, out, mode="ir") == (
        "kernel saxpy(a: f32, x: f32[1d], y: f32[1d], out: f32[1d]):\n"
        "  parallel for i in [0, out.shape[0]):\n"
        "    out[i] = ((a * x[i]) + y[i])\n")
    x, y, out = _arrays(dtype=tack.i16)
    assert tack.inspect(saxpy, 2, x, y, out, mode="ir") == (
        "kernel saxpy(a: i32, x: i16[1d], y: i16[1d], out: i16[1d]):\n"
        "  parallel for i in [0, out.shape[0]):\n"
        "    out[i] = i16(((a * i32(x[i])) + i32(y[i])))\n")


def test_cost_mode():
    x, y, out = _arrays()
    assert tack.inspect(saxpy, 2.0, x, y, out, mode="cost") == \
        "kernel saxpy: per iteration 2 flops, 12 bytes\n"
    x, y, out = _arrays(dtype=tack.f64)
    assert tack.inspect(saxpy, 2.0, x, y, out, mode="cost") == \
        "kernel saxpy: per iteration 2 flops, 24 bytes\n"


@tack.kernel
def grid_copy(a, out):
    for i, j in tack.ndindex(out.shape[0], out.shape[1]):
        s = 0.0
        for k in range(3):
            s += a[i, j]
        out[i, j] = s


def test_cost_is_per_point_of_an_nd_space():
    a, out = tack.zeros((5, 4), dtype=tack.f64), tack.zeros((5, 4), dtype=tack.f64)
    # per point: 3 trips x (index * + and the add) + the loop, then the store's index
    assert tack.inspect(grid_copy, a, out, mode="cost") == \
        "kernel grid_copy: per iteration 12 flops, 32 bytes\n"


def test_inspect_does_not_launch(rng):
    x_np = rng.floats(tack.f32, 9)
    x, y, out = tack.asarray(x_np), tack.asarray(x_np), tack.asarray(x_np)
    for mode in ("ir", "source", "optimized", "cost"):
        if mode == "optimized" and tack.get_default_device().type != "cpu":
            with pytest.raises(ValueError, match="inspect mode 'optimized' is CPU only"):
                tack.inspect(saxpy, 2.0, x, y, out, mode=mode)
            continue
        tack.inspect(saxpy, 2.0, x, y, out, mode=mode)
    np.testing.assert_array_equal(out.numpy(), x_np, err_msg=f"{rng}")


def plain(a):
    for i in range(len(a)):
        a[i] = 0


@tack.kernel
def first_n(a, n):
    for i in range(n):
        a[i] = 1.0


@tack.kernel
def every_kth(a, k):
    for i in range(len(a) // k):
        a[i * k] = 1.0


def test_inspect_refuses_the_ranges_a_call_refuses():
    a = tack.zeros(4)
    cases = [(first_n, (a, 2.0), TypeError, "the parallel loop's range uses 'n', a float"),
             (every_kth, (a, 0), ValueError, "the parallel loop's range divides by zero")]
    for kernel, args, error, message in cases:
        with pytest.raises(error, match=re.escape(message)):
            kernel(*args)
        for mode in ("ir", "source"):
            with pytest.raises(error, match=re.escape(message)):
                tack.inspect(kernel, *args, mode=mode)
    np.testing.assert_array_equal(a.numpy(), 0)


def test_inspect_errors():
    x, y, out = _arrays()
    with pytest.raises(TypeError, match=re.escape("Expected a @tack.kernel, got function")):
        tack.inspect(plain, x)
    message = ("Unknown inspect mode: 'asm'. Use 'ir', 'source', 'optimized', or "
               "'cost'.")
    with pytest.raises(ValueError, match=re.escape(message)):
        tack.inspect(saxpy, 2.0, x, y, out, mode="asm")
    with pytest.raises(TypeError, match=re.escape("Kernel 'saxpy' expects 4 arguments, got 2")):
        tack.inspect(saxpy, 2.0, x)
