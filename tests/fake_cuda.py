"""A fake CUDA driver for tests and benchmarks without a GPU.

It answers the calls ``CUDABackend`` makes with cuda-python's return shapes
(a tuple led by CUresult): device memory is host memory, and launches are
recorded with their parameter values. ``tests/runtime/test_cuda_backend.py``
builds its devices on it, and ``benchmarks/stream_dispatch.py`` times the
warm launch path over it.
"""

from __future__ import annotations

import ctypes

import numpy as np


class FakeDriver:
    """The calls CUDABackend makes, with cuda-python's return shapes (a tuple
    led by CUresult). Device memory is host memory; launches are recorded with
    their parameter values (``arity`` of them, set by the test)."""

    def __init__(self):
        from cuda.bindings import driver as real
        self.real = real
        for name in ("CUresult", "CUdevice_attribute", "CUpointer_attribute",
                     "CUmemorytype", "CUstream_flags", "CUevent_flags"):
            setattr(self, name, getattr(real, name))
        self.ok = real.CUresult.CUDA_SUCCESS
        self.init_error = None
        self.sync_error = None
        self.current = real.CUcontext(0)
        self.memory, self.pinned, self.managed = {}, set(), set()
        self.owners = {}   # device memory's address: the ordinal it was allocated on
        self.launches, self.pack_copies, self.images = [], [], []
        self.functions = []   # the function handle of each launch
        self.unloaded = []    # the modules unloaded
        self.retained = self.set_current = 0
        self.arity = 0
        self.devices = 1

    def cuInit(self, flags):
        return (self.init_error or self.ok,)

    def cuGetErrorString(self, code):
        return (self.ok, f"fake: {code.name}".encode())

    def cuDeviceGetCount(self):
        return (self.ok, self.devices)

    def cuDeviceGet(self, ordinal):
        return (self.ok, self.real.CUdevice(ordinal))

    def cuCtxGetCurrent(self):
        return (self.ok, self.current)

    def cuCtxGetDevice(self):
        return (self.ok, self.real.CUdevice(int(self.current) >> 8))

    def cuCtxSetCurrent(self, context):
        self.set_current += 1
        self.current = context
        return (self.ok,)

    def cuDevicePrimaryCtxRetain(self, device):
        self.retained += 1
        return (self.ok, self.real.CUcontext((int(device) << 8) | 0xC0))

    def cuDevicePrimaryCtxRelease(self, device):
        return (self.ok,)

    def cuDeviceGetAttribute(self, attribute, device):
        values = {"CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR": 9,
                  "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR": 0,
                  "CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED": 1}
        return (self.ok, values[attribute.name])

    def cuDeviceGetName(self, length, device):
        return (self.ok, b"Fake H200\0")

    def cuStreamCreate(self, flags):
        return (self.ok, self.real.CUstream(0x5))

    def cuMemAllocAsync(self, size, stream):
        buffer = np.zeros(size, np.uint8)
        self.memory[buffer.ctypes.data] = buffer
        self.owners[buffer.ctypes.data] = int(self.current) >> 8
        return (self.ok, self.real.CUdeviceptr(buffer.ctypes.data))

    def cuMemAlloc(self, size):
        return self.cuMemAllocAsync(size, None)

    def cuMemFreeAsync(self, address, stream):
        self.memory.pop(int(address))
        return (self.ok,)

    def cuMemFree(self, address):
        return self.cuMemFreeAsync(address, None)

    def cuMemcpyDtoHAsync(self, dst, src, nbytes, stream):
        ctypes.memmove(dst, src, nbytes)
        return (self.ok,)

    def cuMemcpyHtoDAsync(self, dst, src, nbytes, stream):
        ctypes.memmove(dst, src, nbytes)
        if int(dst) not in self.memory or nbytes <= 64:
            self.pack_copies.append(ctypes.string_at(src, nbytes))
        return (self.ok,)

    def cuStreamSynchronize(self, stream):
        error, self.sync_error = self.sync_error, None
        return (error or self.ok,)

    def cuModuleLoadData(self, address):
        self.images.append(ctypes.string_at(address, 4))
        return (self.ok, self.real.CUmodule(0x77))

    def cuModuleUnload(self, module):
        self.unloaded.append(int(module))
        return (self.ok,)

    def cuModuleGetFunction(self, module, name):
        return (self.ok, self.real.CUfunction(len(self.images)))

    def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        values = [ctypes.c_uint64.from_address(
            ctypes.c_void_p.from_address(params + 8 * k).value).value
            for k in range(self.arity)]
        self.launches.append(((gx, gy, gz), (bx, by, bz), values))
        self.functions.append(int(f))
        return (self.ok,)

    def cuPointerGetAttribute(self, attribute, address):
        known = any(a <= address < a + b.size for a, b in self.memory.items())
        if not (known or address in self.pinned or address in self.managed):
            return (self.CUresult.CUDA_ERROR_INVALID_VALUE, None)
        if attribute.name == "CU_POINTER_ATTRIBUTE_IS_MANAGED":
            return (self.ok, address in self.managed)
        if attribute.name == "CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL":
            return (self.ok, next(d for a, d in self.owners.items()
                                  if a <= address < a + self.memory[a].size))
        kind = self.CUmemorytype.CU_MEMORYTYPE_HOST if address in self.pinned else \
            self.CUmemorytype.CU_MEMORYTYPE_DEVICE
        return (self.ok, int(kind))

    def cuEventCreate(self, flags):
        return (self.ok, self.real.CUevent(0x9))

    def cuEventRecord(self, event, stream):
        return (self.ok,)

    def cuEventSynchronize(self, event):
        return self.cuStreamSynchronize(None)

    def cuEventDestroy(self, event):
        return (self.ok,)
