"""Printed IR after each pass of the variant pipeline, and after annotation.

Each test builds a kernel, runs ``run_pipeline`` with a ``trace`` hook that
prints the IR after every step, and compares the text of the steps that
change something with the expected text; every other step must leave the
text as it was.
"""

from __future__ import annotations

import math
import re

import pytest

import tack
from tack import types as T
from tack.ir import format_function
from tack.ir.passes.annotate import annotate_types
from tack.ir.passes.atomics import check_atomic_support
from tack.ir.passes.check_types import check_dispatch_types
from tack.ir.passes.common import ArgSpec
from tack.ir.passes.pipeline import PIPELINE, VariantRequest, run_pipeline
from tack.ir.verify import verify

ALL_TYPES = frozenset(T.SCALAR_TYPES)
CPU_ATOMICS = frozenset((T.i32, T.i64, T.u32, T.u64, T.f32, T.f64))
STEPS = [name for name, _, _ in PIPELINE]


def array(dtype, *shape):
    return ArgSpec(dtype, shape, "array")


def scalar(dtype):
    return ArgSpec(dtype)


def trace(kernel, *specs, disjoint=False, supported=ALL_TYPES, atomics=CPU_ATOMICS):
    """``({step: text after it}, final IR)``."""
    texts = {}
    request = VariantRequest(tuple(specs), supported, atomics, "CPUBackend", disjoint)
    final = run_pipeline(kernel.get_ir().kernel, request,
                         trace=lambda name, fn: texts.__setitem__(name, format_function(fn)))
    return texts, final


def assert_changes(kernel, texts, expected: dict):
    """Steps named in ``expected`` print that text; the others change nothing."""
    assert list(texts) == STEPS
    previous = format_function(kernel.get_ir().kernel)
    for step in STEPS:
        if step in expected:
            assert texts[step] == expected[step], f"after {step}:\n{texts[step]}"
        else:
            assert texts[step] == previous, f"{step} changed the IR:\n{texts[step]}"
        previous = texts[step]


# -- resolve -----------------------------------------------------------------------

@tack.kernel
def strides(a, out):
    for i in range(out.shape[0]):
        out[i] = a[i, a.shape[1] - 1] + len(a)


def test_resolve_bakes_extents_outside_the_loop_range():
    assert format_function(strides.get_ir().kernel) == (
        "kernel strides(a, out):\n"
        "  parallel for i in [0, out.shape[0]):\n"
        "    out[i] = (a[((i64(i) * a.shape[1]) + i64((a.shape[1] - 1)))] + a.shape[0])\n")
    texts, _ = trace(strides, array(T.f32, 4, 3), array(T.f32, 4))
    assert_changes(strides, texts, {
        # baked extents are typed i64 literals, as the extents they replace
        "resolve": "kernel strides(a, out):\n"
                   "  parallel for i in [0, out.shape[0]):\n"
                   "    out[i] = (a[((i64(i) * 3:i64) + i64((3:i64 - 1)))] + 4:i64)\n",
        "infer": "kernel strides(a: f32[2d], out: f32[1d]):\n"
                 "  parallel for i in [0, out.shape[0]):\n"
                 "    out[i] = (a[((i64(i) * 3:i64) + i64((3:i64 - 1)))] + 4:i64)\n",
    })
    texts, _ = trace(strides, array(T.f32, 2, 7), array(T.f32, 4))
    assert "a[((i64(i) * 7:i64) + i64((7:i64 - 1)))] + 2:i64" in texts["resolve"]


@tack.kernel
def deep(a, out):
    for i in range(len(out)):
        out[i] = a.shape[2]


def test_resolve_rejects_an_extent_past_the_rank():
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'deep': a.shape[2] of an array with 2 dimension(s) at line 4, "
            "column 18")):
        trace(deep, array(T.f32, 4, 3), array(T.f32, 4))
    texts, _ = trace(deep, array(T.f32, 4, 3, 2), array(T.f32, 4))
    assert texts["resolve"].endswith("    out[i] = 2:i64\n")


def test_rank_errors_come_before_resolve():
    """Regression: resolve reported a 1-D array indexed twice as 'a.shape[1] of an
    array with 1 dimension(s)', and a scalar as an unknown array (RuntimeError)."""
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'strides': parameter 'a' is indexed with 2 indices, but its array "
            "has 1 dimension(s)")):
        trace(strides, array(T.f32, 4), array(T.f32, 4))
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'strides': parameter 'a' is used as an array, but the argument is a "
            "f64 scalar")):
        trace(strides, scalar(T.f64), array(T.f32, 4))


