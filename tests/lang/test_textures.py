"""Issue #8: ``tack.texture3d`` sampled in kernels (docs/language.md, "Textures").

The sampling convention is checked against a NumPy trilinear reference
(normalized coordinates, ``u`` along the last axis, texel ``k`` of ``n``
centred at ``(k + 0.5) / n``, clamping beyond the outer centres), on the
default device (so also on OpenCL when the suites rerun there). Tolerance:
atol=1e-5 on texel values in [-4, 4] (f32 weights).
"""

import re

import numpy as np
import pytest

import tack

TOL = dict(rtol=1e-5, atol=1e-5)


def trilinear(texels, u, v, w):
    """NumPy reference, in f64."""
    def axis(c, n):
        x = np.clip(c.astype(np.float64) * n - 0.5, 0.0, n - 1.0)
        lo = np.floor(x).astype(np.int64)
        hi = np.minimum(lo + 1, n - 1)
        return lo, hi, x - lo

    t = texels.astype(np.float64)
    d, h, wd = t.shape
    x0, x1, fx = axis(u, wd)
    y0, y1, fy = axis(v, h)
    z0, z1, fz = axis(w, d)

    def lerp_x(z, y):
        return t[z, y, x0] * (1 - fx) + t[z, y, x1] * fx

    c0 = lerp_x(z0, y0) * (1 - fy) + lerp_x(z0, y1) * fy
    c1 = lerp_x(z1, y0) * (1 - fy) + lerp_x(z1, y1) * fy
    return c0 * (1 - fz) + c1 * fz


@tack.kernel
def sample_at(tex, u, v, w, out):
    for i in range(len(u)):
        out[i] = tex.sample(u[i], v[i], w[i])


def run(tex, u, v, w):
    out = tack.full(len(u), -99.0)
    sample_at(tex, tack.array(u), tack.array(v), tack.array(w), out)
    return out.numpy()


@pytest.mark.parametrize("n", [0, 1, 7, 101])
@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 3, 4), (5, 1, 7)])
def test_trilinear_sampling_matches_numpy_with_clamping(n, shape, rng):
    texels = rng.floats(int(np.prod(shape))).reshape(shape)
    tex = tack.texture3d(tack.array(texels))
    assert isinstance(tex, tack.Texture3D) and tex.shape == shape
    # coordinates in [-0.5, 1.5]: a quarter of them beyond the outer texel centres
    u, v, w = (rng.floats(n, low=-0.5, high=1.5) for _ in range(3))
    np.testing.assert_allclose(run(tex, u, v, w), trilinear(texels, u, v, w), **TOL,
                               err_msg=f"seed={rng.seed} shape={shape}")


def test_texel_centres_give_the_texel_and_edges_clamp(rng):
    shape = (3, 4, 5)
    texels = rng.floats(60).reshape(shape)
    tex = tack.texture3d(tack.array(texels))
    z, y, x = np.meshgrid(*(np.arange(s) for s in shape), indexing="ij")
    z, y, x = z.ravel(), y.ravel(), x.ravel()
    u = ((x + 0.5) / shape[2]).astype(np.float32)
    v = ((y + 0.5) / shape[1]).astype(np.float32)
    w = ((z + 0.5) / shape[0]).astype(np.float32)
    np.testing.assert_allclose(run(tex, u, v, w), texels[z, y, x], **TOL,
                               err_msg=f"seed={rng.seed}")
    # far outside [0, 1]: the corner texels
    far = np.array([-10.0, 10.0], np.float32)
    got = run(tex, far, far, far)
    np.testing.assert_allclose(got, [texels[0, 0, 0], texels[-1, -1, -1]], **TOL,
                               err_msg=f"seed={rng.seed}")
    # halfway between two texel centres along u only
    half = run(tex, np.array([1.0 / shape[2]], np.float32), np.array([0.5 / 4], np.float32),
               np.array([0.5 / 3], np.float32))
    np.testing.assert_allclose(half, [(texels[0, 0, 0] + texels[0, 0, 1]) / 2], **TOL,
                               err_msg=f"seed={rng.seed}")


def test_shape_views_a_flat_array(rng):
    shape = (3, 2, 5)
    flat = rng.floats(30)
    tex = tack.texture3d(tack.array(flat), shape=shape)
    assert tex.shape == shape
    u, v, w = (rng.floats(9, low=-0.2, high=1.2) for _ in range(3))
    np.testing.assert_allclose(run(tex, u, v, w), trilinear(flat.reshape(shape), u, v, w),
                               **TOL, err_msg=f"seed={rng.seed}")


@tack.kernel
def overwrite(a, value):
    for i in range(len(a)):
        a[i] = value


