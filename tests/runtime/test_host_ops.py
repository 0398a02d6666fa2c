"""Spec 003, Host operations: numpy(), host reads, fill, copyto, concat, reshape,
copy, astype and the metadata (shape, ndim, size, len, nbytes)."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import tack

ALL_TYPES = (tack.i8, tack.i16, tack.i32, tack.i64, tack.u8, tack.u16, tack.u32,
             tack.u64, tack.f32, tack.f64)
NAMES = [t.name for t in ALL_TYPES]
SIZES = (0, 1, 7, 1000)
READ_MESSAGE = ("a tack.Array is read on the host with one integer per dimension "
                "({} here), or viewed with a[start:stop] (a range of the first "
                "dimension); use a[()] for a 0-d array and a.numpy() for anything else")
KERNEL_FILL_BYTES = 256 * 1024


@tack.kernel
def add_one(a):
    for i in range(len(a)):
        a[i] = a[i] + 1


@tack.kernel
def mark_2d(v):
    for i, j in tack.ndindex(v.shape[0], v.shape[1]):
        v[i, j] = i * 100 + j


# -- metadata -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=NAMES)
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2, 0, 3)])
def test_metadata(dtype, shape):
    a = tack.empty(shape, dtype)
    size = int(np.prod(shape))
    assert (a.shape, a.ndim, a.size, a.dtype) == (shape, len(shape), size, dtype)
    assert a.nbytes == size * dtype.itemsize
    if shape:
        assert len(a) == shape[0]
    else:
        with pytest.raises(TypeError, match=re.escape("len() of a 0-d array")):
            len(a)


# -- numpy() and np.asarray ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=NAMES)
@pytest.mark.parametrize("n", SIZES)
def test_numpy_returns_a_new_copy(rng, dtype, n):
    host = rng.values(dtype, n)
    a = tack.array(host)
    first, second = a.numpy(), a.numpy()
    assert first is not second and first.dtype == dtype.numpy
    np.testing.assert_array_equal(first, host, err_msg=repr(rng))
    first[...] = 0
    np.testing.assert_array_equal(a.numpy(), host, err_msg=repr(rng))
    through = np.asarray(a)
    np.testing.assert_array_equal(through, host, err_msg=repr(rng))
    through[...] = 0
    np.testing.assert_array_equal(a.numpy(), host, err_msg=repr(rng))


def test_numpy_keeps_the_shape():
    a = tack.arange(12).reshape(3, 4)
    assert a.numpy().shape == (3, 4)
    assert np.array(a).shape == (3, 4)
    assert np.asarray(a, dtype=np.float64).dtype == np.float64
    assert tack.full((), 3, tack.i8).numpy().shape == ()


def test_asarray_without_a_copy_raises_value_error():
    with pytest.raises(ValueError, match=re.escape(
            "a tack.Array cannot be viewed as a NumPy array without a copy; use "
            "np.asarray(a) or a.numpy()")):
        np.asarray(tack.zeros(3), copy=False)


# -- host reads ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=NAMES)
def test_host_reads_give_python_numbers(rng, dtype):
    host = rng.values(dtype, 12).reshape(3, 4)
    a = tack.array(host)
    kind = float if dtype.is_float else int
    for i in range(-3, 3):
        for j in range(-4, 4):
            value = a[i, j]
            assert type(value) is kind
            assert value == host[i, j], f"a[{i}, {j}] {rng}"
    assert a[np.int64(2), np.uint8(3)] == host[2, 3]
    zero_d = tack.array(host[1, 2])
    assert zero_d.shape == () and type(zero_d[()]) is kind and zero_d[()] == host[1, 2]


@pytest.mark.parametrize("shape,key", [
    ((3, 4), None), ((3, 4), 0), ((3, 4), (0, 0, 0)), ((3, 4), (1.0, 0)),
    ((3, 4), (True, 0)), ((3, 4), (0, slice(1))),
    ((3, 4), ...), ((3, 4), ()), ((3, 4), np.array([1, 2])), ((3, 4), [0, 1]),
    ((4,), None), ((4,), ()), ((4,), 1.0), ((4,), "1"), ((), None), ((), 0),
])
def test_host_read_keys_that_are_not_one_integer_per_dimension(shape, key):
    a = tack.zeros(shape)
    with pytest.raises(TypeError, match=re.escape(READ_MESSAGE.format(len(shape)))):
        a[key]


def test_a_none_index_names_the_0d_read():
    with pytest.raises(TypeError, match=re.escape("use a[()] for a 0-d array")):
        tack.zeros(3)[None]


@pytest.mark.parametrize("shape,key,index,extent", [
    ((3, 4), (3, 0), 3, 3), ((3, 4), (0, 4), 4, 4), ((3, 4), (-4, 0), -4, 3),
    ((3, 4), (0, -5), -5, 4), ((0,), 0, 0, 0), ((5,), 2 ** 70, 2 ** 70, 5),
])
def test_host_read_out_of_range_raises_index_error(shape, key, index, extent):
    with pytest.raises(IndexError, match=re.escape(
            f"index {index} is out of bounds for a dimension of length {extent}")):
        tack.zeros(shape)[key]


def test_no_host_assignment_or_iteration():
    a = tack.zeros((2, 2))
    with pytest.raises(TypeError, match=re.escape(
            "tack.Array does not support host assignment: write it in a kernel, or use "
            "tack.copyto(a, values) or a.fill(value)")):
        a[0, 0] = 1.0
    with pytest.raises(TypeError, match=re.escape(
            "tack.Array is not iterable on the host; use a.numpy()")):
        iter(a)
    with pytest.raises(TypeError, match=re.escape("tack.Array is not iterable")):
        list(tack.zeros(3))
    np.testing.assert_array_equal(a.numpy(), np.zeros((2, 2)))


# -- fill ------------------------------------------------------------------------------------

FILL_VALUES = [0, 1, -1, 127, 255, 300, -129, 2.7, -2.7, float("nan"), float("inf"),
               1e300, 2 ** 31, 2 ** 63, -(2 ** 63), 2 ** 64 - 1, 2 ** 64,
               np.float32(0.1), np.int64(-5), np.uint64(2 ** 63 + 1), "7", "x", None,
               np.float64(np.nan)]


def numpy_fill(dtype, n, value):
    """What ``ndarray.fill`` stores or raises: ("ok", values) or (type, message)."""
    host = np.empty(n, dtype.numpy)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            host.fill(value)
    except Exception as exc:
        return type(exc), str(exc)
    return "ok", host


@pytest.mark.parametrize("dtype", ALL_TYPES, ids=NAMES)
@pytest.mark.parametrize("large", [False, True], ids=["small", "kernel"])
def test_fill_stores_and_refuses_exactly_what_ndarray_fill_does(dtype, large):
    n = KERNEL_FILL_BYTES // dtype.itemsize + 3 if large else 7
    a = tack.empty(n, dtype)
    for value in FILL_VALUES:
        kind, expected = numpy_fill(dtype, n, value)
        if kind == "ok":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                a.fill(value)
            np.testing.assert_array_equal(a.numpy(), expected,
                                          err_msg=f"fill({value!r}) {dtype}")
        else:
            a.fill(0)
            with pytest.raises(kind, match=re.escape(expected)):
                a.fill(value)
            assert not a.numpy().any(), f"rejected fill({value!r}) wrote into {dtype}"


@pytest.mark.parametrize("n,launches", [(KERNEL_FILL_BYTES // 4 - 1, 0),
                                        (KERNEL_FILL_BYTES // 4, 1)])
def test_fill_of_256_kib_or_more_runs_as_a_kernel(count_launches, n, launches):
    d = tack.device("cpu", num_threads=2)
    calls = count_launches(d)
    a = tack.empty(n, tack.f32, device=d)
    a.fill(0.5)
    assert len(calls) == launches
    np.testing.assert_array_equal(a.numpy(), np.full(n, 0.5, np.float32))


@pytest.mark.parametrize("shape", [(), (3, 5), (0,)])
def test_fill_any_shape(shape):
    a = tack.empty(shape, tack.i16)
    a.fill(-3)
    np.testing.assert_array_equal(a.numpy(), np.full(shape, -3, np.int16))


def test_fill_with_a_sequence_raises_type_error():
    a = tack.zeros(3)
    for value in ([1, 2, 3], (1.0,), np.zeros(3)):
        with pytest.raises(TypeError, match=re.escape(
                "fill() of a scalar array takes a scalar, not a sequence")):
            a.fill(value)
    a.fill(np.float32(2.0))  # a 0-d value is a scalar
    np.testing.assert_array_equal(a.numpy(), np.full(3, 2.0, np.float32))


# -- copyto ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=NAMES)
@pytest.mark.parametrize("n", SIZES)
def test_copyto_from_host_and_from_tack(rng, dtype, n):
    host = rng.values(dtype, n)
    a = tack.empty(n, dtype)
    tack.copyto(a, host)
    np.testing.assert_array_equal(a.numpy(), host, err_msg=repr(rng))
    b = tack.zeros(n, dtype)
    tack.copyto(b, a)
    np.testing.assert_array_equal(b.numpy(), host, err_msg=repr(rng))


def test_copyto_broadcasts_host_values_like_np_copyto(rng):
    a = tack.zeros((4, 3), tack.f64)
    row = rng.values(tack.f64, 3)
    tack.copyto(a, row)
    np.testing.assert_array_equal(a.numpy(), np.broadcast_to(row, (4, 3)), err_msg=repr(rng))
    tack.copyto(a, 2)
    np.testing.assert_array_equal(a.numpy(), np.full((4, 3), 2.0))
    tack.copyto(a, [[1.0], [2.0], [3.0], [4.0]])
    np.testing.assert_array_equal(a.numpy(), np.repeat([[1.0], [2.0], [3.0], [4.0]], 3, 1))


def test_copyto_from_numpy_is_an_unchecked_cast():
    a = tack.zeros(4, tack.u8)
    tack.copyto(a, np.array([2.7, -1.0, 300.0, 5.5]))
    expected = np.zeros(4, np.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.copyto(expected, np.array([2.7, -1.0, 300.0, 5.5]), casting="unsafe")
    np.testing.assert_array_equal(a.numpy(), expected)


def test_copyto_from_tack_converts_with_the_kernel_rules():
    a = tack.zeros(4, tack.i32)
    tack.copyto(a, tack.array([1e10, -1e10, np.nan, -2.5], dtype=tack.f64))
    np.testing.assert_array_equal(a.numpy(), [2 ** 31 - 1, -(2 ** 31), 0, -2])


@pytest.mark.parametrize("shift", [-3, 3])
def test_copyto_between_partly_overlapping_arrays_matches_np_copyto(rng, shift):
    cpu = tack.device("cpu")
    host = rng.values(tack.f64, 100_006)
    src = host[3:100_003].copy()
    wrap = lambda first: tack.array_from_ptr(  # noqa: E731
        host.ctypes.data + 8 * first, (100_000,), tack.f64, device=cpu, writable=True)
    tack.copyto(wrap(3 + shift), wrap(3))
    np.testing.assert_array_equal(host[3 + shift:100_003 + shift], src, err_msg=repr(rng))


def test_copyto_over_the_same_memory_in_wider_elements_matches_np_copyto(rng):
    """Same first address, other element size: element i of each is at
    another byte, so the copy reads all of the source first."""
    cpu = tack.device("cpu")
    host = np.zeros(2 * 1001, np.float32)
    values = rng.values(tack.f32, 1001)
    host[:1001] = values
    narrow = tack.array_from_ptr(host, (1001,), tack.f32, device=cpu, writable=True)
    wide = tack.array_from_ptr(host, (1001,), tack.f64, device=cpu, writable=True)
    tack.copyto(wide, narrow)
    np.testing.assert_array_equal(host.view(np.float64), values.astype(np.float64),
                                  err_msg=repr(rng))


def test_copyto_works_on_reshaped_views(rng):
    a = tack.zeros(6, tack.i32)
    tack.copyto(a.reshape(2, 3), [[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(a.numpy(), [1, 2, 3, 4, 5, 6])
    tack.copyto(a.reshape(3, 2), tack.arange(6).reshape(3, 2))
    np.testing.assert_array_equal(a.numpy(), np.arange(6))


@pytest.mark.parametrize("src,shape", [
    (np.ones(4), (4,)), ([1.0] * 9, (9,)), (np.ones((2, 8)), (2, 8)),
    (np.ones((1, 8)), (1, 8)), ("tack4", (4,)), ("tack2x4", (2, 4)), ("tack1x8", (1, 8)),
])
def test_copyto_shape_mismatch_raises_value_error(src, shape):
    if isinstance(src, str):
        src = tack.ones(shape)
    a = tack.zeros(8)
    with pytest.raises(ValueError, match=re.escape(
            f"copyto() into an array whose values have shape (8,): cannot broadcast "
            f"shape {shape}")):
        tack.copyto(a, src)
    assert not a.numpy().any()


def test_copyto_into_a_read_only_array_raises_runtime_error():
    host = np.arange(4.0)
    ro = tack.array_from_ptr(host, 4, tack.f64)
    for src in (np.zeros(4), tack.zeros(4, tack.f64), 0.0):
        with pytest.raises(RuntimeError, match=re.escape(
                "copyto() on a read-only array (wrapped with writable=False or imported "
                "read-only)")):
            tack.copyto(ro, src)
    np.testing.assert_array_equal(host, np.arange(4.0))
    tack.copyto(tack.zeros(4, tack.f64), ro)  # a read-only source is fine


@pytest.mark.parametrize("target,name", [(np.zeros(3), "ndarray"), ([0, 0, 0], "list"),
                                         (None, "NoneType")])
def test_copyto_into_a_non_array_raises_type_error(target, name):
    with pytest.raises(TypeError, match=re.escape(
            f"copyto() copies into a tack.Array, not {name}")):
        tack.copyto(target, [1, 2, 3])


@pytest.mark.parametrize("src, what", [
    (None, "NoneType"), ("3.5", "str"), (b"1", "bytes"),
    ([None, 1.0, 2.0], "a list holding None or strings"),
    (("1", "2", "3"), "a tuple holding None or strings"),
    (np.array([None] * 3), "a NumPy array of object"),
    (np.array(["1", "2", "3"]), "a NumPy array of <U1"),
])
@pytest.mark.parametrize("dtype", [tack.f64, tack.i32], ids=str)
def test_copyto_from_something_other_than_numbers_raises_type_error(src, what, dtype):
    a = tack.full(3, 7, dtype)
    with pytest.raises(TypeError, match=re.escape(
            f"copyto() takes numbers as src (a scalar, a sequence, a NumPy or Tack "
            f"array), not {what}")):
        tack.copyto(a, src)
    assert a.numpy().tolist() == [7, 7, 7]


# -- concat -----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [tack.i8, tack.u64, tack.f32, tack.f64], ids=str)
def test_concat_keeps_the_order(rng, dtype):
    parts = [rng.values(dtype, n) for n in (7, 0, 1, 33, 1000)]
    out = tack.concat(tack.array(p) for p in parts)
    assert out.dtype is dtype and out.shape == (1041,)
    np.testing.assert_array_equal(out.numpy(), np.concatenate(parts), err_msg=repr(rng))


def test_concat_flattens_and_copies(rng):
    a = tack.arange(6).reshape(2, 3)
    single = tack.concat([a])
    assert single.shape == (6,)
    add_one(single)
    np.testing.assert_array_equal(a.numpy(), np.arange(6).reshape(2, 3))
    both = tack.concat([a, tack.full((), 9), tack.zeros((0, 4), tack.i32)])
    np.testing.assert_array_equal(both.numpy(), [0, 1, 2, 3, 4, 5, 9])


def test_concat_errors():
    with pytest.raises(ValueError, match=re.escape("concat() needs at least one array")):
        tack.concat([])
    with pytest.raises(TypeError, match=re.escape(
            "concat() of arrays with different dtypes (f32 and f64)")):
        tack.concat([tack.zeros(2), tack.zeros(2, tack.f64)])
    with pytest.raises(TypeError, match=re.escape(
            "concat() of arrays with different dtypes (i32 and i64)")):
        tack.concat([tack.zeros(1, tack.i32), tack.zeros(1, tack.i32),
                     tack.zeros(1, tack.i64)])
    with pytest.raises(TypeError, match=re.escape("concat() takes tack.Arrays, not ndarray")):
        tack.concat([tack.zeros(2), np.zeros(2, np.float32)])


# -- reshape -----------------------------------------------------------------------------------

def test_reshape_shares_the_buffer():
    a = tack.zeros(12, tack.i32)
    view = a.reshape(3, 4)
    assert view.shape == (3, 4) and view.dtype is tack.i32 and view.device is a.device
    mark_2d(view)
    expected = (np.arange(3)[:, None] * 100 + np.arange(4)).ravel()
    np.testing.assert_array_equal(a.numpy(), expected)
    add_one(a)
    np.testing.assert_array_equal(view.numpy().ravel(), expected + 1)
    a.fill(0)
    assert view[2, 3] == 0


@pytest.mark.parametrize("args,shape", [
    (((3, 4),), (3, 4)), (([2, 6],), (2, 6)), ((4, 3), (4, 3)), ((-1,), (12,)),
    ((2, -1), (2, 6)), ((-1, 2, 3), (2, 2, 3)), (((12, 1, -1),), (12, 1, 1)),
    ((np.int64(6), 2), (6, 2)),
])
def test_reshape_forms(args, shape):
    a = tack.arange(12)
    view = a.reshape(*args)
    assert view.shape == shape
    np.testing.assert_array_equal(view.numpy(), np.arange(12).reshape(shape))


def test_reshape_of_empty_and_0d():
    assert tack.zeros(0).reshape(-1).shape == (0,)
    assert tack.zeros(0).reshape(3, 0).shape == (3, 0)
    assert tack.full((), 5).reshape(1, 1)[0, 0] == 5
    assert tack.zeros(1).reshape(()).shape == ()


@pytest.mark.parametrize("args,message", [
    ((5,), "cannot reshape an array of 12 elements into shape (5,)"),
    ((5, -1), "cannot reshape an array of 12 elements into shape (5, -1)"),
    ((0, -1), "cannot reshape an array of 12 elements into shape (0, -1)"),
    ((-2, -6), "cannot reshape an array of 12 elements into shape (-2, -6)"),
    ((-1, -1), "reshape() takes at most one -1 extent"),
])
def test_reshape_errors(args, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        tack.arange(12).reshape(*args)


def test_reshape_keeps_the_writability():
    ro = tack.array_from_ptr(np.zeros(6), 6, tack.f64)
    view = ro.reshape(2, 3)
    assert not view.writable
    with pytest.raises(RuntimeError, match=re.escape("fill() on a read-only array")):
        view.fill(1)


# -- copy / astype ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=NAMES)
@pytest.mark.parametrize("n", SIZES)
def test_copy_is_independent(rng, dtype, n):
    host = rng.values(dtype, n)
    a = tack.array(host)
    b = a.copy()
    assert b is not a and b.dtype is dtype and b.shape == a.shape and b.writable
    np.testing.assert_array_equal(b.numpy(), host, err_msg=repr(rng))
    b.fill(0)
    np.testing.assert_array_equal(a.numpy(), host, err_msg=repr(rng))


def test_copy_keeps_the_shape_and_reads_read_only_arrays():
    ro = tack.array_from_ptr(np.arange(6.0), (2, 3), tack.f64)
    b = ro.copy()
    assert b.shape == (2, 3) and b.writable
    np.testing.assert_array_equal(b.numpy(), np.arange(6.0).reshape(2, 3))


def saturate(values, dtype):
    """The kernel language's float-to-int conversion: saturating, NaN gives 0."""
    info = np.iinfo(dtype.numpy)
    out = []
    for v in values:
        if np.isnan(v):
            out.append(0)
        elif v >= info.max:
            out.append(info.max)
        elif v <= info.min:
            out.append(info.min)
        else:
            out.append(int(v))
    return np.array(out, dtype=dtype.numpy)


