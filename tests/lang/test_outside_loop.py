"""Statements before the parallel loop run once per chunk: they may only bind scalars.

An array store, an atomic, a print or a loop there is rejected, also when it
comes from an inlined device function, which the message then names (with
positions in that function's source). Scalar work before the loop, including
pure device functions, is allowed and checked against NumPy.
"""

import re

import numpy as np
import pytest

import tack


@tack.func
def store_first(v, i):
    v[i] = 5.0
    return 1.0


@tack.func
def bump(v, i):
    v[i] = v[i] + 1.0


@tack.func
def shout(x):
    print("value", x)


@tack.func
def count(v):
    return tack.atomic_add(v, 0, 1.0)


@tack.func
def bump_twice(v):
    bump(v, 0)
    bump(v, 1)


@tack.func
def summed(n):
    s = 0
    for j in range(n):
        s += j
    return s


@tack.kernel
def k_store(a):
    a[0] = 1.0
    for i in range(len(a)):
        a[i] = 2.0


@tack.kernel
def k_atomic(a):
    tack.atomic_add(a, 0, 1.0)
    for i in range(len(a)):
        a[i] = 2.0


@tack.kernel
def k_print(a):
    print("before")
    for i in range(len(a)):
        a[i] = 2.0


@tack.kernel
def k_store_in_branch(a, n):
    if n > 0:
        a[0] = 1.0
    for i in range(len(a)):
        a[i] = 2.0


@tack.kernel
def k_while(a):
    n = 0
    while n < 3:
        n += 1
    for i in range(len(a)):
        a[i] = n


@tack.kernel
def k_inlined_store(a):
    x = store_first(a, 0)
    for i in range(len(a)):
        a[i] = x


@tack.kernel
def k_inlined_statement(a):
    bump(a, 0)
    for i in range(len(a)):
        a[i] = 2.0


@tack.kernel
def k_inlined_print(a):
    shout(1.0)
    for i in range(len(a)):
        a[i] = 2.0


@tack.kernel
def k_inlined_atomic(a):
    x = count(a)
    for i in range(len(a)):
        a[i] = x


@tack.kernel
def k_inlined_nested(a):
    bump_twice(a)
    for i in range(len(a)):
        a[i] = 2.0


@tack.kernel
def k_inlined_loop(a, n):
    s = summed(n)
    for i in range(len(a)):
        a[i] = s


@tack.kernel
def k_inlined_in_while(a):
    n = 0
    while n < 1:
        bump(a, 0)
        n += 1
    for i in range(len(a)):
        a[i] = 2.0


@tack.kernel
def k_read_written(a):
    a0 = a[0]
    for i in range(len(a)):
        a[i] = a[i] - a0


@tack.func
def last_of(v):
    return v[len(v) - 1]


@tack.kernel
def k_read_written_inlined(a):
    last = last_of(a)
    for i in range(len(a)):
        a[i] = a[i] / last


@tack.kernel
def k_read_atomic_target(a):
    first = a[0]
    for i in range(len(a)):
        tack.atomic_add(a, 0, first)


@tack.kernel
def k_read_written_returned(a) -> float:
    a0 = a[1]
    for i in range(len(a)):
        a[i] = a[i] - a0
    return a0


_READ_WRITTEN = ("unsupported read of 'a' before the parallel loop, which the loop "
                 "writes: the statements before the loop run again for each chunk of "
                 "iterations, so a later chunk would read what the loop wrote (read the "
                 "value on the host and pass it as an argument) at line ")

