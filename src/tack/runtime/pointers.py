"""Pointer interop: wrapping memory Tack does not own, and asking where a pointer lives."""

from __future__ import annotations

import math
import operator

import numpy as np

from .. import types as T
from .array import Array
from .buffers import ExternalBuffer
from .creation import _resolve_device, _shape


def _address(ptr, backend):
    if isinstance(ptr, np.ndarray):
        return ptr.ctypes.data, ptr
    try:
        if isinstance(ptr, (bool, np.bool_)):
            raise TypeError
        return operator.index(ptr), None
    except TypeError:
        takes = ("on the CPU takes an integer address or a NumPy array"
                 if backend.memory_domain == "host" else
                 f"on the {backend.api_name} backend takes a device address (an integer)")
        raise TypeError(f"array_from_ptr() {takes}, not {type(ptr).__name__}") from None


def _require_address(address: int, nbytes: int) -> None:
    """A null pointer, or memory that does not fit in the 64-bit address space
    (a negative address, or one so large the bytes would run past 2**64)."""
    if address == 0 and nbytes:
        raise ValueError("array_from_ptr() was given a null pointer")
    if not 0 <= address < 2**64 or address + nbytes > 2**64:
        raise ValueError(f"array_from_ptr() was given the address {address}: with "
                         f"{nbytes} bytes it does not fit in 0 .. 2**64 - 1")


def _require_wrappable(host: np.ndarray, nbytes: int, writable: bool) -> None:
    """What Tack can check of a NumPy array it wraps: its layout (contiguous,
    native byte order), its size and whether NumPy lets it be written."""
    if not host.flags.c_contiguous:
        raise ValueError("array_from_ptr() wraps C-contiguous NumPy arrays only (this "
                         "one is strided: a slice or a transpose); pass "
                         "np.ascontiguousarray(a), or copy with tack.array(a)")
    if host.dtype.hasobject:   # pointers to Python objects: a store would corrupt them
        raise TypeError(f"array_from_ptr() cannot wrap a NumPy array of Python objects "
                        f"(dtype {host.dtype}): it holds references, not values; "
                        f"convert it to numbers first")
    if not host.dtype.isnative:
        raise TypeError(f"array_from_ptr() wraps NumPy arrays in the machine's byte "
                        f"order; this one is {host.dtype.str!r}: convert it with "
                        f"a.astype(a.dtype.newbyteorder('='))")
    if host.nbytes < nbytes:
        raise ValueError(f"array_from_ptr() needs {nbytes} bytes for this shape and "
                         f"dtype; the NumPy array has {host.nbytes}")
    if writable and not host.flags.writeable:
        raise ValueError("array_from_ptr(..., writable=True) of a NumPy array that is "
                         "read-only (its flags.writeable is False); wrap it read-only, "
                         "or pass a writable copy")


def array_from_ptr(ptr, shape, dtype, *, device=None, writable=False) -> Array:
    """Wrap existing memory as an array, without copying; Tack never frees it.

    The caller keeps the memory alive and unmoved for the array's lifetime and
    provides at least ``prod(shape) * itemsize`` bytes. ``shape`` counts elements:
    with ``dtype=tack.vec3()`` each element is three f32 components. Arrays are
    read-only unless ``writable=True``.
    """
    dev = _resolve_device(device)
    backend = dev.backend
    if backend.memory_domain != "host" and not hasattr(backend, "wrap"):
        raise TypeError(f"array_from_ptr() on the {backend.class_name} wraps no "
                        f"pointers: its buffers have no address Tack can use. Copy the "
                        f"values instead: tack.array(values, device='{dev}')")
    dims = _shape(shape)
    dt = T.as_element_type(dtype)  # a scalar type or an element type like tack.vec3()
    address, owner = _address(ptr, backend)
    nbytes = math.prod(dims) * dt.itemsize
    if owner is not None:
        _require_wrappable(owner, nbytes, writable)
    _require_address(address, nbytes)
    if backend.memory_domain == "host":
        buffer = ExternalBuffer(address, nbytes, owner)
    else:   # a device pointer (CUDA): it must be memory this device can use
        require_device_memory(dev, address, "array_from_ptr()")
        buffer = backend.wrap(address, nbytes, owner)
    return Array(buffer, dims, dt, dev, writable=bool(writable))


def require_device_memory(dev, address: int, call: str) -> None:
    """``ValueError`` unless ``address`` is in memory ``dev``'s backend can use
    (one of its ``device_memory_spaces``) and, for device memory, in ``dev``'s
    own (another GPU's memory faults at the first launch that reads it)."""
    backend = dev.backend
    space = backend.memory_space(address)
    if space not in backend.device_memory_spaces:
        raise ValueError(f"Pointer is in '{space}' memory but the device is "
                         f"'{backend.api_name}'. {call} on {dev} takes "
                         f"{' or '.join(backend.device_memory_spaces)} memory")
    owner = getattr(backend, "memory_device", None)
    if owner is None or space != backend.device_memory_spaces[0]:
        return   # managed memory moves to whichever device reads it
    found = owner(address)
    if found is not None and found != backend.index:
        raise ValueError(f"Pointer is in the memory of {dev.type}:{found} but the "
                         f"device is {dev}. {call} on {dev} takes memory of that "
                         f"device; copy the values there first")


def memory_space(ptr, *, device=None) -> str:
    """Where ``ptr`` points, as ``device``'s backend sees it ("cpu" on the CPU)."""
    dev = _resolve_device(device)
    return dev.backend.memory_space(ptr)
