"""Issue #8: vectors and matrices in kernels (docs/language.md, "Vectors and matrices").

Every row of the docs' expression and statement tables is run against a NumPy
reference on fresh random inputs (sizes 0, 1 and odd). Tolerances: f32
results rtol=1e-5, atol=1e-5 (inputs in [-4, 4]); f64 results rtol=1e-12;
integer-valued floats (atomics, ``//``, ``%``, casts) are compared exactly.
Device functions and returned values are in test_vector_functions.py, the
rejections in test_vector_rejections.py.
"""

import math
import re

import numpy as np
import pytest

import tack
from vector_values import F32, F64, SIZES, varr, vecs   # tests/ is on sys.path


# -- loads, stores, construction ----------------------------------------------------------

@tack.kernel
def k_construct(p, a, out_copy, out_three, out_one, out_f64, out_from64):
    for i in range(len(p)):
        v = p[i]
        out_copy[i] = v
        out_three[i] = tack.vec3(a[i], 2, v.x)
        out_one[i] = tack.vec3(a[i])
        out_f64[i] = tack.vec3(a[i], v.y, 0.5, dtype=tack.f64)
        out_from64[i] = tack.vec3(tack.f64(a[i]) / 3.0)


@pytest.mark.parametrize("n", SIZES)
def test_load_store_and_construction(n, rng):
    p = vecs(rng, n, (3,))
    a = rng.floats(n)
    outs = [tack.zeros(n, tack.vec3()) for _ in range(3)]
    out_f64 = tack.zeros(n, tack.vec3(dtype=tack.f64))
    out_from64 = tack.zeros(n, tack.vec3(dtype=tack.f64))
    k_construct(varr(p, tack.vec3()), tack.array(a), *outs, out_f64, out_from64)
    msg = f"seed={rng.seed}"
    np.testing.assert_array_equal(outs[0].numpy(), p, err_msg=msg)
    three = np.stack([a, np.full(n, 2.0, np.float32), p[:, 0]], axis=1)
    np.testing.assert_array_equal(outs[1].numpy(), three, err_msg=msg)
    np.testing.assert_array_equal(outs[2].numpy(), np.repeat(a[:, None], 3, axis=1), err_msg=msg)
    f64 = np.stack([a, p[:, 1], np.full(n, 0.5, np.float32)], axis=1).astype(np.float64)
    assert out_f64.numpy().dtype == np.float64
    np.testing.assert_array_equal(out_f64.numpy(), f64, err_msg=msg)
    # without dtype= every component is converted to f32, even from an f64 value
    third = (a.astype(np.float64) / 3.0).astype(np.float32).astype(np.float64)
    np.testing.assert_array_equal(out_from64.numpy(), np.repeat(third[:, None], 3, axis=1),
                                  err_msg=msg)


@tack.kernel
def k_scalar_store(p, a):
    for i in range(len(p)):
        p[i] = a[i]


@pytest.mark.parametrize("n", [0, 1, 9])
def test_scalar_store_fills_every_component(n, rng):
    a = rng.floats(n)
    p = tack.zeros(n, tack.vec4())
    k_scalar_store(p, tack.array(a))
    np.testing.assert_array_equal(p.numpy(), np.repeat(a[:, None], 4, axis=1),
                                  err_msg=f"seed={rng.seed}")


@tack.kernel
def k_vector_before_loop(p, out, s):
    c = tack.vec3(1.0, s, 3.0)
    for i in range(len(p)):
        out[i] = p[i] + c


@pytest.mark.parametrize("n", [0, 5])
def test_vector_local_bound_before_the_loop(n, rng):
    p = vecs(rng, n, (3,))
    s = float(rng.gen.uniform(-2, 2))
    out = tack.zeros(n, tack.vec3())
    k_vector_before_loop(varr(p, tack.vec3()), out, s)
    np.testing.assert_allclose(out.numpy(), p + np.array([1.0, s, 3.0], np.float32), **F32,
                               err_msg=f"seed={rng.seed}")


@tack.kernel
def k_weak_scalar(p, out64):
    for i in range(len(p)):
        out64[i] = p[i] * 0.1 + 1


