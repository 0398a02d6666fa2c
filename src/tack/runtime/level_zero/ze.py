"""The Level Zero API through ctypes on the loader, ``libze_loader.so.1``.

The PyPI package called ``level-zero`` is unrelated: Tack declares the few
structures and calls it uses here, from ``ze_api.h`` (Level Zero 1.x). Every
call returns a ``ze_result_t``; :func:`check` turns a failure into
:class:`ZeError` (a ``RuntimeError``) naming the call and the result.
"""

from __future__ import annotations

import ctypes
import os

SUCCESS = 0
UINT64_MAX = (1 << 64) - 1

# ze_structure_type_t
DEVICE_PROPERTIES, MODULE_PROPERTIES = 0x3, 0x5
EVENT_POOL_DESC, EVENT_DESC = 0x10, 0x11
EVENT_POOL_FLAG_HOST_VISIBLE, EVENT_SCOPE_FLAG_HOST = 0x1, 0x4
CONTEXT_DESC, COMMAND_QUEUE_DESC = 0xD, 0xE
DEVICE_MEM_ALLOC_DESC, HOST_MEM_ALLOC_DESC = 0x15, 0x16
MEMORY_ALLOCATION_PROPERTIES, MODULE_DESC, KERNEL_DESC = 0x17, 0x1B, 0x1D
MODULE_FORMAT_IL_SPIRV = 0
COMMAND_QUEUE_MODE_ASYNCHRONOUS = 2
COMMAND_QUEUE_FLAG_IN_ORDER = 0x2   # ZE_BIT(1)
MEMORY_TYPE_UNKNOWN, MEMORY_TYPE_HOST, MEMORY_TYPE_DEVICE, MEMORY_TYPE_SHARED = 0, 1, 2, 3

RESULTS = {
    0x0: "SUCCESS", 0x1: "NOT_READY", 0x70000001: "ERROR_DEVICE_LOST",
    0x70000002: "ERROR_OUT_OF_HOST_MEMORY", 0x70000003: "ERROR_OUT_OF_DEVICE_MEMORY",
    0x70000004: "ERROR_MODULE_BUILD_FAILURE", 0x70000005: "ERROR_MODULE_LINK_FAILURE",
    0x70000006: "ERROR_DEVICE_REQUIRES_RESET", 0x70000007: "ERROR_DEVICE_IN_LOW_POWER_STATE",
    0x70010000: "ERROR_INSUFFICIENT_PERMISSIONS", 0x70010001: "ERROR_NOT_AVAILABLE",
    0x70020000: "ERROR_DEPENDENCY_UNAVAILABLE", 0x78000001: "ERROR_UNINITIALIZED",
    0x78000002: "ERROR_UNSUPPORTED_VERSION", 0x78000003: "ERROR_UNSUPPORTED_FEATURE",
    0x78000004: "ERROR_INVALID_ARGUMENT", 0x78000005: "ERROR_INVALID_NULL_HANDLE",
    0x78000006: "ERROR_HANDLE_OBJECT_IN_USE", 0x78000007: "ERROR_INVALID_NULL_POINTER",
    0x78000008: "ERROR_INVALID_SIZE", 0x78000009: "ERROR_UNSUPPORTED_SIZE",
    0x7800000A: "ERROR_UNSUPPORTED_ALIGNMENT",
    0x7800000C: "ERROR_INVALID_ENUMERATION", 0x7800000D: "ERROR_UNSUPPORTED_ENUMERATION",
    0x7800000F: "ERROR_INVALID_NATIVE_BINARY", 0x78000011: "ERROR_INVALID_KERNEL_NAME",
    0x78000013: "ERROR_INVALID_GROUP_SIZE_DIMENSION",
    0x78000015: "ERROR_INVALID_KERNEL_ARGUMENT_INDEX",
    0x78000016: "ERROR_INVALID_KERNEL_ARGUMENT_SIZE",
    0x78000018: "ERROR_INVALID_MODULE_UNLINKED", 0x7800001A: "ERROR_OVERLAPPING_REGIONS",
    0x7FFFFFFE: "ERROR_UNKNOWN",
}

handle = ctypes.c_void_p


class ContextDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", ctypes.c_void_p),
                ("flags", ctypes.c_uint32)]


class CommandQueueDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", ctypes.c_void_p),
                ("ordinal", ctypes.c_uint32), ("index", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("mode", ctypes.c_int),
                ("priority", ctypes.c_int)]


class DeviceMemAllocDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", ctypes.c_void_p),
                ("flags", ctypes.c_uint32), ("ordinal", ctypes.c_uint32)]


class HostMemAllocDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", ctypes.c_void_p),
                ("flags", ctypes.c_uint32)]


class ModuleDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", ctypes.c_void_p),
                ("format", ctypes.c_int), ("inputSize", ctypes.c_size_t),
                ("pInputModule", ctypes.c_void_p), ("pBuildFlags", ctypes.c_char_p),
                ("pConstants", ctypes.c_void_p)]


class KernelDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", ctypes.c_void_p),
                ("flags", ctypes.c_uint32), ("pKernelName", ctypes.c_char_p)]


class EventPoolDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", ctypes.c_void_p),
                ("flags", ctypes.c_uint32), ("count", ctypes.c_uint32)]


class EventDesc(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", ctypes.c_void_p),
                ("index", ctypes.c_uint32), ("signal", ctypes.c_uint32),
                ("wait", ctypes.c_uint32)]


class GroupCount(ctypes.Structure):
    _fields_ = [("groupCountX", ctypes.c_uint32), ("groupCountY", ctypes.c_uint32),
                ("groupCountZ", ctypes.c_uint32)]


