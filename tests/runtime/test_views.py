"""Range views, ``a[start:stop]``: a range of the first dimension that shares the
array's buffer (docs/runtime.md, "Views"). Checked against NumPy's basic slicing
on fresh random values, on the CPU and on OpenCL."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tack

SIZES = (0, 1, 7, 1000)


@tack.kernel
def add_one(a):
    for i in range(len(a)):
        a[i] = a[i] + 1


@tack.kernel
def copy_rows(src, dst):
    for i, j in tack.ndindex(dst.shape[0], dst.shape[1]):
        dst[i, j] = src[i, j] * 2.0


@tack.kernel
def count_into(keys, counts):
    for i in range(len(keys)):
        tack.atomic_add(counts, keys[i], 1)


def random_slices(gen, n, count=12):
    bounds = [None] + list(range(-n - 2, n + 3))
    for _ in range(count):
        yield slice(gen.choice(bounds), gen.choice(bounds))
    yield slice(None)
    yield slice(n, None)


# -- values and metadata ------------------------------------------------------------------

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [tack.i8, tack.i64, tack.f32, tack.f64],
                         ids=lambda t: t.name)
def test_views_read_as_numpy_slices(rng, n, dtype):
    host = rng.values(dtype, n)
    a = tack.array(host)
    for s in random_slices(rng.gen, n):
        view = a[s]
        expected = host[s]
        assert (view.shape, view.dtype, view.size) == (expected.shape, dtype,
                                                       expected.size), (s, rng)
        assert view.nbytes == expected.nbytes
        np.testing.assert_array_equal(view.numpy(), expected, err_msg=f"{s} {rng}")
        if expected.size:
            k = int(rng.gen.integers(-expected.size, expected.size))
            assert view[k] == expected[k], (s, k, rng)


def test_views_of_2d_and_vector_arrays(rng):
    host = rng.values(tack.f64, 7 * 5).reshape(7, 5)
    a = tack.array(host)
    for s in random_slices(rng.gen, 7):
        np.testing.assert_array_equal(a[s].numpy(), host[s], err_msg=f"{s} {rng}")
        np.testing.assert_array_equal(a[s, :].numpy(), host[s, :])
    assert a[2:4][1, 3] == host[3, 3]
    points = rng.values(tack.f32, 9 * 3).reshape(9, 3)
    v = tack.array(points, dtype=tack.vec3())
    part = v[3:8]
    assert (part.shape, part.dtype, part.storage_shape) == ((5,), tack.vec3(), (5, 3))
    np.testing.assert_array_equal(part.numpy(), points[3:8])
    np.testing.assert_array_equal(part[-1], points[7])


def test_a_view_of_a_view_and_a_reshaped_view(rng):
    host = rng.values(tack.i32, 60)
    a = tack.array(host)
    inner = a[10:50][5:-5][3:]
    np.testing.assert_array_equal(inner.numpy(), host[10:50][5:-5][3:])
    grid = a[12:36].reshape(4, 6)
    np.testing.assert_array_equal(grid.numpy(), host[12:36].reshape(4, 6))
    np.testing.assert_array_equal(grid[1:3].numpy(), host[12:36].reshape(4, 6)[1:3])


# -- writes through a view ------------------------------------------------------------

@pytest.mark.parametrize("n", SIZES)
def test_a_kernel_writes_through_a_view_into_the_parent(rng, n):
    host = rng.values(tack.i32, n) // 2
    a = tack.array(host)
    for s in random_slices(rng.gen, n, count=4):
        add_one(a[s])
        host[s] += 1
        np.testing.assert_array_equal(a.numpy(), host, err_msg=f"{s} {rng}")


def test_a_kernel_reads_and_writes_disjoint_views_of_one_array(rng):
    """Two views of one buffer in one call: the launch tests them for overlap,
    as it tests two arrays."""
    host = rng.values(tack.f64, 10 * 6).reshape(10, 6)
    a = tack.array(host)
    copy_rows(a[:5], a[5:])
    expected = host.copy()
    expected[5:] = host[:5] * 2.0
    np.testing.assert_array_equal(a.numpy(), expected, err_msg=repr(rng))


def test_atomics_into_a_view(rng):
    keys = rng.gen.integers(0, 5, size=301).astype(np.int32)
    counts = tack.zeros(12, tack.i32)
    count_into(tack.array(keys), counts[7:])
    expected = np.zeros(12, np.int32)
    expected[7:] = np.bincount(keys, minlength=5)
    np.testing.assert_array_equal(counts.numpy(), expected, err_msg=repr(rng))


@pytest.mark.parametrize("n", [3, 70_000])   # the host path and the fill kernel's
def test_fill_and_copyto_of_a_view(rng, n):
    host = rng.values(tack.f32, n)
    a = tack.array(host)
    a[1:n - 1].fill(2.5)
    host[1:n - 1] = 2.5
    np.testing.assert_array_equal(a.numpy(), host)
    values = rng.values(tack.f32, n // 2)
    tack.copyto(a[n // 3:n // 3 + n // 2], values)
    host[n // 3:n // 3 + n // 2] = values
    np.testing.assert_array_equal(a.numpy(), host, err_msg=repr(rng))
    tack.copyto(a[:n // 2], tack.array(values))
    host[:n // 2] = values
    np.testing.assert_array_equal(a.numpy(), host, err_msg=repr(rng))


def test_copyto_between_overlapping_views_reads_before_it_writes(rng):
    host = rng.values(tack.i64, 50)
    a = tack.array(host)
    tack.copyto(a[1:], a[:-1])
    host[1:] = host[:-1].copy()
    np.testing.assert_array_equal(a.numpy(), host, err_msg=repr(rng))
    tack.copyto(a[:-3], a[3:])
    host[:-3] = host[3:].copy()
    np.testing.assert_array_equal(a.numpy(), host, err_msg=repr(rng))


def test_copies_and_reductions_of_a_view(rng):
    host = rng.values(tack.f64, 101)
    view = tack.array(host)[17:88]
    np.testing.assert_array_equal(view.copy().numpy(), host[17:88])
    np.testing.assert_array_equal(view.astype(tack.f32).numpy(),
                                  host[17:88].astype(np.float32))
    assert view.sum() == pytest.approx(host[17:88].sum(), rel=1e-12)
    assert (view.min(), view.max()) == (host[17:88].min(), host[17:88].max())


# -- what a view shares ---------------------------------------------------------------

def test_a_view_keeps_writability_and_its_memory(rng):
    host = rng.values(tack.i32, 20)
    frozen = tack.array_from_ptr(host.ctypes.data, (20,), tack.i32)
    view = frozen[5:]
    assert not view.writable
    with pytest.raises(ValueError, match=re.escape(
            "Kernel 'add_one': parameter 'a' may be written, but its array is "
            "read-only")):
        add_one(view)
    a = tack.array(host)
    tail = a[15:]
    del a   # the view keeps the buffer
    np.testing.assert_array_equal(tail.numpy(), host[15:])


def test_a_view_of_an_imported_array_writes_to_the_producer(rng):
    host = rng.values(tack.i32, 30) // 2
    expected = host.copy()
    expected[10:20] += 1
    a = tack.from_dlpack(host)
    add_one(a[10:20])
    del a
    np.testing.assert_array_equal(host, expected)


def test_dlpack_export_of_a_view(rng):
    host = rng.values(tack.f32, 40).reshape(8, 5)
    a = tack.array(host)
    shared = np.from_dlpack(a[3:6])
    np.testing.assert_array_equal(shared, host[3:6])
    shared[0, 0] = 7.0   # the same memory
    assert a[3, 0] == 7.0


# -- refusals -------------------------------------------------------------------------

def test_a_step_is_refused():
    a = tack.zeros(10)
    for s, written in ((slice(None, None, 2), "::2"), (slice(None, None, -1), "::-1"),
                       (slice(8, 2, -2), "8:2:-2"), (slice(1, None, 3), "1::3")):
        with pytest.raises(ValueError, match=re.escape(
                f"a view of a tack.Array is a contiguous range: a[start:stop] takes "
                f"no step (got {s.indices(10)[2]}); copy with tack.array("
                f"a.numpy()[{written}], device=a.device)")):
            a[s]


@pytest.mark.parametrize("key, text", [
    ((slice(1, 3), 1), "a[1:3, 1]"), ((slice(1, 3), slice(0, 2)), "a[1:3, 0:2]"),
    ((slice(None), slice(None), slice(None)), "a[:, :, :]"),
    ((slice(1, None), ...), "a[1:, Ellipsis]"),
])
def test_only_the_first_dimension_takes_a_range(key, text):
    a = tack.zeros((4, 3))
    with pytest.raises(TypeError, match=re.escape(
            "a tack.Array is viewed with a[start:stop], a range of its first dimension "
            f"(later dimensions whole, as ':'); got {text}")):
        a[key]
    assert a[1:3, 0:3].shape == (2, 3)   # a whole later dimension, spelled out


def test_a_0d_array_has_no_range():
    with pytest.raises(TypeError, match=re.escape("use a[()] for a 0-d array")):
        tack.zeros(())[0:1]


# -- OpenCL: a view is its allocation and a byte offset ----------------------------------

@pytest.mark.parametrize("dtype", [tack.i32, tack.i8, tack.f64, tack.vec3()], ids=str)
def test_opencl_views_start_anywhere(opencl, rng, dtype):
    vector = dtype == tack.vec3()
    host = rng.values(tack.f32, 3 * 97).reshape(97, 3) if vector else \
        rng.values(dtype, 97)
    a = tack.array(host, dtype=dtype, device=opencl)
    n = len(host)
    for s in (slice(0, 5), slice(1, n - 1), slice(3, 4), slice(n - 1, None),
              slice(7, 7), slice(5, 5), slice(None), slice(-13, -2)):
        view = a[s]
        np.testing.assert_array_equal(view.numpy(), host[s], err_msg=f"{s} {rng}")
        add_one(view)
        host[s] += 1
        np.testing.assert_array_equal(a.numpy(), host, err_msg=f"{s} {rng}")
    inner = a[3:][5:][:4]   # a view of a view: from the allocation
    add_one(inner)
    host[8:12] += 1
    np.testing.assert_array_equal(a.numpy(), host)
    np.testing.assert_array_equal(inner[3], host[11])


@tack.kernel
def shift_add(dst, src):
    for i in range(len(dst)):
        dst[i] = dst[i] + src[i]


def test_opencl_views_of_one_allocation_in_one_launch(opencl, rng):
    host = rng.values(tack.i32, 1001) // 4
    a = tack.array(host, device=opencl)
    shift_add(a[1:500], a[501:1000])              # disjoint: the restrict variant
    host[1:500] += host[501:1000]
    np.testing.assert_array_equal(a.numpy(), host, err_msg=repr(rng))
    tack.copyto(a[3:], a[:-3])                    # overlapping: read before written
    host[3:] = host[:-3].copy()
    np.testing.assert_array_equal(a.numpy(), host, err_msg=repr(rng))
    assert tack.algorithms.sum(a[7:20]) == host[7:20].sum()
