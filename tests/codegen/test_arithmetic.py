"""Differential tests of arithmetic, bit operations, comparisons, logic and casts.

Every kernel runs on fresh random inputs of sizes 0, 1, 7, 33, 1000 and 4097
and is compared with NumPy, or with Python's own integers and floats where
the kernel language follows Python (floor division, modulo by zero, shifts,
``min``/``max`` with NaN). Integer results wrap to the element type.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tack

SIZES = (0, 1, 7, 33, 1000, 4097)
INT_TYPES = (tack.i8, tack.i16, tack.i32, tack.i64, tack.u8, tack.u16, tack.u32,
             tack.u64)
FLOAT_TYPES = (tack.f32, tack.f64)
ALL_TYPES = INT_TYPES + FLOAT_TYPES


def ids(types):
    return [t.name for t in types]


def wrap(values, dtype):
    """Python integers reduced modulo 2**bits into ``dtype``'s range."""
    bits = dtype.bits
    lo = -(1 << (bits - 1)) if dtype.is_signed else 0
    return np.array([((int(v) - lo) % (1 << bits)) + lo for v in values],
                    dtype=dtype.numpy)


def py_floordiv(x, y):
    return 0 if y == 0 else x // y


def py_mod(x, y):
    return 0 if y == 0 else x % y


def zeros(n, dtype):
    return tack.zeros(n, dtype=dtype)


def check(got, expected, what, rng, n):
    np.testing.assert_array_equal(got.numpy(), expected,
                                  err_msg=f"{what} n={n} {rng}")


# -- + - * / // % ---------------------------------------------------------------

@tack.kernel
def arith(a, b, add, sub, mul, div, fdiv, mod):
    for i in range(len(a)):
        add[i] = a[i] + b[i]
        sub[i] = a[i] - b[i]
        mul[i] = a[i] * b[i]
        div[i] = a[i] / b[i]
        fdiv[i] = a[i] // b[i]
        mod[i] = a[i] % b[i]


def _div_type(dtype):
    """The output of ``/``: f64 outputs make f64 the kernel's default float."""
    if dtype.is_float:
        return dtype
    return tack.f64 if dtype.bits >= 32 else tack.f32


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=ids(ALL_TYPES))
def test_arith_matches_numpy(dtype, rng):
    ftype = _div_type(dtype)
    for n in SIZES:
        a_np, b_np = rng.values(dtype, n), rng.values(dtype, n)
        if dtype.is_float:
            b_np[b_np == 0] = 1  # float // and % by zero: see test_int_corners
        else:
            # divisors of every sign, zero and -1 included
            b_np[: n // 4] = rng.ints(dtype, n // 4, -2, 2)
        a, b = tack.asarray(a_np), tack.asarray(b_np)
        outs = [zeros(n, dtype) for _ in range(3)] + [zeros(n, ftype)] + \
               [zeros(n, dtype) for _ in range(2)]
        arith(a, b, *outs)
        with np.errstate(all="ignore"):
            div = a_np.astype(ftype.numpy) / b_np.astype(ftype.numpy)
            if dtype.is_float:
                expected = [a_np + b_np, a_np - b_np, a_np * b_np, div,
                            np.floor_divide(a_np, b_np), np.mod(a_np, b_np)]
            else:
                pa, pb = [int(v) for v in a_np], [int(v) for v in b_np]
                expected = [wrap([x + y for x, y in zip(pa, pb)], dtype),
                            wrap([x - y for x, y in zip(pa, pb)], dtype),
                            wrap([x * y for x, y in zip(pa, pb)], dtype), div,
                            wrap([py_floordiv(x, y) for x, y in zip(pa, pb)], dtype),
                            wrap([py_mod(x, y) for x, y in zip(pa, pb)], dtype)]
        for what, got, want in zip(("+", "-", "*", "/", "//", "%"), outs, expected):
            check(got, want, f"{dtype} {what}", rng, n)


FLOOR_CASES = [(7.5, 2.0), (-7.5, 2.0), (7.5, -2.0), (-7.5, -2.0), (0.0, -3.0),
               (-0.0, 3.0), (-0.0, -3.0), (5.0, 0.1), (-1.0, 3.0), (1.0, -3.0),
               (math.inf, 2.0), (2.0, math.inf), (-2.0, math.inf), (6.0, 3.0),
               (-6.0, 3.0), (0.75, 0.25), (-1e-3, 7.0)]


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=ids(FLOAT_TYPES))
def test_float_floordiv_and_mod_follow_python(dtype, rng):
    xs = np.array([x for x, _ in FLOOR_CASES], dtype=dtype.numpy)
    ys = np.array([y for _, y in FLOOR_CASES], dtype=dtype.numpy)
    ftype = dtype
    outs = [zeros(len(xs), dtype) for _ in range(3)] + [zeros(len(xs), ftype)] + \
           [zeros(len(xs), dtype) for _ in range(2)]
    arith(tack.asarray(xs), tack.asarray(ys), *outs)
    fdiv, mod = outs[4].numpy(), outs[5].numpy()
    for k, (x, y) in enumerate(zip(xs, ys)):
        want_q, want_r = divmod(float(x), float(y))  # Python's own float rules
        for got, want, op in ((fdiv[k], want_q, "//"), (mod[k], want_r, "%")):
            want = dtype.numpy.type(want)
            assert (got == want and math.copysign(1, got) == math.copysign(1, want)) \
                or (math.isnan(got) and math.isnan(want)), \
                f"{dtype}: {float(x)!r} {op} {float(y)!r} gave {got!r}, Python {want!r}"


