"""Moving array bytes between ranks: host views, packing, staging buffers.

Host-staged transport (the default) sends each rank pair's arrays as one
message. An array in host memory is read through a DLPack view (NumPy's
``from_dlpack``), so a message of one large array is sent from the array's own
memory; several arrays are packed into the pair's staging buffer, each at a
64-byte aligned offset. A receiver gets one new host buffer per pair and hands
out arrays that wrap slices of it (no copy) where the destination device
addresses host memory, and device copies elsewhere.

GPU-aware transport (``World(comm, gpu_aware=True)``) hands MPI the arrays
themselves: each array is one message, sent and received through DLPack.
"""

from __future__ import annotations

import math

import numpy as np

from .. import types as T
from ..runtime.array import Array
from ..runtime.buffers import ExternalBuffer
from ..runtime.creation import array as _copy_to_device
from ..runtime.creation import empty
from ..runtime.host_ops import copyto

_HOST_DLPACK = (1, 3, 11)       # kDLCPU, kDLCUDAHost, kDLROCMHost
ALIGN = 64
SMALL = 1 << 16                 # below this, a copy is cheaper than a DLPack view
# Messages under this many bytes travel by persistent requests where they are
# repeated and the communicator makes them; MPICH moves larger ones faster as
# ``Isend``/``Irecv``.
PERSISTENT = 1 << 16


def addresses_host(device) -> bool:
    """Whether arrays on ``device`` live in memory the host reads directly."""
    known = _HOST_DEVICES.get(device)
    if known is None:
        known = _HOST_DEVICES[device] = getattr(device.backend, "dlpack_device_type",
                                                1) in _HOST_DLPACK
    return known


_HOST_DEVICES = {}


def host_view(array):
    """A NumPy view of ``array``'s memory, or None where the host cannot read it."""
    if array.__dlpack_device__()[0] not in _HOST_DLPACK:
        return None
    return np.from_dlpack(array)


def host_values(array) -> np.ndarray:
    """``array``'s values on the host: a view, or a copy when that is cheaper."""
    if array.nbytes < SMALL:
        return array.numpy()
    view = host_view(array)
    return array.numpy() if view is None else view


def host_bytes(array) -> np.ndarray:
    """``array``'s bytes on the host, flat (a view or a copy, see host_values)."""
    return host_values(array).reshape(-1).view(np.uint8)


