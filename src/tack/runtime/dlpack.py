"""DLPack: zero-copy export (``Array.__dlpack__``) and import (``tack.from_dlpack``).

Export builds a ``DLManagedTensor`` (or the versioned form, for consumers that
ask for ``max_version >= (1, 0)``) whose ``manager_ctx`` keeps the array alive
until the consumer calls the deleter; a capsule never consumed runs the
deleter itself when it is collected. Import wraps the producer's memory and
holds its capsule until the array and every view of it are gone, then calls
the producer's deleter exactly once.
"""

from __future__ import annotations

import ctypes
import math
import threading

from .. import types as T
from .array import Array
from .buffers import ExternalBuffer
from .pointers import require_device_memory

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_OPENCL = 1, 2, 3, 4
KDL_VULKAN, KDL_METAL, KDL_VPI, KDL_ROCM = 7, 8, 9, 10
KDL_ROCM_HOST, KDL_EXT_DEV, KDL_CUDA_MANAGED, KDL_ONEAPI = 11, 12, 13, 14
KDL_WEBGPU, KDL_HEXAGON, KDL_MAIA = 15, 16, 17
_KNOWN_DEVICES = {KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_OPENCL, KDL_VULKAN, KDL_METAL,
                  KDL_VPI, KDL_ROCM, KDL_ROCM_HOST, KDL_EXT_DEV, KDL_CUDA_MANAGED,
                  KDL_ONEAPI, KDL_WEBGPU, KDL_HEXAGON, KDL_MAIA}
_HOST_DEVICES = {KDL_CPU, KDL_CUDA_HOST, KDL_ROCM_HOST}
FLAG_READ_ONLY = 1
_CODES = {"i": 0, "u": 1, "f": 2}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", _DELETER)]
DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER),
    ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]

_api = ctypes.pythonapi
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))

# -- export ---------------------------------------------------------------------

_exports: dict = {}          # address of a managed tensor -> what keeps it alive
# Re-entrant: a collection that starts while this thread holds it (an export
# allocating its record) may release a view whose deleter takes it again.
_exports_lock = threading.RLock()


def device_of(array: Array):
    backend = array.device.backend
    return (backend.dlpack_device_type, getattr(backend, "index", 0))


def export_refusal(device):
    """Why arrays on ``device`` cannot be exported through DLPack, or None."""
    backend = device.backend
    if backend.memory_domain == "host" or _wraps_device_memory(backend):
        return None
    return backend.dlpack_refusal_note


def _wraps_device_memory(backend) -> bool:
    """True for a backend whose buffers are device pointers another library can
    use (CUDA): it exports them and wraps imported ones (``backend.wrap``)."""
    return hasattr(backend, "wrap") and backend.dlpack_device_type != KDL_CPU


def _dl_dtype(dtype: T.ScalarType) -> DLDataType:
    return DLDataType(_CODES[dtype.kind], dtype.bits, 1)


_api.Py_IncRef.argtypes = [ctypes.py_object]


def _immortal(obj):
    """``obj``, kept alive until the process ends. A consumer may release an
    exported tensor while the interpreter shuts down (a NumPy view collected
    after this module's globals are cleared), so the callbacks it calls, and
    the records they read, must never be freed; they reach those records
    through their closures, not through module globals."""
    _api.Py_IncRef(obj)
    return obj


def _export_deleter(exports: dict, lock):
    @_DELETER
    def delete(address):
        with lock:
            record = exports.pop(address, None)
        # dropped here, after the lock: the array it held may wrap another
        # export, whose deleter runs as it goes and takes the lock again
        del record
    return _immortal(delete)


_delete_export = _export_deleter(_exports, _exports_lock)


def _fill_tensor(tensor: DLTensor, array: Array, shape):
    # A vector or matrix array exports its scalar storage: storage_shape of
    # scalar_dtype (DLPack lanes describe SIMD types, not array components).
    tensor.data = array._ptr
    tensor.device = DLDevice(*device_of(array))
    tensor.ndim = len(array.storage_shape)
    tensor.dtype = _dl_dtype(array.scalar_dtype)
    tensor.shape = shape
    tensor.strides = None  # C-contiguous
    tensor.byte_offset = 0


def _capsule_destructor(name: bytes, is_valid=_raw_is_valid, get_pointer=_raw_get_pointer,
                        delete=_delete_export):
    @_CAPSULE_DESTRUCTOR
    def destroy(capsule):
        # A capsule still carrying its original name was never consumed.
        if is_valid(capsule, name):
            delete(get_pointer(capsule, name))
    return _immortal(destroy)