_REJECTED = [
    (k_store, (), "Kernel 'k_store': unsupported array store outside the parallel "
                  "loop at line 3, column 5"),
    (k_atomic, (), "Kernel 'k_atomic': unsupported atomic outside the parallel loop "
                   "at line 3, column 5"),
    (k_print, (), "Kernel 'k_print': unsupported print outside the parallel loop at "
                  "line 3, column 5"),
    (k_store_in_branch, (1,), "Kernel 'k_store_in_branch': unsupported array store "
                              "outside the parallel loop at line 4, column 9"),
    (k_while, (), "Kernel 'k_while': unsupported loop outside the parallel loop at "
                  "line 4, column 5"),
    (k_inlined_store, (), "Device function 'store_first' (inlined into kernel "
                          "'k_inlined_store'): unsupported array store outside the "
                          "parallel loop at line 3, column 5"),
    (k_inlined_statement, (), "Device function 'bump' (inlined into kernel "
                              "'k_inlined_statement'): unsupported array store "
                              "outside the parallel loop at line 3, column 5"),
    (k_inlined_print, (), "Device function 'shout' (inlined into kernel "
                          "'k_inlined_print'): unsupported print outside the "
                          "parallel loop at line 3, column 5"),
    (k_inlined_atomic, (), "Device function 'count' (inlined into kernel "
                           "'k_inlined_atomic'): unsupported atomic outside the "
                           "parallel loop at line 3, column 12"),
    (k_inlined_nested, (), "Device function 'bump' (inlined into kernel "
                           "'k_inlined_nested'): unsupported array store outside "
                           "the parallel loop at line 3, column 5"),
    (k_inlined_loop, (3,), "Device function 'summed' (inlined into kernel "
                           "'k_inlined_loop'): unsupported loop outside the "
                           "parallel loop at line 4, column 5"),
    (k_inlined_in_while, (), "Kernel 'k_inlined_in_while': unsupported loop outside "
                             "the parallel loop at line 4, column 5"),
    (k_read_written, (), f"Kernel 'k_read_written': {_READ_WRITTEN}3, column 10"),
    (k_read_written_inlined, (), "Device function 'last_of' (inlined into kernel "
                                 f"'k_read_written_inlined'): {_READ_WRITTEN}3, column 12"),
    (k_read_atomic_target, (), f"Kernel 'k_read_atomic_target': {_READ_WRITTEN}3, "
                               f"column 13"),
    (k_read_written_returned, (), f"Kernel 'k_read_written_returned': {_READ_WRITTEN}3, "
                                  f"column 10"),
]


@pytest.mark.parametrize("kernel, extra, message", _REJECTED,
                         ids=[k.name for k, _, _ in _REJECTED])
def test_effect_outside_parallel_loop(kernel, extra, message, rng, capsys):
    data = rng.floats(4)
    a = tack.array(data)
    with pytest.raises(tack.UnsupportedSyntaxError,
                       match=f"^{re.escape(message)}") as info:
        kernel(a, *extra)
    assert str(info.value) == message
    np.testing.assert_array_equal(a.numpy(), data, err_msg=f"seed={rng.seed}")
    assert capsys.readouterr().out == ""


# -- what is allowed before the loop ---------------------------------------------------

@tack.func
def scaled(x, s):
    if s > 1.0:
        return x * s
    return x


@tack.kernel
def k_scalars_before(a, b, s):
    t = scaled(2.0, s)
    u = t + 1.0 if s > 0.0 else t - 1.0
    n = len(a)
    for i in range(n):
        b[i] = a[i] * u + n


@tack.kernel
def k_read_other_array_before(a, b):
    a0 = a[0] + last_of(a)   # a is only read by the loop: one value for every chunk
    for i in range(len(b)):
        b[i] = a[i % len(a)] - a0


@pytest.mark.parametrize("n", [1, 7, 100_003])
def test_reading_an_array_the_loop_only_reads_before_it(n, rng):
    a_np = rng.floats(n)
    b = tack.zeros(n, tack.f32)
    k_read_other_array_before(tack.array(a_np), b)
    np.testing.assert_array_equal(b.numpy(), a_np - (a_np[0] + a_np[-1]),
                                  err_msg=f"seed={rng.seed}")


@tack.kernel
def k_effects_in_loop_ok(a, c, d):
    for i in range(len(a)):
        bump(a, i)
        d[i] = count(c)


@pytest.mark.parametrize("n", [0, 1, 7, 33])
def test_scalar_statements_before_loop(n, rng):
    a_np = rng.floats(n)
    s = float(rng.gen.uniform(-3.0, 3.0))
    b = tack.zeros(n, tack.f32)
    k_scalars_before(tack.array(a_np), b, s)
    t = 2.0 * s if s > 1.0 else 2.0
    u = t + 1.0 if s > 0.0 else t - 1.0
    expected = a_np * np.float32(u) + np.float32(n)
    # a fused multiply-add rounds once: near a cancellation, only an absolute
    # bound (an ulp of the terms) holds
    np.testing.assert_allclose(b.numpy(), expected, rtol=1e-6,
                               atol=2e-7 * (abs(u) * 4.0 + n),
                               err_msg=f"seed={rng.seed} s={s}")


@pytest.mark.parametrize("n", [0, 1, 9, 100])
def test_effects_inside_the_loop_are_fine(n, rng):
    a_np = rng.floats(n)
    a = tack.array(a_np)
    c = tack.zeros(1, tack.f32)
    d = tack.zeros(n, tack.f32)
    k_effects_in_loop_ok(a, c, d)
    np.testing.assert_array_equal(a.numpy(), a_np + np.float32(1.0),
                                  err_msg=f"seed={rng.seed}")
    assert c.numpy()[0] == n
    # every iteration saw a distinct old value of the counter
    np.testing.assert_array_equal(np.sort(d.numpy()), np.arange(n, dtype=np.float32))


