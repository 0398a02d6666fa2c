"""Spec 003, Pointer interop: tack.array_from_ptr and tack.memory_space."""

from __future__ import annotations

import gc
import re
import weakref

import numpy as np
import pytest

import tack

READ_ONLY_HOST = ("{} on a read-only array (wrapped with writable=False or imported "
                  "read-only)")
READ_ONLY_KERNEL = ("Kernel '{}': parameter '{}' may be written, but its array is "
                    "read-only. Pass a writable array: a copy (a.copy()), memory "
                    "wrapped with array_from_ptr(..., writable=True), or a writable "
                    "DLPack tensor imported with tack.from_dlpack.")


@tack.kernel
def store(out, value):
    for i in range(len(out)):
        out[i] = value


@tack.kernel
def copy_plus_one(src, out):
    for i in range(len(out)):
        out[i] = src[i] + 1


@tack.kernel
def count_into(counts, src):
    for i in range(len(src)):
        tack.atomic_add(counts, 0, src[i])


@pytest.mark.parametrize("dtype", [tack.i8, tack.u16, tack.i64, tack.f32, tack.f64],
                         ids=str)
@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_wraps_an_address_without_copying(rng, dtype, n):
    host = rng.values(dtype, n)
    a = tack.array_from_ptr(host.ctypes.data, n, dtype)
    b = tack.array_from_ptr(host, (n,), dtype)
    for wrapped in (a, b):
        assert wrapped.shape == (n,) and wrapped.dtype is dtype
        assert not wrapped.writable
        np.testing.assert_array_equal(wrapped.numpy(), host, err_msg=repr(rng))
    if n:
        host[0] = 42
        assert a[0] == 42 and b[0] == 42  # the same memory, not a copy


def test_shape_and_dtype_forms():
    host = np.arange(12, dtype=np.int32)
    a = tack.array_from_ptr(host, (3, 4), np.int32)
    assert a.shape == (3, 4) and a.dtype is tack.i32 and a[2, 3] == 11
    assert tack.array_from_ptr(host, 12, "int32").shape == (12,)
    # fewer elements than the memory holds is fine; the view starts at ptr
    assert tack.array_from_ptr(host.ctypes.data + 8, 2, tack.i32).numpy().tolist() == [2, 3]


def test_read_only_by_default_on_the_host():
    host = np.arange(5.0)
    ro = tack.array_from_ptr(host, 5, tack.f64)
    with pytest.raises(RuntimeError, match=re.escape(READ_ONLY_HOST.format("fill()"))):
        ro.fill(1.0)
    with pytest.raises(RuntimeError, match=re.escape(READ_ONLY_HOST.format("copyto()"))):
        tack.copyto(ro, np.zeros(5))
    big = np.zeros(70000, np.float32)  # the kernel fill refuses as well
    with pytest.raises(RuntimeError, match=re.escape(READ_ONLY_HOST.format("fill()"))):
        tack.array_from_ptr(big, big.size, tack.f32).fill(1.0)
    assert not big.any()
    np.testing.assert_array_equal(host, np.arange(5.0))


def test_kernel_store_to_a_read_only_array_raises_before_launch(rng):
    host = rng.values(tack.i32, 33)
    expected = host.copy()
    writable = tack.zeros(33, tack.i32)
    store(writable, 5)  # warm the fast path for this kernel
    ro = tack.array_from_ptr(host, 33, tack.i32)
    for _ in range(2):  # the second call takes the fast path if one was cached
        with pytest.raises(ValueError, match=re.escape(
                READ_ONLY_KERNEL.format("store", "out"))):
            store(ro, 7)
        np.testing.assert_array_equal(host, expected, err_msg=repr(rng))
    store(writable, 9)
    assert writable.numpy().tolist() == [9] * 33


def test_atomic_target_counts_as_written():
    counts = tack.array_from_ptr(np.zeros(1, np.int32), 1, tack.i32)
    src = tack.ones(4, tack.i32)
    for _ in range(2):
        with pytest.raises(ValueError, match=re.escape(
                READ_ONLY_KERNEL.format("count_into", "counts"))):
            count_into(counts, src)
    assert counts[0] == 0


def test_kernel_that_only_reads_a_read_only_array_works(rng):
    host = rng.values(tack.i32, 101) // 2
    ro = tack.array_from_ptr(host, 101, tack.i32)
    out = tack.empty(101, tack.i32)
    for _ in range(2):
        copy_plus_one(ro, out)
        np.testing.assert_array_equal(out.numpy(), host + 1, err_msg=repr(rng))
    with pytest.raises(ValueError, match=re.escape(
            READ_ONLY_KERNEL.format("copy_plus_one", "out"))):
        copy_plus_one(out, ro)


def test_writable_true_writes_through(rng):
    host = np.zeros(1000, np.int64)
    w = tack.array_from_ptr(host.ctypes.data, 1000, tack.i64, writable=True)
    assert w.writable
    store(w, -3)
    assert (host == -3).all()
    w.fill(4)
    assert (host == 4).all()
    tack.copyto(w, np.arange(1000))
    np.testing.assert_array_equal(host, np.arange(1000))
    view = tack.array_from_ptr(host, (10, 100), tack.i64, writable=True).reshape(-1)
    store(view, 8)
    assert (host == 8).all()


