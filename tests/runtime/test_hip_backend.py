"""The HIP backend (spec 003 "Devices"), without an AMD GPU.

* start-up failures through the public API: hip-python or hipRTC missing
  ("missing dependency."), ``device_count`` 0;
* a HIP device over a fake runtime (internal: ``tack.runtime.hip.driver.modules``
  and ``tack.runtime.device.Device``): memory is host memory, launches are
  recorded, hipRTC is a recorder. This checks the build's compiler options and
  source, kernel parameters, the scalar pack, grids, the device model,
  ``memory_space``, errors at the next wait, DLPack's ``kDLROCM``, and the
  refusals (``export_memory``). The generated HIP C++ itself is compiled by
  hipcc in tests/test_offline_compile.py.
"""

from __future__ import annotations

import ctypes
import enum
import re
import sys

import numpy as np
import pytest

import tack
from dropped_classes import launch_and_drop   # tests/ is on sys.path

INSTALL = ("Install it with: pip install hip-python (and ROCm with hipRTC, and an AMD "
           "GPU driver).")


@tack.kernel
def saxpy(x, y, a):
    for i in range(len(x)):
        y[i] = a * x[i] + y[i]


@tack.kernel
def block_sums(x, sums):
    for i in range(len(x)):
        s = tack.block_sum(x[i])
        if tack.thread_id() == 0:
            tack.atomic_add(sums, 0, s)


def test_missing_hip_python_is_a_missing_dependency(monkeypatch):
    monkeypatch.setitem(sys.modules, "hip", None)   # the import fails
    with pytest.raises(RuntimeError, match="^" + re.escape(
            "Cannot start the 'hip' device: missing dependency. (")) as info:
        tack.device("hip")
    assert str(info.value).endswith(INSTALL)
    assert isinstance(info.value.__cause__, ImportError)
    assert tack.device_count("hip") == 0


# -- a fake runtime -----------------------------------------------------------------------

class Error(enum.IntEnum):
    hipSuccess = 0
    hipErrorInvalidValue = 1
    hipErrorNoDevice = 100
    hipErrorLaunchFailure = 719


class Attribute(enum.IntEnum):
    hipDeviceAttributeMemoryPoolsSupported = 1


class MemoryType(enum.IntEnum):
    hipMemoryTypeUnregistered = 0
    hipMemoryTypeHost = 1
    hipMemoryTypeDevice = 2
    hipMemoryTypeManaged = 3


class PointerAttributes:
    def __init__(self):
        self.type, self.isManaged, self.device = 0, False, -1


class Properties:
    def __init__(self):
        self.gcnArchName = b"gfx90a:sramecc+:xnack-\0"


