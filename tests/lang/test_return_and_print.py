"""The annotated final ``return`` and ``print`` inside the parallel loop.

A kernel annotated ``-> int``/``float``/``bool``/a tack type returns the value
of its final ``return`` (computed after the loop) as a Python scalar. ``print``
in a kernel goes through Python's ``print``, one whole line per call.
"""

import math
import re

import numpy as np
import pytest

import tack
from tack import f32 as F32


@tack.func
def halve(x):
    return x * 0.5


@tack.kernel
def k_float(a) -> float:
    for i in range(len(a)):
        a[i] = a[i] * 2.0
    return a[0] + 0.25


@tack.kernel
def k_int(a, n) -> int:
    m = n * 3
    for i in range(len(a)):
        a[i] = a[i] + m
    return m + len(a)


@tack.kernel
def k_bool(a, limit) -> bool:
    for i in range(len(a)):
        a[i] = a[i] * 2.0
    return a[0] > limit


@tack.kernel
def k_truth(a, x) -> bool:
    for i in range(len(a)):
        a[i] = a[i] + 1.0
    return x


@tack.kernel
def k_tack_float(a) -> tack.f32:
    for i in range(len(a)):
        a[i] = a[i] * 2.0
    return halve(a[len(a) - 1])


@tack.kernel
def k_tack_int(a) -> tack.i64:
    for i in range(len(a)):
        a[i] = 0.0
    return len(a) * 1000000000


@tack.kernel
def k_imported_type(a) -> F32:
    for i in range(len(a)):
        a[i] = 1.0
    return 1.0 / 3.0


@tack.kernel
def k_math_in_return(a) -> float:
    for i in range(len(a)):
        a[i] = a[i] + 1.0
    return math.sqrt(a[0] * a[0]) + math.pi


@pytest.mark.parametrize("n", [1, 2, 9])
def test_float_return(n, rng):
    data = rng.floats(n, np.float64)
    a = tack.array(data)
    result = k_float(a)
    assert type(result) is float
    assert result == data[0] * 2.0 + 0.25, f"seed={rng.seed}"  # sees the loop's writes
    np.testing.assert_array_equal(a.numpy(), data * 2.0, err_msg=f"seed={rng.seed}")


@pytest.mark.parametrize("n", [0, 1, 7])
def test_int_return(n, rng):
    k = int(rng.gen.integers(-100, 100))
    data = rng.floats(n, np.float64)
    a = tack.array(data)
    result = k_int(a, k)
    assert type(result) is int
    assert result == 3 * k + n, f"seed={rng.seed}"
    np.testing.assert_array_equal(a.numpy(), data + 3 * k, err_msg=f"seed={rng.seed}")


@pytest.mark.parametrize("x", [0.5, -0.25, 0.0, -0.0, math.nan, math.inf, 0, 7, -1])
def test_bool_return_is_pythons_truth_of_the_value(x):
    assert k_truth(tack.zeros(2), x) is bool(x)


def test_bool_return(rng):
    data = rng.floats(4, np.float64)
    for limit in (data[0] * 2.0 - 1.0, data[0] * 2.0 + 1.0):
        result = k_bool(tack.array(data), float(limit))
        assert type(result) is bool
        assert result is bool(data[0] * 2.0 > limit), f"seed={rng.seed}"


def test_tack_type_returns(rng):
    data = rng.floats(5)
    result = k_tack_float(tack.array(data))
    assert type(result) is float
    assert result == float(np.float32(data[-1] * np.float32(2.0)) * np.float32(0.5))
    result = k_tack_int(tack.zeros(7, tack.f32))
    assert type(result) is int
    assert result == 7_000_000_000  # needs i64
    result = k_imported_type(tack.zeros(1, tack.f32))
    assert type(result) is float
    assert result == float(np.float32(1.0 / 3.0))


def test_return_with_math(rng):
    data = rng.floats(3, np.float64)
    result = k_math_in_return(tack.array(data))
    assert math.isclose(result, abs(data[0] + 1.0) + math.pi, rel_tol=1e-12), \
        f"seed={rng.seed}"


def test_return_value_on_every_call(rng):
    """The warm path returns fresh values, not the first call's."""
    for _ in range(3):
        data = rng.floats(2, np.float64)
        assert k_float(tack.array(data)) == data[0] * 2.0 + 0.25, f"seed={rng.seed}"