class MemoryAllocationProperties(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", ctypes.c_void_p),
                ("type", ctypes.c_int), ("id", ctypes.c_uint64),
                ("pageSize", ctypes.c_uint64)]


class DeviceProperties(ctypes.Structure):
    _fields_ = [("stype", ctypes.c_int), ("pNext", ctypes.c_void_p),
                ("type", ctypes.c_int), ("vendorId", ctypes.c_uint32),
                ("deviceId", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("subdeviceId", ctypes.c_uint32), ("coreClockRate", ctypes.c_uint32),
                ("maxMemAllocSize", ctypes.c_uint64),
                ("maxHardwareContexts", ctypes.c_uint32),
                ("maxCommandQueuePriority", ctypes.c_uint32),
                ("numThreadsPerEU", ctypes.c_uint32),
                ("physicalEUSimdWidth", ctypes.c_uint32),
                ("numEUsPerSubslice", ctypes.c_uint32),
                ("numSubslicesPerSlice", ctypes.c_uint32), ("numSlices", ctypes.c_uint32),
                ("timerResolution", ctypes.c_uint64),
                ("timestampValidBits", ctypes.c_uint32),
                ("kernelTimestampValidBits", ctypes.c_uint32),
                ("uuid", ctypes.c_uint8 * 16), ("name", ctypes.c_char * 256)]


MODULE_FLAG_INT64_ATOMICS = 1 << 2   # ze_device_module_flag_t: 64-bit atomics


class ModuleProperties(ctypes.Structure):
    """``ze_device_module_properties_t``: what the device's kernels may use."""
    _fields_ = [("stype", ctypes.c_int), ("pNext", ctypes.c_void_p),
                ("spirvVersionSupported", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("fp16flags", ctypes.c_uint32), ("fp32flags", ctypes.c_uint32),
                ("fp64flags", ctypes.c_uint32), ("maxArgumentsSize", ctypes.c_uint32),
                ("printfBufferSize", ctypes.c_uint32),
                ("nativeKernelSupported", ctypes.c_uint8 * 16)]


def describe(code: int) -> str:
    return f"ZE_RESULT_{RESULTS.get(code & 0xFFFFFFFF, hex(code & 0xFFFFFFFF))}"


class ZeError(RuntimeError):
    """A Level Zero call failed; ``code`` is its ze_result_t."""

    def __init__(self, what: str, code: int):
        self.code = code
        super().__init__(f"{what} failed with {describe(code)}")


def check(code: int, what: str) -> None:
    if code != SUCCESS:
        raise ZeError(what, code)


_library = []


def library():
    """The loader (``ctypes.CDLL``); ImportError when it cannot be opened."""
    if not _library:
        name = "ze_loader.dll" if os.name == "nt" else "libze_loader.so.1"
        try:
            lib = ctypes.CDLL(name)
        except OSError as exc:
            raise ImportError(f"the Level Zero loader ({name}) cannot be loaded: "
                              f"{exc}") from exc
        for fn in ("zeInit", "zeDriverGet", "zeDeviceGet", "zeDeviceGetProperties",
                   "zeDeviceGetModuleProperties", "zeContextCreate", "zeContextDestroy",
                   "zeCommandListCreateImmediate", "zeCommandListDestroy",
                   "zeCommandListAppendBarrier", "zeCommandListAppendMemoryCopy",
                   "zeEventPoolCreate", "zeEventCreate", "zeEventHostSynchronize",
                   "zeEventHostReset",
                   "zeCommandListAppendLaunchKernel", "zeMemAllocDevice",
                   "zeMemAllocHost", "zeMemFree", "zeMemGetAllocProperties",
                   "zeModuleCreate", "zeModuleDestroy", "zeModuleBuildLogGetString",
                   "zeModuleBuildLogDestroy", "zeKernelCreate", "zeKernelDestroy",
                   "zeKernelSetGroupSize", "zeKernelSetArgumentValue"):
            getattr(lib, fn).restype = ctypes.c_int
        lib.zeEventHostSynchronize.argtypes = [handle, ctypes.c_uint64]
        lib.zeKernelSetArgumentValue.argtypes = [handle, ctypes.c_uint32, ctypes.c_size_t,
                                                 ctypes.c_void_p]
        _library.append(lib)
    return _library[0]


def drivers(lib) -> list:
    """The driver handles, after ``zeInit``; RuntimeError when there are none."""
    code = lib.zeInit(0)
    if code != SUCCESS:
        raise RuntimeError(f"No Level Zero driver could start: zeInit failed with "
                           f"{describe(code)} (is Intel's compute runtime, "
                           f"intel-level-zero-gpu, installed?).")
    count = ctypes.c_uint32(0)
    check(lib.zeDriverGet(ctypes.byref(count), None), "zeDriverGet")
    found = (handle * count.value)()
    if count.value:
        check(lib.zeDriverGet(ctypes.byref(count), found), "zeDriverGet")
    return list(found)


def devices(lib, driver) -> list:
    count = ctypes.c_uint32(0)
    check(lib.zeDeviceGet(handle(driver), ctypes.byref(count), None), "zeDeviceGet")
    found = (handle * count.value)()
    if count.value:
        check(lib.zeDeviceGet(handle(driver), ctypes.byref(count), found), "zeDeviceGet")
    return list(found)


def device_count() -> int:
    """Devices of the first driver; 0 without the loader, a driver or a GPU."""
    try:
        lib = library()
        found = drivers(lib)
        return len(devices(lib, found[0])) if found else 0
    except (ImportError, RuntimeError):
        return 0