def aligned(nbytes: int) -> int:
    return -(-nbytes // ALIGN) * ALIGN


def layout(sizes) -> tuple:
    """Offsets of arrays of ``sizes`` bytes packed at aligned offsets, and the total."""
    offsets, total = [], 0
    for n in sizes:
        offsets.append(total)
        total += aligned(n)
    return offsets, total


def new_buffer(nbytes: int) -> np.ndarray:
    """A host byte buffer whose first byte is 64-byte aligned."""
    return new_buffer_at(nbytes)[0]


def new_buffer_at(nbytes: int) -> tuple:
    """``(buffer, address)``: a host byte buffer whose first byte is 64-byte
    aligned, and that byte's address."""
    raw = np.empty(nbytes + ALIGN, np.uint8)
    address = raw.__array_interface__["data"][0]
    start = -address % ALIGN
    return raw[start:start + nbytes], address + start


def wrap(buffer: np.ndarray, offset: int, dtype: T.ScalarType, shape: tuple, device,
         address: int = None):
    """The array of ``dtype`` and ``shape`` at ``buffer[offset:]`` on ``device``
    (``address``: the buffer's, where the caller knows it). The array keeps
    ``buffer`` alive and wraps it without a copy where ``device`` addresses host
    memory; elsewhere it is a device copy."""
    nbytes = math.prod(shape) * dtype.itemsize
    if addresses_host(device):
        if address is None:
            address = buffer.__array_interface__["data"][0] if buffer.size else 0
        hold = ExternalBuffer(address + offset, nbytes, buffer)
        return Array(hold, shape, dtype, device, writable=True)
    values = buffer[offset: offset + nbytes].view(T.scalar_of(dtype).numpy)
    return _copy_to_device(values.reshape(shape + T.element_shape(dtype)), device=device,
                           dtype=dtype)


class Carver:
    """Fresh host byte buffers for small messages, carved in turn from blocks of
    ``block`` bytes, so that a buffer costs a slice, not an allocation and an
    address lookup. Each buffer keeps its block alive: a block is freed once
    every array wrapping a part of it is gone (so one kept array keeps at most
    ``block`` bytes). Larger requests get buffers of their own."""

    def __init__(self, block: int = 1 << 16):
        self.block, self.largest = block, block // 4
        self._raw, self._base, self._free = None, 0, 0

    def take(self, nbytes: int) -> tuple:
        """``(buffer, address)`` of ``nbytes`` new bytes, 64-byte aligned."""
        if nbytes > self.largest:
            return new_buffer_at(nbytes)
        start = self.block - self._free
        if self._raw is None or nbytes > self._free:
            self._raw, self._base = new_buffer_at(self.block)
            start = 0
        self._free = self.block - start - aligned(nbytes)
        return self._raw[start:start + nbytes], self._base + start


class Staging:
    """One host send buffer per peer rank, grown as needed and reused."""

    def __init__(self):
        self._buffers = {}

    def get(self, peer: int, nbytes: int) -> np.ndarray:
        buffer = self._buffers.get(peer)
        if buffer is None or buffer.nbytes < nbytes:
            buffer = self._buffers[peer] = new_buffer(max(nbytes, 2 * getattr(
                buffer, "nbytes", 0)))
        return buffer[:nbytes]


def mpi_refuses_cuda() -> bool:
    """True when the MPI library says it cannot take CUDA memory: its
    ``MPIX_Query_cuda_support()`` (Open MPI; MPICH 4.1 and later) returns 0.
    False where it says it can, or has no such query (older MPICH, MVAPICH,
    Cray MPICH: their users know their build)."""
    if _CUDA_SUPPORT:
        return _CUDA_SUPPORT[0]
    import ctypes

    from mpi4py import MPI
    try:   # dlsym on mpi4py's module searches the libmpi it links to
        query = ctypes.CDLL(MPI.__file__).MPIX_Query_cuda_support
    except (AttributeError, OSError):
        refuses = False
    else:
        query.restype = ctypes.c_int
        refuses = query() == 0
    _CUDA_SUPPORT.append(refuses)
    return refuses


_CUDA_SUPPORT = []   # the answer of mpi_refuses_cuda, once asked
NOT_CUDA_AWARE = ("World(comm, gpu_aware=True) hands MPI device memory, but this MPI "
                  "library is not CUDA-aware (MPIX_Query_cuda_support() returned 0) and "
                  "would crash on it. Use World(comm), whose transport stages through "
                  "host memory, or an MPI built with CUDA support.")


def check_direct(backend) -> None:
    """``RuntimeError`` where MPI would be handed this backend's memory and says
    it cannot take it (``Blocks()`` asks, so that every rank raises it)."""
    if backend.name == "cuda" and mpi_refuses_cuda():
        raise RuntimeError(NOT_CUDA_AWARE)


def empty_on(device, dtype, shape):
    """A new array to receive into directly (GPU-aware transport), in memory MPI
    may be handed (``Backend.mpi_direct``, ``Backend.allocate_mpi_array``)."""
    backend = device.backend
    check_direct(backend)
    if backend.mpi_direct:
        return empty(shape, dtype, device=device)
    return backend.allocate_mpi_array(device, shape, dtype)


def for_mpi(array):
    """``array`` itself where MPI may be handed its memory, else a copy of it in
    memory it may (GPU-aware transport). Either way its queue has finished
    with it when MPI reads it: DLPack export waits for the launches so far."""
    backend = array.device.backend
    check_direct(backend)
    if backend.mpi_direct:
        return array
    staged = backend.allocate_mpi_array(array.device, array.shape, array.dtype)
    copyto(staged, array)
    return staged