# -- ** -------------------------------------------------------------------------

@tack.kernel
def power(a, e, out):
    for i in range(len(a)):
        out[i] = a[i] ** e[i]


@pytest.mark.parametrize("dtype", INT_TYPES, ids=ids(INT_TYPES))
def test_int_power_wraps_like_python(dtype, rng):
    for n in SIZES:
        a_np = rng.values(dtype, n)
        e_np = rng.ints(dtype, n, 0, 70)
        out = zeros(n, dtype)
        power(tack.asarray(a_np), tack.asarray(e_np), out)
        want = wrap([pow(int(x), int(y), 1 << 64) for x, y in zip(a_np, e_np)], dtype)
        check(out, want, f"{dtype} **", rng, n)


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=ids(FLOAT_TYPES))
def test_float_power_within_two_ulp(dtype, rng):
    for n in SIZES:
        a_np = rng.floats(dtype, n, 0.01, 20.0)
        e_np = rng.floats(dtype, n, -6.0, 6.0)
        # negative bases with integral exponents, and exact squares
        a_np[: n // 4] *= -1
        e_np[: n // 4] = np.round(e_np[: n // 4])
        out = zeros(n, dtype)
        power(tack.asarray(a_np), tack.asarray(e_np), out)
        want = np.power(a_np.astype(np.float64), e_np.astype(np.float64))
        err = np.abs(out.numpy() - want) / np.spacing(np.abs(want.astype(dtype.numpy)))
        assert err.size == 0 or err.max() <= 2, \
            f"{dtype} ** off by {err.max()} ulp at {a_np[err.argmax()]!r} ** " \
            f"{e_np[err.argmax()]!r} (n={n} {rng})"


LITERAL_EXPONENTS = (3, -3, 4, 5, -7, 12, 16, -16, 17, -2)


@tack.kernel
def literal_powers(a, out):
    for i in range(len(a)):
        out[i, 0] = a[i] ** 3
        out[i, 1] = a[i] ** -3
        out[i, 2] = a[i] ** 4
        out[i, 3] = a[i] ** 5.0
        out[i, 4] = a[i] ** -7
        out[i, 5] = a[i] ** 12
        out[i, 6] = a[i] ** 16
        out[i, 7] = a[i] ** -16.0
        out[i, 8] = a[i] ** 17      # beyond the multiplied range: pow
        out[i, 9] = a[i] ** -2


def _exact_power(x: float, k: int, dtype) -> float:
    """``x ** k`` rounded once to ``dtype`` (inf past its range)."""
    if x == 0 or not math.isfinite(x):
        with np.errstate(all="ignore"):
            return np.power(np.float64(x), float(k)).astype(dtype.numpy)
    from fractions import Fraction
    with np.errstate(over="ignore"):
        try:
            return np.array(float(Fraction(x) ** k)).astype(dtype.numpy)
        except OverflowError:
            return np.array(math.copysign(math.inf, x) if k % 2 else math.inf,
                            dtype=dtype.numpy)


def _ulps(got, want, dtype):
    """Distance in units in the last place, on the ordered integer line."""
    bits = {4: np.int32, 8: np.int64}[dtype.numpy.itemsize]
    lines = []
    for v in (got, want):
        i = np.asarray(v, dtype=dtype.numpy).view(bits).astype(np.int64)
        lines.append(np.where(i < 0, np.iinfo(bits).min - i, i))
    return np.abs(lines[0] - lines[1])


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=ids(FLOAT_TYPES))
def test_literal_integer_powers(dtype, rng):
    # |k| <= 16: multiplied out (every backend), within one ulp of the exact
    # power (correctly rounded nearly always); |k| > 16: pow, within two
    specials = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 1e-30, -1e30,
                1e80, 1e-80, 3e-78, 2.0 ** -1074]
    for n in SIZES:
        a_np = rng.values(dtype, n)
        a_np[: n // 3] = rng.floats(dtype, n // 3, -3.0, 3.0)
        with np.errstate(over="ignore"):
            a_np[: min(n, len(specials))] = np.array(specials[:n]).astype(dtype.numpy)
        out = zeros((n, len(LITERAL_EXPONENTS)), dtype)
        literal_powers(tack.asarray(a_np), out)
        got = out.numpy()
        for column, k in enumerate(LITERAL_EXPONENTS):
            want = np.array([_exact_power(float(x), k, dtype) for x in a_np],
                            dtype=dtype.numpy)
            finite = np.isfinite(want) & (want != 0)
            np.testing.assert_array_equal(
                np.signbit(got[~finite, column]), np.signbit(want[~finite]),
                err_msg=f"{dtype} ** {k}: signs at {a_np[~finite]} ({rng})")
            np.testing.assert_array_equal(got[~finite, column], want[~finite],
                                          err_msg=f"{dtype} ** {k} ({rng})")
            err = _ulps(got[finite, column], want[finite], dtype)
            limit = 1 if abs(k) <= 16 else 2
            assert err.size == 0 or err.max() <= limit, \
                f"{dtype} ** {k} off by {err.max()} ulp at {a_np[finite][err.argmax()]!r} " \
                f"(n={n} {rng})"


@tack.kernel
def computed_exponents(a, out):
    for i in range(len(a)):
        out[i, 0] = a[i] ** (1 + 2)                  # folds to ** 3
        out[i, 1] = a[i] ** (2 * 4 - 1)
        out[i, 2] = a[i] ** -(3 * 2 - 1)
        out[i, 3] = a[i] ** (2 - 2)
        out[i, 4] = a[i] ** (9223372036854775807 + 1 - 9223372036854775807)  # wraps to 1
        out[i, 5] = a[i] ** 3
        out[i, 6] = a[i] ** 7
        out[i, 7] = a[i] ** -5


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=ids(FLOAT_TYPES))
def test_exponents_computed_from_literals_are_the_literal_powers(dtype, rng):
    # x ** (1 + 2) has the bits of x ** 3 (multiplied out on every backend,
    # where pow could be an ulp away); a sum that wraps keeps its own meaning
    for n in SIZES:
        a_np = rng.values(dtype, n)
        out = zeros((n, 8), dtype)
        computed_exponents(tack.asarray(a_np), out)
        got = out.numpy()
        for column, twin in ((0, 5), (1, 6), (2, 7)):
            np.testing.assert_array_equal(got[:, column], got[:, twin], err_msg=str(rng))
        np.testing.assert_array_equal(got[:, 3], np.ones(n, dtype.numpy))
        np.testing.assert_array_equal(got[:, 4], a_np, err_msg=str(rng))
    ir = tack.inspect(computed_exponents, zeros(3, dtype), zeros((3, 8), dtype), mode="ir")
    assert "** 3.0:" in ir and "** 7.0:" in ir and "** -5.0:" in ir and "** 0.0:" in ir
    assert "9223372036854775807:i64 + 1:i64" in ir     # wrapped: not folded