@pytest.mark.parametrize("n", [0, 1, 7])
def test_weak_literals_keep_the_component_type(n, rng):
    p = vecs(rng, n, (3,))
    out = tack.zeros(n, tack.vec3(dtype=tack.f64))
    k_weak_scalar(varr(p, tack.vec3()), out)
    # computed in f32, then widened by the store: exactly the f32 result
    expected = (p * np.float32(0.1) + np.float32(1)).astype(np.float64)
    np.testing.assert_array_equal(out.numpy(), expected, err_msg=f"seed={rng.seed}")


# -- components --------------------------------------------------------------------------

@tack.kernel
def k_components(p, idx, out_swizzle, out_pick, out_lit):
    for i in range(len(p)):
        v = p[i]
        out_swizzle[i] = tack.vec4(v.w, v.z, v.y, v.x)
        out_pick[i] = v[idx[i]]
        out_lit[i] = v[1] + p[i][2] + p[i].x


@pytest.mark.parametrize("n", SIZES)
def test_components_by_name_literal_and_runtime_index(n, rng):
    p = vecs(rng, n, (4,))
    idx = rng.ints(n, 0, 4)
    sw, lit = tack.zeros(n, tack.vec4()), tack.zeros(n)
    pick = tack.zeros(n)
    k_components(varr(p, tack.vec4()), tack.array(idx), sw, pick, lit)
    msg = f"seed={rng.seed}"
    np.testing.assert_array_equal(sw.numpy(), p[:, ::-1], err_msg=msg)
    np.testing.assert_array_equal(pick.numpy(), p[np.arange(n), idx], err_msg=msg)
    np.testing.assert_allclose(lit.numpy(), p[:, 1] + p[:, 2] + p[:, 0], **F32, err_msg=msg)


# -- matrices ------------------------------------------------------------------------------

@tack.kernel
def k_matrix_parts(m, r, c, out_row, out_rrow, out_entry, out_entry2, out_t, out_tt):
    for i in range(len(m)):
        a = m[i]
        out_row[i] = m[i][1]
        out_rrow[i] = a[r[i]]
        out_entry[i] = m[i][r[i], c[i]] + m[i][2, 0]
        out_entry2[i] = a[r[i]][c[i]] - a[0][2]
        out_t[i] = a.T
        out_tt[i] = tack.transpose(m[i])


@pytest.mark.parametrize("n", SIZES)
def test_matrix_rows_entries_and_transpose(n, rng):
    m = vecs(rng, n, (3, 3))
    r, c = rng.ints(n, 0, 3), rng.ints(n, 0, 3)
    row, rrow = tack.zeros(n, tack.vec3()), tack.zeros(n, tack.vec3())
    entry, entry2 = tack.zeros(n), tack.zeros(n)
    t, tt = tack.zeros(n, tack.mat33()), tack.zeros(n, tack.mat33())
    k_matrix_parts(varr(m, tack.mat33()), tack.array(r), tack.array(c), row, rrow, entry,
                   entry2, t, tt)
    msg = f"seed={rng.seed}"
    k = np.arange(n)
    np.testing.assert_array_equal(row.numpy(), m[:, 1], err_msg=msg)
    np.testing.assert_array_equal(rrow.numpy(), m[k, r], err_msg=msg)
    np.testing.assert_allclose(entry.numpy(), m[k, r, c] + m[:, 2, 0], **F32, err_msg=msg)
    np.testing.assert_allclose(entry2.numpy(), m[k, r, c] - m[:, 0, 2], **F32, err_msg=msg)
    np.testing.assert_array_equal(t.numpy(), m.transpose(0, 2, 1), err_msg=msg)
    np.testing.assert_array_equal(tt.numpy(), m.transpose(0, 2, 1), err_msg=msg)


@tack.kernel
def k_matmul(m, n, v, w, out_mv, out_vm, out_mm, out_vv):
    for i in range(len(m)):
        out_mv[i] = m[i] @ v[i]
        out_vm[i] = v[i] @ m[i]
        out_mm[i] = m[i] @ n[i]
        out_vv[i] = v[i] @ w[i]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dim", [2, 3, 4])
