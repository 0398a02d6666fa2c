"""Spec 003, DLPack: Array.__dlpack__ / __dlpack_device__ and tack.from_dlpack.

NumPy is the other side of every zero-copy test. A counting producer hands out
NumPy's own capsule with its deleter wrapped, so the tests can see when, and
how often, Tack releases an imported tensor.
"""

from __future__ import annotations

import ctypes
import gc
import re
import subprocess
import sys
import textwrap
import weakref

import numpy as np
import pytest

import tack

ALL_TYPES = (tack.i8, tack.i16, tack.i32, tack.i64, tack.u8, tack.u16, tack.u32,
             tack.u64, tack.f32, tack.f64)
NAMES = [t.name for t in ALL_TYPES]


@tack.kernel
def negate(a):
    for i in range(len(a)):
        a[i] = -a[i]


# -- the DLPack structures, as the standard lays them out ------------------------------------

class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class Legacy(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", DELETER)]


class Versioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_api = ctypes.pythonapi
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def capsule_name(capsule) -> bytes:
    return _api.PyCapsule_GetName(capsule)


def managed(capsule):
    name = capsule_name(capsule)
    kind = Versioned if name == b"dltensor_versioned" else Legacy
    return kind.from_address(_api.PyCapsule_GetPointer(capsule, name))


class CountingProducer:
    """Exports ``host`` through NumPy's capsule; ``deleted`` counts deleter calls."""

    def __init__(self, host, deleted: list):
        self.host = host
        self.deleted = deleted
        self._deleters = []

    def _counted(self, capsule):
        struct = managed(capsule)
        field = ctypes.addressof(struct) + type(struct).deleter.offset
        # a copy of the function pointer, not a view of the field we overwrite
        original = DELETER(ctypes.c_void_p.from_address(field).value)
        deleted = self.deleted

        def delete(address):
            deleted.append(address)
            original(address)
        wrapper = DELETER(delete)
        self._deleters.append(wrapper)  # the callback must outlive the capsule
        struct.deleter = wrapper
        return capsule

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self._counted(self.host.__dlpack__(max_version=max_version))

    def __dlpack_device__(self):
        return self.host.__dlpack_device__()


class LegacyProducer(CountingProducer):
    """A producer from before DLPack 1.0: no ``max_version`` keyword."""

    def __dlpack__(self, stream=None):
        return self._counted(self.host.__dlpack__())


# -- export ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=NAMES)
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (3, 5), ()])
def test_numpy_imports_a_tack_array_without_copying(rng, dtype, shape):
    host = rng.values(dtype, int(np.prod(shape))).reshape(shape)
    a = tack.array(host)
    view = np.from_dlpack(a)
    assert view.dtype == dtype.numpy and view.shape == shape and view.flags.writeable
    np.testing.assert_array_equal(view, host, err_msg=repr(rng))
    if view.size:
        view[(0,) * len(shape)] = 3
        assert a[(0,) * len(shape)] == 3


def test_a_kernel_write_is_visible_through_the_numpy_view(rng):
    host = rng.values(tack.f64, 1001)
    a = tack.array(host)
    view = np.from_dlpack(a)
    negate(a)
    np.testing.assert_array_equal(view, -host, err_msg=repr(rng))


def test_versioned_capsule_when_max_version_is_at_least_1_0():
    a = tack.arange(4, dtype=tack.f32)
    for version in ((1, 0), (1, 1), (2, 0), [1, 0]):
        capsule = a.__dlpack__(max_version=version)
        assert capsule_name(capsule) == b"dltensor_versioned"
        struct = managed(capsule)
        assert (struct.major, struct.minor) == (1, 0)
        assert struct.flags == 0
    for version in (None, (0, 8)):
        assert capsule_name(a.__dlpack__(max_version=version)) == b"dltensor"


def test_the_capsule_describes_the_array():
    a = tack.arange(6, dtype=tack.u16).reshape(2, 3)
    for capsule in (a.__dlpack__(), a.__dlpack__(max_version=(1, 0))):
        t = managed(capsule).dl_tensor
        assert (t.device_type, t.device_id, t.ndim) == (1, 0, 2)
        assert (t.code, t.bits, t.lanes) == (1, 16, 1)
        assert [t.shape[0], t.shape[1]] == [2, 3]
        assert not t.strides and t.byte_offset == 0  # C-contiguous


def test_a_read_only_array_exports_the_read_only_flag():
    host = np.arange(4.0)
    ro = tack.array_from_ptr(host, 4, tack.f64)
    assert managed(ro.__dlpack__(max_version=(1, 0))).flags & 1
    view = np.from_dlpack(ro)
    assert not view.flags.writeable
    np.testing.assert_array_equal(view, host)
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 1.0