@tack.kernel
def computed_exponents_more(a, out):
    for i in range(len(a)):
        out[i, 0] = a[i] ** (27 // 2)                # 13, as a[i] ** 13
        out[i, 1] = a[i] ** (113 % 100)
        out[i, 2] = a[i] ** (13 ** 1)
        out[i, 3] = a[i] ** (6.5 * 2)
        out[i, 4] = a[i] ** (-27 // 2)               # -14: floors, as Python
        out[i, 5] = a[i] ** (1 / 2)                  # 0.5, exactly
        out[i, 6] = a[i] ** 13
        out[i, 7] = a[i] ** -14
        out[i, 8] = a[i] ** 0.5
        out[i, 9] = a[i] ** (1 // 0)                 # by zero: not folded
        out[i, 10] = a[i] ** (2.0 ** 2)
        out[i, 11] = a[i] ** (9.0 // 2)
        out[i, 12] = a[i] ** (9.0 % 5)
        out[i, 13] = a[i] ** 4


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=ids(FLOAT_TYPES))
def test_exponents_computed_by_any_exact_literal_arithmetic_are_the_literals(dtype, rng):
    # (// % ** and float steps that need no rounding: the same bits as the
    # literal; random differential audit: they called pow, CPU != OpenCL)
    for n in SIZES:
        a_np = rng.values(dtype, n)
        out = zeros((n, 14), dtype)
        computed_exponents_more(tack.asarray(a_np), out)
        got = out.numpy()
        for column, twin in ((0, 6), (1, 6), (2, 6), (3, 6), (4, 7), (5, 8), (10, 13),
                             (11, 13), (12, 13)):
            np.testing.assert_array_equal(got[:, column], got[:, twin],
                                          err_msg=f"column {column} {rng}")
        np.testing.assert_array_equal(got[:, 9], np.ones(n, dtype.numpy))   # x ** 0
    ir = tack.inspect(computed_exponents_more, zeros(3, dtype), zeros((3, 14), dtype),
                      mode="ir")
    assert ir.count("** 13.0:") == 5 and "** -14.0:" in ir and ir.count("** 0.5:") == 2
    assert ir.count("** 4.0:") == 4
    assert "1:i64 // 0:i64" in ir                      # kept


@tack.kernel
def integer_exponents(a, e, k, out, out_k):
    for i in range(len(a)):
        out[i] = a[i] ** e[i]
        out_k[i] = a[i] ** k


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=ids(FLOAT_TYPES))
@pytest.mark.parametrize("k", [0, 3, -5, 16, -16, 17, -40])
def test_powers_with_integer_exponents_held_in_variables(dtype, k, rng):
    # f32 on the CPU: the bits of |k| pick the factors (pow past 16), within one
    # ulp of the exact power; elsewhere pow, within two
    specials = [0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0]
    for n in SIZES:
        a_np = rng.floats(dtype, n, -3.0, 3.0)
        a_np[: min(n, len(specials))] = np.array(specials[:n]).astype(dtype.numpy)
        e_np = rng.ints(tack.i32, n, -20, 20)
        out, out_k = zeros(n, dtype), zeros(n, dtype)
        integer_exponents(tack.asarray(a_np), tack.asarray(e_np), k, out, out_k)
        for got, exps in ((out.numpy(), e_np), (out_k.numpy(), np.full(n, k))):
            want = np.array([_exact_power(float(x), int(e), dtype) if e else 1.0
                             for x, e in zip(a_np, exps)], dtype=dtype.numpy)
            finite = np.isfinite(want) & (want != 0)
            np.testing.assert_array_equal(got[~finite], want[~finite], err_msg=str(rng))
            np.testing.assert_array_equal(np.signbit(got[~finite]), np.signbit(want[~finite]))
            err = _ulps(got[finite], want[finite], dtype)
            assert err.size == 0 or err.max() <= 2, (f"{dtype} ** {k}: {err.max()} ulp "
                                                     f"(n={n} {rng})")


@pytest.mark.skipif(tack.get_default_device().type != "cpu", reason="LLVM IR: CPU only")
def test_literal_integer_powers_are_multiplied_out():
    # pow stayed a libm call per lane: x ** 3 over f32 ran 15 times as long
    for dtype in FLOAT_TYPES:
        ir = tack.inspect(literal_powers, zeros(8, dtype), zeros((8, 10), dtype),
                          mode="optimized")
        calls = [line for line in ir.splitlines() if "call" in line and "@llvm.pow" in line]
        assert calls and all("1.700000e+01" in line for line in calls), calls  # a ** 17 only


# -- shifts, bit operations, negation --------------------------------------------

@tack.kernel
def bits(a, b, s, band, bor, bxor, inv, shl, shr, neg):
    for i in range(len(a)):
        band[i] = a[i] & b[i]
        bor[i] = a[i] | b[i]
        bxor[i] = a[i] ^ b[i]
        inv[i] = ~a[i]
        shl[i] = a[i] << s[i]
        shr[i] = a[i] >> s[i]
        neg[i] = -a[i]


@pytest.mark.parametrize("dtype", INT_TYPES, ids=ids(INT_TYPES))
def test_bit_operations_and_shifts(dtype, rng):
    for n in SIZES:
        a_np, b_np = rng.values(dtype, n), rng.values(dtype, n)
        s_np = rng.ints(dtype, n, 0, dtype.bits + 3)  # counts >= width included
        outs = [zeros(n, dtype) for _ in range(7)]
        bits(tack.asarray(a_np), tack.asarray(b_np), tack.asarray(s_np), *outs)
        pa, pb, ps = ([int(v) for v in x] for x in (a_np, b_np, s_np))
        expected = [[x & y for x, y in zip(pa, pb)], [x | y for x, y in zip(pa, pb)],
                    [x ^ y for x, y in zip(pa, pb)], [~x for x in pa],
                    [x << s for x, s in zip(pa, ps)], [x >> s for x, s in zip(pa, ps)],
                    [-x for x in pa]]
        for what, got, want in zip(("&", "|", "^", "~", "<<", ">>", "neg"), outs,
                                   expected):
            check(got, wrap(want, dtype), f"{dtype} {what}", rng, n)


@tack.kernel
def negate(a, out):
    for i in range(len(a)):
        out[i] = -a[i]


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=ids(FLOAT_TYPES))
def test_float_negation(dtype, rng):
    for n in SIZES:
        a_np = rng.values(dtype, n)
        out = zeros(n, dtype)
        negate(tack.asarray(a_np), out)
        check(out, -a_np, f"{dtype} neg", rng, n)
    out = zeros(2, dtype)
    negate(tack.asarray(np.array([0.0, -0.0], dtype=dtype.numpy)), out)
    assert list(np.signbit(out.numpy())) == [True, False]


# -- abs, min, max -------------------------------------------------------------------

@tack.kernel
def minmax(a, b, c, mn2, mn3, mx2, mx3, ab):
    for i in range(len(a)):
        mn2[i] = min(a[i], b[i])
        mn3[i] = min(a[i], b[i], c[i])
        mx2[i] = max(a[i], b[i])
        mx3[i] = max(c[i], a[i], b[i])
        ab[i] = abs(a[i])


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=ids(ALL_TYPES))
def test_abs_min_max_follow_python(dtype, rng):
    for n in SIZES:
        a_np, b_np, c_np = (rng.values(dtype, n) for _ in range(3))
        if dtype.is_float and n:
            for x in (a_np, b_np, c_np):  # NaN: Python keeps the first argument
                x[rng.gen.random(n) < 0.1] = np.nan
            a_np[rng.gen.random(n) < 0.1] = -0.0
        outs = [zeros(n, dtype) for _ in range(5)]
        minmax(*(tack.asarray(x) for x in (a_np, b_np, c_np)), *outs)
        triples = list(zip(a_np.tolist(), b_np.tolist(), c_np.tolist()))
        expected = [[min(x, y) for x, y, _ in triples],
                    [min(x, y, z) for x, y, z in triples],
                    [max(x, y) for x, y, _ in triples],
                    [max(z, x, y) for x, y, z in triples]]
        for what, got, want in zip(("min2", "min3", "max2", "max3"), outs, expected):
            check(got, np.array(want, dtype=dtype.numpy), f"{dtype} {what}", rng, n)
        want_abs = np.abs(a_np) if dtype.is_float else wrap([abs(x) for x in a_np.tolist()],
                                                            dtype)
        check(outs[4], want_abs, f"{dtype} abs", rng, n)