def test_matmul_all_four_forms(size, dim, rng):
    mat = {2: tack.mat22, 3: tack.mat33, 4: tack.mat44}[dim]()
    vec = {2: tack.vec2, 3: tack.vec3, 4: tack.vec4}[dim]()
    m, n = vecs(rng, size, (dim, dim)), vecs(rng, size, (dim, dim))
    v, w = vecs(rng, size, (dim,)), vecs(rng, size, (dim,))
    mv, vm = tack.zeros(size, vec), tack.zeros(size, vec)
    mm, vv = tack.zeros(size, mat), tack.zeros(size)
    k_matmul(varr(m, mat), varr(n, mat), varr(v, vec), varr(w, vec), mv, vm, mm, vv)
    msg = f"seed={rng.seed} dim={dim}"
    tol = dict(rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(mv.numpy(), np.einsum("nij,nj->ni", m, v), **tol, err_msg=msg)
    np.testing.assert_allclose(vm.numpy(), np.einsum("ni,nij->nj", v, m), **tol, err_msg=msg)
    np.testing.assert_allclose(mm.numpy(), m @ n, **tol, err_msg=msg)
    np.testing.assert_allclose(vv.numpy(), np.einsum("ni,ni->n", v, w), **tol, err_msg=msg)


@tack.kernel
def k_mat_construct(v, s, out_comps, out_rows, out_mat33):
    for i in range(len(v)):
        out_comps[i] = tack.mat22(v[i].x, v[i].y, s, 1)
        out_rows[i] = tack.mat22(v[i], tack.vec2(s, v[i].x))
        out_mat33[i] = tack.mat33(tack.vec3(s), tack.vec3(v[i].x, v[i].y, s),
                                  tack.vec3(v[i].y))


@pytest.mark.parametrize("n", [0, 1, 7])
def test_matrix_construction_from_components_and_rows(n, rng):
    v = vecs(rng, n, (2,))
    s = float(rng.gen.uniform(-3, 3))
    comps, rows = tack.zeros(n, tack.mat22()), tack.zeros(n, tack.mat22())
    m33 = tack.zeros(n, tack.mat33())
    k_mat_construct(varr(v, tack.vec2()), s, comps, rows, m33)
    s32 = np.full(n, s, np.float32)
    msg = f"seed={rng.seed} s={s}"
    np.testing.assert_array_equal(
        comps.numpy(), np.stack([v[:, 0], v[:, 1], s32, np.ones(n, np.float32)], 1)
        .reshape(n, 2, 2), err_msg=msg)
    np.testing.assert_array_equal(
        rows.numpy(), np.stack([v[:, 0], v[:, 1], s32, v[:, 0]], 1).reshape(n, 2, 2),
        err_msg=msg)
    expected = np.stack([s32, s32, s32, v[:, 0], v[:, 1], s32, v[:, 1], v[:, 1], v[:, 1]], 1)
    np.testing.assert_array_equal(m33.numpy(), expected.reshape(n, 3, 3), err_msg=msg)


@tack.kernel
def k_local_row_and_entry(m, out_row, out_entry):
    for i in range(len(m)):
        a = m[i]
        out_row[i] = a[1]
        out_entry[i] = a[0, 2]


def test_matrix_local_row_and_entry_in_one_kernel(rng):
    m = vecs(rng, 3, (3, 3))
    row, entry = tack.zeros(3, tack.vec3()), tack.zeros(3)
    k_local_row_and_entry(varr(m, tack.mat33()), row, entry)
    np.testing.assert_array_equal(row.numpy(), m[:, 1], err_msg=f"seed={rng.seed}")
    np.testing.assert_array_equal(entry.numpy(), m[:, 0, 2], err_msg=f"seed={rng.seed}")


# -- element-wise operations -------------------------------------------------------------

@tack.kernel
def k_arith(p, q, s, o_add, o_sub, o_mul, o_div, o_neg, o_scal):
    for i in range(len(p)):
        v = p[i]
        w = q[i]
        o_add[i] = v + w
        o_sub[i] = v - w
        o_mul[i] = v * w
        o_div[i] = v / w
        o_neg[i] = -v + (+w)
        o_scal[i] = (s * v - w * s + v / s - 2.0 / w) * 0.5 + 1


@pytest.mark.parametrize("n", SIZES)
def test_elementwise_arithmetic_with_vectors_and_scalars(n, rng):
    p = vecs(rng, n, (3,))
    q = vecs(rng, n, (3,), low=0.5, high=4.0) * rng.gen.choice([-1, 1], (n, 3)).astype(np.float32)
    s = float(rng.gen.uniform(0.5, 3.0))
    outs = [tack.zeros(n, tack.vec3()) for _ in range(6)]
    k_arith(varr(p, tack.vec3()), varr(q, tack.vec3()), s, *outs)
    s32 = np.float32(s)
    expected = [p + q, p - q, p * q, p / q, -p + q,
                (s32 * p - q * s32 + p / s32 - np.float32(2.0) / q) * np.float32(0.5) + 1]
    for name, out, ref in zip(["add", "sub", "mul", "div", "neg", "scalar"], outs, expected):
        np.testing.assert_allclose(out.numpy(), ref, **F32, err_msg=f"{name} seed={rng.seed}")


@tack.kernel
def k_floor_ops(p, q, o_fdiv, o_mod, o_pow, o_spow):
    for i in range(len(p)):
        o_fdiv[i] = p[i] // q[i]
        o_mod[i] = p[i] % q[i]
        o_pow[i] = abs(q[i]) ** tack.vec3(2.0, 0.5, 3.0)
        o_spow[i] = 2.0 ** q[i] + q[i] ** 2


@pytest.mark.parametrize("n", SIZES)
def test_floordiv_mod_and_power(n, rng):
    # integer-valued floats: floor division and modulo are exact
    p = rng.gen.integers(-40, 40, (n, 3)).astype(np.float64)
    q = rng.gen.integers(1, 9, (n, 3)).astype(np.float64) * rng.gen.choice([-1, 1], (n, 3))
    el = tack.vec3(dtype=tack.f64)
    outs = [tack.zeros(n, el) for _ in range(4)]
    k_floor_ops(varr(p, el), varr(q, el), *outs)
    msg = f"seed={rng.seed}"
    np.testing.assert_array_equal(outs[0].numpy(), np.floor_divide(p, q), err_msg=msg)
    np.testing.assert_array_equal(outs[1].numpy(), np.mod(p, q), err_msg=msg)
    np.testing.assert_allclose(outs[2].numpy(), np.abs(q) ** np.array([2.0, 0.5, 3.0]), **F64,
                               err_msg=msg)
    np.testing.assert_allclose(outs[3].numpy(), 2.0 ** q + q ** 2, **F64, err_msg=msg)


@tack.kernel
def k_int_vectors(p, q, o_fdiv, o_mod, o_mix):
    for i in range(len(p)):
        o_fdiv[i] = p[i] // q[i]
        o_mod[i] = p[i] % q[i]
        o_mix[i] = p[i] * 3 - q[i] + tack.vec3(1, 2, 3, dtype=tack.i32)


@pytest.mark.parametrize("n", [0, 1, 9])
def test_integer_vectors_floor_like_python_and_divide_by_zero_to_zero(n, rng):
    el = tack.vec3(dtype=tack.i32)
    p = rng.gen.integers(-50, 50, (n, 3)).astype(np.int32)
    q = rng.gen.integers(-4, 5, (n, 3)).astype(np.int32)    # zeros included
    outs = [tack.zeros(n, el) for _ in range(3)]
    k_int_vectors(varr(p, el), varr(q, el), *outs)
    safe = np.where(q == 0, 1, q)
    msg = f"seed={rng.seed}"
    np.testing.assert_array_equal(outs[0].numpy(), np.where(q == 0, 0, p // safe), err_msg=msg)
    np.testing.assert_array_equal(outs[1].numpy(), np.where(q == 0, 0, p % safe), err_msg=msg)
    np.testing.assert_array_equal(outs[2].numpy(), p * 3 - q + np.array([1, 2, 3]), err_msg=msg)


@tack.kernel
def k_unary_funcs(p, q, o_abs, o_min, o_max, o_sqrt, o_exp, o_f64, o_i32, o_floor):
    for i in range(len(p)):
        o_abs[i] = abs(p[i])
        o_min[i] = min(p[i], q[i])
        o_max[i] = max(p[i], q[i], tack.vec3(0.5))
        o_sqrt[i] = math.sqrt(abs(p[i]))
        o_exp[i] = math.exp(p[i])
        o_f64[i] = tack.f64(p[i])
        o_i32[i] = tack.i32(p[i] * 10.0)
        o_floor[i] = math.floor(p[i])


@pytest.mark.parametrize("n", SIZES)
def test_abs_min_max_math_and_casts(n, rng):
    p, q = vecs(rng, n, (3,)), vecs(rng, n, (3,))
    v3, v64, vi = tack.vec3(), tack.vec3(dtype=tack.f64), tack.vec3(dtype=tack.i32)
    o = [tack.zeros(n, v3) for _ in range(5)]
    o_f64, o_i32, o_floor = tack.zeros(n, v64), tack.zeros(n, vi), tack.zeros(n, vi)
    k_unary_funcs(varr(p, v3), varr(q, v3), *o, o_f64, o_i32, o_floor)
    msg = f"seed={rng.seed}"
    np.testing.assert_array_equal(o[0].numpy(), np.abs(p), err_msg=msg)
    np.testing.assert_array_equal(o[1].numpy(), np.minimum(p, q), err_msg=msg)
    np.testing.assert_array_equal(o[2].numpy(), np.maximum(np.maximum(p, q), 0.5), err_msg=msg)
    np.testing.assert_allclose(o[3].numpy(), np.sqrt(np.abs(p)), **F32, err_msg=msg)
    np.testing.assert_allclose(o[4].numpy(), np.exp(p), **F32, err_msg=msg)
    assert o_f64.numpy().dtype == np.float64 and o_i32.numpy().dtype == np.int32
    np.testing.assert_array_equal(o_f64.numpy(), p.astype(np.float64), err_msg=msg)
    np.testing.assert_array_equal(o_i32.numpy(), np.trunc(p * np.float32(10)).astype(np.int32),
                                  err_msg=msg)
    np.testing.assert_array_equal(o_floor.numpy(), np.floor(p).astype(np.int32), err_msg=msg)


# -- geometry ------------------------------------------------------------------------------

@tack.kernel
def k_geometry(p, q, o_dot, o_cross, o_len, o_norm):
    for i in range(len(p)):
        o_dot[i] = tack.dot(p[i], q[i])
        o_cross[i] = tack.cross(p[i], q[i])
        o_len[i] = tack.length(p[i])
        o_norm[i] = tack.normalize(p[i])


@pytest.mark.parametrize("n", SIZES)
def test_dot_cross_length_normalize(n, rng):
    p, q = vecs(rng, n, (3,)), vecs(rng, n, (3,))
    if n:
        p[0] = 0.0     # normalize of a zero vector: NaN components
    o_dot, o_len = tack.zeros(n), tack.zeros(n)
    o_cross, o_norm = tack.zeros(n, tack.vec3()), tack.zeros(n, tack.vec3())
    k_geometry(varr(p, tack.vec3()), varr(q, tack.vec3()), o_dot, o_cross, o_len, o_norm)
    msg = f"seed={rng.seed}"
    length = np.sqrt((p * p).sum(1))
    np.testing.assert_allclose(o_dot.numpy(), (p * q).sum(1), rtol=1e-5, atol=1e-4, err_msg=msg)
    np.testing.assert_allclose(o_cross.numpy(), np.cross(p, q), rtol=1e-5, atol=1e-4,
                               err_msg=msg)
    np.testing.assert_allclose(o_len.numpy(), length, **F32, err_msg=msg)
    with np.errstate(invalid="ignore"):
        expected = p / length[:, None]
    np.testing.assert_allclose(o_norm.numpy(), expected, **F32, err_msg=msg)  # NaN == NaN here
    if n:
        assert np.isnan(o_norm.numpy()[0]).all()


@tack.kernel
def k_vec2_vec4(a, b, o2, o4, o_len):
    for i in range(len(a)):
        o2[i] = tack.normalize(a[i]) * tack.dot(a[i], a[i])
        o4[i] = b[i] * tack.vec4(1.0, 2.0, 3.0, 4.0) - tack.vec4(b[i].w)
        o_len[i] = tack.length(b[i]) + tack.length(a[i])


@pytest.mark.parametrize("n", [0, 1, 11])
def test_vec2_and_vec4(n, rng):
    a = vecs(rng, n, (2,), low=0.5)
    b = vecs(rng, n, (4,))
    o2, o4, ol = tack.zeros(n, tack.vec2()), tack.zeros(n, tack.vec4()), tack.zeros(n)
    k_vec2_vec4(varr(a, tack.vec2()), varr(b, tack.vec4()), o2, o4, ol)
    la, lb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    msg = f"seed={rng.seed}"
    np.testing.assert_allclose(o2.numpy(), a / la[:, None] * (la ** 2)[:, None], **F32,
                               err_msg=msg)
    np.testing.assert_allclose(o4.numpy(), b * np.array([1, 2, 3, 4], np.float32) - b[:, 3:],
                               **F32, err_msg=msg)
    np.testing.assert_allclose(ol.numpy(), la + lb, **F32, err_msg=msg)


# -- conditional expressions, augmented and component assignment ---------------------------

@tack.kernel
def k_conditional(p, q, flag, out):
    for i in range(len(p)):
        out[i] = p[i] if flag[i] > 0 else q[i] * 2.0


@pytest.mark.parametrize("n", SIZES)
def test_conditional_expression_per_vector(n, rng):
    p, q = vecs(rng, n, (3,)), vecs(rng, n, (3,))
    flag = rng.ints(n, -2, 3)
    out = tack.zeros(n, tack.vec3())
    k_conditional(varr(p, tack.vec3()), varr(q, tack.vec3()), tack.array(flag), out)
    expected = np.where((flag > 0)[:, None], p, q * 2)
    np.testing.assert_array_equal(out.numpy(), expected, err_msg=f"seed={rng.seed}")


@tack.kernel
def k_augmented(p, q, out):
    for i in range(len(p)):
        p[i] += q[i]
        v = q[i]
        v *= 2.0
        v -= tack.vec3(1.0, 0.0, -1.0)
        v /= p[i] * 0.0 + 4.0
        out[i] = v
        out[i] += 1.0


@pytest.mark.parametrize("n", SIZES)
def test_augmented_assignment(n, rng):
    p, q = vecs(rng, n, (3,)), vecs(rng, n, (3,))
    pt, out = varr(p, tack.vec3()), tack.zeros(n, tack.vec3())
    k_augmented(pt, varr(q, tack.vec3()), out)
    msg = f"seed={rng.seed}"
    np.testing.assert_allclose(pt.numpy(), p + q, **F32, err_msg=msg)
    expected = (q * 2 - np.array([1.0, 0.0, -1.0], np.float32)) / 4 + 1
    np.testing.assert_allclose(out.numpy(), expected, **F32, err_msg=msg)


@tack.kernel
def k_component_assign(p, m, s, out, out_m):
    for i in range(len(p)):
        v = p[i]
        v.x = s
        v[2] = v.y * 2.0
        out[i] = v
        p[i].y = s + 1.0
        a = m[i]
        a[0, 2] = s
        a[1, 1] += 1.0
        out_m[i] = a
        m[i][2, 0] = -s


@pytest.mark.parametrize("n", SIZES)
def test_component_assignment(n, rng):
    p = vecs(rng, n, (3,))
    m = vecs(rng, n, (3, 3))
    s = float(rng.gen.uniform(-2, 2))
    s32 = np.float32(s)
    pt, mt = varr(p, tack.vec3()), varr(m, tack.mat33())
    out, out_m = tack.zeros(n, tack.vec3()), tack.zeros(n, tack.mat33())
    k_component_assign(pt, mt, s, out, out_m)
    msg = f"seed={rng.seed} s={s}"
    ev = p.copy()
    ev[:, 0] = s32
    ev[:, 2] = p[:, 1] * 2
    np.testing.assert_array_equal(out.numpy(), ev, err_msg=msg)
    ep = p.copy()
    ep[:, 1] = s32 + np.float32(1.0)
    np.testing.assert_array_equal(pt.numpy(), ep, err_msg=msg)
    em = m.copy()
    em[:, 0, 2] = s32
    em[:, 1, 1] += 1
    np.testing.assert_array_equal(out_m.numpy(), em, err_msg=msg)
    em2 = m.copy()
    em2[:, 2, 0] = -s32
    np.testing.assert_array_equal(mt.numpy(), em2, err_msg=msg)


# -- atomics ---------------------------------------------------------------------------------

@tack.kernel
def k_atomic_vec(f, idx, v):
    for i in range(len(idx)):
        tack.atomic_add(f, idx[i], v[i])


@tack.kernel
def k_atomic_vec_old(f, v, old):
    for i in range(len(f)):
        old[i] = tack.atomic_add(f, i, v[i])


@tack.kernel
def k_atomic_vec_max(f, idx, v):
    for i in range(len(idx)):
        tack.atomic_max(f, idx[i], v[i])


@tack.kernel
def k_atomic_flat(f, idx, comp, s):
    for i in range(len(idx)):
        tack.atomic_add(f, idx[i] * 3 + comp[i], s[i])


@pytest.mark.parametrize("n", [0, 1, 7, 301])
def test_atomics_with_vector_values(n, rng):
    slots = 5
    idx = rng.ints(n, 0, slots)
    v = rng.gen.integers(-20, 20, (n, 3)).astype(np.float32)   # integer-valued: sums are exact
    f = tack.zeros(slots, tack.vec3())
    k_atomic_vec(f, tack.array(idx), varr(v, tack.vec3()))
    expected = np.zeros((slots, 3), np.float32)
    np.add.at(expected, idx, v)
    msg = f"seed={rng.seed}"
    np.testing.assert_array_equal(f.numpy(), expected, err_msg=msg)

    fmax = tack.full(slots, -100.0, tack.vec3())
    k_atomic_vec_max(fmax, tack.array(idx), varr(v, tack.vec3()))
    emax = np.full((slots, 3), -100.0, np.float32)
    np.maximum.at(emax, idx, v)
    np.testing.assert_array_equal(fmax.numpy(), emax, err_msg=msg)

    start = rng.gen.integers(-20, 20, (n, 3)).astype(np.float32)
    g, old = varr(start, tack.vec3()), tack.zeros(n, tack.vec3())
    k_atomic_vec_old(g, varr(v, tack.vec3()), old)
    np.testing.assert_array_equal(old.numpy(), start, err_msg=msg)
    np.testing.assert_array_equal(g.numpy(), start + v, err_msg=msg)


@pytest.mark.parametrize("n", [0, 1, 7, 301])
def test_atomic_scalar_at_flat_component_index(n, rng):
    slots = 4
    idx, comp = rng.ints(n, 0, slots), rng.ints(n, 0, 3)
    s = rng.gen.integers(-20, 20, n).astype(np.float32)
    f = tack.zeros(slots, tack.vec3())
    k_atomic_flat(f, tack.array(idx), tack.array(comp), tack.array(s))
    expected = np.zeros((slots, 3), np.float32)
    np.add.at(expected, (idx, comp), s)
    np.testing.assert_array_equal(f.numpy(), expected, err_msg=f"seed={rng.seed}")


@tack.kernel
def k_tuple_swaps(p, q, m):
    for i in range(len(p)):
        v = p[i]
        w = q[i]
        v, w = w, v
        p[i], q[i] = v, w                  # swapped once
        p[i], q[i] = q[i], p[i]            # and back
        a = m[i]
        a, s = a.T, 2.0
        m[i] = a * s


@pytest.mark.parametrize("n", [0, 1, 5])
def test_tuple_assignment_of_vectors_and_matrices(n, rng):
    # A vector in a tuple's values was refused ("a vec3 where a scalar is needed")
    p0, q0, m0 = vecs(rng, n, (3,)), vecs(rng, n, (3,)), vecs(rng, n, (2, 2))
    p, q, m = varr(p0, tack.vec3()), varr(q0, tack.vec3()), varr(m0, tack.mat22())
    k_tuple_swaps(p, q, m)
    np.testing.assert_array_equal(p.numpy(), p0)
    np.testing.assert_array_equal(q.numpy(), q0)
    np.testing.assert_array_equal(m.numpy(), 2 * m0.transpose(0, 2, 1))


# -- f64 vectors and 2-D arrays of vectors ----------------------------------------------------

@tack.kernel
def k_grid(p, m, out):
    for i, j in tack.ndindex(p.shape[0], p.shape[1]):
        out[i, j] = m[i, j] @ p[i, j] + tack.vec3(tack.f64(i), tack.f64(j), 0.5, dtype=tack.f64)


@pytest.mark.parametrize("shape", [(0, 3), (1, 1), (5, 3), (3, 0)])
def test_2d_arrays_of_f64_vectors(shape, rng):
    p = vecs(rng, shape[0] * shape[1], (3,), np.float64).reshape(*shape, 3)
    m = vecs(rng, shape[0] * shape[1], (3, 3), np.float64).reshape(*shape, 3, 3)
    el = tack.vec3(dtype=tack.f64)
    out = tack.zeros(shape, el)
    k_grid(varr(p, el), varr(m, tack.mat33(dtype=tack.f64)), out)
    ii, jj = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    extra = np.stack([ii, jj, np.full(shape, 0.5)], axis=-1)
    expected = np.einsum("abij,abj->abi", m, p) + extra
    assert out.shape == shape and out.numpy().shape == (*shape, 3)
    np.testing.assert_allclose(out.numpy(), expected, **F64, err_msg=f"seed={rng.seed}")


# -- debug mode: bounds checks on vector arrays ---------------------------------------------

@tack.kernel
def k_store_past_end(p, out):
    for i in range(len(p)):
        out[i + 1] = p[i]


@tack.kernel
def k_component_past_end(out):
    for i in range(len(out)):
        out[i + 1].y = 1.0


def _debug_run(kernel, *args):
    """Run ``kernel`` in debug mode."""
    tack.set_debug(True)
    try:
        kernel(*args)
    finally:
        tack.set_debug(False)


@pytest.mark.parametrize("kernel, text", [
    (k_store_past_end, "in out[i + 1] at"),
    (k_component_past_end, "in out[i + 1] at"),
])
def test_debug_mode_checks_vector_stores(kernel, text, rng):
    n = 5
    p = varr(vecs(rng, n, (3,)), tack.vec3())
    out = tack.zeros(n, tack.vec3())
    args = (p, out) if kernel is k_store_past_end else (out,)
    message = f"Kernel '{kernel.name}': index 5 is out of bounds (extent 5) {text}"
    with pytest.raises(IndexError, match=re.escape(message)):
        _debug_run(kernel, *args)


@pytest.mark.parametrize("kernel, make", [
    (k_construct, lambda n: (tack.zeros(n, tack.vec3()), tack.zeros(n),
                             *[tack.zeros(n, tack.vec3()) for _ in range(3)],
                             tack.zeros(n, tack.vec3(dtype=tack.f64)),
                             tack.zeros(n, tack.vec3(dtype=tack.f64)))),
    (k_matmul, lambda n: (tack.ones(n, tack.mat33()), tack.ones(n, tack.mat33()),
                          tack.ones(n, tack.vec3()), tack.ones(n, tack.vec3()),
                          tack.zeros(n, tack.vec3()), tack.zeros(n, tack.vec3()),
                          tack.zeros(n, tack.mat33()), tack.zeros(n))),
    (k_atomic_flat, lambda n: (tack.zeros(n, tack.vec3()), tack.arange(n, dtype=tack.i32),
                               tack.full(n, 2, tack.i32), tack.ones(n))),
    (k_component_assign, lambda n: (tack.ones(n, tack.vec3()), tack.ones(n, tack.mat33()),
                                    1.0, tack.zeros(n, tack.vec3()),
                                    tack.zeros(n, tack.mat33()))),
])
def test_in_bounds_vector_kernels_pass_debug_mode(kernel, make):
    _debug_run(kernel, *make(3))           # raises nothing
