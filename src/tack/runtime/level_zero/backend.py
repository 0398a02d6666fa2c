"""LevelZeroBackend: Intel GPUs through the Level Zero loader (ctypes, ``ze.py``).

One context per device (or the caller's, with ``external_context``), one
asynchronous immediate command list, and one backend lock that serializes
launches, copies and waits (spec 000's ``_launch_lock``). Kernels are the
OpenCL C of the C-family generator, turned into SPIR-V by clang and
llvm-spirv (``spirv.py``) and loaded with ``zeModuleCreate``; 256 work-items
per group. Launches are queued and return at once; host reads wait; a failed
launch surfaces at the next wait. Host copies go through a host (USM)
staging allocation and wait. Scalars are kernel arguments by value, as on
OpenCL (no pack buffer to rewrite, and wait for, when they change). Memory an
array drops while a queued launch may use it is freed at the next wait. DLPack speaks ``kDLOneAPI``;
``memory_space`` answers "level_zero" (device or shared USM) or "cpu".

Written against ``ze_api.h`` and tested with the real loader (no driver
here) and a fake one: no Intel GPU has run it yet (docs/backends.md).
"""

from __future__ import annotations

import ctypes
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from ... import types as T
from ...codegen.c_family.emitter import generate_c_source
from ...codegen.c_family.prints import print_statements, with_print_buffer
from ...codegen.c_family.targets import OpenCLTarget
from ...ir.cost import Cost, iteration_cost
from ...ir.passes.workgroups import requires_full_workgroups
from ..backend import Backend, device_address
from ..grid import WORKGROUP, launch_count
from ..opencl.backend import require_counters, typed_by_value
from ..stream.backend import DeviceBuffer
from . import spirv, ze
from .ze import check, handle

MAX_LAUNCH = ((1 << 32) - 1) * WORKGROUP   # groupCountX is a uint32
_TARGET = OpenCLTarget()
_CONTEXT_KEYS = ("driver", "device", "context")
MAX_PENDING_FREES = 256


@dataclass
class ZeProgram:
    """A built variant: module, kernel, and what its launch needs."""

    source: str
    entry: str
    module: object
    kernel: object
    scalar_types: tuple   # per parameter: None for an array, else its NumPy dtype
    n_extents: int
    cost: Cost
    lock: threading.Lock
    full_workgroups: bool = False
    name: str = ""
    array_positions: tuple = ()
    prints: tuple = ()   # its print statements (see runtime/print_buffer.py)


def _check_external(external) -> None:
    """ValueError unless ``external`` is a complete external_context."""
    if not isinstance(external, dict) or set(external) != set(_CONTEXT_KEYS):
        given = (", ".join(sorted(map(str, external))) or "no keys"
                 if isinstance(external, dict) else type(external).__name__)
        raise ValueError(f"external_context takes a dict with the 'driver', 'device' "
                         f"and 'context' handles of a Level Zero context; got {given}")


def _handles(external, index: int, found_devices) -> tuple:
    """``(driver, device, context)`` handles of a checked ``external_context``."""
    values = [external[k] for k in _CONTEXT_KEYS]
    values = [v.value if isinstance(v, ctypes.c_void_p) else int(v) for v in values]
    devices = [int(d or 0) for d in found_devices]
    if values[1] != devices[index]:
        where = (f"level_zero:{devices.index(values[1])}" if values[1] in devices else
                 "not a device of the first Level Zero driver")
        raise ValueError(f"level_zero:{index}: the external_context's device is {where}; "
                         f"name that device, or pass its own context")
    return tuple(handle(v) for v in values)


BUILD_FLAGS = b"-ze-opt-greater-than-4GB-buffer-required"