# -- comparisons, chained comparisons, and/or/not, conditional expressions ----------

@tack.kernel
def compare(a, b, c, lt, le, gt, ge, eq, ne, chain, chain2, both, either, nota, pick):
    for i in range(len(a)):
        lt[i] = a[i] < b[i]
        le[i] = a[i] <= b[i]
        gt[i] = a[i] > b[i]
        ge[i] = a[i] >= b[i]
        eq[i] = a[i] == b[i]
        ne[i] = a[i] != b[i]
        chain[i] = a[i] < b[i] <= c[i]
        chain2[i] = a[i] == b[i] != c[i]
        both[i] = a[i] and b[i]
        either[i] = a[i] or c[i]
        nota[i] = not a[i]
        pick[i] = a[i] if a[i] > b[i] else c[i]


def _small_values(dtype, n, rng):
    """Few distinct values, so that equal operands are common."""
    if dtype.is_float:
        pool = np.array([0.0, -0.0, 1.0, -1.5, 2.25, np.nan, np.inf, -np.inf])
        return pool[rng.gen.integers(0, len(pool), n)].astype(dtype.numpy)
    lo = -3 if dtype.is_signed else 0
    info = np.iinfo(dtype.numpy)
    pool = np.array([lo, 0, 1, 2, 3, info.max, info.min], dtype=dtype.numpy)
    return pool[rng.gen.integers(0, len(pool), n)]


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=ids(ALL_TYPES))
def test_comparisons_and_logic_follow_python(dtype, rng):
    for n in SIZES:
        a_np, b_np, c_np = (_small_values(dtype, n, rng) for _ in range(3))
        outs = [zeros(n, tack.i32) for _ in range(11)] + [zeros(n, dtype)]
        compare(*(tack.asarray(x) for x in (a_np, b_np, c_np)), *outs)
        t = list(zip(a_np.tolist(), b_np.tolist(), c_np.tolist()))
        expected = [
            [x < y for x, y, _ in t], [x <= y for x, y, _ in t],
            [x > y for x, y, _ in t], [x >= y for x, y, _ in t],
            [x == y for x, y, _ in t], [x != y for x, y, _ in t],
            [x < y <= z for x, y, z in t], [x == y != z for x, y, z in t],
            [bool(x and y) for x, y, _ in t], [bool(x or z) for x, _, z in t],
            [not x for x, _, _ in t]]
        names = ("<", "<=", ">", ">=", "==", "!=", "a<b<=c", "a==b!=c", "and", "or",
                 "not")
        for what, got, want in zip(names, outs, expected):
            check(got, np.array(want, dtype=np.int32), f"{dtype} {what}", rng, n)
        check(outs[11], np.array([x if x > y else z for x, y, z in t], dtype=dtype.numpy),
              f"{dtype} if-else", rng, n)