def test_copy_true_raises_buffer_error():
    with pytest.raises(BufferError, match=re.escape(
            "Tack exports DLPack tensors without copying; copy=True is not supported")):
        tack.zeros(3).__dlpack__(copy=True)
    with pytest.raises(BufferError):
        np.from_dlpack(tack.zeros(3), copy=True)
    for copy in (None, False):
        assert capsule_name(tack.zeros(3).__dlpack__(copy=copy)) == b"dltensor"


def test_stream_and_dl_device_are_ignored():
    capsule = tack.zeros(3).__dlpack__(stream=7, dl_device=(2, 3), max_version=(1, 0))
    assert managed(capsule).dl_tensor.device_type == 1


def test_dlpack_device():
    assert tack.zeros(3).__dlpack_device__() == (1, 0)
    assert tack.zeros(3, device=tack.device("cpu", num_threads=1)).__dlpack_device__() \
        == (1, 0)


def test_the_capsule_keeps_the_array_alive_until_the_consumer_is_done():
    a = tack.arange(5, dtype=tack.f64)
    ref = weakref.ref(a)
    view = np.from_dlpack(a)
    del a
    gc.collect()
    assert ref() is not None
    np.testing.assert_array_equal(view, np.arange(5.0))
    del view
    gc.collect()
    assert ref() is None


def test_an_unconsumed_capsule_releases_the_array():
    a = tack.arange(5)
    ref = weakref.ref(a)
    capsule = a.__dlpack__(max_version=(1, 0))
    del a
    gc.collect()
    assert ref() is not None
    del capsule
    gc.collect()
    assert ref() is None


# -- import ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_TYPES, ids=NAMES)
@pytest.mark.parametrize("shape", [(0,), (1,), (7,), (2, 0, 3), (3, 5), ()])
def test_from_dlpack_shares_numpy_memory(rng, dtype, shape):
    host = rng.values(dtype, int(np.prod(shape))).reshape(shape)
    a = tack.from_dlpack(host)
    assert a.shape == shape and a.dtype is dtype and a.writable
    assert a.device is tack.get_default_device()
    np.testing.assert_array_equal(a.numpy(), host, err_msg=repr(rng))
    if host.size:
        index = (0,) * len(shape)
        host[index] = 5
        assert a[index] == 5
        a.fill(6)
        assert (host == 6).all()


def test_kernel_writes_reach_the_producer(rng):
    host = rng.values(tack.i32, 1001) // 2
    expected = -host
    a = tack.from_dlpack(host)
    negate(a)
    np.testing.assert_array_equal(host, expected, err_msg=repr(rng))


def test_from_a_capsule_and_from_a_legacy_producer():
    host = np.arange(4, dtype=np.int64)
    a = tack.from_dlpack(host.__dlpack__(max_version=(1, 0)))
    b = tack.from_dlpack(host.__dlpack__())
    deleted = []
    c = tack.from_dlpack(LegacyProducer(host, deleted))
    host[1] = -1
    assert a[1] == b[1] == c[1] == -1
    assert a.writable and b.writable and c.writable


def test_a_read_only_tensor_imports_read_only():
    host = np.arange(5, dtype=np.int32)
    host.flags.writeable = False
    a = tack.from_dlpack(host)
    assert not a.writable
    with pytest.raises(RuntimeError, match=re.escape("fill() on a read-only array")):
        a.fill(0)
    with pytest.raises(ValueError, match=re.escape(
            "Kernel 'negate': parameter 'a' may be written, but its array is read-only.")):
        negate(a)
    np.testing.assert_array_equal(host, np.arange(5))
    # Tack's own export round-trips the flag through the versioned capsule.
    assert not tack.from_dlpack(tack.array_from_ptr(host, 5, tack.i32)).writable


def test_from_dlpack_device_argument():
    d = tack.device("cpu", num_threads=1)
    assert tack.from_dlpack(np.zeros(2), device=d).device is d
    assert tack.from_dlpack(np.zeros(2), device="cpu").device is tack.device("cpu")
    with d:
        assert tack.from_dlpack(np.zeros(2)).device is d


def test_from_dlpack_copy_true_is_independent():
    host = np.arange(6.0).reshape(2, 3)
    a = tack.from_dlpack(host, copy=True)
    host[0, 0] = 99.0
    assert a.shape == (2, 3) and a.dtype is tack.f64 and a[0, 0] == 0.0
    assert a.writable
    b = tack.from_dlpack(tack.arange(3), copy=True)
    assert b.numpy().tolist() == [0, 1, 2]