class FakeHip:
    """The hip-python calls HIPBackend makes, with its return shapes; device
    memory is host memory and launches are recorded (``arity`` parameters)."""

    __name__ = "fake.hip"
    hipError_t, hipDeviceAttribute_t, hipMemoryType = Error, Attribute, MemoryType
    hipPointerAttribute_t, hipDeviceProp_t = PointerAttributes, Properties

    def __init__(self):
        self.devices, self.current, self.set_device = 2, 0, []
        self.memory, self.pinned, self.managed = {}, set(), set()
        self.owners = {}   # device memory's address: the device it was allocated on
        self.launches, self.pack_copies, self.modules = [], [], []
        self.arity, self.sync_error = 0, None
        self.unloaded = []

    def hipInit(self, flags):
        return (Error.hipSuccess,)

    def hipGetErrorString(self, code):
        return (Error.hipSuccess, f"fake: {code.name}".encode())

    def hipGetDeviceCount(self):
        return (Error.hipSuccess, self.devices)

    def hipGetDevice(self):
        return (Error.hipSuccess, self.current)

    def hipSetDevice(self, ordinal):
        self.set_device.append(ordinal)
        self.current = ordinal
        return (Error.hipSuccess,)

    def hipDeviceGetAttribute(self, attribute, ordinal):
        return (Error.hipSuccess, 1)

    def hipDeviceGetName(self, length, ordinal):
        return (Error.hipSuccess, b"Fake MI250X\0")

    def hipGetDeviceProperties(self, props, ordinal):
        return (Error.hipSuccess,)

    def hipStreamCreateWithFlags(self, flags):
        return (Error.hipSuccess, 0x5)

    def hipMallocAsync(self, size, stream):
        buffer = np.zeros(size, np.uint8)
        self.memory[buffer.ctypes.data] = buffer
        self.owners[buffer.ctypes.data] = self.current
        return (Error.hipSuccess, buffer.ctypes.data)

    def hipMalloc(self, size):
        return self.hipMallocAsync(size, None)

    def hipFreeAsync(self, address, stream):
        self.memory.pop(int(address))
        return (Error.hipSuccess,)

    hipFree = hipFreeAsync

    def hipMemcpyDtoHAsync(self, dst, src, nbytes, stream):
        ctypes.memmove(dst, src, nbytes)
        return (Error.hipSuccess,)

    def hipMemcpyHtoDAsync(self, dst, src, nbytes, stream):
        ctypes.memmove(dst, src, nbytes)
        if nbytes <= 64:
            self.pack_copies.append(ctypes.string_at(src, nbytes))
        return (Error.hipSuccess,)

    def hipStreamSynchronize(self, stream):
        error, self.sync_error = self.sync_error, None
        return (error or Error.hipSuccess,)

    def hipModuleLoadData(self, address):
        self.modules.append(ctypes.string_at(address, 8))
        return (Error.hipSuccess, 0x77)

    def hipModuleUnload(self, module):
        self.unloaded.append(module)
        return (Error.hipSuccess,)

    def hipModuleGetFunction(self, module, name):
        return (Error.hipSuccess, name)

    def hipModuleLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params,
                              extra):
        values = [ctypes.c_uint64.from_address(
            ctypes.c_void_p.from_address(params + 8 * k).value).value
            for k in range(self.arity)]
        self.launches.append((f, (gx, gy, gz), (bx, by, bz), values))
        return (Error.hipSuccess,)

    def hipPointerGetAttributes(self, attributes, address):
        known = any(a <= address < a + b.size for a, b in self.memory.items())
        if not (known or address in self.pinned or address in self.managed):
            return (Error.hipErrorInvalidValue,)
        attributes.isManaged = address in self.managed
        attributes.device = next((d for a, d in self.owners.items()
                                  if a <= address < a + self.memory[a].size), -1)
        attributes.type = (MemoryType.hipMemoryTypeHost if address in self.pinned else
                           MemoryType.hipMemoryTypeDevice)
        return (Error.hipSuccess,)

    def hipEventCreateWithFlags(self, flags):
        return (Error.hipSuccess, 0x9)

    def hipEventRecord(self, event, stream):
        return (Error.hipSuccess,)

    def hipEventSynchronize(self, event):
        return self.hipStreamSynchronize(None)

    def hipEventDestroy(self, event):
        return (Error.hipSuccess,)


class FakeHiprtc:
    """hipRTC as a recorder: the 'code object' is the source's first bytes."""

    def __init__(self):
        self.sources, self.options = [], []

    def hiprtcVersion(self):
        return (0, 6, 2)

    def hiprtcCreateProgram(self, source, name, n, headers, names):
        self.sources.append(source.decode())
        return (0, len(self.sources))

    def hiprtcCompileProgram(self, program, n, options):
        self.options.append(list(options))
        return (0,)

    def hiprtcGetCodeSize(self, program):
        return (0, 16)

    def hiprtcGetCode(self, program, out):
        out[:] = b"\x7fELF" + b"\0" * 12
        return (0,)

    def hiprtcDestroyProgram(self, program):
        return (0,)


@pytest.fixture
def fake(monkeypatch):
    from tack.runtime.hip import driver
    runtime, rtc = FakeHip(), FakeHiprtc()
    runtime.rtc = rtc
    monkeypatch.setattr(driver, "modules", lambda: (runtime, rtc))
    monkeypatch.setattr(driver, "_in_use", set())
    monkeypatch.setattr(driver, "several", [False])
    return runtime


def _device(index=0):
    from tack.runtime.device import Device
    from tack.runtime.hip.backend import HIPBackend
    backend = HIPBackend(index)
    backend.memory_domain = ("fake-hip", index)   # never mixed with a real device
    return Device(backend, "hip", index)