SPECIAL = [np.nan, np.inf, -np.inf, 1e30, -1e30, 2.0 ** 31, 2.0 ** 63, 2.0 ** 64, -0.5,
           -2.7, 2.7, 255.5, -129.0]


@pytest.mark.parametrize("src,dst", [(tack.f32, tack.i32), (tack.f64, tack.u8),
                                     (tack.f32, tack.i64), (tack.f64, tack.u64),
                                     (tack.f64, tack.i8)], ids=str)
def test_astype_float_to_int_saturates_and_nan_gives_0(rng, src, dst):
    values = np.concatenate([np.array(SPECIAL), rng.values(tack.f64, 1000) * 1e6])
    values = values.astype(src.numpy)
    out = tack.array(values).astype(dst)
    assert out.dtype is dst and out.shape == values.shape
    np.testing.assert_array_equal(out.numpy(), saturate(values.astype(np.float64), dst),
                                  err_msg=repr(rng))


@pytest.mark.parametrize("src,dst", [(tack.i64, tack.u8), (tack.u32, tack.i16),
                                     (tack.i8, tack.u64), (tack.i64, tack.f32),
                                     (tack.f64, tack.f32), (tack.u64, tack.f64)], ids=str)
def test_astype_other_conversions_match_numpy(rng, src, dst):
    host = rng.values(src, 1001)
    out = tack.array(host).reshape(7, 11, 13).astype(dst)
    assert out.shape == (7, 11, 13) and out.dtype is dst
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = host.astype(dst.numpy).reshape(7, 11, 13)
    np.testing.assert_array_equal(out.numpy(), expected, err_msg=repr(rng))