def test_from_dlpack_copy_true_takes_a_capsule_and_checks_the_source():
    transposed = np.arange(6.0).reshape(2, 3).T
    a = tack.from_dlpack(transposed.__dlpack__(), copy=True)   # a bare, strided capsule
    np.testing.assert_array_equal(a.numpy(), transposed)
    with pytest.raises(TypeError, match=re.escape(
            "from_dlpack() takes a DLPack capsule or an object with __dlpack__, not list")):
        tack.from_dlpack([1, 2], copy=True)
    used = np.arange(3.0).__dlpack__()
    tack.from_dlpack(used)
    with pytest.raises(ValueError, match=re.escape("this DLPack capsule was already consumed")):
        tack.from_dlpack(used, copy=True)


def test_a_consumed_capsule_raises_value_error():
    capsule = np.zeros(3).__dlpack__()
    tack.from_dlpack(capsule)
    with pytest.raises(ValueError, match=re.escape("this DLPack capsule was already consumed")):
        tack.from_dlpack(capsule)
    capsule = tack.zeros(3).__dlpack__(max_version=(1, 0))
    np_view = tack.from_dlpack(capsule)
    assert np_view.shape == (3,)
    with pytest.raises(ValueError, match=re.escape("this DLPack capsule was already consumed")):
        tack.from_dlpack(capsule)


def test_a_capsule_of_another_major_version_is_refused_and_left_to_its_producer():
    capsule = tack.arange(3, dtype=tack.f64).__dlpack__(max_version=(1, 0))
    managed(capsule).major, managed(capsule).minor = 2, 5
    with pytest.raises(ValueError, match=re.escape(
            "DLPack 2.5 tensors cannot be imported: Tack reads DLPack 1.x")):
        tack.from_dlpack(capsule)
    assert capsule_name(capsule) == b"dltensor_versioned"   # not consumed
    managed(capsule).major = 1
    assert tack.from_dlpack(capsule).numpy().tolist() == [0.0, 1.0, 2.0]

def test_a_capsule_of_another_kind_raises_value_error():
    name = b"not_a_tensor"
    capsule = _api.PyCapsule_New(1234, name, None)
    with pytest.raises(ValueError, match=re.escape(
            "not a DLPack capsule (its name is 'not_a_tensor')")):
        tack.from_dlpack(capsule)


@pytest.mark.parametrize("source", [[1, 2], 3.0, None, np.float64(1.0)])
def test_a_source_without_dlpack_raises_type_error(source):
    with pytest.raises(TypeError, match=re.escape(
            f"from_dlpack() takes a DLPack capsule or an object with __dlpack__, not "
            f"{type(source).__name__}")):
        tack.from_dlpack(source)


@pytest.mark.parametrize("make", [
    lambda: np.arange(6.0).reshape(2, 3).T,
    lambda: np.arange(10, dtype=np.int32)[::2],
    lambda: np.zeros((3, 4), np.float32)[:, 1:3],
], ids=["transposed", "strided", "sliced"])
def test_non_contiguous_tensors_raise_value_error(make):
    with pytest.raises(ValueError, match=re.escape(
            "only C-contiguous tensors can be wrapped without copying; pass copy=True or "
            "make the tensor contiguous")):
        tack.from_dlpack(make())
    copied = tack.from_dlpack(make(), copy=True)
    np.testing.assert_array_equal(copied.numpy(), make())


@pytest.mark.parametrize("shape", [(), (3,), (2, 1)])
def test_a_null_data_pointer_raises_value_error(shape):
    capsule = tack.ones(shape).__dlpack__()
    managed(capsule).dl_tensor.data = None
    with pytest.raises(ValueError, match=re.escape(
            "the DLPack tensor has a null data pointer")):
        tack.from_dlpack(capsule)


def test_unit_extents_and_empty_tensors_count_as_contiguous():
    column = np.zeros((4, 1))[:, :]
    assert tack.from_dlpack(column.T).shape == (1, 4)
    assert tack.from_dlpack(np.zeros((0, 3))).shape == (0, 3)


@pytest.mark.parametrize("dtype,code,bits", [(np.float16, 2, 16), (np.bool_, 6, 8),
                                             (np.complex64, 5, 64)])
def test_dtypes_without_a_tack_type_raise_type_error(dtype, code, bits):
    with pytest.raises(TypeError, match=re.escape(
            f"DLPack dtype (code {code}, {bits} bits) has no Tack type")):
        tack.from_dlpack(np.zeros(3, dtype))


# -- the producer's deleter ----------------------------------------------------------------------