@tack.kernel
def k_annotated_none(a) -> None:
    for i in range(len(a)):
        a[i] = 2.0


@tack.kernel
def k_annotated_string_none(a) -> "None":
    for i in range(len(a)):
        a[i] = 4.0


@tack.kernel
def k_annotated_no_return(a) -> float:
    for i in range(len(a)):
        a[i] = 3.0


def test_kernel_without_return_gives_none():
    assert k_print_nothing(tack.zeros(3, tack.f32)) is None
    # a valid annotation with nothing returned runs, as in Python (an invalid
    # one is refused: test_validation.py)
    for kernel, value in ((k_annotated_none, 2.0), (k_annotated_no_return, 3.0),
                          (k_annotated_string_none, 4.0)):
        a = tack.zeros(3, tack.f32)
        assert kernel(a) is None
        assert a.numpy().tolist() == [value] * 3


# -- print -----------------------------------------------------------------------------

@tack.kernel
def k_print_nothing(a):
    for i in range(len(a)):
        a[i] = 1.0


@tack.kernel
def k_print(ints, f32s, f64s):
    for i in range(len(ints)):
        print("row", i, ints[i], f32s[i], f64s[i])


@tack.kernel
def k_print_mixed(a, s):
    for i in range(len(a)):
        print(i, "is", a[i] > 0.0, "and", -i, s)


@tack.func
def report(label_value, x):
    print("device", label_value, x * 2)


@tack.kernel
def k_print_in_device_function(a):
    for i in range(len(a)):
        if i % 2 == 0:
            report(i, a[i])


ON_CPU = tack.get_default_device().type == "cpu"


def _prints(kernel, *args) -> bool:
    """Run a printing kernel (the CPU prints through Python as it runs; a GPU
    backend writes records that the host formats after the launch)."""
    kernel(*args)
    return True


@pytest.mark.parametrize("n", [0, 1, 6])
def test_print_scalars_and_labels(n, rng, capsys):
    ints = rng.ints(n, dtype=np.int64)
    f32s = rng.floats(n, np.float32)
    f64s = rng.floats(n, np.float64)
    if not _prints(k_print, tack.array(ints), tack.array(f32s), tack.array(f64s)):
        return
    lines = capsys.readouterr().out.splitlines()
    # Iterations run in parallel: compare without order, formatted as Python would.
    expected = [f"row {i} {int(ints[i])} {str(np.float32(f32s[i]))} {float(f64s[i])}"
                for i in range(n)]
    assert sorted(lines) == sorted(expected), f"seed={rng.seed}"


def test_print_comparison_negation_and_scalar_argument(capsys):
    a = tack.array(np.array([1.5, -2.0, 0.0], np.float32))
    if not _prints(k_print_mixed, a, 7):
        return
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines) == ["0 is 1 and 0 7", "1 is 0 and -1 7", "2 is 0 and -2 7"]


@tack.kernel
def k_print_extremes(i8, u8, i16, u16, i32, u32, i64, u64):
    for i in range(len(i8)):
        print(i8[i], u8[i], i16[i], u16[i], i32[i], u32[i], i64[i], u64[i])


def test_print_every_integer_type_at_its_extremes(capsys):
    types = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64,
             np.uint64)
    columns = [np.array([np.iinfo(t).min, np.iinfo(t).max, 0], t) for t in types]
    _prints(k_print_extremes, *[tack.array(c) for c in columns])
    lines = capsys.readouterr().out.splitlines()
    expected = [" ".join(str(int(c[r])) for c in columns) for r in range(3)]
    assert sorted(lines) == sorted(expected)


@tack.kernel
def k_print_specials(f32s, f64s):
    for i in range(len(f32s)):
        print(f32s[i], f64s[i], -f64s[i])


def test_print_special_floats(capsys):
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, 1e-310, 0.1]
    f32s, f64s = np.array(specials, np.float32), np.array(specials, np.float64)
    _prints(k_print_specials, tack.array(f32s), tack.array(f64s))
    lines = capsys.readouterr().out.splitlines()
    expected = [f"{str(f32s[i])} {float(f64s[i])} {float(-f64s[i])}"
                for i in range(len(specials))]
    assert sorted(lines) == sorted(expected)