# -- infer ---------------------------------------------------------------------------

@tack.kernel
def mixed(a, n, h, big, out):
    for i in range(len(out)):
        out[i] = a[i] * h + n + big


def test_infer_types_parameters_and_the_default_float():
    texts, final = trace(mixed, array(T.f32, 8), scalar(T.i32), scalar(T.f32),
                         scalar(T.u64), array(T.f64, 8))
    assert_changes(mixed, texts, {
        "infer": "kernel mixed(a: f32[1d], n: i32, h: f32, big: u64, out: f64[1d]):\n"
                 "  parallel for i in [0, out.shape[0]):\n"
                 "    out[i] = (((a[i] * h) + n) + big)\n"})
    assert final.default_float == T.f64
    _, final = trace(mixed, array(T.i8, 8), scalar(T.i32), scalar(T.f32),
                     scalar(T.u64), array(T.f32, 8))
    assert final.default_float == T.f32


def test_infer_rejects_a_scalar_for_an_array_and_the_other_way_round():
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'mixed': parameter 'a' is used as an array, but the argument is a "
            "f32 scalar")):
        trace(mixed, scalar(T.f32), scalar(T.i32), scalar(T.f32), scalar(T.u64),
              array(T.f64, 8))
    # regression: an array for a scalar leaked annotate's internal _Unknown
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'mixed': parameter 'h' is used as a scalar, but the argument is an "
            "array")):
        trace(mixed, array(T.f32, 8), scalar(T.i32), array(T.f32, 8), scalar(T.u64),
              array(T.f64, 8))


@tack.kernel
def unused(a, spare, out):
    for i in range(len(out)):
        out[i] = a[i]


def test_infer_accepts_an_array_for_an_unused_parameter():
    texts, _ = trace(unused, array(T.f32, 3), array(T.f64, 2, 2), array(T.f32, 3))
    assert texts["infer"].startswith(
        "kernel unused(a: f32[1d], spare: f64[2d], out: f32[1d]):\n")


# -- check_types ------------------------------------------------------------------------

def test_check_types_rejects_an_unsupported_dtype():
    supported = ALL_TYPES - {T.i8}
    texts, _ = trace(mixed, array(T.f32, 8), scalar(T.i8), scalar(T.f32), scalar(T.u64),
                     array(T.f64, 8), supported=supported)  # a scalar may be i8
    assert texts["check_types"] == texts["infer"]
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'mixed': parameter 'out' has dtype i8, which CPUBackend does not "
            "support")):
        trace(mixed, array(T.f32, 8), scalar(T.i32), scalar(T.f32), scalar(T.u64),
              array(T.i8, 8), supported=supported)


# -- localize ------------------------------------------------------------------------------

@tack.kernel
def outer(x, out, s):
    t = 0
    for i in range(len(x)):
        if x[i] > 0:
            s = 100
            t = t + 5
        out[i] = s + t


def test_localize_copies_outer_scalars_per_iteration():
    texts, _ = trace(outer, array(T.i32, 5), array(T.i64, 5), scalar(T.i32))
    assert_changes(outer, texts, {
        "infer": "kernel outer(x: i32[1d], out: i64[1d], s: i32):\n"
                 "  t = 0\n"
                 "  parallel for i in [0, x.shape[0]):\n"
                 "    if (x[i] > 0):\n"
                 "      s = 100\n"
                 "      t = (t + 5)\n"
                 "    out[i] = (s + t)\n",
        "localize": "kernel outer(x: i32[1d], out: i64[1d], s: i32):\n"
                    "  t = 0\n"
                    "  parallel for i in [0, x.shape[0]):\n"
                    "    __local_s_1__ = s\n"
                    "    __local_t_1__ = t\n"
                    "    if (x[i] > 0):\n"
                    "      __local_s_1__ = 100\n"
                    "      __local_t_1__ = (__local_t_1__ + 5)\n"
                    "    out[i] = (__local_s_1__ + __local_t_1__)\n",
    })


@tack.kernel
def extent_param(n, out):
    for i in range(n):
        n = n - 1
        out[i] = n


def test_localize_keeps_the_parameter_in_the_loop_extent():
    texts, _ = trace(extent_param, scalar(T.i32), array(T.i32, 4))
    assert texts["localize"] == (
        "kernel extent_param(n: i32, out: i32[1d]):\n"
        "  parallel for i in [0, n):\n"
        "    __local_n_1__ = n\n"
        "    __local_n_1__ = (__local_n_1__ - 1)\n"
        "    out[i] = __local_n_1__\n")


# -- atomics ----------------------------------------------------------------------------------