class LevelZeroBackend(Backend):
    name = "level_zero"
    api_name = "Level Zero"
    max_launch = MAX_LAUNCH
    supports_workgroups = True
    device_options = ("external_context",)
    dlpack_device_type = 14   # kDLOneAPI
    dlpack_refusal_note = ("the Level Zero backend wraps USM device or shared memory "
                           "(kDLOneAPI) only; copy other memory with tack.array(..., "
                           "device=...)")
    device_memory_spaces = ("level_zero",)

    def __init__(self, index: int = 0, external_context=None):
        if external_context is not None:
            _check_external(external_context)
        self.lib = lib = ze.library()
        drivers = ze.drivers(lib)
        found = ze.devices(lib, drivers[0]) if drivers else []
        if index >= len(found):
            raise ValueError(f"level_zero:{index}: the first Level Zero driver has "
                             f"{len(found)} devices")
        spirv.tools()   # a device that cannot compile is refused at once
        self.index = index
        self.memory_domain = ("level_zero", index)
        if external_context is not None:
            self.driver, self.device, self.context = _handles(external_context, index,
                                                              found)
            self.owns_context = False
        else:
            self.driver, self.device = handle(drivers[0]), handle(found[index])
            self.context = handle()
            desc = ze.ContextDesc(ze.CONTEXT_DESC, None, 0)
            check(lib.zeContextCreate(self.driver, ctypes.byref(desc),
                                      ctypes.byref(self.context)), "zeContextCreate")
            self.owns_context = True
        self.list = handle()
        # In order: a command list otherwise only starts its commands in order,
        # so a copy could finish before the launch ahead of it, and a launch
        # run beside the one whose results it reads.
        desc = ze.CommandQueueDesc(ze.COMMAND_QUEUE_DESC, None, 0, 0,
                                   ze.COMMAND_QUEUE_FLAG_IN_ORDER,
                                   ze.COMMAND_QUEUE_MODE_ASYNCHRONOUS, 0)
        check(lib.zeCommandListCreateImmediate(self.context, self.device,
                                               ctypes.byref(desc), ctypes.byref(self.list)),
              "zeCommandListCreateImmediate")
        self.done = self._event()   # signalled by the barrier a wait appends
        self._launch_lock = threading.RLock()
        self._pending_frees = []     # freed while launches may still use them
        self._dropped = []           # (kernel, module) of dropped programs, likewise
        self._staging, self._staging_bytes = None, 0
        self.device_name, fp64, self.int64_atomics = self._properties()
        self.supported_dtypes = frozenset(t for t in T.SCALAR_TYPES if fp64 or t != T.f64)
        wide = [T.i64, T.u64] + ([T.f64] if fp64 else [])
        self.atomic_dtypes = frozenset([T.i32, T.u32, T.f32] +
                                       (wide if self.int64_atomics else []))

    def _event(self):
        """A host-visible event (in a pool of one) that waits signal."""
        lib, pool, event = self.lib, handle(), handle()
        desc = ze.EventPoolDesc(ze.EVENT_POOL_DESC, None, ze.EVENT_POOL_FLAG_HOST_VISIBLE, 1)
        devices = (handle * 1)(self.device)
        check(lib.zeEventPoolCreate(self.context, ctypes.byref(desc), ctypes.c_uint32(1),
                                    devices, ctypes.byref(pool)), "zeEventPoolCreate")
        self.event_pool = pool
        desc = ze.EventDesc(ze.EVENT_DESC, None, 0, ze.EVENT_SCOPE_FLAG_HOST,
                            ze.EVENT_SCOPE_FLAG_HOST)
        check(lib.zeEventCreate(pool, ctypes.byref(desc), ctypes.byref(event)),
              "zeEventCreate")
        return event

    def _properties(self) -> tuple:
        props = ze.DeviceProperties(stype=ze.DEVICE_PROPERTIES)
        check(self.lib.zeDeviceGetProperties(self.device, ctypes.byref(props)),
              "zeDeviceGetProperties")
        module = ze.ModuleProperties(stype=ze.MODULE_PROPERTIES)
        check(self.lib.zeDeviceGetModuleProperties(self.device, ctypes.byref(module)),
              "zeDeviceGetModuleProperties")
        return (props.name.decode(errors="replace"), module.fp64flags != 0,
                bool(module.flags & ze.MODULE_FLAG_INT64_ATOMICS))

    def cache_target(self):
        return ("level_zero", self.device_name)

    # -- memory ---------------------------------------------------------------------------
    def allocate(self, nbytes: int) -> DeviceBuffer:
        pointer = ctypes.c_void_p()
        desc = ze.DeviceMemAllocDesc(ze.DEVICE_MEM_ALLOC_DESC, None, 0, 0)
        check(self.lib.zeMemAllocDevice(self.context, ctypes.byref(desc),
                                        ctypes.c_size_t(max(nbytes, 8)), ctypes.c_size_t(64),
                                        self.device, ctypes.byref(pointer)),
              f"zeMemAllocDevice({nbytes} bytes)")
        return DeviceBuffer(self, pointer.value, nbytes, owned=True)

    def wrap(self, address: int, nbytes: int, owner=None) -> DeviceBuffer:
        return DeviceBuffer(self, int(address), nbytes, owned=False, owner=owner)

    def free(self, address: int, pooled: bool = False) -> None:
        """Freed at the next wait (a queued launch may still use it); a program
        that never waits waits every ``MAX_PENDING_FREES`` drops, so the
        dropped memory stays bounded."""
        with self._launch_lock:
            self._pending_frees.append(address)
            if len(self._pending_frees) >= MAX_PENDING_FREES:
                self._wait()

    def _stage(self, nbytes: int) -> int:
        """The host (USM) staging allocation, at least ``nbytes``; under the lock."""
        if self._staging_bytes < nbytes:
            if self._staging is not None:
                self.lib.zeMemFree(self.context, handle(self._staging))
            size = max(nbytes, 2 * self._staging_bytes, 1 << 16)
            pointer = ctypes.c_void_p()
            desc = ze.HostMemAllocDesc(ze.HOST_MEM_ALLOC_DESC, None, 0)
            check(self.lib.zeMemAllocHost(self.context, ctypes.byref(desc),
                                          ctypes.c_size_t(size), ctypes.c_size_t(64),
                                          ctypes.byref(pointer)), "zeMemAllocHost")
            self._staging, self._staging_bytes = pointer.value, size
        return self._staging

    def _copy(self, destination: int, source: int, nbytes: int) -> None:
        check(self.lib.zeCommandListAppendMemoryCopy(
            self.list, handle(destination), handle(source), ctypes.c_size_t(nbytes),
            None, ctypes.c_uint32(0), None), "zeCommandListAppendMemoryCopy")

    def copy_to_host(self, out: np.ndarray, address: int, nbytes: int) -> None:
        with self._launch_lock:
            staging = self._stage(nbytes)
            self._copy(staging, address, nbytes)
            self._wait()
            ctypes.memmove(out.ctypes.data, staging, nbytes)

    def copy_from_host(self, address: int, data: np.ndarray) -> None:
        with self._launch_lock:
            staging = self._stage(data.nbytes)
            ctypes.memmove(staging, data.ctypes.data, data.nbytes)
            self._copy(address, staging, data.nbytes)
            self._wait()   # the staging memory is free again

    def memory_space(self, ptr) -> str:
        """"level_zero" for USM device or shared memory, else "cpu"; a failed
        driver query raises RuntimeError (spec 003 memory_space)."""
        address = device_address(ptr)
        if address is None:
            return "cpu"
        props = ze.MemoryAllocationProperties(stype=ze.MEMORY_ALLOCATION_PROPERTIES)
        check(self.lib.zeMemGetAllocProperties(self.context, handle(address),
                                               ctypes.byref(props), None),
              "zeMemGetAllocProperties")
        return ("level_zero" if props.type in (ze.MEMORY_TYPE_DEVICE, ze.MEMORY_TYPE_SHARED)
                else "cpu")

    # -- waiting ----------------------------------------------------------------------
    def _wait(self) -> None:
        """Wait for the command list (under the lock): a barrier that signals
        ``done``, waited for on the host; then free what was dropped."""
        lib = self.lib
        code = lib.zeCommandListAppendBarrier(self.list, self.done, ctypes.c_uint32(0), None)
        if code == ze.SUCCESS:
            code = lib.zeEventHostSynchronize(self.done, ze.UINT64_MAX)
            lib.zeEventHostReset(self.done)
        if code == ze.SUCCESS:   # else a launch may still use them: kept for the next
            frees, self._pending_frees = self._pending_frees, []
            for address in frees:
                self.lib.zeMemFree(self.context, handle(address))
            while self._dropped:
                kernel, module = self._dropped.pop()
                lib.zeKernelDestroy(kernel)
                lib.zeModuleDestroy(module)
        else:
            raise RuntimeError(f"a Level Zero launch or copy on this device failed: "
                               f"{ze.describe(code)}")

    def synchronize(self) -> None:
        with self._launch_lock:
            self._wait()

    # -- building -------------------------------------------------------------------------
    def typed(self, fn):
        return typed_by_value(fn)

    def inspect_source(self, fn, optimized: bool) -> str:
        source = generate_c_source(typed_by_value(fn), _TARGET)[0]
        if optimized:
            raise ValueError("inspect mode 'optimized' is CPU only: the Level Zero "
                             "driver optimizes the SPIR-V inside its own compiler, whose "
                             "output Tack does not show")
        return source

    def build(self, fn) -> ZeProgram:
        typed = typed_by_value(fn)
        require_counters(typed, self.int64_atomics, f"Level Zero device "
                         f"{self.device_name!r}", "ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS")
        source, entry = generate_c_source(typed, _TARGET)
        module = self._module(spirv.compile_spirv(source))
        kernel = handle()
        desc = ze.KernelDesc(ze.KERNEL_DESC, None, 0, entry.encode())
        code = self.lib.zeKernelCreate(module, ctypes.byref(desc), ctypes.byref(kernel))
        if code != ze.SUCCESS:
            self.lib.zeModuleDestroy(module)
            check(code, "zeKernelCreate")
        check(self.lib.zeKernelSetGroupSize(kernel, ctypes.c_uint32(WORKGROUP),
                                            ctypes.c_uint32(1), ctypes.c_uint32(1)),
              "zeKernelSetGroupSize")
        scalar_types = tuple(None if p.is_array else p.dtype.numpy for p in typed.params)
        positions = tuple(k for k, p in enumerate(with_print_buffer(fn).params)
                          if p.is_array)
        program = ZeProgram(source, entry, module, kernel, scalar_types,
                            len(typed.parallel_for.extents), iteration_cost(typed),
                            threading.Lock(), requires_full_workgroups(typed), fn.name,
                            positions, print_statements(typed))
        # A variant is dropped with its device class: its kernel and module are
        # destroyed at the next wait, when no queued launch can still use them.
        weakref.finalize(program, self._dropped.append, (kernel, module)).atexit = False
        return program

    def _module(self, binary: bytes):
        lib, module, log = self.lib, handle(), handle()
        data = (ctypes.c_uint8 * len(binary)).from_buffer_copy(binary)
        # 64-bit offsets into buffers, which Level Zero leaves off by default:
        # Tack's indices are 64-bit, and a wrapped buffer may pass 4 GiB
        desc = ze.ModuleDesc(ze.MODULE_DESC, None, ze.MODULE_FORMAT_IL_SPIRV, len(binary),
                             ctypes.addressof(data), BUILD_FLAGS, None)
        code = lib.zeModuleCreate(self.context, self.device, ctypes.byref(desc),
                                  ctypes.byref(module), ctypes.byref(log))
        if code != ze.SUCCESS:
            size = ctypes.c_size_t(0)
            lib.zeModuleBuildLogGetString(log, ctypes.byref(size), None)
            text = ctypes.create_string_buffer(size.value or 1)
            lib.zeModuleBuildLogGetString(log, ctypes.byref(size), text)
            lib.zeModuleBuildLogDestroy(log)
            raise RuntimeError(f"compilation failed: zeModuleCreate failed with "
                               f"{ze.describe(code)}:\n{text.value.decode(errors='replace')}")
        lib.zeModuleBuildLogDestroy(log)
        return module

    # -- running ---------------------------------------------------------------------------
    def launcher(self, program: ZeProgram):
        """``launch(args, extents)``: set the kernel's arguments (device addresses,
        scalars by value in their parameters' types, then the extents) and queue
        it, under the backend lock (the kernel object holds its arguments). A
        scalar its type cannot hold raises before anything is queued."""
        lib, kernel, name = self.lib, program.kernel, program.name
        set_arg, append = lib.zeKernelSetArgumentValue, lib.zeCommandListAppendLaunchKernel
        n_params = len(program.scalar_types)
        values = (ctypes.c_uint64 * (n_params + program.n_extents))()   # 8 bytes each
        addresses = [ctypes.addressof(values) + 8 * k for k in range(len(values))]
        sizes = [8 if dtype is None else np.dtype(dtype).itemsize
                 for dtype in program.scalar_types] + [8] * program.n_extents
        # each scalar is written into its own slot through a view in its type
        scalars = [(k, np.frombuffer(values, dtype, 1, 8 * k))
                   for k, dtype in enumerate(program.scalar_types) if dtype is not None]
        arrays = program.array_positions
        groups = ze.GroupCount(0, 1, 1)

        def launch(args, extents):
            total = launch_count(name, extents, program.full_workgroups, MAX_LAUNCH,
                                 "Level Zero")
            if not total:
                return
            with self._launch_lock:
                for k, view in scalars:
                    view[0] = args[k]
                for k in arrays:
                    values[k] = args[k]._ptr
                values[n_params] = total
                for k in range(1, len(extents)):
                    values[n_params + k] = extents[k]
                for k, size in enumerate(sizes):
                    check(set_arg(kernel, k, size, addresses[k]), "zeKernelSetArgumentValue")
                groups.groupCountX = -(-total // WORKGROUP)
                check(append(self.list, kernel, ctypes.byref(groups), None,
                             ctypes.c_uint32(0), None), "zeCommandListAppendLaunchKernel")
                if any(args[k]._buffer.shared for k in arrays):
                    self._wait()   # memory another library uses: complete before returning
        launch.parameters = values
        return launch
