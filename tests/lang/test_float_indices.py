"""A float index is converted to i64 (truncated toward zero) on its own, before
the indices of a multi-dimensional access are combined row-major
(docs/language.md, "Arrays and indexing"): ``m[0.5, 1]`` is ``m[0, 1]``, and
an f32 index does not make the flat index an f32 sum that rounds past 2**24.
Loads, stores and atomics, 2-D, 3-D and vector arrays, against NumPy."""

import numpy as np
import pytest

import tack


@tack.kernel
def read_rows(m, rows, col, out):
    for i in range(len(rows)):
        out[i] = m[rows[i], col]


@tack.kernel
def write_rows(m, rows, col, value):
    for i in range(len(rows)):
        m[rows[i], col] = value


@tack.kernel
def add_rows(m, rows, col):
    for i in range(len(rows)):
        tack.atomic_add(m, (rows[i], col), 1)


@tack.kernel
def read_3d(a, x, out):
    for i in range(len(x)):
        out[i] = a[x[i], x[i] * 0.5, 1]


@tack.kernel
def read_vectors(p, x, out):
    for i in range(len(x)):
        out[i] = p[x[i], 1].y


def truncated(x) -> np.ndarray:
    return np.trunc(x).astype(np.int64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_loads_stores_and_atomics_truncate_each_index(dtype):
    rng = np.random.default_rng()
    n = int(rng.integers(3, 12))
    host = np.arange(n * 10, dtype=np.int64).reshape(n, 10)
    rows = (rng.random(int(rng.integers(1, 40))) * (n + 0.99) - 0.99).astype(dtype)
    rows = np.concatenate([rows, np.array([0.5, -0.25, n - 0.5, 1.0], dtype)])
    m, r = tack.array(host), tack.array(rows)
    out = tack.zeros(len(rows), tack.i64)
    read_rows(m, r, 3, out)
    np.testing.assert_array_equal(out.numpy(), host[truncated(rows), 3])
    write_rows(m, r, 7, -1)
    want = host.copy()
    want[truncated(rows), 7] = -1
    np.testing.assert_array_equal(m.numpy(), want)
    add_rows(m, r, 2)
    np.add.at(want, (truncated(rows), 2), 1)
    np.testing.assert_array_equal(m.numpy(), want)


def test_an_f32_index_past_2_to_the_24():
    """The flat index 2 * 6,000,000 + 5,999,999 is above 2**24: an f32 sum of the
    indices rounds it (to the next element, past the end for the last one)."""
    cols = 6_000_000
    host = (np.arange(cols) % 251).astype(np.uint8)
    m = tack.array(np.broadcast_to(host, (3, cols)))
    x = np.array([cols - 3, cols - 2, cols - 1, 3], np.float32)
    out = tack.zeros(4, tack.i64)

    @tack.kernel
    def last_row(m, x, out):
        for i in range(len(x)):
            out[i] = m[2, x[i]]
    last_row(m, tack.array(x), out)
    np.testing.assert_array_equal(out.numpy(), host[x.astype(np.int64)])


def test_three_dimensions_and_vector_arrays():
    rng = np.random.default_rng()
    a = rng.standard_normal((5, 4, 3))
    x = np.array([0.0, 0.75, 1.5, 2.9, 3.99, -0.5], np.float64)
    out = tack.zeros(len(x), tack.f64)
    read_3d(tack.array(a), tack.array(x), out)
    np.testing.assert_array_equal(out.numpy(), a[truncated(x), truncated(x * 0.5), 1])
    p = rng.standard_normal((4, 3, 3)).astype(np.float32)
    vectors = tack.array(p, dtype=tack.vec3())
    got = tack.zeros(len(x), tack.f32)
    read_vectors(vectors, tack.array(x[x < 4]), got[:int(np.sum(x < 4))])
    np.testing.assert_array_equal(got.numpy()[:int(np.sum(x < 4))],
                                  p[truncated(x[x < 4]), 1, 1])


@tack.kernel
def pick_components(p, x, out):
    for i in range(len(x)):
        v = p[0]
        out[i] = v[x[i]] + v[1.0] * 100.0


@tack.kernel
def pick_entries(x, out):
    for i in range(len(x)):
        m = tack.mat33(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
        out[i] = m[x[i], x[i] * 0.5]


def test_vector_and_matrix_components_truncate_a_float_index():
    """``v[x]`` with a float ``x`` truncates as an array index does (it gave the
    last component for every float: randdiff6), and so does a float literal."""
    x = np.array([0.5, 1.9, 2.2, -0.5, 1.0, 0.0], np.float32)
    out = tack.zeros(len(x), tack.f32)
    pick_components(tack.array(np.array([[10, 20, 30]], np.float32), dtype=tack.vec3()),
                    tack.array(x), out)
    np.testing.assert_array_equal(out.numpy(), np.array([10, 20, 30], np.float32)[
        truncated(x)] + 2000)
    y = np.array([0.0, 1.5, 2.9, 2.0, -0.7], np.float32)
    entries = tack.zeros(len(y), tack.f32)
    pick_entries(tack.array(y), entries)
    m = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
    np.testing.assert_array_equal(entries.numpy(), m[truncated(y), truncated(y * 0.5)])


@tack.kernel
def vector_rows(p, idx, out):
    for i in range(len(idx)):
        out[i] = p[idx[i]].y


@tack.kernel
def vector_writes(p, idx, v):
    for i in range(1):
        p[idx[0]] = v
        tack.atomic_add(p, idx[1], v)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64])
def test_one_index_into_an_array_of_vectors(dtype):
    """A narrow or float index of a 1-D array of vectors becomes an i64 before it
    is scaled by the component count (a u8 100 read flat element 44 = p[14].z,
    and 0.9 read element trunc(0.9 * 3 + 1) = p[1].x; probes audit)."""
    n = 12000
    host = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
    first = 11000 if dtype == np.int16 else 100     # 33000 wraps in i16, 300 in u8
    idx = np.array([first, 255, 7, 0.9 if dtype in (np.float32, np.float64) else 1],
                   dtype=dtype)
    p = tack.array(host, dtype=tack.vec3())
    out = tack.zeros(len(idx), tack.f32)
    vector_rows(p, tack.array(idx), out)
    vector_writes(p, tack.array(idx), tack.vec3(-1.0, -2.0, -3.0))
    rows = truncated(idx)
    np.testing.assert_array_equal(out.numpy(), host[rows, 1])
    want = host.copy()
    want[rows[0]] = [-1.0, -2.0, -3.0]
    want[rows[1]] += [-1.0, -2.0, -3.0]
    np.testing.assert_array_equal(p.numpy(), want)