@pytest.fixture
def fake_device(fake):
    return _device(0)


def test_the_build_compiles_hip_for_the_devices_architecture(fake, fake_device, rng):
    with fake_device:
        x, y = tack.array(rng.values(tack.f32, 3001)), tack.zeros(3001)
        fake.arity = 4    # x, y, the f32 pack, the iteration count
        saxpy(x, y, 2.5)
    source, options = fake.rtc.sources[-1], fake.rtc.options[-1]
    assert options == [b"--offload-arch=gfx90a:sramecc+:xnack-", b"-ffp-contract=off",
                       b"-std=c++17"]
    assert "#include <hip/hip_runtime.h>" not in source   # hipRTC declares it itself
    assert 'extern "C" __global__ void' in source and "__restrict__" in source
    assert fake.modules[-1][:4] == b"\x7fELF"
    function, grid, block, values = fake.launches[-1]
    assert function == b"tack_kernel_saxpy"
    assert (grid, block) == ((3, 1, 1), (256, 1, 1))   # four iterations per thread
    assert values[:2] == [x._ptr, y._ptr] and values[3] == 3001
    assert np.frombuffer(fake.pack_copies[-1][:4], np.float32)[0] == np.float32(2.5)


@tack.kernel
def first_of(out, n):
    for i in range(n):
        if i == 0:
            out[0] = 1.0


def test_a_launch_past_hips_thread_limit_is_a_value_error(fake, fake_device):
    """HIP refuses a launch of 2**32 threads or more, a limit 256 times below
    CUDA's: Tack refuses such a count before anything is queued."""
    with fake_device:
        out = tack.zeros(1)
        fake.arity = 3
        first_of(out, (1 << 32) - 256)        # the largest count a HIP grid takes
        with pytest.raises(ValueError, match=re.escape(
                "Kernel 'first_of': a launch of 4294967296 iterations is larger than one HIP grid can "
                "index (4294967040)")):
            first_of(out, 1 << 32)


def test_scalars_are_copied_only_when_they_change(fake, fake_device):
    with fake_device:
        x, y = tack.zeros(300), tack.zeros(300)
        fake.arity = 4
        saxpy(x, y, 1.5)
        copies = len(fake.pack_copies)
        saxpy(x, y, 1.5)
        assert len(fake.pack_copies) == copies
        saxpy(x, y, -0.5)
        assert len(fake.pack_copies) == copies + 1


def test_workgroup_kernels_keep_one_iteration_per_thread(fake, fake_device):
    with fake_device:
        fake.arity = 3
        block_sums(tack.zeros(512), tack.zeros(1))
        assert fake.launches[-1][1:3] == ((2, 1, 1), (256, 1, 1))
        with pytest.raises(ValueError, match="300 iterations is not a multiple of 256"):
            block_sums(tack.zeros(300), tack.zeros(1))


def test_host_operations_round_trip(fake, fake_device, rng):
    values = rng.values(tack.f32, 1001)
    with fake_device:
        a = tack.array(values)
        np.testing.assert_array_equal(a.numpy(), values)
        assert a.device is fake_device and a.__dlpack_device__() == (10, 0)   # kDLROCM


def test_f32_reductions_launch_on_the_device_and_others_stay_on_the_host(fake,
                                                                       fake_device, rng):
    with fake_device:
        a = tack.ones(9000)
        fake.arity = 3
        assert a.sum() == 0.0   # the fake runs no kernel: its partials stay zero
        source = fake.rtc.sources[-1]
        assert "#define TACK_WARP warpSize" in source and "__shfl_down(v, o)" in source
        assert "__shfl_down_sync" not in source
        name, grid, block, values = fake.launches[-1]
        assert (name, grid, block) == (b"tack_reduce_sum_f32", (3, 1, 1), (256, 1, 1))
        assert values[:2] == [a._ptr, 9000]
        a.min(), a.max(), a.mean()
        assert len(fake.launches) == 4
        values = rng.values(tack.i32, 1001)
        assert tack.array(values).sum() == int(values.astype(np.int64).sum())   # host
        assert len(fake.launches) == 4


