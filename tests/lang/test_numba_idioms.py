"""Idioms a Numba port brings along (the porting audit): ``n, m = a.shape``,
NumPy's constants, and the messages for the ones a kernel does not take
(docs/language.md, "Arrays and indexing"). Checked against NumPy."""

import math
import re

import numpy as np
import pytest

import tack


@tack.kernel
def scaled_grid(a, out):
    n, m = a.shape
    for i, j in tack.ndindex(n, m):
        out[i, j] = a[i, j] * np.pi + n * m - np.e


@tack.kernel
def row_lengths(a, out):
    n, m = a.shape   # a is never indexed: the unpacking alone gives its rank
    for i in range(n):
        out[i] = m


@tack.kernel
def one_extent(points, out):
    n, = points.shape
    for i in range(n):
        out[i] = tack.dot(points[i], points[i])


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (3, 5), (17, 4)])
def test_unpacking_a_shape(shape, rng):
    x = rng.floats(math.prod(shape), dtype=np.float64).reshape(shape)
    out = tack.zeros(shape, tack.f64)
    scaled_grid(tack.array(x), out)
    n, m = shape
    np.testing.assert_allclose(out.numpy(), x * np.pi + n * m - np.e, rtol=1e-12,
                               atol=1e-12, err_msg=f"seed={rng.seed}")
    lengths = tack.zeros(n, tack.i64)
    row_lengths(tack.array(x), lengths)
    np.testing.assert_array_equal(lengths.numpy(), np.full(n, m))


def test_unpacking_the_shape_of_a_vector_array(rng):
    pts = rng.floats(7 * 3).reshape(7, 3)
    out = tack.zeros(7, tack.f32)
    one_extent(tack.array(pts, dtype=tack.vec3()), out)
    np.testing.assert_allclose(out.numpy(), (pts * pts).sum(axis=1), rtol=1e-5,
                               err_msg=f"seed={rng.seed}")


def test_the_unpacked_rank_must_be_the_arrays():
    out = tack.zeros(3, tack.i64)
    for shape in ((5,), (2, 2, 2)):
        with pytest.raises(TypeError, match=re.escape(
                f"Kernel 'row_lengths': parameter 'a' is indexed with 2 indices, but its "
                f"array has {len(shape)} dimension(s)")):
            row_lengths(tack.zeros(shape), out)
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'two_extents': unpacking points.shape, of an array with 1 "
            "dimension(s) (of vec3(f32) elements), into 2 names at line 3, column 12")):
        two_extents(tack.zeros(3, tack.vec3()), tack.zeros(3))


@tack.kernel
def two_extents(points, out):
    n, m = points.shape
    for i in range(n):
        out[i] = tack.dot(points[i], points[i]) * m


@tack.kernel
def squared_norms(pos, out):
    for i in range(len(out)):
        out[i] = tack.dot(pos[i], pos[i])


def test_a_vector_function_of_a_scalar_element_names_the_vector_dtype():
    """An (n, 3) array made without dtype=tack.vec3(): pos[i] is one scalar."""
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'squared_norms': dot() takes vectors (pos[i] is one scalar of array "
            "'pos': for an array of vectors, make it with dtype=tack.vec3() or another "
            "vector type) at line 4, column 27")):
        squared_norms(tack.zeros(4), tack.zeros(4))
