"""What NumPy users reach for by habit on a tack.Array: Python's operators and
protocols, NumPy's functions and dtypes. Each either works as NumPy's does or
raises a TypeError that says what to do instead; none silently differs."""

from __future__ import annotations

import copy
import operator
import pickle
import re

import numpy as np
import pytest

import tack


@pytest.mark.parametrize("operation, symbol", [
    (operator.add, "+"), (operator.mul, "*"), (operator.truediv, "/"),
    (operator.lt, "<"), (operator.eq, "=="), (operator.ne, "!="), (operator.pow, "**")])
@pytest.mark.parametrize("other", [1.0, np.float32(2), np.ones(4, np.float32)],
                         ids=["python", "numpy scalar", "numpy array"])
def test_operators_are_refused_whatever_the_other_operand(operation, symbol, other):
    a = tack.ones(4)
    message = f"tack.Array has no host operator {symbol}: compute in a kernel, or on a.numpy()"
    with pytest.raises(TypeError, match="tack.Array has no host operator"):
        operation(other, a)   # a comparison reflects: 1 < a asks a > 1
    with pytest.raises(TypeError, match=re.escape(message)):
        operation(a, other)
    np.testing.assert_array_equal(a.numpy(), np.ones(4, np.float32))


@pytest.mark.parametrize("other", [1, np.float32(2), np.ones(4, np.float32)])
def test_in_place_operators_neither_rebind_nor_change_the_array(other):
    a = tack.ones(4)
    kept = a
    for statement in ("a += other", "a *= other", "a -= other", "a /= other"):
        with pytest.raises(TypeError, match="tack.Array has no host operator"):
            exec(statement)
        assert a is kept
    np.testing.assert_array_equal(a.numpy(), np.ones(4, np.float32))


def test_arrays_are_keys_by_identity_and_unary_operators_are_refused():
    a, b = tack.zeros(3), tack.zeros(3)
    assert {a: 1, b: 2}[a] == 1 and a in [a] and a is not b
    for operation in (operator.neg, operator.pos, abs, operator.invert):
        with pytest.raises(TypeError, match="tack.Array has no host operator"):
            operation(a)


def test_numpy_ufuncs_defer_to_the_array_and_are_refused():
    a = tack.ones(3)
    with pytest.raises(TypeError, match="does not support ufuncs"):
        np.add(a, 1)
    np.testing.assert_array_equal(np.asarray(a) + 1, [2, 2, 2])   # explicit host copy


def test_truth_value_of_a_0d_array_only():
    assert bool(tack.full((), 1.5)) is True and bool(tack.full((), 0, tack.i32)) is False
    for shape in [(1,), (5,), (5, 0)]:
        with pytest.raises(TypeError, match=re.escape(
                f"bool() takes a 0-d tack.Array of scalars, not one of shape {shape}")):
            bool(tack.zeros(shape))


@pytest.mark.parametrize("make_copy", [copy.copy, copy.deepcopy])
def test_copies_are_independent_of_the_original(make_copy, rng):
    values = rng.values(tack.f64, 7)
    a = tack.array(values)
    c = make_copy(a)
    assert c is not a and c.dtype is a.dtype and c.device is a.device
    c.fill(0.0)
    np.testing.assert_array_equal(a.numpy(), values, err_msg=repr(rng))


def test_pickling_is_refused_by_name():
    with pytest.raises(TypeError, match=re.escape(
            "a tack.Array cannot be pickled (its memory belongs to a device of this "
            "process); pickle a.numpy()")):
        pickle.dumps(tack.zeros(2))


def test_numpy_reductions_call_the_arrays_own(rng):
    values = rng.values(tack.f64, 11)
    a = tack.array(values)
    assert np.sum(a) == a.sum() and np.min(a) == values.min()
    assert np.max(a) == values.max() and np.mean(a) == a.mean()
    for call in (lambda: np.sum(a, axis=0), lambda: a.sum(dtype=np.float32),
                 lambda: np.max(a, out=np.zeros(()))):
        with pytest.raises(TypeError, match=re.escape(
                "of a tack.Array reduces every element, into a new value; for axis=, "
                "dtype= or out=, reduce a.numpy()")):
            call()


def test_dtypes_compare_equal_to_the_numpy_dtypes_they_take():
    a = tack.zeros(3, dtype=np.float32)
    assert a.dtype == np.float32 and a.dtype == np.dtype("float32") and a.dtype == "f4"
    assert a.dtype != np.float64 and a.dtype in (np.float64, np.float32)
    assert tack.i64 == np.int64 and tack.u8 != np.int8 and tack.f64 != None  # noqa: E711
    assert tack.f32 != "vec3" and tack.f32 is not tack.f64


def test_fill_refuses_every_sequence_on_a_scalar_array():
    a = tack.zeros(3)
    for value in (tack.ones(3), range(3), np.ones(3), [1.0]):
        with pytest.raises(TypeError, match=re.escape(
                "fill() of a scalar array takes a scalar, not a sequence")):
            a.fill(value)
    v = tack.zeros(4, tack.vec3())
    v.fill(tack.array(np.array([1.0, 2.0, 3.0], np.float32)))   # one element's components
    np.testing.assert_array_equal(v.numpy(), np.tile([1.0, 2.0, 3.0], (4, 1)))


def test_array_of_a_list_keeps_the_dtypes_of_numpy_and_tack_values(rng):
    f64 = tack.array(rng.values(tack.f64, 3))
    assert tack.array([f64, f64]).dtype is tack.f64
    np.testing.assert_array_equal(tack.array([f64, f64]).numpy()[1], f64.numpy())
    assert tack.array([np.float64(1.1), np.float64(2.2)]).dtype is tack.f64
    assert tack.array([np.ones(2, np.uint8)] * 2).dtype is tack.u8
    assert tack.array([1.5, 2.5]).dtype is tack.f32     # Python floats: still f32


def test_asarray_converts_on_the_arrays_own_device(opencl):
    x = tack.arange(4, dtype=tack.f32, device=opencl)
    for dtype in (None, tack.f32, tack.f64):
        assert tack.asarray(x, dtype=dtype).device is opencl
    assert tack.asarray(x, dtype=tack.f64).numpy().tolist() == [0, 1, 2, 3]
