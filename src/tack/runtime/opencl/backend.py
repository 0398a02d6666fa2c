"""OpenCLBackend: any OpenCL 1.2+ device through pyopencl (PoCL runs it on a CPU).

One context and one in-order queue per device. Launches are queued and return
at once; host reads wait; a queued launch's error surfaces at the next wait.
Scalars are kernel arguments passed by value, not pack buffers as on CUDA,
HIP and Level Zero: PoCL, which runs this backend in CI, reloads a scalar
read from a buffer for every work-item, and a saxpy took 1.25-1.3 times as
long as with its scalar by value.

Sharing: device buffers have no host address here, so DLPack export and
``array_from_ptr`` are refused (like Metal); ``from_dlpack`` of host memory
makes a CPU array, and ``to_device("opencl")`` copies.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ... import types as T
from ...codegen.c_family.emitter import generate_c_source
from ...codegen.c_family.targets import OpenCLTarget
from ...codegen.c_family.prints import print_statements, with_print_buffer
from ...ir.cost import Cost, iteration_cost
from ...ir.passes.annotate import annotate_types
from ...ir.passes.workgroups import requires_full_workgroups
from ...ir.verify import verify
from ...lang.lower.bounds import ERRORS
from ..backend import Backend
from ..grid import WORKGROUP
from .launch import make_launch

# Iterations one launch may index: fewer than 2^32 workgroups of 256, once
# the count is rounded up to whole workgroups (PoCL died with SIGILL on a
# launch of exactly 2^32 workgroups, 2^40 work-items).
MAX_LAUNCH = ((1 << 32) - 1) * WORKGROUP
_TARGET = OpenCLTarget(array_offsets=True)   # range views: an allocation and an offset


def typed_by_value(fn):
    """The kernel's IR, annotated, its scalars left as parameters (passed by
    value; no packing), with the print buffer if it prints: what OpenCL C is
    generated from, here and for Level Zero."""
    return verify(annotate_types(with_print_buffer(fn)), "typed")


def require_counters(typed, int64_atomics: bool, device: str, feature_name: str) -> None:
    """print() and debug mode count in 64-bit atomics (their records' and
    violations' counters): refuse them clearly on a device without (OpenCL C is
    compiled here and for Level Zero)."""
    if int64_atomics:
        return
    for feature, used in (("print()", print_statements(typed)),
                          ("debug mode", any(p.name == ERRORS for p in typed.params))):
        if used:
            raise NotImplementedError(f"{feature} needs 64-bit atomics ({feature_name}), "
                                      f"which the {device} lacks")


def _cl():
    import pyopencl as cl  # an ImportError becomes "missing dependency"
    return cl


def all_devices():
    """Every OpenCL device of every platform, in platform order."""
    cl = _cl()
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    devices = []
    for platform in platforms:
        try:
            devices.extend(platform.get_devices())
        except cl.Error:
            continue
    return devices


# OpenCL frees a released buffer once the queued commands using it have run,
# so a program that never waits would keep every array it drops while the
# device is behind (a temporary per time step: all of them). After this many
# buffers, or ``Drops.limit`` bytes, dropped since the queue last finished, a
# drop waits for the queue (Level Zero: MAX_PENDING_FREES there too).
MAX_PENDING_FREES = 256


class Drops:
    """The buffers dropped since the queue last finished (see MAX_PENDING_FREES)."""

    __slots__ = ("queue", "limit", "count", "nbytes", "lock")

    def __init__(self, queue, limit: int):
        self.queue, self.limit = queue, limit
        self.count = self.nbytes = 0
        self.lock = threading.Lock()

    def dropped(self, nbytes: int) -> None:
        with self.lock:
            self.count += 1
            self.nbytes += nbytes
            due = self.count >= MAX_PENDING_FREES or self.nbytes >= self.limit
        if due:
            try:
                self.queue.finish()
            except Exception:   # noqa: BLE001 (a failed launch: raised at the next wait)
                return
            self.finished()

    def finished(self) -> None:
        with self.lock:
            self.count = self.nbytes = 0


class CLBuffer:
    """Device memory: a ``cl.Buffer`` and the queue that orders its use.

    Kernels receive the buffer itself, so an OpenCL buffer has no address;
    an array's position counts bytes from the start of the allocation instead
    (``address`` is 0), and a kernel gets it beside the buffer, which is how a
    range view ``a[start:stop]`` starts anywhere (sub-buffers start only at the
    device's base address alignment, and OpenCL leaves overlapping ones in one
    launch undefined)."""

    __slots__ = ("mem", "queue", "nbytes", "address", "drops", "__weakref__")

    def __init__(self, context, queue, nbytes: int, limit: int, drops: Drops = None):
        self.drops = None   # (a buffer whose allocation fails is not counted)
        cl = _cl()
        if nbytes > limit:
            raise MemoryError(f"cannot allocate {nbytes} bytes on an OpenCL device: "
                              f"it allocates at most {limit} bytes in one buffer")
        try:
            self.mem = cl.Buffer(context, cl.mem_flags.READ_WRITE, max(nbytes, 8))
        except cl.Error as exc:
            raise MemoryError(f"cannot allocate {nbytes} bytes on an OpenCL device: "
                              f"{exc}") from exc
        self.queue = queue
        self.nbytes = nbytes
        self.address = 0
        self.drops = drops

    def __del__(self):
        if self.drops is not None:
            self.drops.dropped(self.nbytes)

    def read(self, nbytes: int, copy: bool, offset: int = 0):
        out = np.empty(nbytes, np.uint8)
        if nbytes:
            _cl().enqueue_copy(self.queue, out, self.mem, src_offset=offset,
                               is_blocking=True)
        return out

    def write(self, data, offset: int = 0) -> None:
        if data.size:
            _cl().enqueue_copy(self.queue, self.mem, np.ascontiguousarray(data),
                               dst_offset=offset, is_blocking=True)


@dataclass
class CLProgram:
    """A built variant: the kernel, its source and cost."""

    source: str
    entry: str
    kernel: object
    cost: Cost
    lock: threading.Lock
    full_workgroups: bool = False
    name: str = ""
    prints: tuple = ()   # its print statements (see runtime/print_buffer.py)
    n_args: int = 0                 # arguments a launch gets (the print buffer included)
    array_positions: tuple = ()     # which of them are arrays
    n_extents: int = 1


class OpenCLBackend(Backend):
    name = "opencl"
    api_name = "OpenCL"
    supports_workgroups = True
    max_launch = MAX_LAUNCH
    dlpack_device_type = 4  # kDLOpenCL
    dlpack_refusal_note = ("OpenCL buffers have no address Tack can share; copy "
                           "through the host (a.numpy(), tack.array(..., device=...))")

    def __init__(self, index: int = 0):
        cl = _cl()
        devices = all_devices()
        if index >= len(devices):
            raise ValueError(f"opencl:{index}: this machine has {len(devices)} OpenCL "
                             f"devices")
        self.device = devices[index]
        self.index = index
        self.context = cl.Context([self.device])
        self.queue = cl.CommandQueue(self.context)
        self.max_buffer = self.device.max_mem_alloc_size
        self.drops = Drops(self.queue, max(1 << 26, self.device.global_mem_size // 16))
        self.memory_domain = ("opencl", index)
        extensions = self.device.extensions.split()
        fp64 = "cl_khr_fp64" in extensions
        atomics64 = self.int64_atomics = "cl_khr_int64_base_atomics" in extensions
        self.supported_dtypes = frozenset(t for t in T.SCALAR_TYPES if fp64 or t != T.f64)
        atomic = [T.i32, T.u32, T.f32]
        if atomics64 and "cl_khr_int64_extended_atomics" in extensions:
            atomic += [T.i64, T.u64] + ([T.f64] if fp64 else [])
        self.atomic_dtypes = frozenset(atomic)
        # OpenCL 1.2 lets f32 / and sqrt be 2.5 and 3 ulp off unless the program
        # asks for correct rounding, which a device may offer: the language's
        # arithmetic is IEEE 754's, as on the CPU
        exact = self.device.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT
        self.build_options = ("-cl-std=CL1.2",) + (
            ("-cl-fp32-correctly-rounded-divide-sqrt",) if exact else ())

    def cache_target(self):
        return ("opencl", self.device.platform.name, self.device.name,
                self.device.driver_version)

    def allocate(self, nbytes: int) -> CLBuffer:
        return CLBuffer(self.context, self.queue, nbytes, self.max_buffer, self.drops)

    def synchronize(self) -> None:
        cl = _cl()
        try:
            self.queue.finish()
        except cl.Error as exc:
            raise RuntimeError(f"an OpenCL launch failed: {exc}") from exc
        self.drops.finished()

    # -- building --------------------------------------------------------------------
    def typed(self, fn):
        return typed_by_value(fn)

    def inspect_source(self, fn, optimized: bool) -> str:
        source = generate_c_source(self.typed(fn), _TARGET)[0]
        if optimized:
            raise ValueError("inspect mode 'optimized' is CPU only: the OpenCL driver "
                             "optimizes inside its own compiler, whose output Tack "
                             "does not show")
        return source

    def build(self, fn) -> CLProgram:
        cl = _cl()
        typed = typed_by_value(fn)
        require_counters(typed, self.int64_atomics,
                         f"OpenCL device {self.device.name!r}", "cl_khr_int64_base_atomics")
        source, entry = generate_c_source(typed, _TARGET)
        try:
            program = cl.Program(self.context, source).build(options=list(self.build_options))
        except cl.Error as exc:
            raise RuntimeError(f"compilation failed:\n{exc}") from exc
        kernel = getattr(program, entry)
        self._require_resources(kernel)
        # Declared once, the scalar types let pyopencl pack Python numbers
        # itself: a NumPy scalar argument costs about 6 us a launch through
        # pyopencl's generic path, a declared one a small fraction of that.
        extents = len(typed.parallel_for.extents)
        arrays = sum(p.is_array for p in typed.params)
        kernel.set_scalar_arg_dtypes([None if p.is_array else p.dtype.numpy
                                      for p in typed.params] + [np.int64] * extents
                                     + [np.int64] * arrays)   # their byte offsets
        params = with_print_buffer(fn).params
        return CLProgram(source, entry, kernel, iteration_cost(typed), threading.Lock(),
                         requires_full_workgroups(typed), fn.name, print_statements(typed),
                         len(params), tuple(k for k, p in enumerate(params) if p.is_array),
                         extents)

    def _require_resources(self, kernel) -> None:
        """Refuse a kernel the device cannot run in workgroups of 256: its
        shared arrays past the device's local memory (PoCL aborts the process
        on such a launch), or fewer lanes per workgroup than that."""
        info, device = _cl().kernel_work_group_info, self.device
        local = kernel.get_work_group_info(info.LOCAL_MEM_SIZE, device)
        if local > device.local_mem_size:
            raise RuntimeError(f"its shared arrays take {local} bytes of local memory; "
                               f"the OpenCL device {device.name!r} has "
                               f"{device.local_mem_size}")
        lanes = kernel.get_work_group_info(info.WORK_GROUP_SIZE, device)
        if lanes < WORKGROUP:
            raise RuntimeError(f"the OpenCL device {device.name!r} runs at most {lanes} "
                               f"lanes of it in a workgroup; Tack launches workgroups "
                               f"of {WORKGROUP}")

    # -- running -----------------------------------------------------------------------
    def launcher(self, program: CLProgram):
        """``launch(args, extents)``: queue one launch over the flattened extents
        (``launch.py``). pyopencl packs the scalars in their parameters' types
        (declared at the build); a value out of its type's range raises before
        anything is queued."""
        return make_launch(self, program, _cl(), MAX_LAUNCH)

    def fused_launcher(self, program: CLProgram, head):
        """A call signature's runner with the launch written in (``launch.py``)."""
        return make_launch(self, program, _cl(), MAX_LAUNCH, head)