# The loop's range is evaluated on the host with the values that parameters
# and locals hold when the loop starts, as Python would.
@tack.kernel
def k_range_from_a_redefined_parameter(out, n, flag):
    n = n - 1
    for i in range(n):
        out[i] = n


@tack.kernel
def k_range_before_a_redefinition(out, n, flag):
    m = n
    n = 3
    for i in range(m):
        out[i] = n


@tack.kernel
def k_range_after_a_swap(out, n, flag):
    n, flag = flag, n
    for i in range(n):
        out[i] = flag


@tack.kernel
def k_range_unaffected_by_a_later_branch(out, n, flag):
    m = n
    if flag > 2:
        n = 1
    for i in range(m):
        out[i] = n


@pytest.mark.parametrize("kernel", [k_range_from_a_redefined_parameter,
                                    k_range_before_a_redefinition,
                                    k_range_after_a_swap,
                                    k_range_unaffected_by_a_later_branch])
@pytest.mark.parametrize("n, flag", [(0, 0), (1, 3), (4, 1), (7, 5)])
def test_the_range_takes_the_values_at_the_loop(kernel, n, flag):
    out = tack.full(9, -1, tack.i64)
    kernel(out, n, flag)
    expected = np.full(9, -1, np.int64)
    kernel.__wrapped__(expected, n, flag)   # the same function as plain Python
    np.testing.assert_array_equal(out.numpy(), expected)


# -- a bound the kernel uses too: the host's value, in i64 -------------------------------
# n is an i32 argument: in the kernel's own types n * 10**9 wraps, which must
# not move the loop's start (the host counts from the unwrapped value).

