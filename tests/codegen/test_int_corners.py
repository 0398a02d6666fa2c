"""Integer corner cases: MIN // -1, division by zero, wide shifts, u64 and out-of-range
scalar arguments, negative integer exponents, and float // and % by zero."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import tack

INT_TYPES = (tack.i8, tack.i16, tack.i32, tack.i64, tack.u8, tack.u16, tack.u32,
             tack.u64)


def ids(types):
    return [t.name for t in types]


def wrap(value, dtype):
    lo = -(1 << (dtype.bits - 1)) if dtype.is_signed else 0
    return ((int(value) - lo) % (1 << dtype.bits)) + lo


@tack.kernel
def divmod_arrays(a, b, q, r):
    for i in range(len(a)):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]


@pytest.mark.parametrize("dtype", INT_TYPES, ids=ids(INT_TYPES))
def test_min_div_minus_one_and_division_by_zero(dtype, rng):
    info = np.iinfo(dtype.numpy)
    lo, hi = int(info.min), int(info.max)
    pairs = [(lo, -1), (lo, 1), (lo, lo), (hi, -1), (hi, 0), (lo, 0), (0, 0), (-1, 0),
             (-7, 2), (7, -2), (-7, -2), (hi, lo), (lo, hi), (hi, hi), (1, hi)]
    pairs = [(wrap(x, dtype), wrap(y, dtype)) for x, y in pairs]
    pairs += list(zip(rng.values(dtype, 40).tolist(), rng.ints(dtype, 40, -3, 3).tolist()))
    a = tack.asarray(np.array([x for x, _ in pairs], dtype=dtype.numpy))
    b = tack.asarray(np.array([y for _, y in pairs], dtype=dtype.numpy))
    q, r = tack.zeros(len(pairs), dtype=dtype), tack.zeros(len(pairs), dtype=dtype)
    divmod_arrays(a, b, q, r)
    for (x, y), got_q, got_r in zip(pairs, q.numpy().tolist(), r.numpy().tolist()):
        want_q = 0 if y == 0 else wrap(x // y, dtype)
        want_r = 0 if y == 0 else wrap(x % y, dtype)
        assert (got_q, got_r) == (want_q, want_r), \
            f"{dtype}: {x} // {y}, {x} % {y} gave {got_q}, {got_r} ({rng})"


@tack.kernel
def divmod_scalar(a, d, q, r):
    for i in range(len(a)):
        q[i] = a[i] // d
        r[i] = a[i] % d


def test_i64_min_by_scalar_minus_one_and_zero(rng):
    lo = -(1 << 63)
    edges = np.array([lo, lo + 1, -1, 0, 1, (1 << 63) - 1], dtype=np.int64)
    a_np = np.concatenate([edges, rng.ints(tack.i64, 27)])
    for d in (-1, 0, -(1 << 40), lo):
        q, r = tack.zeros(len(a_np), dtype=tack.i64), tack.zeros(len(a_np), dtype=tack.i64)
        divmod_scalar(tack.asarray(a_np), d, q, r)
        want_q = [0 if d == 0 else wrap(x // d, tack.i64) for x in a_np.tolist()]
        want_r = [0 if d == 0 else wrap(x % d, tack.i64) for x in a_np.tolist()]
        assert q.numpy().tolist() == want_q, f"// {d} ({rng})"
        assert r.numpy().tolist() == want_r, f"% {d} ({rng})"


@tack.kernel
def float_divmod(a, b, q, r, d):
    for i in range(len(a)):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
        d[i] = a[i] / b[i]


@pytest.mark.parametrize("dtype", (tack.f32, tack.f64), ids=["f32", "f64"])
def test_float_division_by_zero(dtype):
    a_np = np.array([1.5, -2.0, 0.0, -0.0, math.inf, math.nan], dtype=dtype.numpy)
    b_np = np.array([0.0, -0.0, 0.0, 0.0, 0.0, 0.0], dtype=dtype.numpy)
    q, r, d = (tack.zeros(len(a_np), dtype=dtype) for _ in range(3))
    float_divmod(tack.asarray(a_np), tack.asarray(b_np), q, r, d)
    assert np.isnan(q.numpy()).all(), q.numpy()
    assert np.isnan(r.numpy()).all(), r.numpy()
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(d.numpy(), a_np / b_np)  # IEEE 754


@tack.kernel
def shifts(a, s, left, right):
    for i in range(len(a)):
        left[i] = a[i] << s[i]
        right[i] = a[i] >> s[i]


@pytest.mark.parametrize("dtype", INT_TYPES, ids=ids(INT_TYPES))
def test_shifts_by_the_width_or_more(dtype, rng):
    info = np.iinfo(dtype.numpy)
    values = [int(info.min), int(info.max), -1 if dtype.is_signed else 1, 1, 0, 5]
    values += rng.values(dtype, 10).tolist()
    counts = [dtype.bits - 1, dtype.bits, dtype.bits + 1, 2 * dtype.bits, int(info.max)]
    a_vals = [v for v in values for _ in counts]
    s_vals = [c for _ in values for c in counts]
    a = tack.asarray(np.array(a_vals, dtype=dtype.numpy))
    s = tack.asarray(np.array(s_vals, dtype=dtype.numpy))
    left, right = tack.zeros(len(a_vals), dtype=dtype), tack.zeros(len(a_vals), dtype=dtype)
    shifts(a, s, left, right)
    for x, c, got_l, got_r in zip(a_vals, s_vals, left.numpy().tolist(),
                                  right.numpy().tolist()):
        want_l = wrap(x << c, dtype) if c < dtype.bits else 0
        want_r = x >> c if c < dtype.bits else (-1 if x < 0 else 0)
        assert (got_l, got_r) == (want_l, want_r), \
            f"{dtype}: {x} << {c}, {x} >> {c} gave {got_l}, {got_r} ({rng})"


@tack.kernel
def int_power(a, e, out):
    for i in range(len(a)):
        out[i] = a[i] ** e[i]


@pytest.mark.parametrize("dtype", (tack.i8, tack.i32, tack.i64), ids=["i8", "i32", "i64"])
def test_negative_integer_exponent_truncates(dtype):
    bases = [1, -1, -1, 2, -2, 0, 5, 127]
    exps = [-3, -3, -4, -1, -1, -2, -7, -1]
    out = tack.zeros(len(bases), dtype=dtype)
    int_power(tack.asarray(np.array(bases, dtype=dtype.numpy)),
              tack.asarray(np.array(exps, dtype=dtype.numpy)), out)
    assert out.numpy().tolist() == [1, -1, 1, 0, 0, 0, 0, 0]


@tack.kernel
def literal_negative_power(a, out):
    for i in range(len(a)):
        out[i] = a[i] ** -2


def test_negative_literal_exponent_is_a_type_error():
    message = ("Kernel 'literal_negative_power': integer power with the negative "
               "literal exponent -2 (write a float base, such as 2.0 ** -2) at line 4, "
               "column 18")
    with pytest.raises(TypeError, match=re.escape(message)):
        literal_negative_power(tack.zeros(2, dtype=tack.i32), tack.zeros(2, dtype=tack.i32))


@tack.kernel
def with_scalar(a, s, total, same, bigger, third):
    for i in range(len(a)):
        total[i] = a[i] + s
        same[i] = s
        bigger[i] = s > a[i]
        third[i] = s // 3


def test_u64_scalar_arguments_above_2_63(rng):
    edges = np.array([0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1], dtype=np.uint64)
    a_np = np.concatenate([edges, rng.ints(tack.u64, 28)])
    for s in (1 << 63, (1 << 63) + 12345, (1 << 64) - 1, np.uint64((1 << 64) - 2)):
        outs = [tack.zeros(len(a_np), dtype=t)
                for t in (tack.u64, tack.u64, tack.i32, tack.u64)]
        with_scalar(tack.asarray(a_np), s, *outs)
        s = int(s)
        xs = a_np.tolist()
        assert outs[0].numpy().tolist() == [(x + s) % (1 << 64) for x in xs], f"+ {s} {rng}"
        assert outs[1].numpy().tolist() == [s] * len(xs), f"= {s} {rng}"
        assert outs[2].numpy().tolist() == [int(s > x) for x in xs], f"> {s} {rng}"
        assert outs[3].numpy().tolist() == [s // 3] * len(xs), f"// {s} {rng}"


@tack.func
def as_f64(p):
    return tack.f64(p)


@tack.kernel
def literal_past_i64(out):
    for i in range(len(out)):
        out[i, 0] = tack.f64(9223372036854775808)
        out[i, 1] = as_f64(9223372036854775808)       # through a device function
        c = 9223372036854775808                        # a local assigned it
        out[i, 2] = tack.f64(c)
        d = 18446744073709551615
        d = 18446744073709551614                       # two of them: still u64
        out[i, 3] = tack.f64(d > c)


def test_a_literal_past_i64_kept_in_a_local_stays_unsigned():
    # the local's type was joined with itself by the fixpoint, and two weak
    # u64 made a weak i64: the value turned negative
    for n in (0, 1, 7):
        out = tack.zeros((n, 4), dtype=tack.f64)
        literal_past_i64(out)
        assert out.numpy().tolist() == [[2.0**63, 2.0**63, 2.0**63, 1.0]] * n


def test_i64_boundary_scalar_arguments(rng):
    a_np = rng.ints(tack.i64, 9, -1000, 1000)
    for s in ((1 << 63) - 1, -(1 << 63), 1 << 31, -(1 << 31) - 1, (1 << 31) - 1, True):
        outs = [tack.zeros(9, dtype=t) for t in (tack.i64, tack.i64, tack.i32, tack.i64)]
        with_scalar(tack.asarray(a_np), s, *outs)
        s = int(s)
        xs = a_np.tolist()
        assert outs[0].numpy().tolist() == [wrap(x + s, tack.i64) for x in xs], f"{s} {rng}"
        assert outs[1].numpy().tolist() == [s] * 9, f"{s} {rng}"
        assert outs[2].numpy().tolist() == [int(s > x) for x in xs], f"{s} {rng}"
        assert outs[3].numpy().tolist() == [s // 3] * 9, f"{s} {rng}"


@pytest.mark.parametrize("value", [1 << 64, -(1 << 63) - 1, 10**30, -(10**30)])
def test_int_argument_outside_64_bits_is_a_type_error(value):
    a = tack.zeros(3, dtype=tack.i64)
    message = f"Kernel 'with_scalar': integer {value} is outside the 64-bit range"
    with pytest.raises(TypeError, match=re.escape(message)):
        with_scalar(a, value, a, a, tack.zeros(3, dtype=tack.i32), a)


@tack.kernel
def wrapping(a, out):
    for i in range(len(a)):
        out[i] = a[i] * 4 + 1


def test_integer_overflow_wraps(rng):
    a_np = np.array([1 << 30, -(1 << 30), (1 << 31) - 1, -(1 << 31)], dtype=np.int32)
    out = tack.zeros(4, dtype=tack.i32)
    wrapping(tack.asarray(a_np), out)
    assert out.numpy().tolist() == [wrap(x * 4 + 1, tack.i32) for x in a_np.tolist()]


# -- len() and .shape are i64, also where the extent is compiled in -----------------------

@tack.kernel
def k_scaled_by_len(x, out):
    for i in range(len(x)):
        out[i] = x[i] * len(x) - x.shape[0]


@tack.kernel
def k_local_len(x, out):
    for i in range(len(x)):
        b = tack.local_array(4, tack.i16)
        b[0] = 20000
        out[i] = b[0] * len(b) + x[i]


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int16])
@pytest.mark.parametrize("n", [1, 3, 7])
def test_len_and_shape_are_i64_not_the_elements_type(dtype, n):
    info = np.iinfo(dtype)
    host = np.array([info.max, info.min, 1, 0, 5, 9, 2][:n], dtype)
    out = tack.zeros(n, tack.i64)
    k_scaled_by_len(tack.array(host), out)
    np.testing.assert_array_equal(out.numpy(), host.astype(np.int64) * n - n)
    k_local_len(tack.array(host), out)
    np.testing.assert_array_equal(out.numpy(), 80000 + host.astype(np.int64))


NARROW_TYPES = (tack.i8, tack.i16, tack.u8, tack.u16)


@tack.kernel
def narrow_products(a, b, steps, prod, power, total):
    for i in range(len(a)):
        prod[i] = a[i] * b[i]
        power[i] = a[i] ** b[i]
        s = 0
        for v in range(steps[0], steps[1], steps[2]):   # the variable's own type
            s += tack.i64(v)
        total[i] = s


@pytest.mark.parametrize("dtype", NARROW_TYPES, ids=ids(NARROW_TYPES))
def test_narrow_products_wrap_without_signed_int_overflow(dtype):
    # C computes u16 * u16 in a signed int, where 65535 * 65535 overflows:
    # undefined behaviour in the generated C, also in ** and in a long loop
    # counting down. The results must wrap, and the C must multiply unsigned.
    info = np.iinfo(dtype.numpy)
    lo, hi = int(info.min), int(info.max)
    pairs = [(hi, hi), (lo, lo), (lo, -1 if lo else hi), (hi, 3), (3, hi % 64 + 1),
             (hi - 1, 2)]
    a = np.array([x for x, _ in pairs], dtype.numpy)
    b = np.array([y if dtype.is_signed else y % (1 << dtype.bits) for _, y in pairs],
                 dtype.numpy)
    exponents = np.abs(b.astype(np.int64)) % 64
    b_pow = exponents.astype(dtype.numpy)
    steps = np.array([hi, lo, -1] if dtype.is_signed else [0, hi, 1], dtype.numpy)
    outs = [tack.zeros(len(a), dtype), tack.zeros(len(a), dtype), tack.zeros(len(a), tack.i64)]
    narrow_products(tack.array(a), tack.array(b), tack.array(steps), *outs)
    prod = outs[0].numpy()
    np.testing.assert_array_equal(prod, [wrap(int(x) * int(y), dtype) for x, y in zip(a, b)])
    outs2 = [tack.zeros(len(a), dtype), tack.zeros(len(a), dtype), tack.zeros(len(a), tack.i64)]
    narrow_products(tack.array(a), tack.array(b_pow), tack.array(steps), *outs2)
    np.testing.assert_array_equal(outs2[1].numpy(),
                                  [wrap(pow(int(x), int(e), 1 << 64), dtype)
                                   for x, e in zip(a, b_pow)])
    start, stop, step = (int(v) for v in steps)
    assert outs[2].numpy().tolist() == [sum(range(start, stop, step))] * len(a)
    if tack.get_default_device().type == "opencl":
        source = tack.inspect(narrow_products, tack.array(a), tack.array(b),
                              tack.array(steps), *outs, mode="source")
        products = [line for line in source.splitlines() if "*" in line
                    and "__global" not in line]
        assert products and all("(uint)" in line or "uint r = 1" in line
                                or "r *= p" in line for line in products), products
        assert "uint r = 1, p = (uint)b" in source, source
