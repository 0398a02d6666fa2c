"""HIPBackend: AMD GPUs through hip-python (HIP runtime) and hipRTC.

The same shape as the CUDA backend (``runtime/stream``): one stream per
device, stream-ordered memory (``hipMallocAsync`` where the device has memory
pools), queued launches whose errors surface at the next wait, the HIP
target of the C-family generator compiled by hipRTC for the device's
``gcnArchName`` and loaded with ``hipModuleLoadData``, four iterations per
thread with ``__restrict__`` pointers for disjoint arrays, and the warm
launch of ``stream/launch.py`` calling ``hipModuleLaunchKernel``. DLPack
speaks ``kDLROCM``; ``memory_space`` answers "hip", "hip_pinned",
"hip_managed" or "cpu". f32 reductions run on the device with CUDA's
kernels (``stream/reduce.py``), their warp width taken from ``warpSize``;
``export_memory`` is CUDA only, as the spec says.

Written against hip-python's documented API and tested with a fake runtime:
no AMD GPU has run it yet (docs/backends.md).
"""

from __future__ import annotations

import numpy as np

from ... import types as T
from ...codegen.c_family.targets import HIPTarget
from ..backend import device_address
from ..grid import WORKGROUP
from ..stream.backend import DeviceBuffer, StreamBackend
from . import compile as hiprtc_compile
from .driver import Device, HIPError, check, current_index, raw_launcher

_STREAM_DEFAULT = 0          # hipStreamDefault
_EVENT_DISABLE_TIMING = 0x2  # hipEventDisableTiming