@tack.kernel
def k_start_from_a_wrapping_product(out, n, flag):
    for i in range(n * 1000000000 // 1000000000, len(out)):
        out[i] = i


@tack.kernel
def k_start_from_a_wrapping_local(out, n, flag):
    s = n * 1000000000 // 1000000000
    for i in range(s, len(out)):
        out[i] = i


@tack.kernel
def k_start_far_off(out, n, flag):
    for i in range(min(n * 1000000000, n), len(out), 2):
        out[i] = i


@tack.kernel
def k_leading_extent_from_a_wrapping_local(out, n, flag):
    m = n * 1000000000 // 1000000000
    for i, j, k, l in tack.ndindex(2, m, 1, 2):   # j = (flat index) % m
        out[(i * 3 + j) * 2 + l] = i * 100 + j * 10 + l


@tack.kernel
def k_start_through_a_narrow_conversion(out, n, flag):
    for i in range(tack.u8(n * 86) - 5, len(out) - 3):   # u8(258) - 5 = -3, not 253
        out[i + 3] = i


@pytest.mark.parametrize("kernel", [k_start_through_a_narrow_conversion,
                                    k_start_from_a_wrapping_product,
                                    k_start_from_a_wrapping_local, k_start_far_off,
                                    k_leading_extent_from_a_wrapping_local])
@pytest.mark.parametrize("debug", [False, True])
def test_bounds_the_kernel_uses_are_the_hosts(kernel, debug):
    n = np.int32(3)
    out = tack.full(12, -1, tack.i64)
    tack.set_debug(debug)
    try:
        kernel(out, n, 0)
    finally:
        tack.set_debug(False)
    expected = np.full(12, -1, np.int64)
    if kernel is k_start_through_a_narrow_conversion:
        # bounds are Python integers; the conversion wraps 258 to 2, then 2 - 5
        # is -3 (Python's tack.u8 would make it NumPy's wrapping u8 arithmetic)
        expected[:12] = np.arange(-3, 9)
    elif kernel is k_leading_extent_from_a_wrapping_local:
        expected[:] = [i * 100 + j * 10 + l for i in range(2) for j in range(3)
                       for l in range(2)]
    else:
        kernel.__wrapped__(expected, 3, 0)   # the same function as plain Python
    np.testing.assert_array_equal(out.numpy(), expected)


@tack.kernel
def k_range_from_a_branch(out, n, flag):
    m = 2
    if flag > 0:
        m = n
    for i in range(m):
        out[i] = 1


def test_a_range_that_depends_on_a_branch_is_rejected():
    message = ("Kernel 'k_range_from_a_branch': unsupported parallel loop range that uses "
               "'m', whose value when the loop starts depends on a branch taken before "
               "it (an if, also one inside a device function) at line ")
    with pytest.raises(tack.UnsupportedSyntaxError, match=re.escape(message)):
        k_range_from_a_branch(tack.zeros(4, tack.i64), 3, 1)


# -- names the loop shares with what comes before it ------------------------------------

@tack.kernel
def k_loop_variable_named_like_a_parameter(out, i):
    m = i * 2                          # the parameter: the loop rebinds i only when it starts
    for i in range(len(out)):
        out[i] = m * 100 + i


@tack.kernel
def k_loop_variable_named_like_a_local(out, a):
    i = a * 0.5                        # a float local
    m = i + 1.0
    for i in range(len(out)):
        out[i] = m + i


@tack.kernel
def k_ndindex_variable_named_like_a_parameter(out, j):
    m = j + 1
    for i, j in tack.ndindex(out.shape[0], out.shape[1]):
        out[i, j] = m * 100 + i * 10 + j


@tack.kernel
def k_parameter_widened_before_the_loop(out, n, a):
    n = tack.i64(n) * 4                # language.md's advice for products past 2**31
    a = a / 2
    for i in range(len(out)):
        out[i] = n + a


@tack.kernel
def k_parameter_assigned_in_a_branch(out, n, flag):
    if flag:
        n = n * 1.5
    for i in range(len(out)):
        out[i] = n


@tack.kernel
def k_loop_variables_rebound_in_the_body(out):
    for i in range(len(out)):
        s = 0.0
        for j in range(4):
            j = j / 2                  # Python's range goes on with the next value
            s += j
        i = i / 2
        out[int(i * 2)] = i + s


@pytest.mark.parametrize("n", [0, 1, 3, 7])
def test_loop_variables_and_rebound_parameters_keep_python_semantics(n):
    # The loop variable shared the IR name of a parameter or a pre-loop local
    # (wrong values on the CPU, a C build error on OpenCL); a parameter assigned
    # before the loop kept the argument's type (2**30 * 4 wrapped to 0, 3 / 2 gave
    # 1); a rebound loop variable was truncated, or crashed the CPU build.
    out = tack.zeros(n, tack.i64)
    k_loop_variable_named_like_a_parameter(out, 3)
    np.testing.assert_array_equal(out.numpy(), 600 + np.arange(n))
    out = tack.zeros(n, tack.f64)
    k_loop_variable_named_like_a_local(out, 3)
    np.testing.assert_array_equal(out.numpy(), 2.5 + np.arange(n))
    grid = tack.zeros((n, 3), tack.i64)
    k_ndindex_variable_named_like_a_parameter(grid, 4)
    i, j = np.indices((n, 3))
    np.testing.assert_array_equal(grid.numpy(), 500 + 10 * i + j)
    out = tack.zeros(n, tack.f64)
    k_parameter_widened_before_the_loop(out, 2**30, 3)
    np.testing.assert_array_equal(out.numpy(), np.full(n, 2.0**32 + 1.5))
    for flag, want in ((1, 4.5), (0, 3.0)):
        out = tack.zeros(n, tack.f64)
        k_parameter_assigned_in_a_branch(out, 3, flag)
        np.testing.assert_array_equal(out.numpy(), np.full(n, want))
    out = tack.zeros(n, tack.f64)
    k_loop_variables_rebound_in_the_body(out)
    np.testing.assert_array_equal(out.numpy(), np.arange(n) / 2 + 3.0)


@tack.kernel
def k_start_from_a_u64(out, n, flag):
    for i in range(n, len(out)):
        out[i] = i


@tack.kernel
def k_start_through_a_conversion(out, n, flag):
    for i in range(tack.u64(n) // 2 - 3, len(out)):
        out[i] = i


@pytest.mark.parametrize("kernel, n, value", [
    (k_start_from_a_u64, np.uint64(2**64 - 2), 2**64 - 2),
    (k_start_through_a_conversion, -8, 2**64 - 8),
])
def test_a_start_outside_i64_is_refused_before_anything_runs(kernel, n, value):
    # The kernel adds the start in i64: where that would wrap, the host refuses.
    out = tack.full(6, -1, tack.i64)
    message = (f"Kernel '{kernel.name}': the parallel loop's range computes {value}, outside the i64 range the "
               f"kernel computes it in")
    with pytest.raises(ValueError, match=re.escape(message)):
        kernel(out, n, 0)
    assert out.numpy().tolist() == [-1] * 6