def test_the_texture_samples_its_copy_until_update(rng):
    shape = (2, 2, 3)
    texels = rng.floats(12).reshape(shape)
    arr = tack.array(texels.ravel())
    tex = tack.texture3d(arr, shape=shape)
    u, v, w = (rng.floats(5, low=0.0, high=1.0) for _ in range(3))
    old = trilinear(texels, u, v, w)
    overwrite(arr, 2.5)                           # the array changes on the device
    np.testing.assert_allclose(run(tex, u, v, w), old, **TOL, err_msg=f"seed={rng.seed}")
    tex.update()
    np.testing.assert_allclose(run(tex, u, v, w), np.full(5, 2.5), **TOL,
                               err_msg=f"seed={rng.seed}")
    arr.fill(-1.0)                                # a host-side change
    np.testing.assert_allclose(run(tex, u, v, w), np.full(5, 2.5), **TOL,
                               err_msg=f"seed={rng.seed}")
    tex.update()
    np.testing.assert_allclose(run(tex, u, v, w), np.full(5, -1.0), **TOL,
                               err_msg=f"seed={rng.seed}")


def test_textures_of_other_shapes_in_one_kernel(rng):
    a = rng.floats(8).reshape(2, 2, 2)
    b = rng.floats(27).reshape(3, 3, 3)
    u, v, w = (rng.floats(6, low=0.0, high=1.0) for _ in range(3))
    for texels in (a, b, a):
        np.testing.assert_allclose(run(tack.texture3d(tack.array(texels)), u, v, w),
                                   trilinear(texels, u, v, w), **TOL,
                                   err_msg=f"seed={rng.seed} shape={texels.shape}")


@pytest.mark.parametrize("make, error, message", [
    (lambda: tack.texture3d(tack.zeros((2, 2, 2), tack.f64)), ValueError,
     "texture3d requires an f32 array, got f64; convert it first with array.astype(tack.f32)"),
    (lambda: tack.texture3d(tack.zeros((2, 2, 2), tack.i32)), ValueError,
     "texture3d requires an f32 array, got i32; convert it first with array.astype(tack.f32)"),
    (lambda: tack.texture3d(tack.zeros(8)), ValueError, "texture3d requires a 3D shape"),
    (lambda: tack.texture3d(tack.zeros((2, 4))), ValueError, "texture3d requires a 3D shape"),
    (lambda: tack.texture3d(tack.zeros(8), shape=(2, 4)), ValueError,
     "texture3d requires a 3D shape"),
    (lambda: tack.texture3d(tack.zeros(8), shape=(2, 2, 2, 1)), ValueError,
     "texture3d requires a 3D shape"),
    (lambda: tack.texture3d(tack.zeros(0), shape=(0, 2, 2)), ValueError,
     "texture3d requires a 3D shape"),
    (lambda: tack.texture3d(tack.zeros(8), shape=(2, 2, 3)), ValueError,
     "texture3d shape (2, 2, 3) holds 12 elements, but the array has 8"),
    (lambda: tack.texture3d(tack.zeros((2, 2, 2)), interp="nearest"), ValueError,
     "texture3d supports interp='linear' only, got interp='nearest'"),
    (lambda: tack.texture3d(np.zeros((2, 2, 2), np.float32)), TypeError,
     "texture3d takes a tack.Array, got ndarray"),
], ids=["f64", "i32", "1d", "2d", "shape2", "shape4", "zero", "count", "interp", "numpy"])
def test_errors(make, error, message):
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        make()


@tack.kernel
def scaled(a, out, s):
    for i in range(len(out)):
        out[i] = a[i] * s


def test_a_texture_where_an_array_or_number_is_used_is_a_type_error():
    tex, out = tack.texture3d(tack.ones((2, 2, 2))), tack.zeros(8)
    for args, name, column in [((tex, out, 1.0), "a", 18), ((tack.ones(8), out, tex), "s", 25)]:
        message = (f"Kernel 'scaled': parameter '{name}' is used as a value (an array or "
                   f"a number), but the argument is a Texture3D object, which a kernel "
                   f"uses only through its attributes and methods ({name}.x, "
                   f"{name}.m(...)) at line 4, column {column}")
        with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
            scaled(*args)
    assert not out.numpy().any()


def test_an_array_where_a_texture_is_sampled_is_a_type_error():
    out = tack.zeros(1)
    message = ("Kernel 'sample_at': 'tex.sample()' calls a method of parameter 'tex', but "
               "the argument is an array or a number; methods are called on device-class "
               "objects (such as a tack.Texture3D) at line 4, column 18")
    with pytest.raises(TypeError, match=f"^{re.escape(message)}\n"):   # then the line
        sample_at(tack.zeros((2, 2, 2)), tack.zeros(1), tack.zeros(1), tack.zeros(1), out)
    assert not out.numpy().any()


def test_sampling_passes_debug_mode(rng):
    texels = rng.floats(24).reshape(2, 3, 4)
    tex = tack.texture3d(tack.array(texels))
    u, v, w = (rng.floats(7, low=-1.0, high=2.0) for _ in range(3))
    tack.set_debug(True)
    try:
        got = run(tex, u, v, w)
    finally:
        tack.set_debug(False)
    np.testing.assert_allclose(got, trilinear(texels, u, v, w), **TOL, err_msg=f"seed={rng.seed}")
