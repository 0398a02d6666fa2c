"""Issue #8: vectors and matrices through device functions and kernels'
returned values (docs/language.md, "Vectors and matrices" and "Device
functions"), against NumPy on fresh random inputs; tolerances as in
test_vectors.py (tests/vector_values.py).
"""

import re

import numpy as np
import pytest

import tack
from vector_values import F32, F64, SIZES, varr, vecs   # tests/ is on sys.path


# -- device functions and returns ------------------------------------------------------------

@tack.func
def reflect_if_facing(v, nrm):
    d = tack.dot(v, nrm)
    if d >= 0.0:
        return v
    if d < -100.0:
        return tack.vec3(0.0)
    return v - 2.0 * d * nrm


@tack.func
def split(v):
    return v * 2.0, tack.length(v)


@tack.kernel
def k_device_vectors(p, nrm, out, lengths):
    for i in range(len(p)):
        r = reflect_if_facing(p[i], tack.normalize(nrm[i]))
        twice, length = split(r)
        out[i] = twice
        lengths[i] = length


@pytest.mark.parametrize("n", SIZES)
def test_device_functions_take_and_return_vectors(n, rng):
    p, nrm = vecs(rng, n, (3,)), vecs(rng, n, (3,), low=0.5)
    if n:
        p[0] = -nrm[0] * 1000.0         # dot < -100: the second early return
    out, lengths = tack.zeros(n, tack.vec3()), tack.zeros(n)
    k_device_vectors(varr(p, tack.vec3()), varr(nrm, tack.vec3()), out, lengths)
    unit = nrm / np.linalg.norm(nrm, axis=1, keepdims=True)
    d = (p * unit).sum(1, keepdims=True)
    r = np.where(d >= 0, p, np.where(d < -100, 0.0, p - 2 * d * unit)).astype(np.float32)
    msg = f"seed={rng.seed}"
    np.testing.assert_allclose(out.numpy(), 2 * r, rtol=1e-5, atol=1e-4, err_msg=msg)
    np.testing.assert_allclose(lengths.numpy(), np.linalg.norm(r, axis=1), rtol=1e-5,
                               atol=1e-4, err_msg=msg)


@tack.kernel
def k_return_vec(p, s) -> tack.vec3:
    for i in range(len(p)):
        p[i] = p[i] * s
    return p[0] + p[len(p) - 1]


@tack.kernel
def k_return_vec64(p) -> tack.vec3(dtype=tack.f64):
    for i in range(len(p)):
        p[i] = p[i] / 3.0
    return tack.cross(p[0], p[1])


@tack.kernel
def k_return_mat(m) -> tack.mat22:
    for i in range(len(m)):
        m[i] = m[i] @ m[i]
    return m[0].T


@pytest.mark.parametrize("n", [1, 2, 9])
def test_kernel_returns_a_vector_or_matrix(n, rng):
    p = vecs(rng, n, (3,))
    s = float(rng.gen.uniform(-2, 2))
    got = k_return_vec(varr(p, tack.vec3()), s)
    scaled = p * np.float32(s)
    msg = f"seed={rng.seed}"
    assert isinstance(got, np.ndarray) and got.dtype == np.float32 and got.shape == (3,)
    np.testing.assert_allclose(got, scaled[0] + scaled[-1], **F32, err_msg=msg)

    q = vecs(rng, max(n, 2), (3,), np.float64)
    got = k_return_vec64(varr(q, tack.vec3(dtype=tack.f64)))
    assert got.dtype == np.float64 and got.shape == (3,)
    np.testing.assert_allclose(got, np.cross(q[0] / 3, q[1] / 3), **F64, err_msg=msg)

    m = vecs(rng, n, (2, 2))
    got = k_return_mat(varr(m, tack.mat22()))
    assert got.dtype == np.float32 and got.shape == (2, 2)
    np.testing.assert_allclose(got, (m[0] @ m[0]).T, rtol=1e-5, atol=1e-4, err_msg=msg)


@tack.kernel
def k_return_sum_filled(a) -> tack.vec3:
    for i in range(len(a)):
        a[i] = a[i] * 2.0
    return a[0] + a[len(a) - 1]


@tack.kernel
def k_return_product_filled(a, x) -> tack.mat22(dtype=tack.f64):
    for i in range(len(a)):
        a[i] = a[i] + x
    return a[0] * x


@pytest.mark.parametrize("n", [1, 2, 9])
def test_a_returned_scalar_expression_fills_every_component(n, rng):
    # Only literals and bare names worked: anything else was captured into a
    # temporary whose assignment the epilogue lost (an IR verification error).
    a = rng.gen.uniform(-2, 2, n).astype(np.float32)
    got = k_return_sum_filled(tack.array(a))
    np.testing.assert_allclose(got, np.full(3, 2 * a[0] + 2 * a[-1]), **F32,
                               err_msg=f"seed={rng.seed}")
    x = float(rng.gen.uniform(-2, 2))
    wide = a.astype(np.float64)
    got = k_return_product_filled(tack.array(wide), x)
    assert got.shape == (2, 2) and got.dtype == np.float64
    np.testing.assert_allclose(got, np.full((2, 2), (wide[0] + x) * x), **F64,
                               err_msg=f"seed={rng.seed}")