@tack.kernel
def evaluated_once(a, calls, skipped, chain, logic, pick):
    for i in range(len(a)):
        chain[i] = 0 <= tack.atomic_add(calls, i, 1) < a[i]
        logic[i] = a[i] > 2 and tack.atomic_add(skipped, i, 1) >= 0
        pick[i] = tack.atomic_add(skipped, i, 10) if a[i] > 4 else a[i]


def test_chained_comparison_short_circuit_and_select_evaluate_once(rng):
    for n in SIZES:
        a_np = rng.ints(tack.i32, n, 0, 6)
        calls, skipped = zeros(n, tack.i32), zeros(n, tack.i32)
        chain, logic, pick = zeros(n, tack.i32), zeros(n, tack.i32), zeros(n, tack.i32)
        evaluated_once(tack.asarray(a_np), calls, skipped, chain, logic, pick)
        check(calls, np.ones(n, np.int32), "middle of a chain runs once", rng, n)
        check(chain, (a_np > 0).astype(np.int32), "chain", rng, n)
        check(logic, (a_np > 2).astype(np.int32), "and", rng, n)
        want_skipped = (a_np > 2).astype(np.int32) + 10 * (a_np > 4)
        check(skipped, want_skipped, "right side only when needed", rng, n)
        check(pick, np.where(a_np > 4, (a_np > 2).astype(np.int32), a_np), "select",
              rng, n)


