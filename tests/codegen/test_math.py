"""Differential tests of the ``math`` intrinsics against NumPy, within stated ulp bounds.

Bounds: the kernel's result is compared with NumPy evaluated in float64 on
the same (exactly converted) inputs. An f32 result must be within 3 ulp of
that reference (LLVM calls the C library's ``sinf``, ``tanhf`` and friends,
documented within 2 ulp; the f64 reference is within half an ulp of the true
value). An f64 result must be within 4 ulp of NumPy's float64 (the C library
and NumPy are each within 2 ulp for these functions and domains). Exact
functions (fabs, floor, ceil, copysign, sqrt, the classification functions)
must match exactly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tack

SIZES = (0, 1, 7, 33, 1000, 4097)
FLOAT_TYPES = (tack.f32, tack.f64)
ULP_BOUND = {tack.f32: 3.0, tack.f64: 4.0}

# name -> (NumPy reference, input domain)
UNARY = {
    "sqrt": (np.sqrt, (0.0, 1e4)),
    "exp": (np.exp, (-40.0, 40.0)),
    "log": (np.log, (1e-4, 1e4)),
    "log2": (np.log2, (1e-4, 1e4)),
    "log10": (np.log10, (1e-4, 1e4)),
    "sin": (np.sin, (-20.0, 20.0)),
    "cos": (np.cos, (-20.0, 20.0)),
    "tan": (np.tan, (-1.5, 1.5)),
    "asin": (np.arcsin, (-1.0, 1.0)),
    "acos": (np.arccos, (-1.0, 1.0)),
    "atan": (np.arctan, (-50.0, 50.0)),
    "sinh": (np.sinh, (-20.0, 20.0)),
    "cosh": (np.cosh, (-20.0, 20.0)),
    "tanh": (np.tanh, (-10.0, 10.0)),
    "fabs": (np.fabs, (-1e6, 1e6)),
}
EXACT = {"sqrt", "fabs"}


@tack.kernel
def unary_math(x, out):
    for i in range(len(x)):
        out[i, 0] = math.sqrt(x[i, 0])
        out[i, 1] = math.exp(x[i, 1])
        out[i, 2] = math.log(x[i, 2])
        out[i, 3] = math.log2(x[i, 3])
        out[i, 4] = math.log10(x[i, 4])
        out[i, 5] = math.sin(x[i, 5])
        out[i, 6] = math.cos(x[i, 6])
        out[i, 7] = math.tan(x[i, 7])
        out[i, 8] = math.asin(x[i, 8])
        out[i, 9] = math.acos(x[i, 9])
        out[i, 10] = math.atan(x[i, 10])
        out[i, 11] = math.sinh(x[i, 11])
        out[i, 12] = math.cosh(x[i, 12])
        out[i, 13] = math.tanh(x[i, 13])
        out[i, 14] = math.fabs(x[i, 14])


def ulp_error(got, reference, dtype):
    """|got - reference| in units of the last place of ``dtype`` at the reference."""
    rounded = np.abs(reference.astype(dtype.numpy))
    spacing = np.spacing(rounded).astype(np.float64)
    with np.errstate(invalid="ignore"):
        err = np.abs(got.astype(np.float64) - reference) / spacing
    same = (got.astype(np.float64) == reference.astype(dtype.numpy)) | (
        np.isnan(got) & np.isnan(reference))
    return np.where(same, 0.0, err)


def check_unary(kernel, table: dict, dtype, rng) -> None:
    """``kernel(x, out)`` computes column k of ``out`` from column k of ``x`` by
    the k-th function of ``table`` (name -> (reference, domain, ulp bound or
    None for ``ULP_BOUND``'s, or 0.0: exact in the element type)), checked on
    random inputs of every size."""
    for n in SIZES:
        columns = [rng.floats(dtype, n, *domain) for _, domain, _ in table.values()]
        x_np = np.stack(columns, axis=1) if n else np.zeros((0, len(table)))
        x_np = np.ascontiguousarray(x_np, dtype=dtype.numpy)
        out = tack.zeros((n, len(table)), dtype=dtype)
        kernel(tack.asarray(x_np), out)
        got = out.numpy()
        for k, (name, (ref, _, bound)) in enumerate(table.items()):
            if bound == 0.0:   # correctly rounded in the element type
                want = ref(x_np[:, k]).astype(np.float64)
            else:
                want, bound = ref(x_np[:, k].astype(np.float64)), bound or ULP_BOUND[dtype]
            err = ulp_error(got[:, k], want, dtype)
            worst = int(err.argmax()) if n else 0
            assert n == 0 or err.max() <= bound, (
                f"math.{name}({dtype}) off by {err.max():.2f} ulp (bound {bound}) at "
                f"x={x_np[worst, k]!r}: got {got[worst, k]!r}, reference {want[worst]!r} "
                f"(n={n} {rng})")


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=["f32", "f64"])
def test_unary_math_within_ulp_bound(dtype, rng):
    table = {name: (ref, domain, 0.0 if name in EXACT else None)
             for name, (ref, domain) in UNARY.items()}
    check_unary(unary_math, table, dtype, rng)


def _per_element(fn):
    """A Python ``math`` function over a float64 array (NumPy has no ``erf``)."""
    return lambda x: np.array([fn(float(v)) for v in x], dtype=np.float64)


# name -> (reference, input domain, ulp bound or None for ULP_BOUND's: glibc
# documents tgamma and lgamma within a few ulp in either type, and Python
# computes its own gamma and lgamma)
MORE_UNARY = {
    "expm1": (np.expm1, (-30.0, 30.0), None),
    "log1p": (np.log1p, (-0.9, 1e4), None),
    "asinh": (np.arcsinh, (-1e3, 1e3), None),
    "acosh": (np.arccosh, (1.0, 1e3), None),
    "atanh": (np.arctanh, (-0.99, 0.99), None),
    "erf": (_per_element(math.erf), (-4.0, 4.0), None),
    "erfc": (_per_element(math.erfc), (-4.0, 9.0), None),
    "cbrt": (np.cbrt, (-1e6, 1e6), None),
    "exp2": (np.exp2, (-60.0, 60.0), None),
    "gamma": (_per_element(math.gamma), (0.05, 30.0), 16.0),
    "lgamma": (_per_element(math.lgamma), (3.0, 1e3), 16.0),
}


@tack.kernel
def more_unary_math(x, out):
    for i in range(len(x)):
        out[i, 0] = math.expm1(x[i, 0])
        out[i, 1] = math.log1p(x[i, 1])
        out[i, 2] = math.asinh(x[i, 2])
        out[i, 3] = math.acosh(x[i, 3])
        out[i, 4] = math.atanh(x[i, 4])
        out[i, 5] = math.erf(x[i, 5])
        out[i, 6] = math.erfc(x[i, 6])
        out[i, 7] = math.cbrt(x[i, 7])
        out[i, 8] = math.exp2(x[i, 8])
        out[i, 9] = math.gamma(x[i, 9])
        out[i, 10] = math.lgamma(x[i, 10])


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=["f32", "f64"])
def test_more_unary_math_within_ulp_bound(dtype, rng):
    check_unary(more_unary_math, MORE_UNARY, dtype, rng)


@tack.kernel
def exact_math(x, y, trunc, fmod, degrees, radians):
    for i in range(len(x)):
        trunc[i] = math.trunc(x[i])
        fmod[i] = math.fmod(x[i], y[i])
        degrees[i] = math.degrees(x[i])
        radians[i] = math.radians(x[i])


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=["f32", "f64"])
def test_trunc_fmod_degrees_radians_are_exact(dtype, rng):
    # trunc toward zero to i64 (as floor and ceil); fmod is exact in IEEE, with
    # the dividend's sign (unlike %); degrees and radians are one product with
    # the constant rounded to the argument's type
    t = dtype.numpy.type
    specials = [-0.0, 0.5, -0.5, -2.5, 2.5, 1e15 + 0.5, -7.0, 7.0]
    for n in SIZES:
        x_np = rng.values(dtype, n)
        y_np = rng.floats(dtype, n, 0.5, 10.0) * np.where(rng.gen.random(n) < 0.5, -1, 1)
        y_np = y_np.astype(dtype.numpy)
        k = min(n, len(specials))
        x_np[:k] = np.array(specials[:k], dtype=dtype.numpy)
        outs = [tack.zeros(n, dtype=tack.i64)] + [tack.zeros(n, dtype=dtype) for _ in range(3)]
        exact_math(tack.asarray(x_np), tack.asarray(y_np), *outs)
        trunc, fmod, degrees, radians = (o.numpy() for o in outs)
        np.testing.assert_array_equal(trunc, np.trunc(x_np.astype(np.float64)).astype(np.int64),
                                      err_msg=f"trunc {dtype} n={n} {rng}")
        want = np.fmod(x_np, y_np)
        np.testing.assert_array_equal(fmod, want, err_msg=f"fmod {dtype} n={n} {rng}")
        np.testing.assert_array_equal(np.signbit(fmod), np.signbit(want))
        np.testing.assert_array_equal(degrees, x_np * t(180.0 / math.pi),
                                      err_msg=f"degrees {dtype} n={n} {rng}")
        np.testing.assert_array_equal(radians, x_np * t(math.pi / 180.0),
                                      err_msg=f"radians {dtype} n={n} {rng}")


@tack.kernel
def rounded(x, out):
    for i in range(len(x)):
        out[i] = round(x[i])


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=["f32", "f64"])
def test_round_is_pythons_halves_to_even(dtype, rng):
    specials = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, -0.0, 1e15 + 0.5, 4503599627370495.5,
                0.49999999999999994, 3.0, -7.25]
    for n in SIZES:
        x_np = rng.values(dtype, n)
        k = min(n, len(specials))
        x_np[:k] = np.array(specials[:k]).astype(dtype.numpy)
        out = tack.zeros(n, dtype=tack.i64)
        rounded(tack.asarray(x_np), out)
        want = np.array([round(float(v)) for v in x_np], dtype=np.int64)
        np.testing.assert_array_equal(out.numpy(), want, err_msg=f"{dtype} n={n} {rng}")


@tack.kernel
def rounded_constants(out, x):
    for i in range(1):
        out[0] = round(1e300)
        out[1] = round(-math.inf)
        out[2] = round(math.inf) + round(x[0])
        out[3] = math.trunc(math.nan)
        out[4] = round(2.5)
        out[5] = round(-3.5)
        out[6] = math.floor(-1e30)
        out[7] = round(x[0] + 1e30)


def test_round_of_constants_past_the_integers_saturates():
    # (PoCL crashed compiling rint of an infinite or huge constant, or dropped
    # every store of the kernel: round() calls a guarded rint on OpenCL)
    out = tack.full(8, 7, dtype=tack.i64)
    rounded_constants(out, tack.zeros(1))
    top, bottom = 2**63 - 1, -2**63
    assert out.numpy().tolist() == [top, bottom, top, 0, 2, -4, bottom, top]


@tack.kernel
def int_trunc(x, out):
    for i in range(len(x)):
        out[i] = math.trunc(x[i])
        out[i] += round(x[i]) - x[i]


def test_trunc_of_an_integer_is_exact(rng):
    x_np = np.concatenate([np.array([2**63 - 1, -2**63, 16777217, -16777217]),
                           rng.ints(tack.i64, 101)])
    out = tack.zeros(len(x_np), dtype=tack.i64)
    int_trunc(tack.asarray(x_np), out)
    np.testing.assert_array_equal(out.numpy(), x_np, err_msg=str(rng))


BINARY = {
    "atan2": (np.arctan2, (-10.0, 10.0), (-10.0, 10.0)),
    "hypot": (np.hypot, (-1e3, 1e3), (-1e3, 1e3)),
    "pow": (np.power, (1e-3, 30.0), (-8.0, 8.0)),
    "copysign": (np.copysign, (-1e3, 1e3), (-1.0, 1.0)),
}


@tack.kernel
def binary_math(x, y, out):
    for i in range(len(x)):
        out[i, 0] = math.atan2(x[i, 0], y[i, 0])
        out[i, 1] = math.hypot(x[i, 1], y[i, 1])
        out[i, 2] = math.pow(x[i, 2], y[i, 2])
        out[i, 3] = math.copysign(x[i, 3], y[i, 3])


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=["f32", "f64"])
def test_binary_math_within_ulp_bound(dtype, rng):
    for n in SIZES:
        xs = [rng.floats(dtype, n, *dx) for _, dx, _ in BINARY.values()]
        ys = [rng.floats(dtype, n, *dy) for _, _, dy in BINARY.values()]
        shape = (n, len(BINARY))
        x_np = np.ascontiguousarray(np.stack(xs, axis=1) if n else np.zeros(shape),
                                    dtype=dtype.numpy)
        y_np = np.ascontiguousarray(np.stack(ys, axis=1) if n else np.zeros(shape),
                                    dtype=dtype.numpy)
        if n:
            y_np[::3, 3] = -0.0  # copysign takes the sign of a negative zero
        out = tack.zeros(shape, dtype=dtype)
        binary_math(tack.asarray(x_np), tack.asarray(y_np), out)
        got = out.numpy()
        for k, (name, (ref, _, _)) in enumerate(BINARY.items()):
            want = ref(x_np[:, k].astype(np.float64), y_np[:, k].astype(np.float64))
            err = ulp_error(got[:, k], want, dtype)
            bound = 0.0 if name == "copysign" else ULP_BOUND[dtype]
            worst = int(err.argmax()) if n else 0
            assert n == 0 or err.max() <= bound, (
                f"math.{name}({dtype}) off by {err.max():.2f} ulp at "
                f"({x_np[worst, k]!r}, {y_np[worst, k]!r}): got {got[worst, k]!r}, "
                f"NumPy {want[worst]!r} (n={n} {rng})")


@tack.kernel
def rounding(x, fl, ce, nan, inf, fin):
    for i in range(len(x)):
        fl[i] = math.floor(x[i])
        ce[i] = math.ceil(x[i])
        nan[i] = math.isnan(x[i])
        inf[i] = math.isinf(x[i])
        fin[i] = math.isfinite(x[i])


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=["f32", "f64"])
def test_floor_ceil_and_classification(dtype, rng):
    specials = [np.nan, np.inf, -np.inf, -0.0, 0.0, -0.5, 0.5, -1.0, 2.5, -2.5,
                1e15 + 0.5, -1e15 - 0.5]
    for n in SIZES:
        x_np = rng.values(dtype, n)
        k = min(n, len(specials))
        x_np[:k] = np.array(specials[:k], dtype=dtype.numpy)
        outs = [tack.zeros(n, dtype=t) for t in (tack.i64, tack.i64, tack.i32,
                                                  tack.i32, tack.i32)]
        rounding(tack.asarray(x_np), *outs)
        finite = np.isfinite(x_np)
        for what, got, ref in (("floor", outs[0], np.floor), ("ceil", outs[1], np.ceil)):
            want = ref(x_np[finite]).astype(np.int64)
            np.testing.assert_array_equal(got.numpy()[finite], want,
                                          err_msg=f"math.{what} {dtype} n={n} {rng}")
        for what, got, ref in (("isnan", outs[2], np.isnan), ("isinf", outs[3], np.isinf),
                               ("isfinite", outs[4], np.isfinite)):
            np.testing.assert_array_equal(got.numpy(), ref(x_np).astype(np.int32),
                                          err_msg=f"math.{what} {dtype} n={n} {rng}")


@tack.kernel
def int_math(x, root, fl, fab):
    for i in range(len(x)):
        root[i] = math.sqrt(x[i])
        fl[i] = math.floor(x[i])
        fab[i] = math.fabs(x[i])


def test_math_on_ints_converts_to_the_default_float(rng):
    for n in SIZES:
        x_np = rng.ints(tack.i32, n, -1000, 1000)
        root, fl, fab = (tack.zeros(n, dtype=t) for t in (tack.f32, tack.i64, tack.f32))
        int_math(tack.asarray(x_np), root, fl, fab)
        with np.errstate(invalid="ignore"):
            np.testing.assert_array_equal(root.numpy(), np.sqrt(x_np.astype(np.float32)),
                                          err_msg=f"n={n} {rng}")
        np.testing.assert_array_equal(fl.numpy(), x_np.astype(np.int64),
                                      err_msg=f"n={n} {rng}")
        np.testing.assert_array_equal(fab.numpy(), np.abs(x_np).astype(np.float32),
                                      err_msg=f"n={n} {rng}")


@tack.kernel
def int_floor_ceil(x, fl, ce):
    for i in range(len(x)):
        fl[i] = math.floor(x[i])
        ce[i] = math.ceil(x[i])


@pytest.mark.parametrize("dtype", (tack.i32, tack.i64, tack.u32, tack.i8),
                         ids=["i32", "i64", "u32", "i8"])
def test_floor_and_ceil_of_an_integer_are_exact(dtype, rng):
    """Regression: an integer went through the default float (f32), so
    math.floor(16777217) was 16777216; Python returns the integer itself."""
    info = np.iinfo(dtype.numpy)
    edges = np.array([info.min, info.max, 0, 1, min(16777217, info.max)], dtype=dtype.numpy)
    for n in SIZES:
        x_np = np.concatenate([edges, rng.ints(dtype, n)])
        fl, ce = tack.zeros(len(x_np), dtype=tack.i64), tack.zeros(len(x_np), dtype=tack.i64)
        int_floor_ceil(tack.asarray(x_np), fl, ce)
        for got in (fl, ce):
            np.testing.assert_array_equal(got.numpy(), x_np.astype(np.int64),
                                          err_msg=f"{dtype} n={n} {rng}")


@tack.kernel
def constants(x, out):
    for i in range(len(x)):
        out[i, 0] = math.pi
        out[i, 1] = math.e
        out[i, 2] = math.inf
        out[i, 3] = -math.inf
        out[i, 4] = math.nan
        out[i, 5] = x[i] * math.pi
        out[i, 6] = x[i] + math.e
        out[i, 7] = math.isnan(math.nan) + math.isinf(-math.inf) * 2


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=["f32", "f64"])
def test_math_constants(dtype, rng):
    t = dtype.numpy.type
    for n in SIZES:
        x_np = rng.values(dtype, n)
        out = tack.zeros((n, 8), dtype=dtype)
        constants(tack.asarray(x_np), out)
        got = out.numpy()
        want = np.empty((n, 8), dtype=dtype.numpy)
        want[:, 0], want[:, 1] = t(math.pi), t(math.e)
        want[:, 2], want[:, 3], want[:, 4] = np.inf, -np.inf, np.nan
        want[:, 5] = x_np * t(math.pi)  # a weak float keeps the array's type
        want[:, 6] = x_np + t(math.e)
        want[:, 7] = 3
        np.testing.assert_array_equal(got, want, err_msg=f"{dtype} n={n} {rng}")
