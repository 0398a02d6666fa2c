"""Issue #8: ``tack.ndindex`` with 4 and 5 dimensions (docs/language.md, "The parallel
loop": the leading dimensions one loop over their product, their indices recovered
with ``//`` and ``%``, the last two loops of their own).

Checked against NumPy on random extents, including zero and one extents, with
bounds from ``a.shape[k]``, scalar parameters and expressions, and a kernel
return after a 4-D loop.
"""

import itertools
import re

import numpy as np
import pytest

import tack


@tack.kernel
def grid4(a, out):
    for i, j, k, l in tack.ndindex(a.shape[0], a.shape[1], a.shape[2], a.shape[3]):
        out[i, j, k, l] = a[i, j, k, l] * 2.0 + i * 1000 + j * 100 + k * 10 + l


@tack.kernel
def grid5(a, out):
    for i, j, k, l, m in tack.ndindex(a.shape[0], a.shape[1], a.shape[2], a.shape[3],
                                      a.shape[4]):
        out[i, j, k, l, m] = a[i, j, k, l, m] - (i - j + k - l + m)


@tack.kernel
def flat4(out, n0, n1, n2, n3):
    for i, j, k, l in tack.ndindex(n0, n1, n2 + 1 - 1, min(n3, len(out))):
        out[((i * n1 + j) * n2 + k) * n3 + l] = i * 1000 + j * 100 + k * 10 + l


@tack.kernel
def count4(a, counter) -> int:
    for i, j, k, l in tack.ndindex(a.shape[0], a.shape[1], a.shape[2], a.shape[3]):
        if a[i, j, k, l] > 0.0:
            tack.atomic_add(counter, 0, 1)
    return counter[0]


def index_sum(shape, weights):
    grids = np.meshgrid(*(np.arange(s) for s in shape), indexing="ij")
    return sum(w * g for w, g in zip(weights, grids))


SHAPES4 = [(2, 3, 4, 5), (1, 1, 1, 1), (3, 0, 2, 2), (2, 3, 1, 0), (5, 3, 2, 7)]
SHAPES5 = [(2, 3, 1, 4, 3), (1, 1, 1, 1, 1), (2, 2, 0, 2, 2), (3, 1, 2, 2, 5)]


@pytest.mark.parametrize("shape", SHAPES4, ids=str)
def test_ndindex_4d(shape, rng):
    a = rng.floats(int(np.prod(shape))).reshape(shape)
    out = tack.full(shape, -7.0)
    grid4(tack.array(a), out)
    expected = a * 2 + index_sum(shape, [1000, 100, 10, 1])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, err_msg=f"seed={rng.seed}")


@pytest.mark.parametrize("shape", SHAPES5, ids=str)
def test_ndindex_5d(shape, rng):
    a = rng.floats(int(np.prod(shape)), np.float64).reshape(shape)
    out = tack.full(shape, -7.0, tack.f64)
    grid5(tack.array(a), out)
    expected = a - index_sum(shape, [1, -1, 1, -1, 1])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, err_msg=f"seed={rng.seed}")


@pytest.mark.parametrize("shape", [(3, 2, 4, 5), (1, 4, 1, 3), (2, 2, 0, 3), (0, 1, 1, 1)],
                         ids=str)
def test_ndindex_4d_with_scalar_bounds(shape):
    size = int(np.prod(shape))
    out = tack.full(max(size, 1), -1, tack.i64)
    flat4(out, *shape)
    expected = np.full(max(size, 1), -1, np.int64)
    expected[:size] = index_sum(shape, [1000, 100, 10, 1]).ravel()
    np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 3, 0, 2)], ids=str)
def test_return_after_a_4d_loop(shape, rng):
    a = rng.floats(int(np.prod(shape))).reshape(shape)
    counter = tack.zeros(1, tack.i32)
    got = count4(tack.array(a), counter)
    assert got == int((a > 0).sum()), f"seed={rng.seed}"


def test_4d_debug_mode_bounds_check():
    shape = (2, 2, 2, 3)
    a, out = tack.ones(shape), tack.zeros(shape)
    tack.set_debug(True)
    try:
        grid4(a, out)
    finally:
        tack.set_debug(False)
    np.testing.assert_allclose(out.numpy(), 2 + index_sum(shape, [1000, 100, 10, 1]))


@tack.kernel
def e_four_into_three(a):
    for i, j, k in tack.ndindex(2, 2, 2, 2):
        a[i] = 1.0


def test_four_extents_into_three_names_is_rejected():
    a = tack.zeros(4)
    message = ("Kernel 'e_four_into_three': unsupported tack.ndindex() with 4 extents unpacked "
               "into 3 names at line 3, column 5")
    with pytest.raises(tack.UnsupportedSyntaxError, match=f"^{re.escape(message)}(\n|$)"):
        e_four_into_three(a)
    np.testing.assert_array_equal(a.numpy(), np.zeros(4, np.float32))


@tack.kernel
def counted4(counter, n0, n1, n2, n3):
    for i, j, k, l in tack.ndindex(n0, n1, n2, n3):
        tack.atomic_add(counter, 0, 1)


@pytest.mark.parametrize("extents", [(-2, -3, 1, 1), (-2, -3, -1, -1), (2, -3, 4, 5),
                                     (2, 3, -4, -5), (2, 3, 4, 5)], ids=str)
def test_negative_extents_count_as_zero_as_in_python(extents):
    """Two negative extents must not multiply to a positive count."""
    counter = tack.zeros(1, tack.i64)
    counted4(counter, *extents)
    want = len(list(itertools.product(*(range(e) for e in extents))))
    assert counter[0] == want