def test_device_zero_switches_nothing_and_another_device_is_made_current(fake):
    zero = _device(0)
    with zero:
        tack.zeros(4)
    assert fake.set_device == []
    one = _device(1)   # a device other than 0: made current around each operation
    with one:
        tack.zeros(4)
    assert fake.set_device[:2] == [1, 0] and fake.current == 0


def test_device_zero_is_made_current_when_the_thread_is_on_another(fake):
    """Another library left device 1 current on this thread: hip:0's stream,
    memory and launches still go to device 0, and the thread gets 1 back."""
    fake.devices, fake.current = 2, 1
    zero = _device(0)
    with zero:
        tack.zeros(4)
    assert fake.set_device[:2] == [0, 1] and fake.current == 1


def test_a_dropped_variants_module_is_unloaded_at_the_next_synchronize(fake, fake_device):
    with fake_device:
        x = tack.ones(16)
        fake.arity = 2
        launch_and_drop(x)   # each class collected with its variants
        assert fake.unloaded == []    # not before a wait: a queued launch may run it
        fake_device.synchronize()
        assert fake.unloaded == [0x77, 0x77]


def test_memory_space_classifies_pointers(fake, fake_device):
    with fake_device:
        a = tack.zeros(8)
    pinned, managed = np.zeros(4), np.zeros(4)
    fake.pinned.add(pinned.ctypes.data)
    fake.managed.add(managed.ctypes.data)
    space = fake_device.backend.memory_space
    assert space(a._ptr) == "hip"
    assert space(pinned.ctypes.data) == "hip_pinned"
    assert space(managed.ctypes.data) == "hip_managed"
    assert space(np.zeros(4).ctypes.data) == "cpu"
    assert space("not an address") == "cpu" and space(-1) == "cpu"
    with pytest.raises(ValueError, match=re.escape(
            "Pointer is in 'cpu' memory but the device is 'HIP'.")):
        tack.array_from_ptr(np.zeros(4).ctypes.data, (4,), tack.f64, device=fake_device)



def test_another_devices_memory_is_refused(fake, fake_device):
    with _device(1):
        elsewhere = tack.zeros(4)
    managed = np.zeros(4)
    fake.managed.add(managed.ctypes.data)
    with pytest.raises(ValueError, match=re.escape(
            "Pointer is in the memory of hip:1 but the device is hip:0. array_from_ptr() "
            "on hip:0 takes memory of that device; copy the values there first")):
        tack.array_from_ptr(elsewhere._ptr, (4,), tack.f32, device=fake_device)
    with fake_device:
        own = tack.zeros(4)
    assert tack.array_from_ptr(own._ptr + 4, (3,), tack.f32, device=fake_device).size == 3
    assert tack.array_from_ptr(managed.ctypes.data, (4,), tack.f64,
                               device=fake_device).size == 4   # managed: any device

def test_a_failed_launch_raises_at_the_next_wait(fake, fake_device):
    with fake_device:
        x, y = tack.zeros(10), tack.zeros(10)
        fake.arity = 4
        saxpy(x, y, 1.0)
        fake.sync_error = Error.hipErrorLaunchFailure
        with pytest.raises(RuntimeError, match=re.escape(
                "a HIP launch or copy on this device failed: hipErrorLaunchFailure "
                "(fake: hipErrorLaunchFailure)")):
            y.numpy()


def test_exports_are_cuda_only(fake, fake_device):
    with fake_device:
        a = tack.zeros(4)
        with pytest.raises(RuntimeError, match=re.escape(
                "export_memory() is not supported on hip:0: only CUDA devices")):
            a.export_memory()
        with pytest.raises(RuntimeError, match=re.escape(
                "empty(exportable=True) is not supported on hip:0")):
            tack.empty(4, exportable=True)


def test_inspect_shows_the_hip_source(fake, fake_device):
    with fake_device:
        source = tack.inspect(saxpy, tack.zeros(4), tack.zeros(4), 2.0)
        assert source.startswith("#include <hip/hip_runtime.h>")
        with pytest.raises(ValueError, match=re.escape("inspect mode 'optimized' is CPU "
                                                       "only: the HIP runtime compiler")):
            tack.inspect(saxpy, tack.zeros(4), tack.zeros(4), 2.0, mode="optimized")
