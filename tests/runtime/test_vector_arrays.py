"""Spec 003 and issue #8: host-side arrays of vector and matrix elements.

``dtype`` is the element type (``tack.vec3()``); ``shape``, ``size`` and ``len``
count elements; the storage is ``storage_shape = shape + element shape``
scalars of ``scalar_dtype``, which ``numpy()``, DLPack and host copies use.
The operations that run host kernels (fill, copyto, astype, concat) are
checked on the CPU and, where there is one, on an OpenCL device.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import tack

ELEMENTS = {
    "vec2": tack.vec2, "vec3": tack.vec3, "vec4": tack.vec4,
    "mat22": tack.mat22, "mat33": tack.mat33, "mat44": tack.mat44,
}
SHAPES = {"vec2": (2,), "vec3": (3,), "vec4": (4,), "mat22": (2, 2), "mat33": (3, 3),
          "mat44": (4, 4)}
KERNEL_FILL_BYTES = 256 * 1024


@pytest.fixture(params=["cpu", "opencl"])
def device(request):
    """The device each host operation runs on: the CPU and an OpenCL device."""
    if request.param == "opencl":
        return request.getfixturevalue("opencl")   # tests/runtime/conftest.py
    return tack.device("cpu")


def _values(rng, scalar, shape):
    """Random host values of ``scalar`` in ``shape`` (a storage shape: components last)."""
    return rng.values(scalar, math.prod(shape)).reshape(shape)


# -- metadata -------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ELEMENTS))
@pytest.mark.parametrize("scalar", [tack.f32, tack.f64, tack.i32, tack.u8], ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (1,), (7,), (3, 5)])
def test_metadata_counts_elements(name, scalar, shape):
    element = ELEMENTS[name](dtype=scalar)
    a = tack.empty(shape, element)
    components = SHAPES[name]
    size = math.prod(shape)
    assert a.dtype is element and element.scalar is scalar
    assert (a.shape, a.ndim, a.size) == (shape, len(shape), size)
    assert a.scalar_dtype is scalar
    assert a.storage_shape == shape + components
    assert a.scalar_size == size * math.prod(components)
    assert a.nbytes == a.scalar_size * scalar.itemsize
    assert a.numpy().shape == a.storage_shape and a.numpy().dtype == scalar.numpy
    if shape:
        assert len(a) == shape[0]
    else:
        with pytest.raises(TypeError, match=re.escape("len() of a 0-d array")):
            len(a)


@pytest.mark.parametrize("dtype", [tack.f32, tack.i64], ids=str)
def test_scalar_arrays_describe_their_storage_too(dtype):
    a = tack.empty((2, 3), dtype)
    assert a.scalar_dtype is dtype and a.dtype is dtype
    assert a.storage_shape == (2, 3) and a.scalar_size == 6


def test_repr_names_the_element_type():
    a = tack.zeros(4, tack.vec3(dtype=tack.f64))
    assert repr(a) == "tack.Array(shape=(4,), dtype=vec3(f64), device='cpu')"


# -- creation -----------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ELEMENTS))
@pytest.mark.parametrize("n", [0, 1, 7])
def test_zeros_ones_full_set_every_component(device, name, n):
    element = ELEMENTS[name]()
    components = SHAPES[name]
    for made, expected in ((tack.zeros(n, element, device=device), 0.0),
                           (tack.ones(n, element, device=device), 1.0),
                           (tack.full(n, 2.5, element, device=device), 2.5)):
        assert made.dtype is element and made.device is device
        np.testing.assert_array_equal(made.numpy(), np.full((n,) + components, expected,
                                                            np.float32))


@pytest.mark.parametrize("name", ["vec3", "mat22"])
@pytest.mark.parametrize("n", [0, 1, 9])
def test_full_with_one_elements_components(rng, device, name, n):
    element = ELEMENTS[name](dtype=tack.i16)
    one = _values(rng, tack.i16, SHAPES[name])
    a = tack.full((n, 2), one, element, device=device)
    assert a.shape == (n, 2)
    np.testing.assert_array_equal(a.numpy(), np.broadcast_to(one, (n, 2) + SHAPES[name]),
                                  err_msg=repr(rng))


def test_full_with_a_sequence_needs_an_element_dtype():
    with pytest.raises(TypeError, match=re.escape(
            "cannot infer a Tack dtype from list: a sequence fill_value needs an "
            "element dtype, such as dtype=tack.vec3()")):
        tack.full(3, [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match=re.escape(
            "cannot infer a Tack dtype from ndarray: a sequence fill_value needs an "
            "element dtype, such as dtype=tack.vec3()")):
        tack.full(3, np.zeros(4))


@pytest.mark.parametrize("given", [tack.f64, np.float64, np.dtype("f4"), tack.vec2(), "f64"],
                         ids=["tack.f64", "np.float64", "np.dtype", "tack.vec2()", "str"])
def test_an_element_type_given_as_a_component_says_to_use_the_keyword(given):
    with pytest.raises(TypeError, match=re.escape(
            "tack.vec3() takes numbers as its components; its component type is a "
            "keyword: tack.vec3(dtype=tack.f64)")):
        tack.vec3(given)


@pytest.mark.parametrize("name", sorted(ELEMENTS))
@pytest.mark.parametrize("shape", [(0,), (1,), (5,), (3, 1, 2)])
@pytest.mark.parametrize("scalar", [tack.f32, tack.i64], ids=str)
def test_array_consumes_the_trailing_component_dims(rng, device, name, shape, scalar):
    element = ELEMENTS[name](dtype=scalar)
    host = _values(rng, scalar, shape + SHAPES[name])
    a = tack.array(host, dtype=element, device=device)
    assert (a.shape, a.dtype, a.device) == (shape, element, device)
    out = a.numpy()
    assert out.dtype == scalar.numpy
    np.testing.assert_array_equal(out, host, err_msg=repr(rng))
    np.testing.assert_array_equal(np.asarray(a), host, err_msg=repr(rng))
    if host.size:  # an empty list has lost the component dimensions
        b = tack.asarray(host.tolist(), dtype=element, device=device)
        np.testing.assert_array_equal(b.numpy(), host, err_msg=repr(rng))


def test_array_converts_values_to_the_scalar_dtype(rng):
    host = rng.values(tack.f64, 12).reshape(4, 3)
    a = tack.array(host, dtype=tack.vec3())
    np.testing.assert_array_equal(a.numpy(), host.astype(np.float32), err_msg=repr(rng))
    one = tack.array([1, 2, 3, 4], dtype=tack.vec4(dtype=tack.u16))
    assert one.shape == () and one.dtype == tack.vec4(dtype=tack.u16)
    np.testing.assert_array_equal(one[()], np.array([1, 2, 3, 4], np.uint16))


@pytest.mark.parametrize("make,values,dtype,name", [
    (tack.array, np.zeros((4, 2)), tack.vec3(), "array()"),
    (tack.array, np.zeros(3), tack.mat33(), "array()"),
    (tack.asarray, np.zeros((2, 3, 4)), tack.mat33(), "asarray()"),
    (tack.array, 5.0, tack.vec2(), "array()"),
    (tack.array, [], tack.vec4(dtype=tack.i32), "array()"),
])
def test_array_refuses_values_without_the_element_shape(make, values, dtype, name):
    shape = np.shape(values)
    with pytest.raises(ValueError, match=re.escape(
            f"{name} with dtype {dtype} takes values whose last dimensions are the "
            f"element shape {dtype.shape}; got values of shape {shape}")):
        make(values, dtype=dtype)


def test_array_of_a_tack_vector_array(rng, device):
    host = _values(rng, tack.f32, (5, 3))
    a = tack.array(host, dtype=tack.vec3(), device=device)
    same = tack.array(a)
    assert same.dtype is tack.vec3() and same is not a
    np.testing.assert_array_equal(same.numpy(), host, err_msg=repr(rng))
    wider = tack.array(a, dtype=tack.f64)
    assert wider.dtype is tack.vec3(dtype=tack.f64) and wider.shape == (5,)
    np.testing.assert_array_equal(wider.numpy(), host.astype(np.float64), err_msg=repr(rng))
    assert tack.asarray(a) is a
    assert tack.asarray(a, dtype=tack.vec3()) is a
    assert tack.asarray(a, dtype=tack.f32) is a  # names the same element type
    assert tack.asarray(a, dtype=tack.f64).dtype is tack.vec3(dtype=tack.f64)
    with pytest.raises(TypeError, match=re.escape(
            "asarray() cannot change the element dimensions: vec3(f32) elements have "
            "shape (3,), vec4(f32) elements have shape (4,); to convert only the scalar "
            "type, pass a scalar dtype such as tack.f32")):
        tack.asarray(a, dtype=tack.vec4())


def test_arange_refuses_element_types():
    with pytest.raises(TypeError, match=re.escape(
            "arange() makes scalar arrays, not vec3(f32) arrays; build the components "
            "with numpy and copy them in with tack.array(values, dtype=...)")):
        tack.arange(6, dtype=tack.vec3())
    with pytest.raises(TypeError, match=re.escape("not mat22(i32) arrays")):
        tack.arange(0, 8, 2, dtype=tack.mat22(dtype=tack.i32))


# -- *_like -----------------------------------------------------------------------------

@pytest.mark.parametrize("like", ["empty_like", "zeros_like", "ones_like", "full_like"])
def test_like_keeps_the_element_type(device, like):
    proto = tack.zeros((2, 3), tack.mat22(), device=device)
    make = getattr(tack, like)
    args = (proto, 4) if like == "full_like" else (proto,)
    same = make(*args)
    assert (same.shape, same.dtype, same.device) == ((2, 3), tack.mat22(), device)
    # A scalar override keeps the element dimensions (spec).
    wider = make(*args, dtype=tack.f64)
    assert wider.dtype is tack.mat22(dtype=tack.f64) and wider.storage_shape == (2, 3, 2, 2)
    if like != "empty_like":
        fill = {"zeros_like": 0, "ones_like": 1, "full_like": 4}[like]
        np.testing.assert_array_equal(wider.numpy(), np.full((2, 3, 2, 2), fill))
    other = make(*args, dtype=tack.vec3(dtype=tack.i8))
    assert other.dtype is tack.vec3(dtype=tack.i8) and other.shape == (2, 3)


def test_like_of_numpy_values_with_an_element_dtype():
    host = np.zeros((7, 4), np.float64)
    a = tack.zeros_like(host, dtype=tack.vec4())
    assert (a.shape, a.dtype) == ((7,), tack.vec4())
    assert tack.empty_like(host).shape == (7, 4)  # without one: a scalar array
    b = tack.full_like(host, [1, 2, 3, 4], dtype=tack.vec4(dtype=tack.i32))
    np.testing.assert_array_equal(b.numpy(), np.tile(np.arange(1, 5), (7, 1)))
    with pytest.raises(ValueError, match=re.escape(
            "empty_like() with dtype vec3(f32) takes values whose last dimensions are "
            "the element shape (3,); got values of shape (7, 4)")):
        tack.empty_like(host, dtype=tack.vec3())


# -- host reads -----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["vec3", "mat33"])
def test_element_reads_are_numpy_copies(rng, device, name):
    element = ELEMENTS[name](dtype=tack.f64)
    host = _values(rng, tack.f64, (3, 5) + SHAPES[name])
    a = tack.array(host, dtype=element, device=device)
    for i, j in ((0, 0), (2, 4), (-1, -2), (1, 3)):
        got = a[i, j]
        assert isinstance(got, np.ndarray) and got.shape == SHAPES[name]
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, host[i, j], err_msg=repr(rng))
        got[...] = 0  # a copy: the array is unchanged
    np.testing.assert_array_equal(a.numpy(), host, err_msg=repr(rng))
    with pytest.raises(IndexError, match=re.escape(
            "index 3 is out of bounds for a dimension of length 3")):
        a[3, 0]
    with pytest.raises(TypeError, match=re.escape(
            "a tack.Array is read on the host with one integer per dimension (2 here), "
            "or viewed with a[start:stop] (a range of the first dimension); use a[()] "
            "for a 0-d array and a.numpy() for anything else")):
        a[1]  # one integer per *array* dimension; components are not indexed
    with pytest.raises(TypeError, match=re.escape("does not support host assignment")):
        a[0, 0] = host[0, 0]


def test_zero_d_vector_array():
    a = tack.full((), 1.5, tack.vec2())
    assert a.shape == () and a.size == 1 and a.storage_shape == (2,)
    np.testing.assert_array_equal(a[()], np.array([1.5, 1.5], np.float32))
    a.fill(tack.vec2(3, -4))  # the host constructor's components
    np.testing.assert_array_equal(a.numpy(), np.array([3, -4], np.float32))


# -- fill -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ELEMENTS))
@pytest.mark.parametrize("scalar", [tack.f32, tack.i32, tack.u8, tack.f64], ids=str)
def test_fill_with_components_and_with_a_scalar(rng, device, name, scalar):
    element = ELEMENTS[name](dtype=scalar)
    components = SHAPES[name]
    n = 1 + int(rng.gen.integers(0, 40))
    a = tack.empty(n, element, device=device)
    one = _values(rng, scalar, components)
    a.fill(one)
    np.testing.assert_array_equal(a.numpy(), np.broadcast_to(one, (n,) + components),
                                  err_msg=repr(rng))
    a.fill(one.tolist())  # a (nested) sequence works too
    np.testing.assert_array_equal(a.numpy(), np.broadcast_to(one, (n,) + components),
                                  err_msg=repr(rng))
    a.fill(7)
    np.testing.assert_array_equal(a.numpy(), np.full((n,) + components, 7, scalar.numpy))


@pytest.mark.parametrize("name,scalar", [("vec3", tack.f32), ("mat44", tack.f64),
                                         ("vec2", tack.i16)])
def test_fill_of_a_large_array_runs_as_a_kernel(rng, device, name, scalar):
    element = ELEMENTS[name](dtype=scalar)
    n = KERNEL_FILL_BYTES // element.itemsize + 3  # past the kernel threshold, odd
    assert n * element.itemsize >= KERNEL_FILL_BYTES
    a = tack.empty(n, element, device=device)
    one = _values(rng, scalar, SHAPES[name])
    a.fill(one)
    np.testing.assert_array_equal(a.numpy(), np.broadcast_to(one, (n,) + SHAPES[name]),
                                  err_msg=repr(rng))
    a.fill(-3)
    np.testing.assert_array_equal(a.numpy(), np.full((n,) + SHAPES[name], -3,
                                                     scalar.numpy))


def test_fill_converts_each_component_as_ndarray_fill(device):
    a = tack.zeros(3, tack.vec3(dtype=tack.i32), device=device)
    a.fill([1.9, -2.7, 3])
    np.testing.assert_array_equal(a.numpy(), np.tile([1, -2, 3], (3, 1)))
    b = tack.zeros(2, tack.vec2(dtype=tack.u8), device=device)
    with pytest.raises(OverflowError, match=re.escape(
            "Python integer -1 out of bounds for uint8")):
        b.fill([1, -1])
    np.testing.assert_array_equal(b.numpy(), 0)  # nothing was written


@pytest.mark.parametrize("name,value", [
    ("vec3", [1, 2]), ("vec3", [[1, 2, 3]]), ("mat22", [1, 2, 3, 4]),
    ("mat33", np.zeros((3, 2))), ("vec4", np.zeros((2, 2))),
])
def test_fill_refuses_the_wrong_element_shape(name, value):
    element = ELEMENTS[name]()
    a = tack.zeros(4, element)
    with pytest.raises(ValueError, match=re.escape(
            f"fill() of a {element} array takes a scalar or one element's components, "
            f"of shape {SHAPES[name]}; got shape {np.shape(value)}")):
        a.fill(value)
    np.testing.assert_array_equal(a.numpy(), 0)


def test_fill_of_a_scalar_array_still_refuses_sequences():
    with pytest.raises(TypeError, match=re.escape(
            "fill() of a scalar array takes a scalar, not a sequence")):
        tack.zeros(3).fill([1, 2, 3])


def test_fill_of_a_read_only_vector_array():
    memory = np.zeros((4, 3), np.float32)
    a = tack.array_from_ptr(memory, 4, tack.vec3())
    with pytest.raises(RuntimeError, match=re.escape(
            "fill() on a read-only array (wrapped with writable=False or imported "
            "read-only)")):
        a.fill([1, 2, 3])


# -- copyto ------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 7])
def test_copyto_from_host_values(rng, device, n):
    a = tack.zeros(n, tack.mat22(dtype=tack.f64), device=device)
    host = _values(rng, tack.f32, (n, 2, 2))
    tack.copyto(a, host)
    np.testing.assert_array_equal(a.numpy(), host.astype(np.float64), err_msg=repr(rng))
    row = rng.values(tack.f64, 2)
    tack.copyto(a, row)  # broadcasts to a.numpy()'s shape, as np.copyto would
    np.testing.assert_array_equal(a.numpy(), np.broadcast_to(row, (n, 2, 2)),
                                  err_msg=repr(rng))
    tack.copyto(a, 4)
    np.testing.assert_array_equal(a.numpy(), np.full((n, 2, 2), 4.0))


@pytest.mark.parametrize("shape,src", [((4,), (12,)), ((4,), (4,)), ((2, 2), (4, 3)),
                                       ((5,), (5, 1, 3, 1))])
def test_copyto_refuses_flat_and_mismatched_host_values(shape, src):
    a = tack.zeros(shape, tack.vec3())
    with pytest.raises(ValueError, match=re.escape(
            f"copyto() into an array whose values have shape {shape + (3,)}: cannot "
            f"broadcast shape {src}")):
        tack.copyto(a, np.ones(src))
    np.testing.assert_array_equal(a.numpy(), 0)


def test_copyto_from_a_tack_array_converts_on_the_device(rng, device):
    host = _values(rng, tack.f64, (2, 5, 3))
    src = tack.array(host, dtype=tack.vec3(dtype=tack.f64), device=device)
    a = tack.empty((2, 5), tack.vec3(), device=device)
    tack.copyto(a, src)
    np.testing.assert_array_equal(a.numpy(), host.astype(np.float32), err_msg=repr(rng))
    # Same shape and scalar count: a mat22 array copies into a vec4 array.
    m = tack.array(_values(rng, tack.i32, (3, 2, 2)), dtype=tack.mat22(dtype=tack.i32),
                   device=device)
    v = tack.zeros(3, tack.vec4(dtype=tack.i32), device=device)
    tack.copyto(v, m)
    np.testing.assert_array_equal(v.numpy(), m.numpy().reshape(3, 4), err_msg=repr(rng))


@pytest.mark.parametrize("a_dtype,a_shape,src_dtype,src_shape,a_storage,src_storage", [
    (tack.vec3(), (4,), tack.f32, (4,), (4, 3), (4,)),
    (tack.vec3(), (4,), tack.vec4(), (4,), (4, 3), (4, 4)),
    (tack.vec3(), (4,), tack.vec3(), (2, 2), (4, 3), (2, 2, 3)),
])
def test_copyto_refuses_another_shape_or_scalar_count(a_dtype, a_shape, src_dtype,
                                                      src_shape, a_storage, src_storage):
    a = tack.zeros(a_shape, a_dtype)
    with pytest.raises(ValueError, match=re.escape(
            f"copyto() into an array whose values have shape {a_storage}: cannot "
            f"broadcast shape {src_storage}")):
        tack.copyto(a, tack.ones(src_shape, src_dtype))
    np.testing.assert_array_equal(a.numpy(), 0)


def test_copyto_refuses_the_same_storage_in_other_elements():
    a = tack.zeros((4, 3))
    with pytest.raises(ValueError, match=re.escape(
            "copyto() from a Tack array needs the same shape in elements: a vec3(f32) "
            "array of shape (4,) into a f32 array of shape (4, 3); to copy the values "
            "across element types, pass src.numpy()")):
        tack.copyto(a, tack.ones(4, tack.vec3()))
    tack.copyto(a, tack.ones(4, tack.vec3()).numpy())
    np.testing.assert_array_equal(a.numpy(), 1)


# -- copy, astype, reshape, concat, to_device ------------------------------------------------

@pytest.mark.parametrize("name", ["vec2", "vec4", "mat33"])
@pytest.mark.parametrize("n", [0, 1, 7])
def test_copy_and_astype_keep_the_element_dims(rng, device, name, n):
    element = ELEMENTS[name]()
    host = _values(rng, tack.f32, (n,) + SHAPES[name])
    a = tack.array(host, dtype=element, device=device)
    b = a.copy()
    assert b.dtype is element and b is not a and b.device is device
    np.testing.assert_array_equal(b.numpy(), host, err_msg=repr(rng))
    wide = a.astype(tack.f64)
    assert wide.dtype is ELEMENTS[name](dtype=tack.f64) and wide.shape == (n,)
    np.testing.assert_array_equal(wide.numpy(), host.astype(np.float64), err_msg=repr(rng))
    same = a.astype(ELEMENTS[name](dtype=tack.f64))
    np.testing.assert_array_equal(same.numpy(), host.astype(np.float64), err_msg=repr(rng))


def test_astype_uses_the_kernel_conversion_rules(device):
    host = np.array([[np.nan, 1e30, -1e30], [2.9, -2.9, 0.0]], np.float32)
    a = tack.array(host, dtype=tack.vec3(), device=device)
    ints = a.astype(tack.i32)
    assert ints.dtype is tack.vec3(dtype=tack.i32)
    limit = np.iinfo(np.int32)
    np.testing.assert_array_equal(ints.numpy(), [[0, limit.max, limit.min], [2, -2, 0]])


def test_astype_refuses_other_element_dims():
    with pytest.raises(TypeError, match=re.escape(
            "astype() cannot change the element dimensions: vec3(f32) elements have "
            "shape (3,), mat33(f32) elements have shape (3, 3); to convert only the "
            "scalar type, pass a scalar dtype such as tack.f32")):
        tack.zeros(2, tack.vec3()).astype(tack.mat33())
    with pytest.raises(TypeError, match=re.escape(
            "astype() cannot change the element dimensions: vec4(f32) elements have "
            "shape (4,), mat22(f64) elements have shape (2, 2)")):
        tack.zeros(2, tack.vec4()).astype(tack.mat22(dtype=tack.f64))
    with pytest.raises(TypeError, match=re.escape(
            "astype() cannot change the element dimensions: f32 elements have shape (), "
            "vec3(f32) elements have shape (3,); to build vec3(f32) elements, pass "
            "values whose last dimensions are the components to tack.array(values, "
            "dtype=...)")):
        tack.zeros(3).astype(tack.vec3())


def test_reshape_counts_elements_and_shares_the_buffer(rng, device):
    host = _values(rng, tack.f32, (6, 3))
    a = tack.array(host, dtype=tack.vec3(), device=device)
    b = a.reshape(2, 3)
    assert (b.shape, b.dtype, b.storage_shape) == ((2, 3), tack.vec3(), (2, 3, 3))
    np.testing.assert_array_equal(b.numpy(), host.reshape(2, 3, 3), err_msg=repr(rng))
    assert a.reshape(-1, 2).shape == (3, 2)
    b.fill([7, 8, 9])  # a view: a changes too
    np.testing.assert_array_equal(a.numpy(), np.tile([7, 8, 9], (6, 1)))
    with pytest.raises(ValueError, match=re.escape(
            "cannot reshape an array of 6 elements into shape (18,)")):
        a.reshape(18)


@pytest.mark.parametrize("sizes", [(0,), (1, 0, 4), (3, 5, 1)])
def test_concat_of_vector_arrays(rng, device, sizes):
    hosts = [_values(rng, tack.i64, (n, 2, 2)) for n in sizes]
    arrays = [tack.array(h, dtype=tack.mat22(dtype=tack.i64), device=device)
              for h in hosts]
    out = tack.concat(arrays)
    assert (out.shape, out.dtype, out.device) == ((sum(sizes),), arrays[0].dtype, device)
    np.testing.assert_array_equal(out.numpy(), np.concatenate(hosts), err_msg=repr(rng))


def test_concat_refuses_mixed_element_types():
    with pytest.raises(TypeError, match=re.escape(
            "concat() of arrays with different dtypes (vec3(f32) and vec3(f64))")):
        tack.concat([tack.zeros(2, tack.vec3()), tack.zeros(2, tack.vec3(dtype=tack.f64))])
    with pytest.raises(TypeError, match=re.escape(
            "concat() of arrays with different dtypes (f32 and vec3(f32))")):
        tack.concat([tack.zeros(3), tack.zeros(1, tack.vec3())])


def test_to_device_keeps_the_element_type(rng, opencl):
    gpu = opencl
    host = _values(rng, tack.f32, (4, 3, 3))
    a = tack.array(host, dtype=tack.mat33())
    moved = a.to_device(gpu)
    assert (moved.device, moved.dtype, moved.shape) == (gpu, tack.mat33(), (4,))
    back = moved.to_device("cpu")
    assert back.dtype is tack.mat33()
    np.testing.assert_array_equal(back.numpy(), host, err_msg=repr(rng))


# -- reductions ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["vec3", "mat22"])
@pytest.mark.parametrize("scalar", [tack.f32, tack.i32, tack.u64], ids=str)
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 4)])
def test_reductions_are_component_wise(rng, name, scalar, shape):
    host = _values(rng, scalar, shape + SHAPES[name])
    if scalar.is_int:
        host //= 1 << 8  # keep integer sums inside the accumulator
    a = tack.array(host, dtype=ELEMENTS[name](dtype=scalar))
    per = host.reshape((-1,) + SHAPES[name])
    acc = np.float64 if scalar.is_float else (np.int64 if scalar.is_signed else np.uint64)
    for got, expected in ((a.sum(), per.sum(axis=0, dtype=acc).astype(np.float64)),
                          (a.min(), per.min(axis=0).astype(np.float64)),
                          (a.max(), per.max(axis=0).astype(np.float64)),
                          (a.mean(), per.sum(axis=0, dtype=acc).astype(np.float64)
                           / per.shape[0])):
        assert isinstance(got, np.ndarray) and got.dtype == np.float64
        assert got.shape == SHAPES[name]
        np.testing.assert_array_equal(got, expected, err_msg=repr(rng))


def test_reductions_of_an_empty_vector_array():
    a = tack.zeros(0, tack.vec3())
    np.testing.assert_array_equal(a.sum(), np.zeros(3))
    assert np.isnan(a.mean()).all() and a.mean().shape == (3,)
    for which in ("min", "max"):
        with pytest.raises(ValueError, match=re.escape(
                f"{which} reduction requires a nonempty array")):
            getattr(a, which)()


def test_reductions_on_opencl(rng, opencl):
    gpu = opencl
    host = _values(rng, tack.f32, (5, 4))
    a = tack.array(host, dtype=tack.vec4(), device=gpu)
    np.testing.assert_array_equal(a.sum(), host.sum(axis=0, dtype=np.float64),
                                  err_msg=repr(rng))
    np.testing.assert_array_equal(a.max(), host.max(axis=0), err_msg=repr(rng))


# -- array_from_ptr and DLPack -------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 5])
def test_array_from_ptr_counts_elements(rng, n):
    memory = _values(rng, tack.f64, (n, 3))
    a = tack.array_from_ptr(memory, n, tack.vec3(dtype=tack.f64))
    assert (a.shape, a.dtype, a.storage_shape, a.writable) == (
        (n,), tack.vec3(dtype=tack.f64), (n, 3), False)
    np.testing.assert_array_equal(a.numpy(), memory, err_msg=repr(rng))
    b = tack.array_from_ptr(memory.ctypes.data, (n,), tack.vec3(dtype=tack.f64),
                            writable=True)
    b.fill([1, 2, 3])  # writes the wrapped memory
    np.testing.assert_array_equal(memory, np.tile([1.0, 2.0, 3.0], (n, 1)))
    m = tack.array_from_ptr(np.zeros((2, 4), np.float32), 2, tack.mat22())
    assert m.storage_shape == (2, 2, 2)


@pytest.mark.parametrize("name", ["vec3", "mat44"])
@pytest.mark.parametrize("n", [0, 1, 3])
def test_dlpack_export_is_the_scalar_storage(rng, name, n):
    host = _values(rng, tack.i32, (n,) + SHAPES[name])
    a = tack.array(host, dtype=ELEMENTS[name](dtype=tack.i32))
    view = np.from_dlpack(a)
    assert view.shape == (n,) + SHAPES[name] and view.dtype == np.int32
    np.testing.assert_array_equal(view, host, err_msg=repr(rng))
    if n:
        view[0] = -5  # shares the memory
        np.testing.assert_array_equal(a[0], np.full(SHAPES[name], -5))
    back = tack.from_dlpack(a)  # import is unchanged: a scalar array of the storage
    assert back.dtype is tack.i32 and back.shape == (n,) + SHAPES[name]


def test_dlpack_export_of_a_read_only_vector_array():
    memory = np.arange(6, dtype=np.float32)
    a = tack.array_from_ptr(memory, 2, tack.vec3())
    view = np.from_dlpack(a)
    assert view.shape == (2, 3) and not view.flags.writeable
