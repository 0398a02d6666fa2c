"""``(i + k) % n`` over ``i in range(n)`` as a compare (ir/passes/wrap.py).

Checked against NumPy's ``%`` at sizes 0, 1, 2, 3 and odd ones, for offsets
from -3 to 3 (past ``n`` too, where the remainder stays for ``|k| > 1``), with
``n`` an argument, a length baked into the variant (a literal or a local
equal to the baked extent) and a length read at run time; the IR shows which
form each variant has. Part of the backend suites.
"""

import numpy as np

import tack

SIZES = (0, 1, 2, 3, 7, 100, 1001)


@tack.kernel
def offsets_by_argument(out, n):
    for i in range(n):
        out[i, 0] = (i - 3) % n
        out[i, 1] = (i - 2) % n
        out[i, 2] = (i - 1) % n
        out[i, 3] = i % n
        out[i, 4] = (i + 1) % n
        out[i, 5] = (1 + i) % n
        out[i, 6] = (i + 2) % n
        out[i, 7] = (i + 3) % n


def _want(n: int) -> np.ndarray:
    i = np.arange(n, dtype=np.int64)[:, None]
    k = np.array([-3, -2, -1, 0, 1, 1, 2, 3])
    return (i + k) % n if n else np.zeros((0, 8), np.int64)


def test_offsets_of_a_loop_over_an_argument(rng):
    for n in SIZES:
        out = tack.full((max(n, 1), 8), -1, tack.i64)
        offsets_by_argument(out, n)
        np.testing.assert_array_equal(out.numpy()[:n], _want(n), err_msg=f"n={n}")
    for n in (5, np.int64(6), np.int16(4)):   # i64 and narrower arguments
        out = tack.zeros((int(n), 8), tack.i64)
        offsets_by_argument(out, n)
        np.testing.assert_array_equal(out.numpy(), _want(int(n)), err_msg=f"n={n!r}")


@tack.kernel
def periodic_difference(a, out):
    for i in range(len(a)):
        out[i] = a[(i + 1) % len(a)] - a[(i - 1) % len(a)] + a[(i + 2) % len(a)]


def test_periodic_neighbours_baked_and_read_at_run_time(rng):
    host = rng.values(tack.f64, 1001)
    a, out = tack.array(host), tack.zeros(1001, tack.f64)
    for n in (1, 2, 3, 7, 8, 0, 1, 2, 100, 1001, 3, 1):   # past four: run time
        periodic_difference(a[:n], out[:n])
        x = host[:n]
        want = np.roll(x, -1) - np.roll(x, 1) + np.roll(x, -2)
        np.testing.assert_array_equal(out.numpy()[:n], want, err_msg=f"n={n} {rng!r}")
    ir = tack.inspect(periodic_difference, a[:9], out[:9], mode="ir")
    assert "__tack_shape0_a" in ir and ir.count("%") == 1   # only k = 2 keeps it, guarded


@tack.kernel
def periodic_baked(a, out):
    for i in range(len(a)):
        out[i] = a[(i + 1) % len(a)] - a[(i - 1) % len(a)] + a[(i + 2) % len(a)]


@tack.kernel
def periodic_local(a, out):
    n = len(a)                       # the usual spelling: a local, baked
    for i in range(n):
        out[i, 0] = a[(i + n - 1) % n] - 2.0 * a[i] + a[(i + 1) % n]
        out[i, 1] = (i + 3) % n
        out[i, 2] = (i + 1) % 10     # the baked length only where it is 10


def test_a_baked_length_is_the_extent_too(rng):
    # (LLVM's multiplications for a constant divisor, scalarized in a vector
    # loop, ran 1.2-1.5x serial Numba's time: performance audit)
    x = rng.values(tack.f64, 10)
    ir = tack.inspect(periodic_baked, tack.array(x), tack.zeros(10, tack.f64), mode="ir")
    assert "%" not in ir and "__tack_shape" not in ir, ir
    ir = tack.inspect(periodic_baked, tack.array(x[:8]), tack.zeros(8, tack.f64), mode="ir")
    assert ir.count("% 8:i64") == 3, ir     # by a power of two LLVM masks, faster
    for n in (10, 1, 8, 3):
        out = tack.zeros(n, tack.f64)
        periodic_baked(tack.array(x[:n]), out)
        want = np.roll(x[:n], -1) - np.roll(x[:n], 1) + np.roll(x[:n], -2)
        np.testing.assert_array_equal(out.numpy(), want, err_msg=f"n={n} {rng!r}")