# -- casts ---------------------------------------------------------------------------

@tack.kernel
def float_casts(x, to_int, to_float, to_f32, to_i8, to_u8, to_i16, to_u32, to_u64, to_i32):
    for i in range(len(x)):
        to_int[i] = int(x[i])
        to_float[i] = float(x[i])
        to_f32[i] = tack.f32(x[i])
        to_i8[i] = tack.i8(x[i])
        to_u8[i] = tack.u8(x[i])
        to_i16[i] = tack.i16(x[i])
        to_u32[i] = tack.u32(x[i])
        to_u64[i] = tack.u64(x[i])
        to_i32[i] = tack.i32(x[i])


def saturate(value: float, dtype):
    """Float to int as the language defines it: truncate, saturate, NaN gives 0."""
    if math.isnan(value):
        return 0
    info = np.iinfo(dtype.numpy)
    if value >= info.max:
        return int(info.max)
    if value <= info.min:
        return int(info.min)
    return math.trunc(value)


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=ids(FLOAT_TYPES))
def test_float_to_int_casts_saturate(dtype, rng):
    targets = (tack.i64, tack.f64, tack.f32, tack.i8, tack.u8, tack.i16, tack.u32,
               tack.u64, tack.i32)
    specials = [np.nan, np.inf, -np.inf, -0.0, 0.5, -0.5, -1.0, 127.9, 128.0, -128.5,
                -129.0, 255.5, 256.0, 2.0**31, -2.0**31, 2.0**32, 2.0**63, -2.0**63,
                2.0**64, 1e30, -1e30]
    for n in SIZES:
        x_np = (rng.values(dtype, n) * 100).astype(dtype.numpy)
        x_np[: min(n, len(specials))] = specials[: min(n, len(specials))]
        outs = [zeros(n, t) for t in targets]
        float_casts(tack.asarray(x_np), *outs)
        xs = x_np.tolist()
        for t, got in zip(targets, outs):
            if t.is_float:
                want = x_np.astype(t.numpy)
            else:
                want = np.array([saturate(v, t) for v in xs], dtype=t.numpy)
            check(got, want, f"{dtype} -> {t}", rng, n)


@tack.kernel
def converted(x, out):
    for i in range(len(x)):
        out[i] = x[i]


