"""``@tack.func`` device functions: inlined at each call, checked against NumPy.

Covers early and multiple returns (LC7: statements after an ``if`` that
returns run only on the paths that reach them), tuple returns, array
parameters that alias the caller's arrays, nesting, name isolation,
evaluation order around calls that write arrays, short-circuiting, and the
rejections (recursion, mismatched returns).
"""

import math
import re

import numpy as np
import pytest

import tack

SIZES = [0, 1, 7, 33]


# -- plain inlining --------------------------------------------------------------------

@tack.func
def cube_plus(x, c):
    return x * x * x + c


@tack.func
def smooth(x):
    return math.sqrt(x * x + 1.0)


@tack.kernel
def k_inline(a, b, c):
    for i in range(len(a)):
        b[i] = cube_plus(a[i], c) - smooth(a[i]) * cube_plus(1.0, 0.5)


@pytest.mark.parametrize("n", SIZES)
def test_inlined_results_match_numpy(n, rng):
    a = rng.floats(n, np.float64)
    c = float(rng.gen.uniform(-2.0, 2.0))
    b = tack.zeros(n, tack.f64)
    k_inline(tack.array(a), b, c)
    expected = (a ** 3 + c) - np.sqrt(a * a + 1.0) * 1.5
    np.testing.assert_allclose(b.numpy(), expected, rtol=1e-12, atol=1e-12,
                               err_msg=f"seed={rng.seed} c={c}")


# -- early and multiple returns (LC7) --------------------------------------------------

@tack.func
def piecewise(x):
    if x < -1.0:
        return -1.0
    y = x * 2.0
    if y > 3.0:
        return 3.0
    y = y + 0.5
    return y


@tack.func
def nested_returns(x):
    if x > 0.0:
        if x > 2.0:
            return 2.0
        y = x * 10.0
    else:
        y = -x
    y = y + 1.0
    return y


@tack.func
def else_returns(x):
    if x > 1.0:
        z = x - 1.0
    else:
        return 0.0
    return z * z


@tack.func
def elif_chain(x):
    if x < -2.0:
        return 1.0
    elif x < 0.0:
        return 2.0
    elif x < 2.0:
        w = 3.0
    else:
        return 4.0
    return w + x


@tack.kernel
def k_returns(a, b, c, d, e):
    for i in range(len(a)):
        b[i] = piecewise(a[i])
        c[i] = nested_returns(a[i])
        d[i] = else_returns(a[i])
        e[i] = elif_chain(a[i])


@pytest.mark.parametrize("n", SIZES)
def test_early_and_multiple_returns(n, rng):
    a = rng.floats(n, np.float64)
    if n >= 7:  # make sure every path is taken
        a[:7] = [-3.0, -1.5, -0.5, 0.5, 1.2, 1.9, 2.5]
    outs = [tack.zeros(n, tack.f64) for _ in range(4)]
    k_returns(tack.array(a), *outs)
    for out, func in zip(outs, (piecewise, nested_returns, else_returns, elif_chain)):
        # the Python function itself is the reference
        expected = np.array([func.__wrapped__(float(x)) for x in a], np.float64)
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12,
                                   err_msg=f"{func.name} seed={rng.seed}")


# -- tuple returns ---------------------------------------------------------------------

@tack.func
def floor_divmod(x, y):
    return x // y, x % y


@tack.func
def sort3(x, y, z):
    if x > y:
        x, y = y, x
    if y > z:
        y, z = z, y
    if x > y:
        x, y = y, x
    return x, y, z


@tack.func
def early_pair(x):
    if x < 0.0:
        return 0.0, -x
    return x, 0.0


@tack.kernel
def k_tuples(a, b, q, r, lo, mid, hi, pos, neg):
    for i in range(len(a)):
        q[i], r[i] = floor_divmod(a[i], b[i])
        x, y, z = sort3(a[i], b[i], a[i] * b[i])
        lo[i] = x
        mid[i] = y
        hi[i] = z
        p, m = early_pair(a[i])
        pos[i] = p
        neg[i] = m