def test_a_local_holding_a_baked_length(rng):
    ir = tack.inspect(periodic_local, tack.zeros(10, tack.f64), tack.zeros((10, 3), tack.f64),
                      mode="ir")
    assert "%" not in ir, ir
    ir = tack.inspect(periodic_local, tack.zeros(11, tack.f64), tack.zeros((11, 3), tack.f64),
                      mode="ir")
    assert ir.count("%") == 1 and "% 10:i64" in ir, ir
    for n in (0, 1, 2, 3, 7, 10, 11):      # (past four lengths: read at run time)
        x = rng.values(tack.f64, n)
        out = tack.full((n, 3), 7.0, tack.f64)
        periodic_local(tack.array(x), out)
        got, i = out.numpy(), np.arange(n)
        want = np.roll(x, 1) - 2.0 * x + np.roll(x, -1)
        np.testing.assert_array_equal(got[:, 0], want, err_msg=f"n={n} {rng!r}")
        np.testing.assert_array_equal(got[:, 1], (i + 3) % max(n, 1), err_msg=f"n={n}")
        np.testing.assert_array_equal(got[:, 2], (i + 1) % 10, err_msg=f"n={n}")


@tack.kernel
def literal_divisor(a, b, out):
    m = 10
    for i in range(len(a)):
        out[i, 0] = a[(i + 1) % 10]
        out[i, 1] = b[(i + 1) % m]


@tack.kernel
def literal_column(u, out):
    for i, j in tack.ndindex(u.shape[0], u.shape[1]):
        out[i, j] = u[i, (j + 1) % 5]


def test_a_number_equal_to_an_extent_the_variant_does_not_bake_keeps_its_remainder(rng):
    # (the loop's extent is read at each launch, not part of the variant's key:
    # a compare made for the first call's length gave wrong values, and read
    # past the end of b, for longer arrays; review)
    b = rng.values(tack.f64, 10)
    for n in (10, 20, 11, 40):       # (a[... % 10] needs 10 elements)
        a = rng.values(tack.f64, n)
        out = tack.zeros((n, 2), tack.f64)
        literal_divisor(tack.array(a), tack.array(b), out)
        k = (np.arange(n) + 1) % 10
        np.testing.assert_array_equal(out.numpy()[:, 0], a[k], err_msg=f"n={n} {rng!r}")
        np.testing.assert_array_equal(out.numpy()[:, 1], b[k], err_msg=f"n={n} {rng!r}")
    for m in (5, 12):
        u = rng.values(tack.f64, 3 * m).reshape(3, m)
        out = tack.zeros((3, m), tack.f64)
        literal_column(tack.array(u), out)
        np.testing.assert_array_equal(out.numpy(), u[:, (np.arange(m) + 1) % 5],
                                      err_msg=f"m={m} {rng!r}")


@tack.kernel
def grid_neighbours(u, out):
    for i, j in tack.ndindex(u.shape[0], u.shape[1]):
        out[i, j] = u[(i + 1) % u.shape[0], j] + u[i, (j - 1) % u.shape[1]]


def test_both_variables_of_a_grid(rng):
    for shape in ((1, 1), (2, 3), (5, 1), (7, 9)):
        host = rng.values(tack.f32, shape[0] * shape[1]).reshape(shape)
        out = tack.zeros(shape, tack.f32)
        grid_neighbours(tack.array(host), out)
        want = np.roll(host, -1, axis=0) + np.roll(host, 1, axis=1)
        np.testing.assert_array_equal(out.numpy(), want, err_msg=f"{shape} {rng!r}")