@pytest.mark.parametrize("src", FLOAT_TYPES, ids=ids(FLOAT_TYPES))
@pytest.mark.parametrize("dst", INT_TYPES, ids=ids(INT_TYPES))
def test_float_to_int_conversions_saturate_at_every_types_ends(src, dst, rng):
    """Every pair, with each integer type's ends and their neighbours, inside
    vectorized loops (the CPU writes the conversion as compares and selects)."""
    info = np.iinfo(dst.numpy)
    ends = [float(info.min), float(info.max), float(info.max) + 1.0,
            float(np.nextafter(src.numpy.type(2.0 ** (dst.bits - dst.is_signed)),
                               src.numpy.type(0)))]
    specials = [np.nan, np.inf, -np.inf, -0.0, 0.99, -0.99, -1.0] + ends + \
        [e * s for e in ends for s in (0.999, 1.001)]
    values = np.concatenate([np.array(specials), rng.values(tack.f64, 1000) *
                             10.0 ** rng.gen.integers(0, 20, 1000)]).astype(src.numpy)
    out = zeros(len(values), dst)
    converted(tack.asarray(values), out)
    want = np.array([saturate(v, dst) for v in values.tolist()], dtype=dst.numpy)
    check(out, want, f"{src} -> {dst}", rng, len(values))


@tack.kernel
def int_casts(x, o_i8, o_u8, o_i16, o_u16, o_i32, o_u32, o_i64, o_u64, o_f32, o_f64):
    for i in range(len(x)):
        o_i8[i] = tack.i8(x[i])
        o_u8[i] = tack.u8(x[i])
        o_i16[i] = tack.i16(x[i])
        o_u16[i] = tack.u16(x[i])
        o_i32[i] = tack.i32(x[i])
        o_u32[i] = tack.u32(x[i])
        o_i64[i] = tack.i64(x[i])
        o_u64[i] = tack.u64(x[i])
        o_f32[i] = tack.f32(x[i])
        o_f64[i] = tack.f64(x[i])


@pytest.mark.parametrize("dtype", INT_TYPES, ids=ids(INT_TYPES))
def test_int_casts_wrap_and_extend(dtype, rng):
    targets = (tack.i8, tack.u8, tack.i16, tack.u16, tack.i32, tack.u32, tack.i64,
               tack.u64, tack.f32, tack.f64)
    for n in SIZES:
        x_np = rng.values(dtype, n)
        outs = [zeros(n, t) for t in targets]
        int_casts(tack.asarray(x_np), *outs)
        for t, got in zip(targets, outs):
            want = x_np.astype(t.numpy) if t.is_float else wrap(x_np.tolist(), t)
            check(got, want, f"{dtype} -> {t}", rng, n)


@tack.kernel
def float_of_int(x, out):
    for i in range(len(x)):
        out[i] = int(float(x[i]))


@tack.kernel
def float_of_int_f64(x, out, unused):
    for i in range(len(x)):
        out[i] = int(float(x[i]))


def test_float_takes_the_kernel_default_float(rng):
    x_np = np.array([2**40 + 1, -(2**53) - 3, 2**25 + 1, 12345], dtype=np.int64)
    x_np = np.concatenate([x_np, rng.ints(tack.i64, 29)])
    out = zeros(len(x_np), tack.i64)
    float_of_int(tack.asarray(x_np), out)  # no f64 array: float() is f32
    check(out, x_np.astype(np.float32).astype(np.int64), "float() as f32", rng,
          len(x_np))
    out = zeros(len(x_np), tack.i64)
    float_of_int_f64(tack.asarray(x_np), out, zeros(1, tack.f64))  # an f64 array
    check(out, x_np.astype(np.float64).astype(np.int64), "float() as f64", rng,
          len(x_np))


@tack.kernel
def weak_literals(x, half, twice, mixed):
    for i in range(len(x)):
        half[i] = x[i] * 0.1
        twice[i] = x[i] * 2
        mixed[i] = x[i] / 3


def test_weak_literals_keep_the_operand_type(rng):
    for n in SIZES:
        x_np = rng.floats(tack.f32, n)
        half, twice = zeros(n, tack.f32), zeros(n, tack.f32)
        mixed = zeros(n, tack.f32)
        weak_literals(tack.asarray(x_np), half, twice, mixed)
        check(half, x_np * np.float32(0.1), "f32 * 0.1 in f32", rng, n)
        check(twice, x_np * np.float32(2), "f32 * 2", rng, n)
        check(mixed, x_np / np.float32(3), "f32 / 3", rng, n)


@tack.kernel
def truth_of_floats(a, out):
    for i in range(len(a)):
        out[i] = 1 if a[i] else 0


@pytest.mark.parametrize("dtype", [tack.f32, tack.f64])
def test_a_float_as_the_condition_of_a_conditional_expression(dtype):
    # Regression: OpenCL C takes no float as the condition of `?:` (a build error).
    values = np.array([0.0, -0.0, 1.5, np.nan, -np.inf, 1e-45], dtype.numpy)
    out = tack.zeros(len(values), tack.i32)
    truth_of_floats(tack.array(values), out)
    np.testing.assert_array_equal(out.numpy(), [int(bool(v)) for v in values])