@pytest.mark.parametrize("n", SIZES)
def test_tuple_returns(n, rng):
    a = rng.floats(n, np.float64)
    b = rng.floats(n, np.float64, 0.5, 3.0) * rng.gen.choice([-1.0, 1.0], n)
    outs = [tack.zeros(n, tack.f64) for _ in range(7)]
    k_tuples(tack.array(a), tack.array(b), *outs)
    q, r, lo, mid, hi, pos, neg = (o.numpy() for o in outs)
    msg = f"seed={rng.seed}"
    np.testing.assert_array_equal(q, np.floor_divide(a, b), err_msg=msg)
    np.testing.assert_allclose(r, np.mod(a, b), rtol=1e-12, atol=1e-12, err_msg=msg)
    ordered = np.sort(np.stack([a, b, a * b]), axis=0)
    np.testing.assert_array_equal(np.stack([lo, mid, hi]), ordered, err_msg=msg)
    np.testing.assert_array_equal(pos, np.maximum(a, 0.0), err_msg=msg)
    np.testing.assert_array_equal(neg, np.maximum(-a, 0.0), err_msg=msg)


@tack.kernel
def k_swap(a, b, c):
    for i in range(len(a)):
        x = a[i]
        y = b[i]
        z = c[i]
        x, y = y, x
        z, x, y = x, y, z
        a[i], b[i], c[i] = x, y, z


@pytest.mark.parametrize("n", [0, 1, 7])
def test_tuple_assignment_reads_every_value_first(n, rng):
    """Regression: ``x, y = y, x`` assigned ``x = y; y = x``, losing x."""
    a, b, c = (rng.floats(n) for _ in range(3))
    ta, tb, tc = (tack.array(v) for v in (a, b, c))
    k_swap(ta, tb, tc)
    # x, y = b, a; then z, x, y = x, y, z = b, a, c
    msg = f"seed={rng.seed}"
    np.testing.assert_array_equal(ta.numpy(), a, err_msg=msg)
    np.testing.assert_array_equal(tb.numpy(), c, err_msg=msg)
    np.testing.assert_array_equal(tc.numpy(), b, err_msg=msg)


@tack.func
def mixed_arity(x):
    if x > 0.0:
        return x, x
    return x


@tack.func
def missing_path(x):
    if x > 0.0:
        return x


@tack.kernel
def k_tuple_as_value(a):
    for i in range(len(a)):
        a[i] = floor_divmod(a[i], 2.0)


@tack.kernel
def k_unpack_wrong_count(a):
    for i in range(len(a)):
        x, y, z = floor_divmod(a[i], 2.0)
        a[i] = x


@tack.kernel
def k_mixed_arity(a):
    for i in range(len(a)):
        a[i] = mixed_arity(a[i])


@tack.kernel
def k_missing_path(a):
    for i in range(len(a)):
        a[i] = missing_path(a[i])


@pytest.mark.parametrize("kernel, message", [
    (k_tuple_as_value, "Kernel 'k_tuple_as_value': unsupported call returning 2 "
                       "values used as a value at line 4, column 16"),
    (k_unpack_wrong_count, "Kernel 'k_unpack_wrong_count': unsupported unpacking of "
                           "2 values into 3 names at line 4, column 9"),
    (k_mixed_arity, "Device function 'mixed_arity': unsupported mix of returns with "
                    "different numbers of values at line 2, column 1"),
    (k_missing_path, "Device function 'missing_path': unsupported path that ends "
                     "without returning a value (every path must return) at line 2, "
                     "column 1"),
], ids=lambda v: v.name if isinstance(v, tack.Kernel) else None)
def test_return_shape_errors(kernel, message, rng):
    data = rng.floats(3)
    a = tack.array(data)
    with pytest.raises(tack.UnsupportedSyntaxError,
                       match=f"^{re.escape(message)}") as info:
        kernel(a)
    assert str(info.value) == message
    np.testing.assert_array_equal(a.numpy(), data, err_msg=f"seed={rng.seed}")


