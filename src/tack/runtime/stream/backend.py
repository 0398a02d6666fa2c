"""StreamBackend: a GPU reached through a driver API with streams (CUDA, HIP).

Each such backend has one stream per device, stream-ordered memory, a C++
dialect of the C-family generator (``target``), a runtime compiler and a
module loader. What they share lives here: device buffers, the build (pack
the scalars, annotate, emit, compile, load), inspection, waiting, and the
warm launch (``launch.py``). A subclass supplies the driver calls through
the hooks below (``allocate``, ``free``, copies, ``compile_source``,
``_load``, ``launch_function``, ``launch_failed``, ``_wait``) and its device
model (``context``, with ``enter``/``leave``, ``foreign``, ``thread`` and
``several``).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np

from ...codegen.c_family.emitter import generate_c_source, items_per_thread
from ...codegen.c_family.prints import print_statements, with_print_buffer
from ...ir.cost import Cost, iteration_cost
from ...ir.passes.annotate import annotate_types
from ...ir.passes.pack import PackInfo, pack_scalars
from ...ir.passes.workgroups import requires_full_workgroups
from ...ir.verify import verify
from ..backend import Backend
from .launch import MAX_LAUNCH, make_launch


class DeviceBuffer:
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

    def read(self, nbytes: int, copy: bool, offset: int = 0):
        out = np.empty(nbytes, np.uint8)
        if nbytes:
            self.backend.copy_to_host(out, self.address + offset, nbytes)
        return out

    def write(self, data, offset: int = 0) -> None:
        if data.size:
            self.backend.copy_from_host(self.address + offset, np.ascontiguousarray(data))

    def share(self) -> None:
        """From now on another library may read or write this memory: wait for
        the launches so far, and make each later launch that uses it wait."""
        self.backend.synchronize()
        self.shared = True

    def __del__(self):
        if self.owned and self.address:
            self.backend.free(self.address, self.pooled)


@dataclass
class StreamProgram:
    """A built variant: the loaded function, its source, packing layout and cost."""

    source: str
    entry: str
    module: object
    function: object
    pack: PackInfo
    pack_offsets: tuple     # byte offset of each pack buffer in the pack allocation
    pack_bytes: int
    pack_memory: DeviceBuffer
    n_arrays: int
    n_params: int
    cost: Cost
    lock: threading.Lock
    full_workgroups: bool = False
    name: str = ""
    items: int = 1               # loop iterations per thread (emitter.items_per_thread)
    array_positions: tuple = ()  # which arguments are arrays, in parameter order
    prints: tuple = ()           # its print statements (see runtime/print_buffer.py)
    writer: object = None        # what writes its pack (launch.program_writer), once made


def packed(fn) -> tuple:
    """``(typed, PackInfo)``: optimized IR with the print buffer if it prints,
    its scalars packed, then annotated (the same steps as OpenCL's build)."""
    fn, info = pack_scalars(with_print_buffer(fn))
    verify(fn, "packed")
    return verify(annotate_types(fn), "typed"), info


def _pack_layout(info: PackInfo) -> tuple:
    """Byte offsets of the pack buffers in one allocation (8-byte aligned), and its size."""
    offsets, total = [], 0
    for k, dtype in enumerate(info.buffers):
        offsets.append(total)
        count = sum(1 for _, b, _ in info.slots if b == k)
        total += -(-count * dtype.itemsize // 8) * 8
    return tuple(offsets), total


class StreamBackend(Backend):
    """The shared half of the CUDA and HIP backends (see the module doc)."""

    supports_workgroups = True
    max_launch = MAX_LAUNCH
    specialize_disjoint = True   # disjoint arrays get __restrict__ pointers
    target = None                # the C-family target of the backend's dialect
    supports_device_reductions = True   # f32 sum/min/max (reduce.py)
    reduction_dialect = None     # "cuda" or "hip": reduce.py's warp width and shuffle
    _reducer = None              # the reduction kernels, built on first use

    # -- memory that is not the stream's pool -------------------------------------------
    def wrap(self, address: int, nbytes: int, owner=None) -> DeviceBuffer:
        """Device memory Tack does not own (DLPack imports, ``array_from_ptr``)."""
        return DeviceBuffer(self, int(address), nbytes, owned=False, owner=owner)

    @property
    def mpi_direct(self) -> bool:
        """Stream-ordered pool memory may not be registrable by a GPU-aware MPI
        (its IPC paths expect plainly allocated memory), so pooled buffers are
        staged through ``allocate_mpi_array``."""
        return not self.pools

    def allocate_mpi_array(self, device, shape, dtype):
        """An array in plainly allocated memory (``allocate_plain``), which MPI
        may be handed."""
        from ... import types as T
        from ..array import Array
        element = T.as_element_type(dtype)
        nbytes = element.itemsize
        for extent in shape:
            nbytes *= extent
        buffer = DeviceBuffer(self, self.allocate_plain(max(nbytes, 8)), nbytes,
                              owned=True, pooled=False)
        return Array(buffer, tuple(shape), element, device)

    # -- reductions -------------------------------------------------------------------
    def reduce(self, array, op: str) -> float:
        """``op`` of an f32 array's elements, on the device (``reduce.py``)."""
        if self._reducer is None:
            from .reduce import Reducer
            self._reducer = Reducer(self)
        return self._reducer.reduce(array, op)

    # -- waiting ----------------------------------------------------------------------
    def unload_module(self, module) -> None:
        """Unload a dropped program's module (in the device's context)."""
        raise NotImplementedError

    @staticmethod
    def status(enum, code: int):
        """A launch's status ``code`` as the bindings' ``enum``, or the int itself
        where they have no name for it (a driver newer than the bindings)."""
        try:
            return enum(code)
        except ValueError:
            return code

    def synchronize(self) -> None:
        with self.context.active():
            self._wait()
            dropped = self.dropped_modules
            while dropped:    # now no launch runs their code (appended from any thread)
                self.unload_module(dropped.pop())

    # -- building -------------------------------------------------------------------------
    def typed(self, fn):
        return packed(fn)[0]

    def inspect_source(self, fn, optimized: bool) -> str:
        source = generate_c_source(packed(fn)[0], self.target)[0]
        if optimized:
            raise ValueError(f"inspect mode 'optimized' is CPU only: the {self.api_name} "
                             f"runtime compiler and driver optimize inside their own "
                             f"compilers, whose output Tack does not show")
        return source

    def build(self, fn) -> StreamProgram:
        typed, info = packed(fn)
        source, entry = generate_c_source(typed, self.target)
        module, function = self._load(self.compile_source(source, entry), entry)
        offsets, pack_bytes = _pack_layout(info)
        pack_memory = self.allocate(pack_bytes) if pack_bytes else None
        n_arrays = sum(1 for p in typed.params if p.is_array) - len(info.buffers)
        n_params = len(typed.params) + len(typed.parallel_for.extents)
        positions = tuple(k for k, p in enumerate(with_print_buffer(fn).params)
                          if p.is_array)
        program = StreamProgram(source, entry, module, function, info, offsets,
                                pack_bytes, pack_memory, n_arrays, n_params,
                                iteration_cost(typed), threading.Lock(),
                                requires_full_workgroups(typed), fn.name,
                                items_per_thread(typed, self.target), positions,
                                print_statements(typed))
        # A variant is dropped with its device class: its module is unloaded at
        # the next synchronize, when no queued launch can still run its code.
        weakref.finalize(program, self.dropped_modules.append, module).atexit = False
        return program

    # -- running ---------------------------------------------------------------------------
    def launcher(self, program: StreamProgram):
        """``launch(args, extents)``: queue one launch (see ``launch.py``)."""
        return make_launch(self, program)

    def fused_launcher(self, program: StreamProgram, head):
        """A call signature's runner with the launch written in (``launch.py``)."""
        return make_launch(self, program, head)