@tack.kernel
def plus_a_big_literal(x, out):
    for i in range(len(x)):
        out[i] = x[i] + 1152921573326323713    # 2**60 + 2**36 + 1


def test_an_integer_literal_rounds_once_to_f32():
    # Regression: the literal went int -> f64 -> f32, rounding twice (to 2**60);
    # an integer rounds to nearest once, as the same value loaded at run time does.
    out = tack.zeros(1, tack.f32)
    plus_a_big_literal(tack.zeros(1, tack.f32), out)
    assert int(out.numpy()[0]) == 2**60 + 2**37


@tack.kernel
def cast_float_literals(o, of):   # no f64 array: the kernel's default float is f32
    for i in range(len(o)):
        o[i, 0] = tack.i64(tack.f64(0.1) * 1e17)
        o[i, 1] = tack.i64(tack.f64(1e300) / 1e290)
        o[i, 2] = tack.i64(tack.f64(16777217.0))
        o[i, 3] = tack.i64(16777217.0)
        of[i] = tack.f64(tack.f32(0.1)) * 10.0
        of[i + 1] = tack.f64(1e-300) * 1e300


def test_a_cast_converts_a_float_literal_once():
    # Regression: in an f32-default kernel the literal became an f32 constant
    # first, so tack.f64(1e300) was inf and tack.f64(0.1) was 0.1 rounded to f32.
    o, of = tack.zeros((1, 4), tack.i64), tack.zeros(2, tack.f32)
    cast_float_literals(o, of)
    assert o.numpy().tolist() == [[10**16, 10**10, 16777217, 16777217]]
    want = [np.float32(np.float64(np.float32(0.1)) * 10.0), np.float32(1.0)]
    assert of.numpy().tolist() == want

@tack.kernel
def extremes_of_three(x, y, z, a, o, of):
    for i in range(len(o)):
        o[i, 0] = min(x[i], y[i], z[i])
        o[i, 1] = min(z[i], -9007199254740993, a[i])
        o[i, 2] = max(z[i], 2**40, a[i])
        o[i, 3] = max(z[i], a[i], 2**40)
        o[i, 4] = min(min(x[i], y[i]), z[i])   # nested by hand: two joins
        of[i] = min(tack.f32(1.0), 0.1, tack.f64(1.0))


def test_min_and_max_of_several_arguments_use_the_join_of_them_all():
    # Regression: min(a, b, c) was typed pairwise, so a literal wrapped to the
    # first pair's narrower type and u64 values compared as unsigned.
    x, y = tack.array(np.array([2**63], np.uint64)), tack.array(np.array([1], np.uint64))
    z, a = tack.array(np.array([5], np.int32)), tack.array(np.array([0], np.int64))
    o, of = tack.zeros((1, 5), tack.i64), tack.zeros(1, tack.f64)
    extremes_of_three(x, y, z, a, o, of)
    assert o.numpy().tolist() == [[-2**63, -9007199254740993, 2**40, 2**40, 1]]
    assert of.numpy().tolist() == [0.1]

@tack.kernel
def of_nan_literals(out):
    for i in range(len(out)):
        out[0] = 1.0
        out[1] = math.exp(math.nan)
        out[2] = math.nan ** math.nan
        out[3] = 1.0 // math.nan
        out[4] = math.floor(math.nan) * 0.0 + math.nan


@tack.kernel
def of_constant_nans(a, o, f):
    for i in range(len(a)):
        o[i, 0] = math.ceil(0.0 / 0.0 + a[i])
        o[i, 1] = math.ceil(math.inf - math.inf + a[i])
        o[i, 2] = math.ceil(math.inf * 0 + a[i])
        x = 0.0 / 0.0 + a[i]
        o[i, 3] = x // x
        f[i] = math.exp(0.0 / 0.0 + a[i])


def test_nans_made_of_constants_are_stored():
    # Regression: PoCL folded 0.0 / 0.0 (and inf - inf, inf * 0) to NaN itself
    # and then dropped the stores that depended on it, silently.
    a = tack.zeros(3, tack.f32)
    o, f = tack.full((3, 4), 99, dtype=tack.i64), tack.full(3, 99.0, dtype=tack.f32)
    of_constant_nans(a, o, f)
    assert o.numpy().tolist() == [[0] * 4] * 3 and np.isnan(f.numpy()).all()


def test_math_of_nan_literals_gives_nan():
    # Regression: PoCL dropped these stores (and crashed on pow of two NaN
    # literals); OpenCL C now reads its NaN constants through a volatile.
    out = tack.full(5, 42.0, dtype=tack.f64)
    of_nan_literals(out)
    got = out.numpy()
    assert got[0] == 1.0 and np.isnan(got[1:]).all(), got