class HIPBackend(StreamBackend):
    name = "hip"
    api_name = "HIP"
    target = HIPTarget()
    reduction_dialect = "hip"   # stream/reduce.py: warpSize-wide wavefronts
    dlpack_device_type = 10  # kDLROCM
    dlpack_refusal_note = ("the HIP backend wraps device memory (kDLROCM) only; copy "
                           "other memory with tack.array(..., device=...)")
    supported_dtypes = frozenset(T.SCALAR_TYPES)
    # HIPTarget: hardware atomics on 32/64-bit integers and f32/f64 add; signed
    # 64-bit min/max and float sub/min/max are compare-and-swap loops.
    atomic_dtypes = frozenset([T.i32, T.u32, T.i64, T.u64, T.f32, T.f64])
    device_memory_spaces = ("hip", "hip_managed")
    # HIP refuses a launch of 2**32 threads or more (gridDim.x * blockDim.x), so
    # whole blocks of 256 below that, counted as one iteration each
    max_launch = ((1 << 32) // WORKGROUP - 1) * WORKGROUP
    current_index = staticmethod(current_index)   # what a bare "hip" names

    def __init__(self, index: int = 0):
        self.context = context = Device(index)   # ValueError past the last device
        self.hip = hip = context.hip
        self.index = index
        self.memory_domain = ("hip", index)
        self.device_name = context.name()
        self.arch = context.arch()
        self.pools = bool(context.attribute("hipDeviceAttributeMemoryPoolsSupported"))
        self.dropped_modules = []   # unloaded at the next synchronize
        with context.active():
            self.stream = check(hip.hipStreamCreateWithFlags(_STREAM_DEFAULT),
                                "hipStreamCreateWithFlags")

    def cache_target(self):
        return ("hip", self.device_name, self.arch, hiprtc_compile.version(),
                self.target.items_per_thread)

    # -- memory ---------------------------------------------------------------------------
    def allocate(self, nbytes: int) -> DeviceBuffer:
        size = max(nbytes, 8)
        with self.context.active():
            if self.pools:
                address = check(self.hip.hipMallocAsync(size, self.stream),
                                f"hipMallocAsync({size} bytes)")
            else:
                address = check(self.hip.hipMalloc(size), f"hipMalloc({size} bytes)")
        return DeviceBuffer(self, int(address), nbytes, owned=True, pooled=self.pools)

    def allocate_plain(self, nbytes: int) -> int:
        """``hipMalloc`` memory, outside the stream's pool (for MPI)."""
        with self.context.active():
            return int(check(self.hip.hipMalloc(nbytes), f"hipMalloc({nbytes} bytes)"))

    def free(self, address: int, pooled: bool) -> None:
        if not self.context.state.open:
            return  # interpreter exit: the runtime reclaims it
        with self.context.active():
            if pooled:
                self.hip.hipFreeAsync(address, self.stream)
            else:
                self.hip.hipFree(address)

    def copy_to_host(self, out: np.ndarray, address: int, nbytes: int) -> None:
        with self.context.active():
            check(self.hip.hipMemcpyDtoHAsync(out.ctypes.data, address, nbytes,
                                              self.stream), "hipMemcpyDtoHAsync")
            self._wait()

    def copy_from_host(self, address: int, data: np.ndarray) -> None:
        with self.context.active():
            self.copy_from_host_async(address, data)
            self._wait()   # `data` may go as soon as this returns

    def copy_from_host_async(self, address: int, host: np.ndarray) -> None:
        check(self.hip.hipMemcpyHtoDAsync(address, host.ctypes.data, host.nbytes,
                                          self.stream), "hipMemcpyHtoDAsync")

    def memory_space(self, ptr) -> str:
        """"hip", "hip_pinned", "hip_managed" or "cpu" (spec 003 memory_space)."""
        address = device_address(ptr)
        if address is None:
            return "cpu"
        hip = self.hip
        attributes = hip.hipPointerAttribute_t()
        with self.context.active():
            err = hip.hipPointerGetAttributes(attributes, address)[0]
        if int(err) != 0:
            return "cpu"   # memory the runtime does not know: pageable host memory
        kind = hip.hipMemoryType
        found = int(getattr(attributes, "type", getattr(attributes, "memoryType", -1)))
        if attributes.isManaged or found == int(kind.hipMemoryTypeManaged):
            return "hip_managed"
        if found == int(kind.hipMemoryTypeHost):
            return "hip_pinned"
        if found == int(kind.hipMemoryTypeDevice):
            return "hip"
        return "cpu"

    def memory_device(self, address: int):
        """The id of the device whose memory ``address`` (a "hip" pointer) is in,
        or None where the runtime does not say."""
        attributes = self.hip.hipPointerAttribute_t()
        with self.context.active():
            err = self.hip.hipPointerGetAttributes(attributes, address)[0]
        return int(attributes.device) if int(err) == 0 else None

    # -- waiting ----------------------------------------------------------------------
    def unload_module(self, module) -> None:
        self.hip.hipModuleUnload(module)

    def _wait(self) -> None:
        code = self.hip.hipStreamSynchronize(self.stream)[0]
        if int(code) != 0:
            raise HIPError("a HIP launch or copy on this device", code)

    def async_marker(self):
        return _Marker(self)

    # -- building (the hooks of StreamBackend.build) ------------------------------------
    def compile_source(self, source: str, entry: str) -> bytes:
        return hiprtc_compile.compile_hip(source, self.arch, f"{entry}.hip")

    def _load(self, image: bytes, entry: str):
        hip = self.hip
        data = np.frombuffer(image, np.uint8)
        with self.context.active():
            err, module = hip.hipModuleLoadData(data.ctypes.data)
            if int(err) != 0:
                raise RuntimeError(f"compilation failed: hipModuleLoadData of '{entry}' "
                                   f"failed with {getattr(err, 'name', err)}")
            function = check(hip.hipModuleGetFunction(module, entry.encode()),
                             "hipModuleGetFunction")
        return module, function

    # -- launching (the hooks of stream/launch.py) -----------------------------------------
    def launch_function(self, function, params: int) -> tuple:
        return raw_launcher(self.hip, function, self.stream, params)

    def launch_failed(self, code: int, what: str = "hipModuleLaunchKernel"):
        raise HIPError(what, self.status(self.hip.hipError_t, code))


class _Marker:
    """The launches queued so far, as an event ``wait()`` blocks on (any thread)."""

    def __init__(self, backend: HIPBackend):
        self.backend = backend
        hip = backend.hip
        with backend.context.active():
            self.event = check(hip.hipEventCreateWithFlags(_EVENT_DISABLE_TIMING),
                               "hipEventCreateWithFlags")
            check(hip.hipEventRecord(self.event, backend.stream), "hipEventRecord")

    def wait(self) -> None:
        backend = self.backend
        with backend.context.active():
            try:
                code = backend.hip.hipEventSynchronize(self.event)[0]
                if int(code) != 0:
                    raise HIPError("a HIP launch or copy on this device", code)
            finally:
                backend.hip.hipEventDestroy(self.event)
