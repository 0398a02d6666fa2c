"""CUDABackend: NVIDIA GPUs through cuda-python (driver API) and NVRTC.

One context (see ``driver.py``) and one stream per device. Memory is
stream-ordered (``cuMemAllocAsync``, where the device has memory pools) and
freed on the stream when the array goes. Launches are queued on the stream
and return at once; host reads wait; a launch's error surfaces at the next
wait as a RuntimeError. The build and the warm launch are the stream
backends' (``runtime/stream``) with the CUDA target: NVRTC compiles a cubin
for the device's architecture (PTX as the fallback) and ``cuModuleLoadData``
loads it. Scalars travel in one pack allocation per variant, written on the
stream when they differ from the previous launch's, under the variant's
lock (the dispatch lock of spec 000).
"""

from __future__ import annotations

import numpy as np

from ... import types as T
from ...codegen.c_family.targets import CUDATarget
from ..backend import device_address
from ..stream.backend import DeviceBuffer, StreamBackend
from . import compile as nvrtc_compile
from . import exportable
from .driver import Context, CUDAError, check, current_index, raw_launcher

_NOT_LOADABLE = ("CUDA_ERROR_INVALID_IMAGE", "CUDA_ERROR_NO_BINARY_FOR_GPU",
                 "CUDA_ERROR_INVALID_SOURCE", "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
                 "CUDA_ERROR_JIT_COMPILER_NOT_FOUND")


class ExportableBuffer(DeviceBuffer):
    """An exportable allocation (``exportable.py``): ``size`` bytes mapped at
    ``address``, the driver's allocation ``handle``."""

    __slots__ = ("size", "handle")

    def __init__(self, backend, nbytes: int):
        address, self.size, self.handle = exportable.allocate(backend, nbytes)
        super().__init__(backend, address, nbytes, owned=False)
        self.shared = False   # Tack's own memory until exported

    def __del__(self):
        if not hasattr(self, "handle"):   # the allocation failed: nothing to release
            return
        if self.backend.context.state.open:
            exportable.release(self.backend, self.address, self.size, self.handle)


class CUDABackend(StreamBackend):
    name = "cuda"
    api_name = "CUDA"   # as messages name the device kind
    target = CUDATarget()
    dlpack_device_type = 2  # kDLCUDA
    dlpack_refusal_note = ("the CUDA backend wraps device memory (kDLCUDA) only; copy "
                           "other memory with tack.array(..., device=...)")
    supported_dtypes = frozenset(T.SCALAR_TYPES)
    reduction_dialect = "cuda"   # stream/reduce.py: 32-lane warps
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
        self._export_granularity = None   # exportable.granularity, asked once
        self.dropped_modules = []   # unloaded at the next synchronize
        with context.active():
            self.stream = check(driver.cuStreamCreate(
                int(driver.CUstream_flags.CU_STREAM_DEFAULT)), "cuStreamCreate")

    # -- identity --------------------------------------------------------------------
    def cache_target(self):
        return ("cuda", self.device_name, self.capability, self.arch,
                nvrtc_compile.version(), self.target.items_per_thread)

    # -- memory ---------------------------------------------------------------------------
    def allocate(self, nbytes: int) -> DeviceBuffer:
        size = max(nbytes, 8)
        with self.context.active():
            if self.pools:
                address = check(self.driver.cuMemAllocAsync(size, self.stream),
                                f"cuMemAllocAsync({size} bytes)")
            else:
                address = check(self.driver.cuMemAlloc(size), f"cuMemAlloc({size} bytes)")
        return DeviceBuffer(self, int(address), nbytes, owned=True, pooled=self.pools)

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

    def allocate_plain(self, nbytes: int) -> int:
        """``cuMemAlloc`` memory, outside the stream's pool (for MPI)."""
        with self.context.active():
            return int(check(self.driver.cuMemAlloc(nbytes), f"cuMemAlloc({nbytes} bytes)"))

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
        address = device_address(ptr)
        if address is None:
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

    def memory_device(self, address: int):
        """The ordinal of the device whose memory ``address`` (a "cuda" pointer) is
        in, or None where the driver does not say."""
        driver = self.driver
        with self.context.active():
            err, ordinal = driver.cuPointerGetAttribute(
                driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address)
        return int(ordinal) if err == 0 else None

    # -- waiting ----------------------------------------------------------------------
    def unload_module(self, module) -> None:
        self.driver.cuModuleUnload(module)

    def _wait(self) -> None:
        result = self.driver.cuStreamSynchronize(self.stream)
        if result[0] != 0:
            raise CUDAError("a CUDA launch or copy on this device", result[0])

    def async_marker(self):
        return _Marker(self)

    # -- building (the hooks of StreamBackend.build) ------------------------------------
    def compile_source(self, source: str, entry: str) -> tuple:
        """``(ptx, cubin)`` of CUDA C++ ``source`` for this device (NVRTC)."""
        return nvrtc_compile.compile_cuda(source, self.arch, f"{entry}.cu")

    def _load(self, images: tuple, entry: str):
        """The module and kernel of the cubin (the PTX when there is none, or when
        the driver cannot load the cubin)."""
        driver = self.driver
        ptx, cubin = images
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

    # -- launching (the hooks of stream/launch.py) -----------------------------------------
    def launch_function(self, function, params: int) -> tuple:
        """``(launch, function, stream, params)`` for ``launch.py``: libcuda's
        ``cuLaunchKernel`` through ctypes (``driver.raw_launcher``)."""
        return raw_launcher(self.driver, function, self.stream, params)

    def launch_failed(self, code: int, what: str = "cuLaunchKernel"):
        raise CUDAError(what, self.status(self.driver.CUresult, code))

    def copy_from_host_async(self, address: int, host: np.ndarray) -> None:
        """Queue a copy of ``host`` to ``address`` (the caller is in the context;
        from pageable memory the driver has the bytes when this returns)."""
        check(self.driver.cuMemcpyHtoDAsync(address, host.ctypes.data, host.nbytes,
                                            self.stream), "cuMemcpyHtoDAsync")

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
