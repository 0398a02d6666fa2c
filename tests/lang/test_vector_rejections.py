"""Vectors and matrices in kernels: the mistakes, each refused with its exact
message before any array changes (docs/language.md, "Vectors and matrices").
The working forms are in test_vectors.py."""

import re

import numpy as np
import pytest

import tack


# -- rejections --------------------------------------------------------------------------------

@tack.kernel
def e_compare(p, out):
    for i in range(len(p)):
        if p[i] < p[i]:
            out[i] = 1.0


@tack.kernel
def e_equal(p, out):
    for i in range(len(p)):
        out[i] = p[i] == p[i]


@tack.kernel
def e_as_index(p, out):
    for i in range(len(p)):
        out[p[i]] = 1.0


@tack.kernel
def e_as_bound(p, out):
    for i in range(len(p)):
        for j in range(p[i]):
            out[i] = 1.0


@tack.kernel
def e_shapes(p, q, out):
    for i in range(len(p)):
        out[i] = p[i] + q[i]


@tack.kernel
def e_scalar_into_vector(p, out):
    for i in range(len(p)):
        v = p[i]
        v = 1.0
        out[i] = v


@tack.kernel
def e_vector_into_scalar(p, out):
    for i in range(len(p)):
        v = 1.0
        v = p[i]
        out[i] = v


@tack.kernel
def e_two_indices(p, out):
    for i in range(len(p)):
        out[i] = p[i, 0]


@tack.kernel
def e_shape_past_rank(p, out):
    for i in range(p.shape[1]):
        out[i] = p[i]


@tack.kernel
def e_cross(p, out):
    for i in range(len(p)):
        out[i] = tack.cross(p[i], p[i])


@tack.kernel
def e_component_index(p, out):
    for i in range(len(p)):
        out[i] = p[i][3]


@tack.kernel
def e_component_name(p, out):
    for i in range(len(p)):
        out[i] = p[i].w


@tack.kernel
def e_component_count(p):
    for i in range(len(p)):
        p[i] = tack.vec3(1.0, 2.0)


@tack.kernel
def e_keyword(p):
    for i in range(len(p)):
        p[i] = tack.vec3(1.0, 2.0, 3.0, kind=tack.f64)


@tack.kernel
def e_vector_into_scalar_array(p, out):
    for i in range(len(p)):
        out[i] = p[i]


@tack.kernel
def e_runtime_component_store(p, k):
    for i in range(len(p)):
        v = p[i]
        v[k] = 1.0
        p[i] = v


@tack.kernel
def e_matmul_scalar(out):
    for i in range(len(out)):
        out[i] = out[i] @ out[i]


@tack.kernel
def e_matrix_row_store(m):
    for i in range(len(m)):
        w = m[i]
        w[1] = 3.0
        m[i] = w


@tack.kernel
def e_matrix_row_component_store(m):
    for i in range(len(m)):
        w = m[i]
        w[1][1] = 9.0
        m[i] = w


def V3(n=2):
    return tack.zeros(n, tack.vec3())