@tack.kernel
def loop_variable_changed(out, n):
    for i in range(n):
        i = i * 2
        out[i // 2] = (i + 1) % n


def test_a_reassigned_variable_keeps_the_remainder():
    out = tack.zeros(5, tack.i64)
    loop_variable_changed(out, 5)
    np.testing.assert_array_equal(out.numpy(), (np.arange(5) * 2 + 1) % 5)
    assert "%" in tack.inspect(loop_variable_changed, out, 5, mode="ir")


@tack.kernel
def row_neighbours(u, out, m):
    for i in range(len(u) // m):
        for j in range(m):
            out[i * m + j] = u[i * m + (j + 1) % m] - u[i * m + (j - 1) % m] \
                + u[i * m + (j + 2) % m]


def _rows_want(host, m):
    rows = host.reshape(-1, m)
    return (np.roll(rows, -1, axis=1) - np.roll(rows, 1, axis=1)
            + np.roll(rows, -2, axis=1)).reshape(-1)


def test_a_sequential_loop_over_an_argument(rng):
    for m in (1, 2, 3, 7, np.int64(5), np.int64(1), np.int16(3), np.uint32(4)):  # i32 all
        host = rng.values(tack.f64, 6 * int(m))
        out = tack.zeros(host.size, tack.f64)
        row_neighbours(tack.array(host), out, m)
        np.testing.assert_array_equal(out.numpy(), _rows_want(host, int(m)),
                                      err_msg=f"m={m!r} {rng!r}")
    u, out = tack.zeros(8, tack.f64), tack.zeros(8, tack.f64)
    ir32 = tack.inspect(row_neighbours, u, out, 4, mode="ir")
    assert ir32.count("%") == 1, ir32      # i32: only |k| <= 1 (j + k cannot overflow)
    wide = tack.inspect(row_neighbours, u, out, 2**32 + 4, mode="ir")   # an i64 m
    assert wide.count("%") == 1 and ">= 2" not in wide, wide   # k = 2 keeps it:
    # j + 2 could overflow an i64 m near 2**63 (an array's length cannot be)
    unsigned = tack.inspect(row_neighbours, u, out, 2**63 + 4, mode="ir")   # u64
    assert unsigned.count("%") == 3, unsigned   # unsigned: j - 1 wraps, left alone


@tack.kernel
def columns_at_run_time(u, out):
    for i in range(u.shape[0]):
        for j in range(u.shape[1]):
            out[i, j] = u[i, (j + 2) % u.shape[1]] - u[i, (j - 1) % u.shape[1]]


def test_a_sequential_loop_over_a_length_read_at_run_time(rng):
    for shape in ((2, 1), (3, 2), (1, 5), (4, 3), (2, 7), (3, 1), (5, 4)):
        host = rng.values(tack.f32, shape[0] * shape[1]).reshape(shape)
        out = tack.zeros(shape, tack.f32)
        columns_at_run_time(tack.array(host), out)
        want = np.roll(host, -2, axis=1) - np.roll(host, 1, axis=1)
        np.testing.assert_array_equal(out.numpy(), want, err_msg=f"{shape} {rng!r}")
    ir = tack.inspect(columns_at_run_time, tack.array(host), out, mode="ir")
    assert "__tack_shape1_u" in ir and ">= 2:i64" in ir and ir.count("%") == 1, ir


@tack.kernel
def rows_twice(u, out, m):
    for i in range(len(u) // m):
        for j in range(m):
            out[i * m + j] = u[i * m + (j + 1) % m]
        for j in range(m):
            out[i * m + j] = out[i * m + j] + u[i * m + (j - 1) % m]


def test_a_variable_two_loops_define_keeps_the_remainder(rng):
    host = rng.values(tack.f64, 12)
    out = tack.zeros(12, tack.f64)
    rows_twice(tack.array(host), out, 4)
    rows = host.reshape(-1, 4)
    want = (np.roll(rows, -1, axis=1) + np.roll(rows, 1, axis=1)).reshape(-1)
    np.testing.assert_array_equal(out.numpy(), want, err_msg=repr(rng))
    assert tack.inspect(rows_twice, tack.array(host), out, 4, mode="ir").count("%") == 2


@tack.kernel
def large_offsets(out, n):
    for i in range(n):
        out[i, 0] = (i + 4294967297) % n
        out[i, 1] = (i - 300) % n
        out[i, 2] = (i + 2147483647) % n
        out[i, 3] = (i - 2147483648) % n


def test_offsets_past_the_divisors_type_keep_the_remainder():
    # the guard n >= |k| compares in n's type (i32 here), where 2**32 + 1 wrapped
    # and let the compare form run for n = 5
    k = np.array([4294967297, -300, 2147483647, -2147483648])
    for n in (1, 5, 299, 301):
        out = tack.zeros((n, 4), tack.i64)
        large_offsets(out, n)
        np.testing.assert_array_equal(out.numpy(), (np.arange(n)[:, None] + k) % n,
                                      err_msg=f"n={n}")


@tack.kernel
def c_style(out, n):
    for i in range(n):
        out[i, 0] = (i + n - 1) % n
        out[i, 1] = (i - 1 + n) % n
        out[i, 2] = (n + i - 3) % n
        out[i, 3] = (i + n) % n
        out[i, 4] = (i + n + 1) % n      # past 2n: the remainder stays
        out[i, 5] = (i + 1 + 1) % n
        out[i, 6] = (i - n) % n           # not the pattern: the remainder stays
        out[i, 7] = (i + i) % n


def test_the_c_spelling_that_adds_n_first():
    for n in (1, 2, 3, 5, 17):
        out = tack.zeros((n, 8), tack.i64)
        c_style(out, n)
        i = np.arange(n)
        want = np.stack([(i + n - 1) % n, (i - 1 + n) % n, (n + i - 3) % n, (i + n) % n,
                         (i + n + 1) % n, (i + 2) % n, (i - n) % n, (2 * i) % n], axis=1)
        np.testing.assert_array_equal(out.numpy(), want, err_msg=f"n={n}")
    ir = tack.inspect(c_style, tack.zeros((5, 8), tack.i64), 5, mode="ir")
    assert ir.count("%") == 5, ir   # the guarded k = -3 and k = 2, and the three others


@tack.kernel
def near_the_top(out, n, m, m2):
    for i in range(n):
        for j in range(m):
            if j >= 4:
                break
            out[i, j] = (j + m) % m - (j + m) % m2 + (j + m - 1) % m - (j + m - 1) % m2


def test_an_i64_argument_near_the_top_gets_the_remainders_bits():
    # j + m overflows for m = 2**63 - 1: the compare form gave a negative
    # value where the remainder of the same wrapped sum gives another; the
    # divisor m2 (another argument) is never rewritten, so the two must agree
    out = tack.full((1, 4), -1, tack.i64)
    m = 2**63 - 1
    near_the_top(out, 1, m, m)
    np.testing.assert_array_equal(out.numpy(), 0)


# -- a divisor that is not the loop's extent: versioned ------------------------------

OFFSETS = np.arange(-3, 4)


@tack.kernel
def by_another_argument(a, out, n):
    for i in range(len(a)):
        out[i, 0] = (i - 3) % n
        out[i, 1] = (i - 2) % n
        out[i, 2] = (i - 1) % n
        out[i, 3] = i % n
        out[i, 4] = (i + 1) % n
        out[i, 5] = (i + 2) % n
        out[i, 6] = (3 + i) % n


def _python_mod(size: int, n: int) -> np.ndarray:
    """``(i + k) % n`` as Python computes it (0 for a zero divisor, Tack's rule)."""
    x = np.arange(size, dtype=object)[:, None] + OFFSETS
    return np.array(x % n if n else x * 0, dtype=np.int64).reshape(size, len(OFFSETS))


def test_a_divisor_other_than_the_extent_gives_pythons_remainder(rng):
    # within one n of [0, n) for every i (the compare form) or not (the remainder),
    # at lengths baked and then read at run time (past four)
    for size in (0, 1, 2, 7, 100, 1001, 3, 64):
        a = tack.zeros(size, tack.f32)
        for n in sorted({1, 2, 3, size // 2, size // 2 + 1, size - 1, size, size + 1,
                         size + 3, 2 * size, 2**40, 0, -1, -4, -size - 1}):
            out = tack.full((size, len(OFFSETS)), -7, tack.i64)
            by_another_argument(a, out, n)
            np.testing.assert_array_equal(out.numpy(), _python_mod(size, n),
                                          err_msg=f"size={size} n={n}")
    for n in (np.int16(5), np.int64(12), np.uint8(200)):
        out = tack.zeros((10, len(OFFSETS)), tack.i64)
        by_another_argument(tack.zeros(10, tack.f32), out, n)
        np.testing.assert_array_equal(out.numpy(), _python_mod(10, int(n)), err_msg=repr(n))
    ir = tack.inspect(by_another_argument, tack.zeros(9, tack.f32),
                      tack.zeros((9, 7), tack.i64), 9, mode="ir")
    assert ir.count("> 0:i64") == 4 and ir.count("%") == 7, ir   # k >= 0 tested; i % n too


@tack.kernel
def literal_and_local_divisors(a, out, n):
    m = n * 2 + 1
    for i in range(len(a)):
        out[i, 0] = (i + 1) % 10
        out[i, 1] = (i - 2) % 7
        out[i, 2] = (i + 1) % m
        out[i, 3] = (i + 1) % 8           # a power of two: LLVM's mask, as it was


def test_literal_and_local_divisors(rng):
    for size in (0, 1, 5, 9, 10, 11, 19, 20, 40, 3):
        out = tack.full((size, 4), -1, tack.i64)
        literal_and_local_divisors(tack.zeros(size, tack.f64), out, size // 3)
        i, m = np.arange(size), 2 * (size // 3) + 1
        want = np.stack([(i + 1) % 10, (i - 2) % 7, (i + 1) % m, (i + 1) % 8], axis=1)
        np.testing.assert_array_equal(out.numpy(), want.reshape(size, 4),
                                      err_msg=f"size={size}")


@tack.kernel
def by_a_power_of_two(a, out):
    for i in range(len(out)):
        out[i] = a[(i + 1) % 16]


@tack.kernel
def by_a_changing_divisor(a, out, n):
    for i in range(len(a)):
        d = n + i
        out[i] = (i + 1) % d


def test_only_a_versioned_remainder_makes_the_body_read_the_extent(rng):
    host = rng.values(tack.f64, 16)
    for size in (1, 2, 3, 5, 7, 9):          # past four lengths: read at run time
        out = tack.zeros(size, tack.f64)
        by_a_power_of_two(tack.array(host), out)
        np.testing.assert_array_equal(out.numpy(), host[(np.arange(size) + 1) % 16])
        got = tack.zeros(size, tack.i64)
        by_a_changing_divisor(tack.zeros(size, tack.f64), got, 4)
        i = np.arange(size)
        np.testing.assert_array_equal(got.numpy(), (i + 1) % (4 + i))
        by_another_argument(tack.zeros(size, tack.f32), tack.zeros((size, 7), tack.i64), 4)
    a, out = tack.zeros(9, tack.f64), tack.zeros(9, tack.f64)
    assert "__tack_shape" not in tack.inspect(by_a_power_of_two, tack.array(host), out,
                                              mode="ir")
    ir = tack.inspect(by_a_changing_divisor, a, tack.zeros(9, tack.i64), 4, mode="ir")
    assert "> 0:i64" not in ir, ir            # d changes in the loop: the remainder
    ir = tack.inspect(by_another_argument, a, tack.zeros((9, 7), tack.i64), 4, mode="ir")
    assert "__tack_shape0_a" in ir, ir        # its lengths changed: read at run time


@tack.kernel
def c_spelling_by_another(a, out, n):
    for i in range(len(a)):
        out[i] = (i + n - 1) % n          # C's spelling: not versioned


@tack.kernel
def local_power_of_two(a, out):
    m = 16
    for i in range(len(a)):
        out[i] = (i + 1) % m


@tack.kernel
def divisor_set_in_the_loop(a, out, n):
    for i in range(len(a)):
        d = n + i
        out[i] = (i + 1) % d


@tack.kernel
def versioned_plainly(a, out, n):
    for i in range(len(a)):
        out[i] = (i + 1) % n


def test_a_remainder_that_is_not_versioned_does_not_key_variants_on_the_extent():
    # six lengths, one variant: the extent stays out of the key where nothing reads it
    for kernel, extra in [(c_spelling_by_another, (3,)), (local_power_of_two, ()),
                          (divisor_set_in_the_loop, (3,))]:
        for size in (3, 10, 4, 20, 7, 40):
            out = tack.zeros(size, tack.i64)
            kernel(tack.zeros(size, tack.f32), out, *extra)
            i = np.arange(size)
            want = {c_spelling_by_another: (i + 2) % 3, local_power_of_two: (i + 1) % 16,
                    divisor_set_in_the_loop: (i + 1) % (3 + i)}[kernel]
            np.testing.assert_array_equal(out.numpy(), want, err_msg=f"{kernel.name} {size}")
        assert len(kernel._variants) == 1, kernel.name


def test_debug_mode_reads_the_extent_at_run_time_and_keeps_the_remainder():
    tack.set_debug(True)
    try:
        for size in (3, 10, 4, 20, 7, 40):
            out = tack.zeros(size, tack.i64)
            versioned_plainly(tack.zeros(size, tack.f32), out, 7)
            np.testing.assert_array_equal(out.numpy(), (np.arange(size) + 1) % 7)
        assert len(versioned_plainly._variants) == 1     # a new shape: no new variant
    finally:
        tack.set_debug(False)