def test_astype_dtype_spellings_and_errors():
    a = tack.arange(3)
    assert a.astype("float64").dtype is tack.f64
    assert a.astype(np.int8).dtype is tack.i8
    with pytest.raises(TypeError, match=re.escape("Unsupported numpy dtype: float16")):
        a.astype(np.float16)


# -- calling a type converts on the host as the cast inside kernels does -----------------------

HOST_CAST_VALUES = [1.7, -1.7, 255.9, -0.0, 1e10, -1e10, 2.0 ** 63, float("nan"),
                    float("inf"), -float("inf"), 2147483647.9]


@pytest.mark.parametrize("dtype", [tack.i8, tack.u8, tack.i16, tack.u16, tack.i32, tack.u32,
                                   tack.i64, tack.u64, tack.f32])
def test_calling_a_type_converts_floats_as_kernels_do(dtype):
    source = tack.array(np.array(HOST_CAST_VALUES, np.float64))
    expected = source.astype(dtype).numpy()   # the kernel's conversion
    got = np.array([dtype(v) for v in HOST_CAST_VALUES], dtype.numpy)
    np.testing.assert_array_equal(got, expected)
    assert all(type(dtype(v)) is dtype.numpy.type for v in HOST_CAST_VALUES)


@pytest.mark.parametrize("dtype, value, expected", [
    (tack.u8, 300, 44), (tack.i8, 200, -56), (tack.i8, -129, 127), (tack.u32, -1, 2 ** 32 - 1),
    (tack.i64, 2 ** 64 - 1, -1), (tack.u64, -1, 2 ** 64 - 1), (tack.i32, True, 1),
    (tack.i16, np.int64(70000), 70000 - 65536),
])
def test_calling_an_integer_type_wraps_integers(dtype, value, expected):
    assert dtype(value) == expected