@tack.kernel
def hist(h, x):
    for i in range(len(x)):
        tack.atomic_add(h, x[i] % 4, 1)


def test_atomics_pass_accepts_supported_dtypes_unchanged():
    texts, _ = trace(hist, array(T.u32, 4), array(T.i64, 9))
    assert_changes(hist, texts, {
        "infer": "kernel hist(h: u32[1d], x: i64[1d]):\n"
                 "  parallel for i in [0, x.shape[0]):\n"
                 "    atomic_add(h, (x[i] % 4), 1)\n"})


@pytest.mark.parametrize("dtype", [T.i8, T.i16, T.u8, T.u16], ids=lambda t: t.name)
def test_atomics_pass_rejects_narrow_dtypes(dtype):
    message = (f"Kernel 'hist': tack.atomic_add on 'h' of dtype {dtype} is not supported "
               f"on CPUBackend (atomics take i32, i64, u32, u64, f32, f64) at line 4, "
               f"column 9")
    with pytest.raises(TypeError, match=re.escape(message)):
        trace(hist, array(dtype, 4), array(T.i64, 9))


def test_atomics_pass_lists_the_backend_dtypes_in_a_stable_order():
    fn = trace(hist, array(T.i8, 4), array(T.i64, 9), atomics=ALL_TYPES)[1]
    for atomics in (frozenset((T.f64, T.u16)), frozenset((T.u16, T.f64))):
        with pytest.raises(TypeError, match=re.escape("(atomics take u16, f64)")):
            check_atomic_support(fn, atomics, "CPUBackend")


# -- optimize ---------------------------------------------------------------------------------

@tack.func
def axpy(alpha, u, v):
    return alpha * u + v


@tack.kernel
def inlined(alpha, x, y):
    for i in range(len(y)):
        y[i] = axpy(alpha, x[i], y[i])


def test_optimize_propagates_parameter_copies():
    texts, _ = trace(inlined, scalar(T.f32), array(T.f32, 5), array(T.f32, 5))
    assert_changes(inlined, texts, {
        "infer": "kernel inlined(alpha: f32, x: f32[1d], y: f32[1d]):\n"
                 "  parallel for i in [0, y.shape[0]):\n"
                 "    __axpy_alpha_1__ = alpha\n"
                 "    __axpy_u_2__ = x[i]\n"
                 "    __axpy_v_3__ = y[i]\n"
                 "    __axpy_result_4__ = ((__axpy_alpha_1__ * __axpy_u_2__) + "
                 "__axpy_v_3__)\n"
                 "    y[i] = __axpy_result_4__\n",
        "optimize": "kernel inlined(alpha: f32, x: f32[1d], y: f32[1d]):\n"
                    "  parallel for i in [0, y.shape[0]):\n"
                    "    __axpy_u_2__ = x[i]\n"
                    "    __axpy_v_3__ = y[i]\n"
                    "    __axpy_result_4__ = ((alpha * __axpy_u_2__) + __axpy_v_3__)\n"
                    "    y[i] = __axpy_result_4__\n",
    })


@tack.kernel
def copies(a, n, out):
    m = n
    for i in range(len(out)):
        k = i
        t = n
        if a[i] > 0:
            t = 0
        out[i] = k + m + t


def test_optimize_keeps_copies_that_are_reassigned():
    texts, _ = trace(copies, array(T.i32, 4), scalar(T.i32), array(T.i32, 4))
    assert texts["optimize"] == (
        "kernel copies(a: i32[1d], n: i32, out: i32[1d]):\n"
        "  parallel for i in [0, out.shape[0]):\n"
        "    t = n\n"
        "    if (a[i] > 0):\n"
        "      t = 0\n"
        "    out[i] = ((i + n) + t)\n")


# -- record -------------------------------------------------------------------------------------

@pytest.mark.parametrize("disjoint", [False, True])
def test_record_sets_the_disjoint_flag_and_keeps_the_template(disjoint):
    template = inlined.get_ir().kernel
    before = format_function(template)
    texts, final = trace(inlined, scalar(T.f32), array(T.f32, 5), array(T.f32, 5),
                         disjoint=disjoint)
    assert final.disjoint is disjoint
    assert texts["record"] == texts["optimize"]
    assert inlined.get_ir().kernel is template
    assert format_function(template) == before
    assert all(p.dtype is None for p in template.params)


# -- annotate -------------------------------------------------------------------------------------

@tack.kernel
def typed(a, n, out):
    s = 0.0
    for i in range(1, len(out), 2):
        c = 0
        for j in range(n):
            c += j
        v = a[i] * 2 if c > 3 else math.sqrt(c)
        out[i] = v + s + (c < n)