_VERSIONED_NAME, _LEGACY_NAME = b"dltensor_versioned", b"dltensor"
# PyCapsule keeps the name pointer, so names must be objects that live forever.
_USED = {_VERSIONED_NAME: b"used_dltensor_versioned", _LEGACY_NAME: b"used_dltensor"}
_destroy_versioned = _capsule_destructor(_VERSIONED_NAME)
_destroy_legacy = _capsule_destructor(_LEGACY_NAME)


def export(array: Array, max_version=None, copy=None):
    if copy:
        raise BufferError("Tack exports DLPack tensors without copying; copy=True is "
                          "not supported")
    backend = array.device.backend
    refusal = export_refusal(array.device)
    if refusal:
        raise BufferError(f"arrays on {array.device} cannot be exported through DLPack: "
                          f"{refusal}")
    if backend.memory_domain == "host":
        backend.synchronize()
    else:   # the consumer may use it at once: later launches on it complete first
        array._buffer.share()
    storage = array.storage_shape
    shape = (ctypes.c_int64 * max(1, len(storage)))(*storage)
    versioned = max_version is not None and tuple(max_version) >= (1, 0)
    if versioned:
        managed = DLManagedTensorVersioned()
        managed.version = DLPackVersion(1, 0)
        managed.flags = 0 if array.writable else FLAG_READ_ONLY
        name, destructor = _VERSIONED_NAME, _destroy_versioned
    else:
        managed = DLManagedTensor()
        name, destructor = _LEGACY_NAME, _destroy_legacy
    _fill_tensor(managed.dl_tensor, array, shape)
    managed.deleter = _delete_export
    address = ctypes.addressof(managed)
    with _exports_lock:
        _exports[address] = (managed, shape, array)
    return _api.PyCapsule_New(address, name, destructor)


# -- import -----------------------------------------------------------------------

class _Hold:
    """Owns an imported tensor: runs the producer's deleter once, when collected."""

    __slots__ = ("address", "deleter", "source")

    def __init__(self, address, deleter, source):
        self.address = address
        self.deleter = deleter
        self.source = source

    def __del__(self):
        deleter, self.deleter = self.deleter, None
        if deleter:
            deleter(self.address)


def _is_capsule(source) -> bool:
    return type(source).__name__ == "PyCapsule"


def _require_source(source) -> None:
    if not hasattr(source, "__dlpack__"):
        raise TypeError(f"from_dlpack() takes a DLPack capsule or an object with "
                        f"__dlpack__, not {type(source).__name__}")