# -- array parameters alias the caller's arrays ----------------------------------------

@tack.func
def axpy_at(y, x, i, alpha):
    y[i] = y[i] + alpha * x[i]


@tack.func
def swap_ends(v, i, n):
    t = v[i]
    v[i] = v[n - 1 - i]
    v[n - 1 - i] = t


@tack.func
def at2(m, i, j):
    return m[i, j]


@tack.func
def put2(m, i, j, value):
    m[i, j] = value


@tack.kernel
def k_axpy(y, x, alpha):
    for i in range(len(y)):
        axpy_at(y, x, i, alpha)


@tack.kernel
def k_axpy_self(y, alpha):
    for i in range(len(y)):
        axpy_at(y, y, i, alpha)


@tack.kernel
def k_reverse(v, h):
    for i in range(h):
        swap_ends(v, i, len(v))


@tack.kernel
def k_transpose(m, t):
    for i, j in tack.ndindex(m.shape[0], m.shape[1]):
        put2(t, j, i, at2(m, i, j) * 2.0)


@pytest.mark.parametrize("n", SIZES)
def test_device_function_writes_array_argument(n, rng):
    x = rng.floats(n)
    y = rng.floats(n)
    alpha = float(rng.gen.uniform(-2.0, 2.0))
    ty = tack.array(y)
    k_axpy(ty, tack.array(x), alpha)
    np.testing.assert_allclose(ty.numpy(), y + np.float32(alpha) * x, rtol=1e-5,
                               atol=1e-6, err_msg=f"seed={rng.seed}")
    ty = tack.array(y)
    k_axpy_self(ty, alpha)  # the same array behind both parameters
    np.testing.assert_allclose(ty.numpy(), y + np.float32(alpha) * y, rtol=1e-5,
                               atol=1e-6, err_msg=f"seed={rng.seed}")


@pytest.mark.parametrize("n", SIZES)
def test_device_function_swaps_in_place(n, rng):
    v = rng.ints(n)
    tv = tack.array(v)
    k_reverse(tv, n // 2)
    np.testing.assert_array_equal(tv.numpy(), v[::-1], err_msg=f"seed={rng.seed}")


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (3, 5), (6, 2)])
def test_device_functions_on_2d_arrays(shape, rng):
    m = rng.floats(int(np.prod(shape))).reshape(shape)
    t = tack.zeros((shape[1], shape[0]), tack.f32)
    k_transpose(tack.array(m), t)
    np.testing.assert_array_equal(t.numpy(), m.T * np.float32(2.0),
                                  err_msg=f"seed={rng.seed}")


# -- nesting and name isolation --------------------------------------------------------

@tack.func
def inner(x):
    t = x + 1.0
    return t * t


@tack.func
def middle(x):
    t = inner(x) - inner(-x)
    return t + x


@tack.func
def outer(v, i):
    t = middle(v[i])
    v[i] = t
    return inner(t)


@tack.func
def reassigns_parameter(x):
    x = x * 3.0
    return x + 1.0


@tack.kernel
def k_nested(a, b, c):
    for i in range(len(a)):
        t = a[i]
        x = t * 0.5
        b[i] = outer(a, i) + inner(t)
        y = reassigns_parameter(x)
        c[i] = t + x + y


@pytest.mark.parametrize("n", SIZES)
def test_nested_device_functions_and_isolated_names(n, rng):
    a = rng.floats(n, np.float64)
    ta = tack.array(a)
    b = tack.zeros(n, tack.f64)
    c = tack.zeros(n, tack.f64)
    k_nested(ta, b, c)

    def py_inner(x):
        return (x + 1.0) ** 2

    mid = py_inner(a) - py_inner(-a) + a
    msg = f"seed={rng.seed}"
    np.testing.assert_allclose(ta.numpy(), mid, rtol=1e-12, atol=1e-12, err_msg=msg)
    np.testing.assert_allclose(b.numpy(), py_inner(mid) + py_inner(a), rtol=1e-12,
                               atol=1e-12, err_msg=msg)
    # the kernel's own t and x keep their values across the inlined calls
    x = a * 0.5
    np.testing.assert_allclose(c.numpy(), a + x + (x * 3.0 + 1.0), rtol=1e-12,
                               atol=1e-12, err_msg=msg)


