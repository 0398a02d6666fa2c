"""Extents that keep changing are read at run time (docs/language.md, "Arrays
and indexing"; docs/pipeline.md, "Extents that keep changing").

A kernel's body may read extents (``len(a)``, ``a.shape[1]`` in a row stride):
they are baked into the first variants, and once four variants differ only in
their values, read at run time from a hidden argument. Each kernel here is
checked against NumPy on every call, across the switch, at sizes 0, 1 and odd
ones; ``tack.inspect`` shows which kind of variant a call takes. Part of the
backend suites: it runs on OpenCL too, and its variants are compiled offline.
"""

import numpy as np

import tack


def _ir(kernel, *args) -> str:
    return tack.inspect(kernel, *args, mode="ir")


@tack.kernel
def periodic_mean(u, out):
    for i in range(len(out)):
        n = len(u)
        out[i] = (u[(i + n - 1) % n] + u[i] + u[(i + 1) % n]) / 3.0


def test_a_periodic_stencil_over_lengths_that_keep_changing(rng):
    host = rng.values(tack.f64, 99)
    u, out = tack.array(host), tack.zeros(99, tack.f64)
    for n in [5, 9, 1, 2, 31, 3, 99, 8, 1, 77]:
        periodic_mean(u[:n], out[:n])
        x = host[:n]
        want = (np.roll(x, 1) + x + np.roll(x, -1)) / 3.0
        np.testing.assert_allclose(out.numpy()[:n], want, rtol=1e-15,
                                   err_msg=f"n={n} {rng!r}")
    assert "__tack_shape0_u" in _ir(periodic_mean, u[:4], out[:4])


@tack.kernel
def row_sums(grid, out):
    for i in range(len(out)):
        s = 0.0
        for j in range(grid.shape[1]):
            s += grid[i, j]
        out[i] = s


def test_row_lengths_that_keep_changing_index_each_shape_right(rng):
    """The row length is the stride of ``grid[i, j]``: read at run time, it
    still finds every element."""
    for m in [3, 1, 4, 5, 9, 2, 7, 0, 3]:
        n = int(rng.gen.integers(0, 9))
        host = rng.values(tack.f64, n * m).reshape(n, m)
        out = tack.zeros(n, tack.f64)
        row_sums(tack.array(host), out)
        # the kernel adds left to right from 0.0, as Python's sum does (NumPy's
        # is pairwise past eight elements, another rounding)
        want = np.array([sum(row) for row in host.tolist()], np.float64)
        np.testing.assert_array_equal(out.numpy(), want.reshape(n),
                                      err_msg=f"shape ({n}, {m}) {rng!r}")
    assert len([k for k in row_sums._variants if not k[2][0]]) <= 2 * 5   # 4 baked, 1 not
    assert "__tack_shape1_grid" in _ir(row_sums, tack.zeros((2, 6), tack.f64),
                                       tack.zeros(2, tack.f64))


@tack.kernel
def weighted(w, x, out):
    for i in range(len(out)):
        s = 0.0
        for k in range(len(w)):
            s += w[k] * x[i + k]
        out[i] = s


def test_a_few_fixed_sizes_stay_baked(rng):
    """Three weight counts used over and over keep their own variants (the
    loop over the weights can unroll); the result is right either way."""
    x = rng.values(tack.f32, 40)
    xa = tack.array(x)
    for _ in range(3):
        for m in (3, 5, 1):
            w = rng.values(tack.f32, m)
            n = 40 - m + 1
            out = tack.zeros(n, tack.f32)
            weighted(tack.array(w), xa, out)
            want = np.zeros(n, np.float32)   # f32, left to right, as the kernel adds
            for k in range(m):
                want += w[k] * x[k:k + n]
            np.testing.assert_array_equal(out.numpy(), want, err_msg=f"m={m} {rng!r}")
    assert "__tack_shape0" not in _ir(weighted, tack.array(w), xa, out)