@pytest.mark.parametrize("value", [2 ** 63 + 2 ** 39 + 1, 2 ** 53 + 1, -(2 ** 62) - 2 ** 37 - 1])
def test_calling_a_float_type_rounds_a_large_int_once(value):
    integer = np.uint64(value) if value >= 2 ** 63 else np.int64(value)
    assert tack.f32(value) == integer.astype(np.float32)   # not through f64 first
    assert tack.f64(value) == integer.astype(np.float64)


def test_a_0d_array_converts_to_a_python_number():
    x = tack.array(np.float32(2.5))
    n = tack.array(np.int64(3))
    assert float(x) == 2.5 and int(x) == 2 and list(range(n)) == [0, 1, 2]
    # as NumPy's 0-d arrays do, so lists of them become arrays
    np.testing.assert_array_equal(np.array([x, x]), [2.5, 2.5])
    np.testing.assert_array_equal(tack.array([n, x]).numpy(), [3.0, 2.5])
    with pytest.raises(TypeError, match=re.escape(
            "float() takes a 0-d tack.Array of scalars, not one of shape (3,) and f32 "
            "elements; read one element with a[i] or all of them with a.numpy()")):
        float(tack.zeros(3))
    with pytest.raises(TypeError, match=re.escape(
            "int() takes a 0-d tack.Array of scalars, not one of shape () and vec3(f32) "
            "elements")):
        int(tack.zeros((), tack.vec3()))
    with pytest.raises(TypeError, match=re.escape(
            "only an integer tack.Array is an index, not one of f32")):
        range(x)