# -- evaluation order ------------------------------------------------------------------

@tack.func
def double_in_place(v, i):
    v[i] = v[i] * 2.0 + 1.0
    return 10.0


@tack.func
def pair(x, y):
    return x - y


@tack.kernel
def k_left_to_right(a, b, c, d, e):
    for i in range(len(a)):
        b[i] = a[i] + double_in_place(a, i)
        c[i] = double_in_place(a, i) + a[i]
        d[i] = pair(a[i], double_in_place(a, i))
        e[i] = e[i] + double_in_place(e, i)


@pytest.mark.parametrize("n", SIZES)
def test_operands_evaluate_left_to_right(n, rng):
    a0 = rng.floats(n, np.float64)
    e0 = rng.floats(n, np.float64)
    ta, te = tack.array(a0), tack.array(e0)
    b, c, d = (tack.zeros(n, tack.f64) for _ in range(3))
    k_left_to_right(ta, b, c, d, te)
    a1 = a0 * 2.0 + 1.0
    a2 = a1 * 2.0 + 1.0
    a3 = a2 * 2.0 + 1.0
    msg = f"seed={rng.seed}"
    np.testing.assert_array_equal(b.numpy(), a0 + 10.0, err_msg=msg)  # old a[i]
    np.testing.assert_array_equal(c.numpy(), 10.0 + a2, err_msg=msg)  # new a[i]
    np.testing.assert_array_equal(d.numpy(), a2 - 10.0, err_msg=msg)  # old argument
    np.testing.assert_array_equal(ta.numpy(), a3, err_msg=msg)
    # e[i] = e[i] + f(e, i): the load happens before f writes e[i]
    np.testing.assert_array_equal(te.numpy(), e0 + 10.0, err_msg=msg)


@tack.func
def bump_index(v, i):
    v[i] = v[i] + 1
    return i


@tack.kernel
def k_store_value_then_index(out, a):
    for i in range(len(a)):
        out[bump_index(a, i)] = a[i]


@tack.kernel
def k_store_atomics_value_then_index(out, counter):
    for i in range(1):
        out[tack.atomic_add(counter, 0, 1)] = tack.atomic_add(counter, 0, 10) + 5


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("n", SIZES)
def test_a_store_reads_its_value_before_its_index(n, debug, rng):
    # Python evaluates `out[index] = value` value first. The index's inlined
    # call ran first on both backends; with atomics in both sides the order
    # was the C compiler's on OpenCL, and differed from debug mode's.
    a0 = rng.gen.integers(-100, 100, n)
    a, out = tack.array(a0), tack.zeros(n, tack.i64)
    counter = tack.zeros(1, tack.i64)
    out20 = tack.zeros(20, tack.i64)
    tack.set_debug(debug)
    try:
        k_store_value_then_index(out, a)
        k_store_atomics_value_then_index(out20, counter)
    finally:
        tack.set_debug(False)
    msg = f"seed={rng.seed} debug={debug}"
    np.testing.assert_array_equal(out.numpy(), a0, err_msg=msg)
    np.testing.assert_array_equal(a.numpy(), a0 + 1, err_msg=msg)
    expected = np.zeros(20, np.int64)
    expected[10] = 5          # the value's atomic saw 0, the index's then 10
    np.testing.assert_array_equal(out20.numpy(), expected, err_msg=msg)
    assert counter.numpy()[0] == 11


@tack.kernel
def k_atomics_left_to_right(c, out):
    for i in range(1):
        out[0] = tack.atomic_add(c, 0, 1) - tack.atomic_add(c, 0, 10)
        out[1] = c[0] + tack.atomic_add(c, 0, 100)
        out[2] = min(tack.atomic_add(c, 0, 1000), tack.atomic_add(c, 0, 1))
        out[3] = tack.atomic_add(c, 1, 1) if out[0] < 0 else tack.atomic_add(c, 1, 5)


