"""CUDABackend: NVIDIA GPUs through cuda-python (driver API) and NVRTC.

One context (see ``driver.py``) and one stream per device. Memory is
stream-ordered (``cuMemAllocAsync``, where the device has memory pools) and
freed on the stream when the array goes. Launches are queued on the stream
and return at once; host reads wait; a launch's error surfaces at the next
wait as a RuntimeError. The build is OpenCL's with the CUDA target: pack the
scalars, annotate, emit CUDA C++, compile with NVRTC (a cubin for the
device's architecture, PTX as the fallback) and load it with
``cuModuleLoadData``. Scalars travel in one pack allocation per variant,
written on the stream when they differ from the previous launch's, under the
variant's lock (the dispatch lock of spec 000).

Every kernel parameter is 8 bytes (device pointers and ``long long``
extents), so a launch writes them into one reused ``uint64`` array whose
element addresses are ``kernelParams``; ``cuLaunchKernel`` copies them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ... import types as T
from ...codegen.c_family import generate_c_source
from ...codegen.c_family.emitter import items_per_thread
from ...codegen.c_family.targets import CUDATarget
from ...ir.cost import Cost, iteration_cost
from ...ir.passes.annotate import annotate_types
from ...ir.passes.pack import PackInfo, pack_scalars
from ...ir.passes.workgroups import requires_full_workgroups
from ...ir.verify import verify
from ..backend import Backend
from . import compile as nvrtc_compile
from . import exportable
from .driver import Context, CUDAError, check, current_index
from .launch import make_launch

_TARGET = CUDATarget()
_NOT_LOADABLE = ("CUDA_ERROR_INVALID_IMAGE", "CUDA_ERROR_NO_BINARY_FOR_GPU",
                 "CUDA_ERROR_INVALID_SOURCE", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
                 "CUDA_ERROR_JIT_COMPILER_NOT_FOUND")


class CUDABuffer:
    """Device memory at ``address``: allocated by the backend (and freed on its
    stream when collected), or wrapped (``owned`` false; ``owner`` keeps the
    producer's memory alive). ``shared``: another library may use it, so every
    launch that uses it completes before returning."""

    __slots__ = ("backend", "address", "nbytes", "owned", "owner", "shared", "pooled",
                 "__weakref__")

    def __init__(self, backend, address: int, nbytes: int, owned: bool, owner=None,
                 pooled: bool = False):
        self.backend = backend
        self.address = address
        self.nbytes = nbytes
        self.owned = owned
        self.owner = owner
        self.shared = not owned
        self.pooled = pooled

    def read(self, nbytes: int, copy: bool):
        out = np.empty(nbytes, np.uint8)
        if nbytes:
            self.backend.copy_to_host(out, self.address, nbytes)
        return out

    def write(self, data) -> None:
        if data.size:
            self.backend.copy_from_host(self.address, np.ascontiguousarray(data))

    def share(self) -> None:
        """From now on another library may read or write this memory: wait for
        the launches so far, and make each later launch that uses it wait."""
        self.backend.synchronize()
        self.shared = True

    def __del__(self):
        if self.owned and self.address:
            self.backend.free(self.address, self.pooled)


class ExportableBuffer(CUDABuffer):
    """An exportable allocation (``exportable.py``): ``size`` bytes mapped at
    ``address``, the driver's allocation ``handle``."""

    __slots__ = ("size", "handle")

    def __init__(self, backend, nbytes: int):
        address, self.size, self.handle = exportable.allocate(backend, nbytes)
        super().__init__(backend, address, nbytes, owned=False)
        self.shared = False   # Tack's own memory until exported

    def __del__(self):
        if self.backend.context.state.open:
            exportable.release(self.backend, self.address, self.size, self.handle)


@dataclass
class CUDAProgram:
    """A built variant: the loaded function, its source, packing layout and cost."""

    source: str
    entry: str
    module: object
    function: object
    pack: PackInfo
    pack_offsets: tuple     # byte offset of each pack buffer in the pack allocation
    pack_bytes: int
    pack_memory: CUDABuffer
    n_arrays: int
    n_params: int
    cost: Cost
    lock: threading.Lock
    full_workgroups: bool = False
    name: str = ""
    items: int = 1               # loop iterations per thread (emitter.items_per_thread)
    array_positions: tuple = ()  # which arguments are arrays, in parameter order


def packed(fn) -> tuple:
    """``(typed, PackInfo)``: optimized IR with its scalars packed, then annotated
    (the same steps as OpenCL's build)."""
    fn, info = pack_scalars(fn)
    verify(fn, "packed")
    return verify(annotate_types(fn), "typed"), info


def cuda_source(fn) -> tuple:
    """``(CUDA C++ source, entry name)`` of optimized IR ``fn``, as ``build`` emits it."""
    return generate_c_source(packed(fn)[0], _TARGET)


def _pack_layout(info: PackInfo) -> tuple:
    """Byte offsets of the pack buffers in one allocation (8-byte aligned), and its size."""
    offsets, total = [], 0
    for k, dtype in enumerate(info.buffers):
        offsets.append(total)
        count = sum(1 for _, b, _ in info.slots if b == k)
        total += -(-count * dtype.itemsize // 8) * 8
    return tuple(offsets), total


class CUDABackend(Backend):
    name = "cuda"
    api_name = "CUDA"   # as messages name the device kind
    supports_workgroups = True
    dlpack_device_type = 2  # kDLCUDA
    dlpack_refusal_note = ("the CUDA backend wraps device memory (kDLCUDA) only; copy "
                           "other memory with tack.array(..., device=...)")
    supported_dtypes = frozenset(T.SCALAR_TYPES)
    specialize_disjoint = True   # disjoint arrays get __restrict__ pointers
    supports_device_reductions = True   # f32 sum/min/max (reduce.py)
    # CUDATarget: native atomicAdd/Min/Max on 32- and 64-bit integers and
    # atomicAdd on f32/f64; float sub/min/max are compare-and-swap loops.
    atomic_dtypes = frozenset([T.i32, T.u32, T.i64, T.u64, T.f32, T.f64])
    device_memory_spaces = ("cuda", "cuda_managed")
    current_index = staticmethod(current_index)   # what a bare "cuda" names

    def __init__(self, index: int = 0):
        self.context = context = Context(index)   # ValueError past the last device
        self.driver = driver = context.driver
        self.index = index
        self.memory_domain = ("cuda", index)
        major = context.attribute("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR")
        minor = context.attribute("CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR")
        self.capability = major * 10 + minor
        self.arch = nvrtc_compile.choose_arch(self.capability,
                                              nvrtc_compile.supported_archs())
        self.device_name = context.name()
        self.pools = bool(context.attribute("CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED"))
        self._reducer = None   # the reduction kernels, built on first use
        with context.active():
            self.stream = check(driver.cuStreamCreate(
                int(driver.CUstream_flags.CU_STREAM_DEFAULT)), "cuStreamCreate")

    # -- identity --------------------------------------------------------------------
    def cache_target(self):
        return ("cuda", self.device_name, self.capability, self.arch,
                nvrtc_compile.version(), _TARGET.items_per_thread)

    # -- memory ---------------------------------------------------------------------------
    def allocate(self, nbytes: int) -> CUDABuffer:
        size = max(nbytes, 8)
        with self.context.active():
            if self.pools:
                address = check(self.driver.cuMemAllocAsync(size, self.stream),
                                f"cuMemAllocAsync({size} bytes)")
            else:
                address = check(self.driver.cuMemAlloc(size), f"cuMemAlloc({size} bytes)")
        return CUDABuffer(self, int(address), nbytes, owned=True, pooled=self.pools)

    def allocate_exportable(self, nbytes: int) -> ExportableBuffer:
        """Memory ``export_memory`` shares without a copy (``exportable.py``)."""
        return ExportableBuffer(self, nbytes)

    def export_memory(self, array):
        """An ExportedMemory of ``array``: its own allocation when exportable,
        else a snapshot copied once into a new exportable one. The launches so
        far finish first, and later ones using it complete before returning."""
        from ..creation import empty
        from ..exported import ExportedMemory
        from ..host_ops import copyto
        snapshot = not isinstance(array._buffer, ExportableBuffer)
        if snapshot:
            copy = empty(array.shape, array.dtype, device=array.device, exportable=True)
            copyto(copy, array)
            array = copy
        buffer = array._buffer
        buffer.share()
        return ExportedMemory(exportable.export(self, buffer.handle),
                              exportable.HANDLE_TYPE, buffer.size,
                              array._ptr - buffer.address, array, snapshot)

    @property
    def mpi_direct(self) -> bool:
        """Stream-ordered pool memory may not be registrable by a CUDA-aware MPI
        (its IPC paths expect cuMemAlloc memory), so pooled buffers are staged."""
        return not self.pools

    def allocate_mpi_array(self, device, shape, dtype):
        """An array in plain ``cuMemAlloc`` memory, which MPI may be handed."""
        from ..array import Array
        element = T.as_element_type(dtype)
        nbytes = element.itemsize
        for extent in shape:
            nbytes *= extent
        with self.context.active():
            address = check(self.driver.cuMemAlloc(max(nbytes, 8)),
                            f"cuMemAlloc({nbytes} bytes)")
        buffer = CUDABuffer(self, int(address), nbytes, owned=True, pooled=False)
        return Array(buffer, tuple(shape), element, device)

    def wrap(self, address: int, nbytes: int, owner=None) -> CUDABuffer:
        """Device memory Tack does not own (DLPack imports, ``array_from_ptr``)."""
        return CUDABuffer(self, int(address), nbytes, owned=False, owner=owner)

    def free(self, address: int, pooled: bool) -> None:
        if not self.context.state.open:
            return  # the context was released at exit: the driver reclaims it
        previous = self.context.enter()
        try:
            if pooled:
                self.driver.cuMemFreeAsync(address, self.stream)
            else:
                self.driver.cuMemFree(address)
        finally:
            self.context.leave(previous)

    def copy_to_host(self, out: np.ndarray, address: int, nbytes: int) -> None:
        with self.context.active():
            check(self.driver.cuMemcpyDtoHAsync(out.ctypes.data, address, nbytes,
                                                self.stream), "cuMemcpyDtoHAsync")
            self._wait()

    def copy_from_host(self, address: int, data: np.ndarray) -> None:
        with self.context.active():
            check(self.driver.cuMemcpyHtoDAsync(address, data.ctypes.data, data.nbytes,
                                                self.stream), "cuMemcpyHtoDAsync")
            self._wait()   # `data` may go as soon as this returns

    def memory_space(self, ptr) -> str:
        """"cuda", "cuda_pinned", "cuda_managed" or "cpu" (spec 003 memory_space)."""
        try:
            address = int(ptr)
        except (TypeError, ValueError):
            return "cpu"
        if not 0 < address < (1 << 64):
            return "cpu"
        driver = self.driver
        attribute = driver.CUpointer_attribute
        with self.context.active():
            err, managed = driver.cuPointerGetAttribute(
                attribute.CU_POINTER_ATTRIBUTE_IS_MANAGED, address)
            if err != 0:
                return "cpu"   # memory the driver does not know: pageable host memory
            if managed:
                return "cuda_managed"
            kind = check(driver.cuPointerGetAttribute(
                attribute.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address),
                "cuPointerGetAttribute(MEMORY_TYPE)")
        if int(kind) == int(driver.CUmemorytype.CU_MEMORYTYPE_HOST):
            return "cuda_pinned"
        return "cuda"

    # -- reductions -------------------------------------------------------------------
    def reduce(self, array, op: str) -> float:
        """``op`` of an f32 array's elements, on the device (``reduce.py``)."""
        if self._reducer is None:
            from .reduce import Reducer
            self._reducer = Reducer(self)
        return self._reducer.reduce(array, op)

    # -- waiting ----------------------------------------------------------------------
    def _wait(self) -> None:
        result = self.driver.cuStreamSynchronize(self.stream)
        if result[0] != 0:
            raise CUDAError("a CUDA launch or copy on this device", result[0])

    def synchronize(self) -> None:
        with self.context.active():
            self._wait()

    def async_marker(self):
        return _Marker(self)

    # -- building -------------------------------------------------------------------------
    def typed(self, fn):
        return packed(fn)[0]

    def inspect_source(self, fn, optimized: bool) -> str:
        source = generate_c_source(packed(fn)[0], _TARGET)[0]
        if optimized:
            raise ValueError("inspect mode 'optimized' is CPU only: NVRTC and the CUDA "
                             "driver optimize inside their own compilers, whose output "
                             "Tack does not show")
        return source

    def build(self, fn) -> CUDAProgram:
        typed, info = packed(fn)
        source, entry = generate_c_source(typed, _TARGET)  # print/debug: NotImplementedError
        ptx, cubin = nvrtc_compile.compile_cuda(source, self.arch, f"{entry}.cu")
        module, function = self._load(ptx, cubin, entry)
        offsets, pack_bytes = _pack_layout(info)
        pack_memory = self.allocate(pack_bytes) if pack_bytes else None
        n_arrays = sum(1 for p in typed.params if p.is_array) - len(info.buffers)
        n_params = len(typed.params) + len(typed.parallel_for.extents)
        positions = tuple(k for k, p in enumerate(fn.params) if p.is_array)
        return CUDAProgram(source, entry, module, function, info, offsets, pack_bytes,
                           pack_memory, n_arrays, n_params, iteration_cost(typed),
                           threading.Lock(), requires_full_workgroups(typed), fn.name,
                           items_per_thread(typed, _TARGET), positions)

    def _load(self, ptx: bytes, cubin, entry: str):
        """The module and kernel of ``cubin`` (PTX when there is none, or when the
        driver cannot load the cubin)."""
        driver = self.driver
        images = ([cubin] if cubin else []) + [ptx]
        with self.context.active():
            for k, image in enumerate(images):
                data = np.frombuffer(image if image.endswith(b"\0") else image + b"\0",
                                     np.uint8)
                err, module = driver.cuModuleLoadData(data.ctypes.data)
                if err == 0:
                    break
                if k + 1 == len(images) or err.name not in _NOT_LOADABLE:
                    hint = (" (NVRTC is newer than this driver: install the "
                            "nvidia-cuda-nvrtc wheel of the driver's CUDA version)"
                            if err.name == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" else "")
                    raise RuntimeError(f"compilation failed: cuModuleLoadData of "
                                       f"'{entry}' failed with {err.name}{hint}")
            function = check(driver.cuModuleGetFunction(module, entry.encode()),
                             "cuModuleGetFunction")
        return module, function

    # -- running ---------------------------------------------------------------------------
    def launcher(self, program: CUDAProgram):
        """``launch(args, extents)``: queue one launch (see ``launch.py``)."""
        return make_launch(self, program)


class _Marker:
    """The launches queued so far, as an event ``wait()`` blocks on (any thread)."""

    def __init__(self, backend: CUDABackend):
        self.backend = backend
        driver = backend.driver
        with backend.context.active():
            self.event = check(driver.cuEventCreate(
                int(driver.CUevent_flags.CU_EVENT_DISABLE_TIMING)), "cuEventCreate")
            check(driver.cuEventRecord(self.event, backend.stream), "cuEventRecord")

    def wait(self) -> None:
        backend = self.backend
        with backend.context.active():
            try:
                result = backend.driver.cuEventSynchronize(self.event)
                if result[0] != 0:
                    raise CUDAError("a CUDA launch or copy on this device", result[0])
            finally:
                backend.driver.cuEventDestroy(self.event)