@tack.kernel
def k_reads_its_own_target(p, m, b, rotated, crossed, swapped, transposed, squared):
    for i in range(len(p)):
        v = p[i]
        v = m[i] @ v                       # every component reads all of v
        rotated[i] = v
        w = p[i]
        w += tack.cross(w, b[i])
        crossed[i] = w
        s = p[i]
        s = tack.vec3(s.y, s.z, s.x)
        swapped[i] = s
        a = m[i]
        a = a.T
        transposed[i] = a
        m[i] = m[i] @ m[i]                 # an array element read by its own store
        squared[i] = m[i]
        p[i] = tack.vec3(p[i].z, p[i].x, p[i].y)


@pytest.mark.parametrize("n", [0, 1, 7])
def test_an_assignment_that_reads_its_own_target(n, rng):
    # Components were written one by one, so later ones read values already
    # overwritten: a 90-degree rotation of (1, 2, 3) gave (-2, -2, 3).
    p0, b0 = vecs(rng, n, (3,)), vecs(rng, n, (3,))
    m0 = vecs(rng, n, (3, 3))
    p, m = varr(p0, tack.vec3()), varr(m0, tack.mat33())
    outs = [tack.zeros(n, e) for e in (tack.vec3(),) * 3 + (tack.mat33(),) * 2]
    k_reads_its_own_target(p, m, varr(b0, tack.vec3()), *outs)
    msg = f"seed={rng.seed}"
    expected = [np.einsum("nij,nj->ni", m0, p0), p0 + np.cross(p0, b0),
                p0[:, [1, 2, 0]], m0.transpose(0, 2, 1), m0 @ m0]
    for out, want in zip(outs, expected):
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-4, err_msg=msg)
    np.testing.assert_allclose(m.numpy(), m0 @ m0, rtol=1e-5, atol=1e-4, err_msg=msg)
    np.testing.assert_array_equal(p.numpy(), p0[:, [2, 0, 1]], err_msg=msg)


@tack.func
def doubled(v):
    if v.x > 100.0:     # an early return: the call inlines into statements
        return v
    return v * 2.0


@tack.kernel
def pick_side(p, out):
    for i in range(len(p)):
        out[i] = doubled(p[i]) if i % 2 == 0 else tack.vec3(-1.0)


@pytest.mark.parametrize("n", [0, 1, 7])
def test_a_conditional_vector_with_an_inlined_call_runs_the_chosen_side(n, rng):
    p_np = rng.floats(n * 3).reshape(n, 3)
    out = tack.zeros(n, tack.vec3())
    pick_side(tack.array(p_np, dtype=tack.vec3()), out)
    expected = np.where((np.arange(n) % 2 == 0)[:, None], p_np * 2, -1.0)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, err_msg=repr(rng))


# -- vector and matrix parameters of device functions, subscripted ------------------------

@tack.func
def second_component(v):
    return v[1]


@tack.func
def entry_and_row(m, r, c):
    return m[r, c] + m[2][0], m[r]


@tack.func
def set_first(v, s):
    v[0] = s          # the parameter is a copy: the caller's value does not change
    return v


@tack.func
def forwards(v):
    return second_component(v)


@tack.kernel
def k_subscripted_params(p, m, r, c, a, out_second, out_entry, out_row, out_set,
                         out_orig, out_arr, out_fwd):
    for i in range(len(p)):
        v = p[i]
        out_second[i] = second_component(p[i])
        e, row = entry_and_row(m[i], r[i], c[i])
        out_entry[i] = e
        out_row[i] = row
        out_set[i] = set_first(v, 9.0)
        out_orig[i] = v
        out_arr[i] = second_component(a)    # an array name: the same function, array read
        out_fwd[i] = forwards(v)


@pytest.mark.parametrize("n", SIZES)
def test_device_functions_subscript_vector_and_matrix_parameters(n, rng):
    p, m = vecs(rng, n, (3,)), vecs(rng, n, (3, 3))
    r, c = rng.ints(n, 0, 3), rng.ints(n, 0, 3)
    a = rng.floats(2)
    second, entry, arr, fwd = (tack.zeros(n) for _ in range(4))
    row, setv, orig = (tack.zeros(n, tack.vec3()) for _ in range(3))
    k_subscripted_params(varr(p, tack.vec3()), varr(m, tack.mat33()), tack.array(r),
                         tack.array(c), tack.array(a), second, entry, row, setv, orig,
                         arr, fwd)
    msg = f"seed={rng.seed}"
    k = np.arange(n)
    np.testing.assert_array_equal(second.numpy(), p[:, 1], err_msg=msg)
    np.testing.assert_allclose(entry.numpy(), m[k, r, c] + m[:, 2, 0], **F32, err_msg=msg)
    np.testing.assert_array_equal(row.numpy(), m[k, r], err_msg=msg)
    expected = p.copy()
    expected[:, 0] = 9.0
    np.testing.assert_array_equal(setv.numpy(), expected, err_msg=msg)
    np.testing.assert_array_equal(orig.numpy(), p, err_msg=msg)
    np.testing.assert_array_equal(arr.numpy(), np.full(n, a[1]), err_msg=msg)
    np.testing.assert_array_equal(fwd.numpy(), p[:, 1], err_msg=msg)


@tack.func
def measures(v):
    return v[0] + len(v)    # len(): only an array will do


@tack.kernel
def k_vector_to_measuring_param(p, out):
    for i in range(len(p)):
        out[i] = measures(p[i])


def test_a_vector_passed_where_only_an_array_will_do_is_refused():
    message = ("Kernel 'k_vector_to_measuring_param': unsupported argument for array "
               "parameter 'v' of device function 'measures' that is not an array name")
    with pytest.raises(tack.UnsupportedSyntaxError, match=f"^{re.escape(message)}"):
        k_vector_to_measuring_param(tack.zeros(3, tack.vec3()), tack.zeros(3))
