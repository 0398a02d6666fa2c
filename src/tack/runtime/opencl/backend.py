"""OpenCLBackend: any OpenCL 1.2+ device through pyopencl (PoCL runs it on a CPU).

One context and one in-order queue per device. Launches are queued and return
at once; host reads wait; a queued launch's error surfaces at the next wait.
Scalars travel in pack buffers cached per variant: each launch writes its
values with a non-blocking copy (pyopencl keeps the host array alive until
the copy ran), and the in-order queue orders it before the kernel.

Sharing: device buffers have no host address here, so DLPack export and
``array_from_ptr`` are refused (like Metal); ``from_dlpack`` of host memory
makes a CPU array, and ``to_device("opencl")`` copies.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from ... import types as T
from ...codegen.c_family import OpenCLTarget, generate_c_source
from ...ir.cost import Cost, iteration_cost
from ...ir.passes.annotate import annotate_types
from ...ir.passes.pack import PackInfo, pack_scalars
from ...ir.passes.workgroups import requires_full_workgroups
from ...ir.verify import verify
from ..backend import Backend
from ..grid import WORKGROUP, launch_count
from ..launcher import pack_arrays

MAX_LAUNCH = 1 << 40   # iterations one launch may index (a flat long index)
_TARGET = OpenCLTarget()


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


class CLBuffer:
    """Device memory: a ``cl.Buffer`` and the queue that orders its use."""

    __slots__ = ("mem", "queue", "nbytes", "address")

    def __init__(self, context, queue, nbytes: int):
        cl = _cl()
        self.mem = cl.Buffer(context, cl.mem_flags.READ_WRITE, max(nbytes, 8))
        self.queue = queue
        self.nbytes = nbytes
        self.address = 0  # no host address: kernels receive the buffer itself

    def read(self, nbytes: int, copy: bool):
        out = np.empty(nbytes, np.uint8)
        if nbytes:
            _cl().enqueue_copy(self.queue, out, self.mem, is_blocking=True)
        return out

    def write(self, data) -> None:
        if data.size:
            _cl().enqueue_copy(self.queue, self.mem, np.ascontiguousarray(data),
                               is_blocking=True)


@dataclass
class CLProgram:
    """A built variant: the kernel, its source, packing layout and cost."""

    source: str
    entry: str
    kernel: object
    pack: PackInfo
    pack_buffers: list
    cost: Cost
    lock: threading.Lock
    full_workgroups: bool = False
    name: str = ""


class OpenCLBackend(Backend):
    name = "opencl"
    supports_workgroups = True
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
        self.memory_domain = ("opencl", index)
        extensions = self.device.extensions.split()
        fp64 = "cl_khr_fp64" in extensions
        atomics64 = "cl_khr_int64_base_atomics" in extensions
        self.supported_dtypes = frozenset(t for t in T.SCALAR_TYPES if fp64 or t != T.f64)
        atomic = [T.i32, T.u32, T.f32]
        if atomics64 and "cl_khr_int64_extended_atomics" in extensions:
            atomic += [T.i64, T.u64] + ([T.f64] if fp64 else [])
        self.atomic_dtypes = frozenset(atomic)

    def cache_target(self):
        return ("opencl", self.device.platform.name, self.device.name,
                self.device.driver_version)

    def allocate(self, nbytes: int) -> CLBuffer:
        return CLBuffer(self.context, self.queue, nbytes)

    def synchronize(self) -> None:
        cl = _cl()
        try:
            self.queue.finish()
        except cl.Error as exc:
            raise RuntimeError(f"an OpenCL launch failed: {exc}") from exc

    # -- building --------------------------------------------------------------------
    def packed(self, fn):
        packed, info = pack_scalars(fn)
        verify(packed, "packed")
        return verify(annotate_types(packed), "typed"), info

    def inspect_source(self, fn, optimized: bool) -> str:
        source = generate_c_source(self.packed(fn)[0], _TARGET)[0]
        if optimized:
            raise ValueError("inspect mode 'optimized' is CPU only: the OpenCL driver "
                             "optimizes inside its own compiler, whose output Tack "
                             "does not show")
        return source

    def typed(self, fn):
        return self.packed(fn)[0]

    def build(self, fn) -> CLProgram:
        cl = _cl()
        typed, info = self.packed(fn)
        source, entry = generate_c_source(typed, _TARGET)
        try:
            program = cl.Program(self.context, source).build(options=["-cl-std=CL1.2"])
        except cl.Error as exc:
            raise RuntimeError(f"compilation failed:\n{exc}") from exc
        packs = [CLBuffer(self.context, self.queue, 8 * max(1, sum(
            1 for _, b, _ in info.slots if b == k))) for k in range(len(info.buffers))]
        return CLProgram(source, entry, getattr(program, entry), info, packs,
                         iteration_cost(typed), threading.Lock(),
                         requires_full_workgroups(typed), fn.name)

    # -- running -----------------------------------------------------------------------
    def launcher(self, program: CLProgram):
        """``launch(args, extents)``: queue one launch over the flattened extents."""
        cl = _cl()
        queue, kernel, info = self.queue, program.kernel, program.pack
        packs = [p.mem for p in program.pack_buffers]
        name = program.name

        def launch(args, extents):
            total = launch_count(name, extents, program.full_workgroups, MAX_LAUNCH,
                                 "OpenCL")
            if not total:
                return
            scalars = tuple(args[arg] for arg, _, _ in info.slots)
            marker = tuple(map(repr, scalars))   # 0.0 == -0.0, but their bits differ
            arrays = [a._buffer.mem for a in args if hasattr(a, "_buffer")]
            size = -(-total // WORKGROUP) * WORKGROUP
            with program.lock:
                if marker != last[0]:  # the pack buffers already hold these values
                    for mem, host in zip(packs, pack_arrays(info, scalars)):
                        cl.enqueue_copy(queue, mem, host, is_blocking=False)
                    last[0] = marker
                kernel.set_args(*arrays, *packs, np.int64(total),
                                *[np.int64(e) for e in extents[1:]])
                cl.enqueue_nd_range_kernel(queue, kernel, (size,), (WORKGROUP,))
        last = [None]
        return launch