REJECTIONS = [
    (e_compare, lambda: (V3(), tack.zeros(2)), TypeError,
     "Kernel 'e_compare': a vec3 where a scalar is needed at line 4, column 12"),
    (e_equal, lambda: (V3(), tack.zeros(2)), TypeError,
     "Kernel 'e_equal': a vec3 where a scalar is needed at line 4, column 18"),
    (e_as_index, lambda: (V3(), tack.zeros(2)), TypeError,
     "Kernel 'e_as_index': a vec3 where a scalar is needed at line 4, column 13"),
    (e_as_bound, lambda: (V3(), tack.zeros(2)), TypeError,
     "Kernel 'e_as_bound': a vec3 where a scalar is needed at line 4, column 24"),
    (e_shapes, lambda: (V3(), tack.zeros(2, tack.vec2()), V3()), TypeError,
     "Kernel 'e_shapes': the operands of + have different shapes: a vec3 and a vec2 at "
     "line 4, column 18"),
    (e_scalar_into_vector, lambda: (V3(), V3()), TypeError,
     "Kernel 'e_scalar_into_vector': 'v' holds a vec3 and cannot be assigned a scalar "
     "at line 5, column 9"),
    (e_vector_into_scalar, lambda: (V3(), V3()), TypeError,
     "Kernel 'e_vector_into_scalar': 'v' holds a scalar and cannot also hold a vec3 "
     "at line 5, column 9"),
    (e_shape_past_rank, lambda: (V3(), V3()), TypeError,
     "Kernel 'e_shape_past_rank': p.shape[1] of an array with 1 dimension(s) "
     "(of vec3(f32) elements) at line 3, column 20"),
    (e_cross, lambda: (tack.zeros(2, tack.vec2()), V3()), TypeError,
     "Kernel 'e_cross': cross() takes two vec3 values at line 4, column 18"),
    (e_component_index, lambda: (V3(), tack.zeros(2)), IndexError,
     "Kernel 'e_component_index': component index 3 out of range 0..2 at line 4, column 18"),
    (e_component_name, lambda: (V3(), tack.zeros(2)), TypeError,
     "Kernel 'e_component_name': a vec3 has no component '.w' at line 4, column 18"),
    (e_component_count, lambda: (V3(),), TypeError,
     "Kernel 'e_component_count': tack.vec3() takes 3 components (or one scalar), got 2 "
     "at line 4, column 16"),
    (e_keyword, lambda: (V3(),), tack.UnsupportedSyntaxError,
     "Kernel 'e_keyword': unsupported keyword argument at line 4, column 46"),
    (e_vector_into_scalar_array, lambda: (V3(), tack.zeros(2)), TypeError,
     "Kernel 'e_vector_into_scalar_array': a vec3 stored into an element of the scalar "
     "array 'out' at line 4, column 9"),
    (e_runtime_component_store, lambda: (V3(), 1), tack.UnsupportedSyntaxError,
     "Kernel 'e_runtime_component_store': unsupported component assignment with an index "
     "that is not an integer literal at line 5, column 9"),
    (e_matrix_row_store, lambda: (tack.zeros(2, tack.mat22()),), tack.UnsupportedSyntaxError,
     "Kernel 'e_matrix_row_store': unsupported component assignment with 1 index into a "
     "mat22 (an entry takes 2: m[r, c]) at line 5, column 9"),
    (e_matrix_row_component_store, lambda: (tack.zeros(2, tack.mat22()),),
     tack.UnsupportedSyntaxError,
     "Kernel 'e_matrix_row_component_store': unsupported assignment to a component of "
     "w[1] (assign v.x, v[k] or m[r, c] of a local, or a[i].x of an array element) at "
     "line 5, column 9"),
    (e_matmul_scalar, lambda: (tack.zeros(2),), TypeError,
     "Kernel 'e_matmul_scalar': operator @ needs a matrix or vector on both sides "
     "at line 4, column 18"),
]


@pytest.mark.parametrize("kernel, make, error, message", REJECTIONS,
                         ids=[r[0].name for r in REJECTIONS])
def test_rejections(kernel, make, error, message):
    args = make()
    before = [a.numpy().copy() for a in args if isinstance(a, tack.Array)]
    with pytest.raises(error, match=f"^{re.escape(message)}(\n|$)"):   # a source note may follow
        kernel(*args)
    after = [a.numpy() for a in args if isinstance(a, tack.Array)]
    for b, a in zip(before, after):
        np.testing.assert_array_equal(a, b)


def test_two_indices_into_a_vector_array_points_at_the_access():
    message = ("Kernel 'e_two_indices': array 'p' of vec3(f32) elements has 1 dimension(s) but "
               "is indexed with 2 indices (index the element, then its components: p[i].x) "
               "at line 4, column 18")
    with pytest.raises(TypeError, match=f"^{re.escape(message)}(\n|$)"):
        e_two_indices(V3(), tack.zeros(2))