def test_operands_with_atomics_evaluate_left_to_right():
    # C leaves operand order open: the generated C sequences them
    c, out = tack.zeros(2, tack.i64), tack.zeros(4, tack.i64)
    k_atomics_left_to_right(c, out)
    # c[0]: 0 -> 1 -> 11; out[1] reads 11, then 111; min(111, 1111) then 1112
    assert out.numpy().tolist() == [0 - 1, 11 + 11, 111, 0]
    assert c.numpy().tolist() == [1112, 1]     # only the chosen arm ran
    if tack.get_default_device().type == "opencl":   # PoCL happens to go left to right
        source = tack.inspect(k_atomics_left_to_right, c, out, mode="source")
        assert len(re.findall(r"tack_o\d+ = atom(ic)?_add\(", source)) == 2, source
        assert re.search(r"tack_o\d+ = tack_var_c\[", source), source


@tack.func
def negate_in_place(v, k):
    v[k] = -v[k] - 1
    return 1


@tack.func
def one(k):
    return 1


@tack.kernel
def k_short_circuits_once(x, c, out):
    for i in range(len(x)):
        out[i, 0] = 1 if x[i] >= 0 and negate_in_place(x, i) > 0 else 2
        out[i, 1] = tack.atomic_add(c, 0, 1) >= 0 and one(i) > 0
        out[i, 2] = tack.atomic_add(c, 1, 1) < 0 or one(i) > 0
        out[i, 3] = 1 < 0 < tack.atomic_add(c, 2, 5) < 100     # stops at 1 < 0
        out[i, 4] = -1 < 0 <= tack.atomic_add(c, 3, 5) < 1000  # runs it, once


@pytest.mark.parametrize("debug", [False, True])
def test_and_or_and_chains_evaluate_each_operand_once_and_only_if_reached(debug, rng):
    # The left operand of and/or was evaluated again after an inlined call on
    # the right (an atomic twice, a load after the call changed it); a chain's
    # middle operands ran even when an earlier comparison had failed.
    n = 5
    x0 = rng.gen.integers(0, 100, n)
    x, c, out = tack.array(x0), tack.zeros(4, tack.i64), tack.zeros((n, 5), tack.i64)
    tack.set_debug(debug)
    try:
        k_short_circuits_once(x, c, out)
    finally:
        tack.set_debug(False)
    np.testing.assert_array_equal(out.numpy(), np.tile([1, 1, 1, 0, 1], (n, 1)),
                                  err_msg=f"seed={rng.seed}")
    np.testing.assert_array_equal(x.numpy(), -x0 - 1)
    assert c.numpy().tolist() == [n, n, 0, 5 * n]


@tack.kernel
def k_guarded_read_in_a_chain(x, out):
    for i in range(len(x)):
        if i < 0 < x[i + 1000000000000] < 5:    # never reached
            out[i] = 1


def test_a_chain_does_not_read_past_a_failed_comparison():
    # The read ran regardless: a segfault on the CPU, an IndexError in debug mode
    out = tack.zeros(4)
    for debug in (False, True):
        tack.set_debug(debug)
        try:
            k_guarded_read_in_a_chain(tack.zeros(4), out)
        finally:
            tack.set_debug(False)
    np.testing.assert_array_equal(out.numpy(), 0)


@tack.kernel
def k_augmented_order(a):
    for i in range(len(a)):
        a[i] += double_in_place(a, i)


@pytest.mark.parametrize("n", [1, 8])
def test_augmented_assignment_reads_before_the_call(n, rng):
    a0 = rng.floats(n, np.float64)
    ta = tack.array(a0)
    k_augmented_order(ta)
    # like Python: a[i] is read, then the call runs, then the sum is stored
    np.testing.assert_array_equal(ta.numpy(), a0 + 10.0, err_msg=f"seed={rng.seed}")


# -- calls that must not run: short-circuit and conditional expressions ----------------