def test_annotate_types_every_expression_and_lists_locals():
    _, final = trace(typed, array(T.f32, 9), scalar(T.i32), array(T.f32, 9))
    annotated = verify(annotate_types(final), "typed")
    assert format_function(annotated) == (
        "kernel typed(a: f32[1d], n: i32, out: f32[1d]):\n"
        "  # locals: s: f32, i: i64, c: i32, j: i32, v: f32\n"
        "  s = 0.0:f32\n"
        "  parallel for __step_idx_1__ in [0, (((out.shape[0] - 1) + 1) // 2)):\n"
        "    i = (1:i64 + (__step_idx_1__ * 2:i64))\n"
        "    c = 0:i32\n"
        "    for j in range(0:i32, n, 1:i32):\n"
        "      c = (c + j)\n"
        "    v = ((a[i] * 2.0:f32) if (c > 3:i32) else sqrt(f32(c)))\n"
        "    out[i] = ((v + s) + f32((c < n)))\n")
    _, final = trace(typed, array(T.f64, 9), scalar(T.i64), array(T.i16, 9))
    assert format_function(annotate_types(final)) == (
        "kernel typed(a: f64[1d], n: i64, out: i16[1d]):\n"
        "  # locals: s: f64, i: i64, c: i64, j: i64, v: f64\n"
        "  s = 0.0:f64\n"
        "  parallel for __step_idx_1__ in [0, (((out.shape[0] - 1) + 1) // 2)):\n"
        "    i = (1:i64 + (__step_idx_1__ * 2:i64))\n"
        "    c = 0:i64\n"
        "    for j in range(0:i64, n, 1:i64):\n"
        "      c = (c + j)\n"
        "    v = ((a[i] * 2.0:f64) if (c > 3:i64) else sqrt(f64(c)))\n"
        "    out[i] = i16(((v + s) + f64((c < n))))\n")


@tack.kernel
def narrow(a, b, out):
    for i in range(len(out)):
        out[i] = (a[i] + b[i]) * 3 - (a[i] >> 1)


def test_annotate_promotes_mixed_integer_types():
    _, final = trace(narrow, array(T.u8, 3), array(T.i8, 3), array(T.u16, 3))
    assert format_function(annotate_types(final)) == (
        "kernel narrow(a: u8[1d], b: i8[1d], out: u16[1d]):\n"
        "  parallel for i in [0, out.shape[0]):\n"
        "    out[i] = u16((((i16(a[i]) + i16(b[i])) * 3:i16) - i16((a[i] >> 1:u8))))\n")


@tack.kernel
def float_bits(a, out):
    for i in range(len(out)):
        out[i] = a[i] & 1


@tack.kernel
def float_range(h, out):
    for i in range(len(out)):
        for j in range(h):
            out[i] = j


def test_annotate_rejections():
    _, final = trace(float_bits, array(T.f32, 3), array(T.f32, 3))
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'float_bits': bit operation on a float (f32 and i64) at line 4, "
            "column 18")):
        annotate_types(final)
    _, final = trace(float_range, scalar(T.f32), array(T.i32, 3))
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'float_range': range() with a float argument at line 4, column 9")):
        annotate_types(final)


# -- inspect(mode="ir") -------------------------------------------------------------------

@tack.kernel
def saxpy(a, x, y, out):
    for i in range(len(out)):
        out[i] = a * x[i] + y[i]


def test_inspect_ir_of_saxpy():
    x, y, out = (tack.zeros(16, dtype=tack.f32) for _ in range(3))
    assert tack.inspect(saxpy, 2.0, x, y, out, mode="ir") == (
        "kernel saxpy(a: f32, x: f32[1d], y: f32[1d], out: f32[1d]):\n"
        "  parallel for i in [0, out.shape[0]):\n"
        "    out[i] = ((a * x[i]) + y[i])\n")
    x, y, out = (tack.zeros(16, dtype=tack.f64) for _ in range(3))
    assert tack.inspect(saxpy, 2, x, y, out, mode="ir") == (
        "kernel saxpy(a: i32, x: f64[1d], y: f64[1d], out: f64[1d]):\n"
        "  parallel for i in [0, out.shape[0]):\n"
        "    out[i] = ((f64(a) * x[i]) + y[i])\n")


def test_check_types_alone():
    fn = trace(hist, array(T.i32, 4), array(T.i64, 9))[1]
    assert check_dispatch_types(fn, ALL_TYPES, "CPUBackend") is fn