def test_a_wrapped_numpy_array_is_kept_alive():
    host = np.arange(6.0)
    ref = weakref.ref(host)
    a = tack.array_from_ptr(host, 6, tack.f64)
    view = a.reshape(2, 3)
    del host, a
    gc.collect()
    assert ref() is not None
    assert view[1, 2] == 5.0
    del view
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("ptr,name", [("0x10", "str"), (1.5, "float"), (None, "NoneType"),
                                      ([1, 2], "list")])
def test_a_pointer_that_is_not_an_address_raises_type_error(ptr, name):
    with pytest.raises(TypeError, match=re.escape(
            f"array_from_ptr() on the CPU takes an integer address or a NumPy array, "
            f"not {name}")):
        tack.array_from_ptr(ptr, 1, tack.f32)


def test_bool_and_null_pointers_are_refused():
    for flag in (True, np.bool_(False)):
        with pytest.raises(TypeError, match=re.escape(
                "array_from_ptr() on the CPU takes an integer address or a NumPy array, "
                f"not {type(flag).__name__}")):
            tack.array_from_ptr(flag, 1, tack.f32)
    with pytest.raises(ValueError, match=re.escape(
            "array_from_ptr() was given a null pointer")):
        tack.array_from_ptr(0, 4, tack.f32)
    assert tack.array_from_ptr(0, 0, tack.f32).size == 0


@pytest.mark.parametrize("address, nbytes", [(-4096, 32), (-1, 0), (2**64, 0),
                                             (2**64 - 16, 32)])
def test_addresses_outside_the_64_bit_space_are_refused(address, nbytes):
    # reading such an array crashed the process
    with pytest.raises(ValueError, match=re.escape(
            f"array_from_ptr() was given the address {address}: with {nbytes} bytes it "
            "does not fit in 0 .. 2**64 - 1")):
        tack.array_from_ptr(address, nbytes // 4, tack.f32)


def test_shape_and_dtype_errors():
    with pytest.raises(ValueError, match=re.escape("negative dimensions are not allowed")):
        tack.array_from_ptr(np.zeros(4), -1, tack.f64)
    with pytest.raises(TypeError, match=re.escape("Unsupported numpy dtype: float16")):
        tack.array_from_ptr(np.zeros(4), 4, np.float16)


@pytest.mark.parametrize("ptr", [np.zeros(3), 0, 12345, 2 ** 70, -1, np.uint64(8)])
def test_memory_space_is_cpu(ptr):
    address = ptr.ctypes.data if isinstance(ptr, np.ndarray) else ptr
    assert tack.memory_space(address) == "cpu"


@tack.kernel
def _count_into(hits):
    for i in range(4):
        tack.atomic_add(hits, 0, 1)


def test_misaligned_atomic_target_is_refused_before_the_launch():
    raw = np.zeros(64, np.uint8)
    base = raw.ctypes.data
    start = (-base) % 8 + 1  # one byte past an 8-byte boundary
    aligned = tack.array_from_ptr(base + start - 1, (4,), tack.i32, writable=True)
    misaligned = tack.array_from_ptr(base + start, (4,), tack.i32, writable=True)
    _count_into(aligned)
    assert aligned[0] == 4
    before = raw.copy()
    with pytest.raises(ValueError, match="parameter 'hits' is an atomic target, but its "
                                         "array is not aligned to its 4-byte elements"):
        _count_into(misaligned)
    np.testing.assert_array_equal(raw, before)


def test_a_numpy_array_is_wrapped_only_as_far_as_tack_can_read_it():
    """For a NumPy ptr Tack knows the layout, size and writability, and checks them."""
    data = b"\x00" * 16
    locked = np.frombuffer(data, dtype=np.float32)            # read-only memory
    with pytest.raises(ValueError, match=re.escape(
            "array_from_ptr(..., writable=True) of a NumPy array that is read-only")):
        tack.array_from_ptr(locked, (4,), tack.f32, writable=True)
    assert tack.array_from_ptr(locked, (4,), tack.f32).numpy().tolist() == [0.0] * 4
    for strided in (np.arange(10, dtype=np.float32)[::2],
                    np.arange(6, dtype=np.float32).reshape(2, 3).T):
        with pytest.raises(ValueError, match=re.escape(
                "array_from_ptr() wraps C-contiguous NumPy arrays only")):
            tack.array_from_ptr(strided, strided.shape, tack.f32)
    with pytest.raises(TypeError, match=re.escape(
            "array_from_ptr() wraps NumPy arrays in the machine's byte order; this one "
            "is '>f4'")):
        tack.array_from_ptr(np.arange(3, dtype=">f4"), (3,), tack.f32)
    with pytest.raises(ValueError, match=re.escape(
            "array_from_ptr() needs 4000000 bytes for this shape and dtype; the NumPy "
            "array has 8")):
        tack.array_from_ptr(np.zeros(2, np.float32), (1_000_000,), tack.f32)
    assert data == b"\x00" * 16


@pytest.mark.parametrize("writable", [False, True])
def test_an_array_of_python_objects_is_not_wrapped(writable):
    objects = np.array([object(), object()], dtype=object)
    with pytest.raises(TypeError, match=re.escape(
            "array_from_ptr() cannot wrap a NumPy array of Python objects (dtype "
            "object): it holds references, not values")):
        tack.array_from_ptr(objects, (2,), tack.i64, writable=writable)
    structured = np.zeros(2, dtype=[("a", "i8"), ("b", object)])
    with pytest.raises(TypeError, match="cannot wrap a NumPy array of Python objects"):
        tack.array_from_ptr(structured, (2,), tack.i64, writable=writable)
