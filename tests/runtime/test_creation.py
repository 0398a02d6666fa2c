"""Spec 003, Arrays / Creation: empty, zeros, ones, full, arange, array, asarray
and the *_like constructors; dtype inference and the shape rules."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tack

ALL_TYPES = (tack.i8, tack.i16, tack.i32, tack.i64, tack.u8, tack.u16, tack.u32,
             tack.u64, tack.f32, tack.f64)
NAMES = [t.name for t in ALL_TYPES]
BOOL_MESSAGE = "Tack has no boolean arrays; "


def check(a, shape, dtype, values=None):
    assert isinstance(a, tack.Array)
    assert a.shape == shape and a.dtype is dtype
    if values is not None:
        got = a.numpy()
        assert got.dtype == dtype.numpy and got.shape == shape
        np.testing.assert_array_equal(got, values)


# -- shapes ----------------------------------------------------------------------------

@pytest.mark.parametrize("shape,expected", [
    (5, (5,)), (0, (0,)), (np.int64(3), (3,)), ((), ()), ((2, 3), (2, 3)),
    ([4, 0, 2], (4, 0, 2)), ((np.int32(2), 1), (2, 1)),
])
def test_shape_forms(shape, expected):
    for make in (tack.empty, tack.zeros, tack.ones):
        a = make(shape)
        assert a.shape == expected and a.dtype is tack.f32
        assert a.ndim == len(expected) and a.size == int(np.prod(expected))


def test_negative_extent_raises_value_error():
    with pytest.raises(ValueError, match=re.escape(
            "negative dimensions are not allowed: (-1,)")):
        tack.empty(-1)
    with pytest.raises(ValueError, match=re.escape(
            "negative dimensions are not allowed: (2, -3)")):
        tack.zeros((2, -3))


@pytest.mark.parametrize("shape,message", [
    (3.0, "shape must be an integer or a tuple of integers, not float"),
    (True, "shape must be an integer or a tuple of integers, not bool"),
    (None, "shape must be an integer or a tuple of integers, not NoneType"),
    ((2, 2.0), "array extents must be integers, got 2.0"),
    ((2, "3"), "array extents must be integers, got '3'"),
    ((True, 2), "array extents must be integers, got True"),
])
def test_non_integer_extent_raises_type_error(shape, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        tack.empty(shape)


# -- empty / zeros / ones ---------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=NAMES)
@pytest.mark.parametrize("n", [0, 1, 7, 70001])  # 70001 f32 crosses the kernel fill
def test_zeros_ones_empty_every_dtype(dtype, n):
    check(tack.zeros(n, dtype), (n,), dtype, np.zeros(n, dtype.numpy))
    check(tack.ones(n, dtype), (n,), dtype, np.ones(n, dtype.numpy))
    check(tack.empty(n, dtype), (n,), dtype)


@pytest.mark.parametrize("spelling,dtype", [
    (tack.f64, tack.f64), (np.float32, tack.f32), ("int64", tack.i64),
    (float, tack.f64), (int, tack.i64), (np.dtype("u2"), tack.u16), ("f8", tack.f64),
])
def test_dtype_spellings(spelling, dtype):
    assert tack.zeros(2, spelling).dtype is dtype
    assert tack.array([1, 2], dtype=spelling).dtype is dtype


@pytest.mark.parametrize("spelling,message", [
    (np.float16, "Unsupported numpy dtype: float16"),
    ("complex64", "Unsupported numpy dtype: complex64"),
    (object, "Unsupported numpy dtype: object"),
    (bool, BOOL_MESSAGE),
    (3.5, "dtype must be a Tack type such as tack.f32 or a NumPy dtype, not 3.5"),
])
def test_dtype_without_a_tack_type_raises_type_error(spelling, message):
    for make in (lambda: tack.zeros(2, spelling), lambda: tack.empty(2, spelling),
                 lambda: tack.array([1.0], dtype=spelling),
                 lambda: tack.full(2, 1, spelling), lambda: tack.arange(3, dtype=spelling)):
        with pytest.raises(TypeError, match=re.escape(message)):
            make()


# -- full -----------------------------------------------------------------------------------

@pytest.mark.parametrize("value,dtype", [
    (1.5, tack.f32), (7, tack.i32), (-(2 ** 31), tack.i32), (2 ** 31, tack.i64),
    (-(2 ** 40), tack.i64), (2 ** 63, tack.u64), (np.int16(-3), tack.i16),
    (np.float64(0.1), tack.f64), (np.uint8(200), tack.u8),
])
def test_full_infers_the_dtype(value, dtype):
    check(tack.full(3, value), (3,), dtype, np.full(3, value, dtype.numpy))


def test_full_with_dtype_converts_like_ndarray_fill():
    check(tack.full((2, 2), 2.7, tack.i32), (2, 2), tack.i32, np.full((2, 2), 2))
    check(tack.full(3, 7, tack.f64), (3,), tack.f64, np.full(3, 7.0))
    check(tack.full((), 0.1, "float64"), (), tack.f64, np.array(0.1))


def test_full_refusals():
    with pytest.raises(TypeError, match=re.escape(BOOL_MESSAGE)):
        tack.full(3, True)
    with pytest.raises(TypeError, match=re.escape(BOOL_MESSAGE)):
        tack.full(3, np.bool_(False))
    with pytest.raises(TypeError, match=re.escape("cannot infer a Tack dtype from str")):
        tack.full(3, "1")
    with pytest.raises(TypeError, match=re.escape("cannot infer a Tack dtype from list")):
        tack.full(3, [1, 2, 3])
    with pytest.raises(TypeError, match=re.escape("integer 18446744073709551616 is "
                                                  "outside the 64-bit range")):
        tack.full(3, 2 ** 64)
    with pytest.raises(TypeError, match=re.escape(
            "fill() of a scalar array takes a scalar, not a sequence")):
        tack.full(3, [1, 2, 3], tack.f32)


# -- arange -----------------------------------------------------------------------------------

@pytest.mark.parametrize("args,dtype", [
    ((5,), tack.i32), ((0,), tack.i32), ((2, 9), tack.i32), ((9, 2, -3), tack.i32),
    ((0, 2 ** 33, 2 ** 31), tack.i64), ((-(2 ** 32), 0, 2 ** 30), tack.i64),
    ((2.5,), tack.f32), ((0, 1, 0.125), tack.f32), ((np.int64(4),), tack.i32),
])
def test_arange_infers_the_dtype(args, dtype):
    check(tack.arange(*args), (len(np.arange(*args)),), dtype,
          np.arange(*args).astype(dtype.numpy))


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=NAMES)
def test_arange_with_dtype(dtype):
    check(tack.arange(1, 20, 3, dtype=dtype), (7,), dtype,
          np.arange(1, 20, 3).astype(dtype.numpy))


@pytest.mark.parametrize("args", [(2 ** 63, 2 ** 63 + 3), (2 ** 64 - 1, 2 ** 63, -(2 ** 61))])
def test_arange_past_i64_is_exact_u64(args):
    expected = np.array(list(range(*args)), np.uint64)
    check(tack.arange(*args), expected.shape, tack.u64, expected)
    check(tack.arange(*args, dtype=tack.u64), expected.shape, tack.u64, expected)


def test_arange_errors():
    with pytest.raises(TypeError, match=re.escape(
            "arange() from -1 to 9223372036854775808 fits no one 64-bit type")):
        tack.arange(-1, 2 ** 63 + 1)
    for step in (0, 0.0):
        with pytest.raises(ValueError, match=re.escape("arange() step must not be zero")):
            tack.arange(0, 5, step)


def test_arange_argument_count():
    with pytest.raises(TypeError, match=re.escape(
            "arange() takes 1 to 3 positional arguments, got 0")):
        tack.arange()
    with pytest.raises(TypeError, match=re.escape(
            "arange() takes 1 to 3 positional arguments, got 4")):
        tack.arange(1, 2, 3, 4)


# -- array / asarray --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=NAMES)
@pytest.mark.parametrize("n", [0, 1, 33])
def test_array_keeps_a_numpy_dtype(rng, dtype, n):
    host = rng.values(dtype, n)
    for make in (tack.array, tack.asarray):
        check(make(host), (n,), dtype, host)
        check(make(host.reshape(n, 1)), (n, 1), dtype, host.reshape(n, 1))


@pytest.mark.parametrize("obj,dtype", [
    ([1.5, 2.0], tack.f32), ([1, 2.5], tack.f32), ([[1, 2], [3, 4]], tack.i32),
    ([2 ** 31 - 1, -(2 ** 31)], tack.i32), ([0, 2 ** 31], tack.i64),
    ([-(2 ** 63), 2 ** 63 - 1], tack.i64), ([2 ** 63, 2 ** 64 - 1], tack.u64),
    ([], tack.f32), (3, tack.i32), (2.5, tack.f32), (np.float64(2.0), tack.f64),
    (np.array(7, np.int8), tack.i8), (range(4), tack.i32),
])
def test_array_infers_the_dtype_of_python_values(obj, dtype):
    expected = np.asarray(obj).astype(dtype.numpy)
    check(tack.array(obj), expected.shape, dtype, expected)


@pytest.mark.parametrize("obj", [[1, 2 ** 63 + 1], [[3, 2 ** 64 - 1], [0, 7]]])
def test_ints_past_i64_with_small_ones_are_u64_not_floats(obj):
    # NumPy reads these as float64 (losing the large values' low bits)
    expected = np.array(obj, np.uint64)
    check(tack.array(obj), expected.shape, tack.u64, expected)


@pytest.mark.parametrize("obj, message", [
    ([-1, 2 ** 63], "the integers -1 and 9223372036854775808 fit no one 64-bit type"),
    ([1, 2 ** 64], "integer 18446744073709551616 is outside the 64-bit range"),
    ([-(2 ** 63) - 1, 0], "integer -9223372036854775809 is outside the 64-bit range"),
])
def test_ints_no_64_bit_type_holds_raise_type_error(obj, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        tack.array(obj)


@pytest.mark.parametrize("device", ["cpu", "opencl"])
def test_array_of_a_tack_array_converts_as_astype(device):
    if device == "opencl" and not tack.device_count("opencl"):
        pytest.skip("no OpenCL device")
    source = tack.array(np.array([np.nan, 1e10, 300.0, -5.5, -1e10], np.float32))
    for dtype in (tack.i32, tack.u8, tack.i64):
        expected = source.astype(dtype).numpy()
        got = tack.array(source, dtype=dtype, device=device)
        assert got.device.type == device and got.dtype is dtype
        np.testing.assert_array_equal(got.numpy(), expected)
    assert tack.array(source, dtype=tack.i32).numpy().tolist() == [
        0, 2 ** 31 - 1, 300, -5, -(2 ** 31)]


def test_array_with_dtype_converts():
    check(tack.array([1.7, -2.2], dtype=tack.i32), (2,), tack.i32, [1, -2])
    check(tack.array([True, False], dtype=tack.i32), (2,), tack.i32, [1, 0])
    check(tack.array(np.arange(3, dtype=np.int64), dtype="f4"), (3,), tack.f32, [0, 1, 2])


@pytest.mark.parametrize("obj", [np.zeros(3, np.float16), np.float16(1.0)])
def test_float16_raises_type_error(obj):
    for make in (tack.array, tack.asarray):
        with pytest.raises(TypeError, match=re.escape("Unsupported numpy dtype: float16")):
            make(obj)


@pytest.mark.parametrize("obj", [[True, False], True, np.array([True]), np.bool_(True),
                                 [[False]]])
def test_booleans_without_a_dtype_raise_type_error(obj):
    for make in (tack.array, tack.asarray):
        with pytest.raises(TypeError, match=re.escape(BOOL_MESSAGE)):
            make(obj)


@pytest.mark.parametrize("obj,message", [
    ("abc", "Unsupported numpy dtype: <U3"),
    ([1, "a"], "Unsupported numpy dtype: <U21"),
    (np.zeros(2, np.complex128), "Unsupported numpy dtype: complex128"),
])
def test_values_without_a_tack_type_raise_type_error(obj, message):
    with pytest.raises(TypeError, match=re.escape(message)):
        tack.array(obj)


def test_array_copies_and_asarray_does_not(rng):
    host = rng.values(tack.f64, 9)
    a = tack.array(host)
    host[0] = 12345.0
    assert a[0] != 12345.0
    assert tack.asarray(a) is a
    assert tack.asarray(a, tack.f64) is a and tack.asarray(a, "float64") is a
    assert tack.asarray(a, device="cpu") is a
    b = tack.array(a)
    assert b is not a
    np.testing.assert_array_equal(b.numpy(), a.numpy(), err_msg=repr(rng))
    converted = tack.asarray(a, tack.f32)
    check(converted, (9,), tack.f32, a.numpy().astype(np.float32))
    check(tack.array(a, dtype=tack.i64), (9,), tack.i64, a.numpy().astype(np.int64))


# -- *_like -----------------------------------------------------------------------------------

LIKES = {
    "empty_like": lambda p, **kw: tack.empty_like(p, **kw),
    "zeros_like": lambda p, **kw: tack.zeros_like(p, **kw),
    "ones_like": lambda p, **kw: tack.ones_like(p, **kw),
    "full_like": lambda p, **kw: tack.full_like(p, 3, **kw),
}
FILLED = {"zeros_like": 0, "ones_like": 1, "full_like": 3}


PROTOTYPES = {
    "numpy-i16": lambda: np.zeros((2, 3), np.int16),
    "numpy-empty-f64": lambda: np.zeros(0, np.float64),
    "tack-u8": lambda: tack.zeros((4, 1), tack.u8),
    "tack-0d-f64": lambda: tack.full((), 2.0, tack.f64),
}


@pytest.mark.parametrize("name", sorted(LIKES))
@pytest.mark.parametrize("kind", sorted(PROTOTYPES))
def test_like_constructors(name, kind):
    proto = PROTOTYPES[kind]()
    expected = proto.dtype if isinstance(proto, tack.Array) else tack.array(proto).dtype
    made = LIKES[name](proto)
    check(made, proto.shape, expected)
    assert made is not proto
    overridden = LIKES[name](proto, dtype=tack.f32)
    check(overridden, proto.shape, tack.f32)
    if name in FILLED:
        np.testing.assert_array_equal(made.numpy(), np.full(proto.shape, FILLED[name]))
        np.testing.assert_array_equal(overridden.numpy(),
                                      np.full(proto.shape, FILLED[name]))


def test_like_storage_is_independent_and_writable():
    host = np.arange(4.0)
    host.flags.writeable = False
    ro = tack.array_from_ptr(host, 4, tack.f64)
    like = tack.zeros_like(ro)
    assert like.writable and like.device is ro.device
    like.fill(5)
    np.testing.assert_array_equal(host, np.arange(4.0))


@pytest.mark.parametrize("proto", [[1, 2], 3, (2, 2), None, "abc"])
def test_like_with_a_bad_prototype_raises_type_error(proto):
    for make in LIKES.values():
        with pytest.raises(TypeError, match=re.escape(
                "expected a Tack array or NumPy array as the prototype")):
            make(proto)


def test_like_of_a_numpy_array_without_a_tack_type():
    with pytest.raises(TypeError, match=re.escape("Unsupported numpy dtype: float16")):
        tack.empty_like(np.zeros(2, np.float16))
    with pytest.raises(TypeError, match=re.escape(BOOL_MESSAGE)):
        tack.zeros_like(np.zeros(2, bool))
    check(tack.zeros_like(np.zeros(2, bool), dtype=tack.i32), (2,), tack.i32, [0, 0])


@pytest.mark.parametrize("shape", [(1 << 62, 4), (1 << 40, 1 << 40)])
def test_an_array_past_what_the_cpu_can_allocate_is_a_memory_error(shape):
    # NumPy's "Maximum allowed dimension exceeded" came through as a ValueError
    nbytes = shape[0] * shape[1] * 4
    with pytest.raises(MemoryError, match=re.escape(
            f"cannot allocate {nbytes} bytes on the CPU")):
        tack.empty(shape, tack.f32, device="cpu")


@pytest.mark.parametrize("n", [0, 1, 7, 4097, 70_001])
def test_zeros_are_zero_in_reused_memory(n):
    # the CPU allocates zeros with NumPy's calloc instead of filling: memory that
    # held ones a moment ago must come back zeroed
    for _ in range(4):
        ones = [tack.full(n, 1.0, tack.f64) for _ in range(8)]
        del ones
        fresh = [tack.zeros(n, tack.f64), tack.zeros((n, 2), tack.vec3(dtype=tack.i32))]
        assert all(not a.numpy().any() for a in fresh)
        assert fresh[0]._ptr % 64 == 0


@pytest.mark.parametrize("args", [(2**64,), (0, 2**62), (0, 1e30, 1.0), (2**63, -1, -1)])
def test_an_arange_longer_than_any_array_is_a_memory_error(args):
    with pytest.raises(MemoryError, match=r"^arange\(\) of \d+ elements is larger than "
                                          r"any array"):
        tack.arange(*args)