@pytest.mark.parametrize("producer_class", [CountingProducer, LegacyProducer])
def test_the_producer_is_released_once_after_the_array_and_its_views(producer_class):
    deleted = []
    host = np.arange(12.0)
    host_ref = weakref.ref(host)
    producer = producer_class(host, deleted)
    producer_ref = weakref.ref(producer)
    a = tack.from_dlpack(producer)
    view = a.reshape(3, 4)
    flat = view.reshape(-1)
    del host, producer
    negate(flat)
    gc.collect()
    assert deleted == [] and producer_ref() is not None
    del a
    gc.collect()
    assert deleted == [] and host_ref() is not None
    assert view[2, 3] == -11.0
    del view
    gc.collect()
    assert deleted == []
    del flat
    gc.collect()
    assert len(deleted) == 1
    assert producer_ref() is None and host_ref() is None
    gc.collect()
    assert len(deleted) == 1


def test_a_rejected_import_leaves_the_capsule_to_the_producer():
    deleted = []
    host = np.arange(6.0).reshape(2, 3).T
    host_ref = weakref.ref(host)
    producer = CountingProducer(host, deleted)
    with pytest.raises(ValueError, match="only C-contiguous"):
        tack.from_dlpack(producer)
    del host, producer
    gc.collect()
    # the unconsumed capsule's own destructor ran the deleter, once
    assert len(deleted) == 1 and host_ref() is None


# -- PyTorch ----------------------------------------------------------------------------------

def test_torch_round_trip():
    torch = pytest.importorskip("torch")
    t = torch.arange(10, dtype=torch.float32)
    a = tack.from_dlpack(t)
    assert a.dtype is tack.f32 and a.shape == (10,)
    negate(a)
    assert t.tolist() == [-float(i) for i in range(10)]
    back = torch.from_dlpack(a)
    back[0] = 42.0
    assert a[0] == 42.0 and t[0].item() == 42.0


def test_torch_tensor_dtypes_and_non_contiguous():
    torch = pytest.importorskip("torch")
    for dtype, tack_type in ((torch.int64, tack.i64), (torch.uint8, tack.u8),
                             (torch.float64, tack.f64), (torch.int16, tack.i16)):
        assert tack.from_dlpack(torch.zeros(3, dtype=dtype)).dtype is tack_type
    with pytest.raises(ValueError, match="only C-contiguous"):
        tack.from_dlpack(torch.zeros(3, 4).t())
    with pytest.raises(TypeError, match=re.escape("has no Tack type")):
        tack.from_dlpack(torch.zeros(3, dtype=torch.float16))


def test_views_collected_at_interpreter_shutdown():
    """NumPy views of Tack arrays held in a reference cycle are released by the
    last collection at shutdown, after module globals are cleared: the DLPack
    deleters they call must still be alive (this crashed with SIGSEGV)."""
    script = (
        "import numpy as np, tack\n"
        "class Holder: pass\n"
        "h = Holder(); h.me = h\n"
        "h.views = [np.from_dlpack(tack.array(np.arange(5.0))) for _ in range(3)]\n"
        "h.capsule = tack.zeros(3).__dlpack__()\n"
        "print(h.views[2].sum())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "10.0"


def test_releasing_an_export_that_holds_another_export_does_not_deadlock():
    """An export of a Tack array that wraps a NumPy view of another export: the
    outer deleter drops the inner chain, whose deleter runs inside it. Run in a
    child process, so that a deadlock fails the test instead of hanging it."""
    script = textwrap.dedent("""
        import numpy as np
        import tack
        inner = np.from_dlpack(tack.ones(10))      # export 1, held by NumPy
        wrapped = tack.from_dlpack(inner)          # a Tack array over that view
        del inner
        outer = np.from_dlpack(wrapped)            # export 2 holds `wrapped`
        del wrapped
        del outer                                  # export 2's deleter drops export 1
        print("released")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0 and done.stdout.strip() == "released", done.stderr


@pytest.mark.parametrize("extent, message", [
    (-4, "the DLPack tensor has a negative extent: shape (-4,)"),
    (2**62, "the DLPack tensor's 4611686018427387904 elements from address "),
])
def test_a_malformed_extent_raises_value_error(extent, message):
    capsule = tack.ones(3).__dlpack__()
    managed(capsule).dl_tensor.shape[0] = extent
    with pytest.raises(ValueError, match=re.escape(message)):
        tack.from_dlpack(capsule)


def test_a_negative_dimension_count_raises_value_error():
    capsule = tack.ones(3).__dlpack__()
    managed(capsule).dl_tensor.ndim = -1
    with pytest.raises(ValueError, match=re.escape("the DLPack tensor has -1 dimensions")):
        tack.from_dlpack(capsule)