@tack.func
def mark(v, i):
    v[i] = v[i] + 1.0
    return 1.0


@tack.kernel
def k_short_circuit(a, hits_and, hits_or, hits_if, out):
    for i in range(len(a)):
        p = a[i] > 0.0 and mark(hits_and, i) > 0.0
        q = a[i] > 0.0 or mark(hits_or, i) > 0.0
        out[i] = mark(hits_if, i) if a[i] > 1.0 else p + q


@pytest.mark.parametrize("n", SIZES)
def test_calls_under_short_circuit_run_only_when_reached(n, rng):
    a = rng.floats(n)
    hits = [tack.zeros(n, tack.f32) for _ in range(3)]
    out = tack.zeros(n, tack.f32)
    k_short_circuit(tack.array(a), *hits, out)
    msg = f"seed={rng.seed}"
    np.testing.assert_array_equal(hits[0].numpy(), (a > 0).astype(np.float32), msg)
    np.testing.assert_array_equal(hits[1].numpy(), (a <= 0).astype(np.float32), msg)
    np.testing.assert_array_equal(hits[2].numpy(), (a > 1).astype(np.float32), msg)
    expected = np.where(a > 1.0, 1.0, (a > 0) + 1.0).astype(np.float32)
    np.testing.assert_array_equal(out.numpy(), expected, msg)


@tack.func
def halve_until_small(x):
    y = x
    while y > 1.0:
        y = y * 0.5
    return y


@tack.kernel
def k_loop_condition_call(a, counts):
    for i in range(len(a)):
        k = 0
        while halve_until_small(a[i] * (k + 1)) < 0.75 and k < 100:
            k += 1
        counts[i] = k


@pytest.mark.parametrize("n", [0, 5])
def test_device_function_in_while_condition(n, rng):
    a = rng.floats(n, np.float64, 0.0, 8.0)
    counts = tack.zeros(n, tack.i32)
    k_loop_condition_call(tack.array(a), counts)

    def reference(x):
        k = 0
        while halve_until_small.__wrapped__(x * (k + 1)) < 0.75 and k < 100:
            k += 1
        return k

    expected = np.array([reference(float(x)) for x in a], np.int32)
    np.testing.assert_array_equal(counts.numpy(), expected, f"seed={rng.seed}")


# -- recursion -------------------------------------------------------------------------

@tack.func
def countdown(x):
    if x > 0.0:
        return countdown(x - 1.0)
    return x


@tack.func
def ping(x):
    return pong(x) + 1.0


@tack.func
def pong(x):
    return ping(x) - 1.0


@tack.func
def ping_array(v, i):
    v[i] = 0.0
    pong_array(v, i)


@tack.func
def pong_array(v, i):
    ping_array(v, i)


@tack.kernel
def k_recursive(a):
    for i in range(len(a)):
        a[i] = countdown(a[i])


@tack.kernel
def k_mutually_recursive(a):
    for i in range(len(a)):
        a[i] = ping(a[i])


@tack.kernel
def k_mutually_recursive_arrays(a):
    for i in range(len(a)):
        ping_array(a, i)


@pytest.mark.parametrize("kernel, message", [
    (k_recursive, "Device function 'countdown': unsupported recursive call of device "
                  "function 'countdown' at line 4, column 16"),
    (k_mutually_recursive, "Device function 'pong': unsupported recursive call of "
                           "device function 'ping' at line 3, column 12"),
    (k_mutually_recursive_arrays, "Device function 'pong_array': unsupported "
                                  "recursive call of device function 'ping_array' "
                                  "at line 3, column 5"),
], ids=["self", "mutual", "mutual_arrays"])
def test_recursion_is_rejected(kernel, message, rng):
    data = rng.floats(3)
    a = tack.array(data)
    for _ in range(2):  # and stays rejected
        with pytest.raises(tack.UnsupportedSyntaxError,
                           match=f"^{re.escape(message)}") as info:
            kernel(a)
        assert str(info.value) == message
    np.testing.assert_array_equal(a.numpy(), data, err_msg=f"seed={rng.seed}")