class _CapsuleSource:
    """A bare capsule as the object ``np.from_dlpack`` reads (``copy=True``)."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **_):
        return self.capsule

    def __dlpack_device__(self) -> tuple:
        device = _open(self.capsule)[1].dl_tensor.device
        return (device.device_type, device.device_id)


def _capsule_of(source):
    if _is_capsule(source):
        return source
    _require_source(source)
    try:
        return source.__dlpack__(max_version=(1, 0))
    except TypeError:
        return source.__dlpack__()


def _open(capsule):
    """(managed struct, tensor, read_only, name) of an unconsumed capsule."""
    for name, kind in ((_VERSIONED_NAME, DLManagedTensorVersioned),
                       (_LEGACY_NAME, DLManagedTensor)):
        if _api.PyCapsule_IsValid(capsule, name):
            address = _api.PyCapsule_GetPointer(capsule, name)
            managed = kind.from_address(address)
            if kind is DLManagedTensorVersioned and managed.version.major != 1:
                version = managed.version   # another major version: another layout
                raise ValueError(f"DLPack {version.major}.{version.minor} tensors cannot "
                                 f"be imported: Tack reads DLPack 1.x")
            read_only = kind is DLManagedTensorVersioned and bool(
                managed.flags & FLAG_READ_ONLY)
            return address, managed, read_only, name
    spelled = _api.PyCapsule_GetName(capsule) or b""
    if spelled.startswith(b"used_"):
        raise ValueError("this DLPack capsule was already consumed")
    raise ValueError(f"not a DLPack capsule (its name is {spelled.decode()!r})")


def _check(tensor: DLTensor) -> tuple:
    device_type = tensor.device.device_type
    if device_type == KDL_METAL:
        raise ValueError("Metal DLPack tensors (kDLMetal) cannot be imported: their data "
                         "is an MTLBuffer handle, which Tack cannot wrap")
    if device_type not in _KNOWN_DEVICES:
        raise ValueError(f"unknown DLPack device type {device_type}")
    if tensor.dtype.lanes != 1:
        raise TypeError(f"DLPack tensors with {tensor.dtype.lanes} lanes have no Tack type")
    kinds = {v: k for k, v in _CODES.items()}
    kind = kinds.get(tensor.dtype.code)
    try:
        dtype = T.scalar_type(f"{kind}{tensor.dtype.bits}") if kind else None
    except KeyError:
        dtype = None
    if dtype is None:
        raise TypeError(f"DLPack dtype (code {tensor.dtype.code}, {tensor.dtype.bits} "
                        f"bits) has no Tack type")
    if tensor.ndim < 0:
        raise ValueError(f"the DLPack tensor has {tensor.ndim} dimensions")
    shape = tuple(tensor.shape[k] for k in range(tensor.ndim))
    if any(extent < 0 for extent in shape):
        raise ValueError(f"the DLPack tensor has a negative extent: shape {shape}")
    start = (tensor.data or 0) + tensor.byte_offset
    if start + math.prod(shape) * dtype.itemsize > 2**64:
        raise ValueError(f"the DLPack tensor's {math.prod(shape)} elements from address "
                         f"{start} do not fit in 0 .. 2**64 - 1")
    if tensor.strides and 0 not in shape:  # an empty tensor's strides say nothing
        expected, step = [], 1
        for extent in reversed(shape):
            expected.append(step)
            step *= extent
        expected.reverse()
        for k, (extent, stride) in enumerate(zip(shape, expected)):
            if extent > 1 and tensor.strides[k] != stride:
                raise ValueError("only C-contiguous tensors can be wrapped without "
                                 "copying; pass copy=True or make the tensor contiguous")
    if not tensor.data and 0 not in shape:   # a 0-d tensor holds one element
        raise ValueError("the DLPack tensor has a null data pointer")
    return device_type, dtype, shape


_GPU_TYPES = {KDL_CUDA: "cuda", KDL_ROCM: "hip", KDL_ONEAPI: "level_zero"}  # wrapped


def _target_device(device_type, device, device_id: int = 0):
    """The device an import belongs to (spec: the default when it can wrap the
    tensor, else the tensor's own)."""
    from .creation import _resolve_device
    from .device import device as resolve
    if device is not None:
        dev = _resolve_device(device)
    else:
        dev = _resolve_device(None)
        if device_type in _HOST_DEVICES and dev.backend.dlpack_device_type != KDL_CPU:
            dev = resolve("cpu")
        elif device_type in _GPU_TYPES and device_of_backend(dev.backend) != (
                device_type, device_id):
            dev = resolve(f"{_GPU_TYPES[device_type]}:{device_id}")
    if device_type in _GPU_TYPES and device_of_backend(dev.backend) == (device_type,
                                                                        device_id):
        return dev
    if device_type not in _HOST_DEVICES or dev.backend.dlpack_device_type != KDL_CPU:
        note = dev.backend.dlpack_refusal_note
        raise RuntimeError(f"{dev.backend.class_name} cannot wrap a DLPack tensor of "
                           f"device type {device_type}" + (f": {note}" if note else ""))
    return dev


def device_of_backend(backend) -> tuple:
    return (backend.dlpack_device_type, getattr(backend, "index", 0))


def from_dlpack(source, *, device=None, copy=False) -> Array:
    """An array sharing ``source``'s memory (DLPack), or a copy with ``copy=True``."""
    if copy:
        import numpy as np
        from .creation import array
        if _is_capsule(source):
            _open(source)   # a consumed capsule, or another kind: ValueError
            source = _CapsuleSource(source)
        _require_source(source)
        return array(np.from_dlpack(source), device=device)
    capsule = _capsule_of(source)
    address, managed, read_only, name = _open(capsule)
    tensor = managed.dl_tensor
    device_type, dtype, shape = _check(tensor)
    dev = _target_device(device_type, device, tensor.device.device_id)
    data = (tensor.data or 0) + tensor.byte_offset
    nbytes = dtype.itemsize
    for extent in shape:
        nbytes *= extent
    if dev.backend.memory_domain != "host" and nbytes:   # as array_from_ptr checks
        require_device_memory(dev, data, "from_dlpack()")
    _api.PyCapsule_SetName(capsule, _USED[name])
    deleter = managed.deleter
    hold = _Hold(address, deleter if deleter else None, source)
    if dev.backend.memory_domain == "host":
        buffer = ExternalBuffer(data, nbytes, hold)
    else:   # device memory (kDLCUDA, kDLROCM): the backend wraps it and shares it
        buffer = dev.backend.wrap(data, nbytes, hold)
    return Array(buffer, shape, dtype, dev, writable=not read_only)