@tack.kernel
def k_print_in_a_loop(counts):
    for i in range(len(counts)):
        for j in range(counts[i]):
            print("item", i, "copy", j)


@pytest.mark.parametrize("n", [0, 1, 33])
def test_several_prints_per_iteration(n, rng, capsys):
    counts = rng.ints(n, dtype=np.int32, low=0, high=4)
    _prints(k_print_in_a_loop, tack.array(counts))
    lines = capsys.readouterr().out.splitlines()
    expected = [f"item {i} copy {j}" for i in range(n) for j in range(counts[i])]
    assert sorted(lines) == sorted(expected), f"seed={rng.seed}"


@tack.kernel
def k_print_one(a):
    for i in range(len(a)):
        print(a[i])


def test_every_launch_prints_its_own_lines(capsys):
    a = tack.array(np.arange(3, dtype=np.int32))
    for _ in range(3):
        _prints(k_print_one, a)
        assert sorted(capsys.readouterr().out.splitlines()) == ["0", "1", "2"]


def test_lines_past_the_print_buffer_are_counted(capsys):
    """A GPU launch keeps 32,768 one-value records (65,536 words); the CPU
    prints every line as it runs."""
    n = 40_000
    _prints(k_print_one, tack.array(np.arange(n, dtype=np.int32)))
    lines = capsys.readouterr().out.splitlines()
    if ON_CPU:
        assert sorted(map(int, lines)) == list(range(n))
        return
    kept, last = lines[:-1], lines[-1]
    assert len(kept) == 32_768 and len(set(kept)) == 32_768
    assert set(map(int, kept)) <= set(range(n))
    assert last == ("[tack] print buffer full: 7232 print() lines were dropped from kernel "
                    "'k_print_one' (it holds 65536 words a launch)")


@tack.kernel
def k_print_without_parameters():
    for i in range(3):
        print("no parameters", i)


def test_a_kernel_without_parameters_prints(capsys):
    # Regression: the GPU build looked at the last parameter of an empty list.
    _prints(k_print_without_parameters)
    assert sorted(capsys.readouterr().out.splitlines()) == [
        "no parameters 0", "no parameters 1", "no parameters 2"]


def test_print_with_debug_mode(capsys):
    tack.set_debug(True)
    try:
        a = tack.array(np.arange(4, dtype=np.int32))
        _prints(k_print_one, a)
        assert sorted(capsys.readouterr().out.splitlines()) == ["0", "1", "2", "3"]
    finally:
        tack.set_debug(False)


def test_print_from_device_function(rng, capsys):
    data = rng.floats(5, np.float64)
    if not _prints(k_print_in_device_function, tack.array(data)):
        return
    lines = capsys.readouterr().out.splitlines()
    expected = [f"device {i} {float(data[i] * 2)}" for i in range(0, 5, 2)]
    assert sorted(lines) == sorted(expected), f"seed={rng.seed}"


@tack.kernel
def k_same_float_as_the_loop(a, n) -> float:
    h = 1 / n
    for i in range(len(a)):
        a[i] = h
    return h


def test_returned_value_uses_the_loops_float_type():
    # The hidden f64 result array must not make the epilogue compute in f64.
    a = tack.zeros(3)
    value = k_same_float_as_the_loop(a, 10)
    assert value == float(a.numpy()[0]) == float(np.float32(0.1))


@tack.kernel
def k_return_reads_another_array(a, b) -> float:
    for i in range(len(a)):
        a[i] = a[i] + 1.0
    return b[len(b) - 1] + len(b)


@pytest.mark.parametrize("n", [1, 2, 7])
def test_an_array_only_the_return_uses(n, rng):
    a, b_np = tack.zeros(3), rng.floats(n)
    got = k_return_reads_another_array(a, tack.array(b_np))
    assert got == pytest.approx(float(b_np[-1]) + n)
    np.testing.assert_array_equal(a.numpy(), np.ones(3, np.float32))


@tack.kernel
def k_returns_a_loop_local(a) -> float:
    for i in range(len(a)):
        t = a[i] * 2.0
        a[i] = t
    return t


@tack.kernel
def k_returns_the_loop_variable_named_like_a_parameter(a, i) -> int:
    for i in range(len(a)):
        a[i] = 1.0
    return i


@tack.kernel
def k_sums_into_a_copy(a) -> float:
    s = 0.0
    for i in range(len(a)):
        s += a[i]
    return s * 2.0


@tack.kernel
def k_max_into_a_parameter(a, m) -> float:
    for i in range(len(a)):
        if a[i] > m:
            m = a[i]
    return m


@pytest.mark.parametrize("kernel, name, column", [(k_sums_into_a_copy, "s", 12),
                                                   (k_max_into_a_parameter, "m", 12)])
def test_a_return_of_a_name_the_loop_assigns_is_refused(kernel, name, column):
    # the Numba prange reduction idiom: each iteration has its own copy, so the
    # return read the value from before the loop (0.0) without a word
    a = tack.ones(5)
    args = (a,) if kernel is k_sums_into_a_copy else (a, 0.0)
    with pytest.raises(tack.UnsupportedSyntaxError, match=re.escape(
            f"Kernel '{kernel.name}': unsupported return of '{name}', which the parallel "
            f"loop assigns: each iteration assigns its own copy, so the return would see "
            f"the value from before the loop (to sum, count or find a maximum, use an "
            f"atomic on an array, or tack.algorithms) at line 6, column {column}")):
        kernel(*args)


@pytest.mark.parametrize("kernel, name, line", [
    (k_returns_a_loop_local, "t", 6),
    (k_returns_the_loop_variable_named_like_a_parameter, "i", 5)])
def test_a_return_that_uses_a_name_bound_in_the_loop_is_a_name_error(kernel, name, line):
    # the loop variable renamed apart from the parameter is named as written
    args = (tack.zeros(3),) if kernel is k_returns_a_loop_local else (tack.zeros(3), 7)
    with pytest.raises(NameError, match=re.escape(
            f"Kernel '{kernel.name}': the returned value uses '{name}', which is bound only "
            f"inside the parallel loop (a return can use parameters, arrays and names bound "
            f"before the loop) at line {line}, column 5")):
        kernel(*args)


# -- what the returned value may and may not do ------------------------------------------

@tack.func
def sums_a_row(a, n):
    s = 0.0
    for k in range(n):     # a loop computing a value is fine
        s += a[k]
    return s


@tack.kernel
def k_atomic_in_return(a) -> float:
    for i in range(len(a)):
        a[i] = 1.0
    return tack.atomic_add(a, 0, 5.0)


@tack.kernel
def k_block_sum_in_return(a) -> float:
    for i in range(len(a)):
        a[i] = 1.0
    return tack.block_sum(2.0)


@tack.kernel
def k_loop_in_return(a) -> float:
    for i in range(len(a)):
        a[i] = a[i] * 2.0
    return sums_a_row(a, len(a))


def test_a_block_reduction_in_the_returned_value_is_refused_before_the_loop_runs():
    a = tack.zeros(5, F32)
    message = ("Kernel 'k_block_sum_in_return': unsupported block reduction in the "
               "returned value at line 5, column 12")
    with pytest.raises(tack.UnsupportedSyntaxError, match=f"^{re.escape(message)}"):
        k_block_sum_in_return(a)
    assert a.numpy().tolist() == [0.0] * 5


@tack.func
def waits(a):
    tack.barrier()
    return a[0]


@tack.kernel
def k_barrier_in_return(a) -> float:
    for i in range(len(a)):
        a[i] = 1.0
    return waits(a)


def test_a_barrier_in_a_device_function_of_the_returned_value_is_refused_where_it_is():
    message = ("Device function 'waits' (inlined into kernel 'k_barrier_in_return'): "
               "unsupported barrier in the returned value at line 3, column 5")
    with pytest.raises(tack.UnsupportedSyntaxError, match=f"^{re.escape(message)}"):
        k_barrier_in_return(tack.zeros(5, F32))


def test_an_atomic_in_the_returned_value_runs_once_after_the_loop():
    a = tack.zeros(5, F32)
    assert k_atomic_in_return(a) == 1.0     # the old value, written by the loop
    assert a.numpy().tolist() == [6.0, 1.0, 1.0, 1.0, 1.0]


def test_the_returned_value_may_loop_through_a_device_function(rng):
    host = rng.floats(9)
    a = tack.array(host)
    assert k_loop_in_return(a) == pytest.approx(float((host * 2).sum()), rel=1e-5)
