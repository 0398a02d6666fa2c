"""CPUBackend: compiles variants with LLVM and runs them over a thread pool."""

from __future__ import annotations

import ctypes
import hashlib
import itertools
import threading
from dataclasses import dataclass

import numpy as np

from ... import config
from ... import types as T
from ...codegen.llvm.artifact import POINTER, LLVMKernel
from ...ir.printer import format_function
from ...ir.cost import Cost, iteration_cost
from ...ir.verify import verify
from ..backend import Backend
from ..dispatch import write_only_params
from . import fanout, fastcall, jit
from . import native_pool
from .pool import PythonPool

ALIGNMENT = 64
PAGE = 4096
STAGGER_FROM = 1 << 16       # bytes: larger host buffers start at staggered page offsets
STAGGER_STEP = 17 * ALIGNMENT   # 17 is prime to 64: every 64-byte offset of a page, in turn
_staggers = itertools.count()
# A disjoint launch whose write-only arrays hold at least this many bytes
# stores into them around the caches (streaming.py; TACK_CPU_STREAM_BYTES).
# On this project's VM a 5-point stencil lost 20-50% streaming 4-36 MiB
# outputs, which the caches would have kept for the next call, and gained
# 13-68% from 64 MiB on (docs/pipeline.md, "Streaming stores").
STREAM_BYTES = 64 << 20
NEVER_STREAM = 1 << 62   # a negative TACK_CPU_STREAM_BYTES: no launch streams
# Pause iterations a pool thread spins before it sleeps: about 1.4 ms on this
# project's VM. A worker that sleeps between launches is woken onto its
# caller's CPU at times, and left there while both compute (see
# docs/pipeline.md, "The pools"); one that spins long enough is moved apart.
POOL_SPIN = 100_000


class HostBuffer:
    """Host memory: a NumPy byte array, 64-byte aligned.

    A buffer of ``STAGGER_FROM`` bytes or more starts at the next of 64 page
    offsets in turn (``STAGGER_STEP`` bytes apart, modulo the page), not where
    the allocator put it: large allocations all come back at the same offset
    within a page, and then the arrays a kernel walks in lockstep alias in the
    low 12 address bits, which the CPU takes for a possible dependence between
    a store and a later load ("4K aliasing"). A 5-point stencil whose output
    sat at its input's page offset ran 3-4% slower on this project's VM."""

    __slots__ = ("raw", "address", "nbytes")

    def __init__(self, nbytes: int, zeroed: bool = False):
        try:
            self._allocate(nbytes, np.zeros if zeroed else np.empty)
        except (ValueError, OverflowError) as exc:   # NumPy's refusal of the size
            raise MemoryError(f"cannot allocate {nbytes} bytes on the CPU: {exc}") \
                from None

    def _allocate(self, nbytes: int, make) -> None:
        if nbytes < STAGGER_FROM:
            raw = make(nbytes + ALIGNMENT, dtype=np.uint8)
            base = raw.__array_interface__["data"][0]  # cheaper than raw.ctypes.data
            offset = (-base) % ALIGNMENT
        else:
            raw = make(nbytes + PAGE, dtype=np.uint8)
            base = raw.__array_interface__["data"][0]
            offset = (next(_staggers) * STAGGER_STEP - base) % PAGE
        self.raw = raw[offset:offset + nbytes]
        self.address = base + offset
        self.nbytes = nbytes

    def host_view(self):
        return self.raw

    def read(self, nbytes: int, copy: bool, offset: int = 0):
        """``nbytes`` from byte ``offset``: a view of host memory unless ``copy``."""
        view = self.raw[offset:offset + nbytes]
        return view.copy() if copy else view

    def write(self, data, offset: int = 0) -> None:
        self.raw[offset:offset + data.size] = data


@dataclass
class CPUProgram:
    """A loaded variant: its entry point, argument pack layout and cost."""

    kernel: LLVMKernel
    address: int           # the native entry point
    entry: object          # native function (pack address, start, end): fastcall.py
    cost: Cost
    object: bytes          # the object code, for the disk cache


def _entry_suffix(typed) -> str:
    """A content hash of the typed IR: equal code, equal symbol; else distinct."""
    text = format_function(typed) + f"\ndisjoint={typed.disjoint} streaming={typed.streaming}"
    return "_" + hashlib.sha1(text.encode()).hexdigest()[:16]


def _streamed(fn) -> tuple:
    """The write-only arrays whose stores a streaming variant makes non-temporal."""
    return write_only_params(fn) if fn.streaming else ()


def _ordinary(fn):
    """A streaming variant's IR as the disjoint variant has it (no peel)."""
    return fn.replace(streaming=False)


_malloc_tuned = False
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


def _tune_malloc() -> bool:
    """TACK_CPU_MALLOC: keep freed blocks' pages (glibc), process-wide, once.

    Large NumPy buffers are normally mmap'ed and unmapped on free, so each new
    array faults its pages in again. Raising the mmap threshold to glibc's
    maximum (32 MiB on 64-bit) and never trimming the heap lets freed memory be
    reused without page faults, at the cost of a process that keeps its peak.
    """
    global _malloc_tuned
    if _malloc_tuned:
        return True
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return False
    ok = libc.mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024) == 1
    ok = libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1) == 1 and ok
    _malloc_tuned = ok
    return ok


class CPUBackend(Backend):
    name = "cpu"
    memory_domain = "host"
    atomic_dtypes = frozenset((T.i32, T.i64, T.u32, T.u64, T.f32, T.f64))
    specialize_disjoint = True
    supports_streaming = True   # streaming.py: large write-only arrays skip the caches
    launch_style = "packed"
    device_options = ("num_threads",)

    def __init__(self, num_threads=None):
        config.cpu_policy()
        if config.env_flag("TACK_CPU_MALLOC"):
            _tune_malloc()
        self.num_threads = config.cpu_threads(num_threads)
        stream_bytes = config.env_int("TACK_CPU_STREAM_BYTES", STREAM_BYTES)
        self.streaming_bytes = NEVER_STREAM if stream_bytes < 0 else stream_bytes
        self.margin = config.env_float("TACK_CPU_MARGIN", 1.0)
        self.pool_kind = config.cpu_pool_kind()
        if self.pool_kind == "native" and not native_pool.available():
            self.pool_kind = "python"
        # read here with the others, though the pool starts at its first use
        self.pool_spin = max(0, config.env_int("TACK_CPU_POOL_SPIN", POOL_SPIN))
        self._pool = None
        self._pool_lock = threading.Lock()
        self._fanout_work = None

    @property
    def pool(self):
        """The fan-out pool, made at the first launch that needs one."""
        if self._pool is None and self.num_threads > 1:
            with self._pool_lock:
                if self._pool is None:
                    self._pool = self._make_pool()
        return self._pool

    def fanout_work(self) -> float:
        """Work units below which the cost model keeps a launch on the calling
        thread (``fanout.bound`` of the pool's measured fan-out)."""
        if self._fanout_work is None:
            seconds = max(self.pool.fanout_seconds(), fanout.MIN_FANOUT_SECONDS)
            self._fanout_work = fanout.bound(seconds, self.margin)
        return self._fanout_work

    def known_fanout_work(self):
        """``fanout_work()`` if the pool has been measured, else None."""
        return self._fanout_work

    def _make_pool(self):
        if self.pool_kind == "native":
            return native_pool.NativePool(self.num_threads, self.pool_spin)
        return PythonPool(self.num_threads)

    def cache_target(self):
        target = jit.host()
        return ("cpu", target.triple, target.cpu, target.features)

    def allocate(self, nbytes: int) -> HostBuffer:
        return HostBuffer(nbytes)

    def allocate_zeroed(self, nbytes: int) -> HostBuffer:
        """Zeroed memory (``tack.zeros``): NumPy's calloc, whose large pages the
        kernel zeroes when first touched, instead of a fill."""
        return HostBuffer(nbytes, zeroed=True)

    # -- building ---------------------------------------------------------------
    # The generator is imported by the first build: a process whose variants all
    # come from the disk cache never loads it (see codegen/llvm/artifact.py).
    def typed(self, fn):
        from ...ir.passes.annotate import annotate_types
        return verify(annotate_types(fn), "typed")

    def generate(self, fn) -> LLVMKernel:
        from ...codegen.llvm.module import generate_llvm_ir
        target = jit.host()
        return generate_llvm_ir(self.typed(fn), target.triple, target.data_layout)

    def inspect_source(self, fn, optimized: bool) -> str:
        text = self.generate(fn).text
        if not optimized:
            return text
        module = jit.optimized_module(text, _streamed(fn))
        if module is None:       # the streaming variant runs the ordinary code
            module = jit.optimized_module(self.generate(_ordinary(fn)).text)
        return str(module)

    def build(self, fn) -> CPUProgram:
        from ...codegen.llvm.module import generate_llvm_ir
        typed = self.typed(fn)
        target = jit.host()
        suffix = _entry_suffix(typed)
        kernel = generate_llvm_ir(typed, target.triple, target.data_layout, suffix)
        obj = jit.compile_object(kernel.text, _streamed(fn))
        if obj is None:          # streaming would not pay (streaming.pays): the
            typed = self.typed(_ordinary(fn))       # ordinary code, under this symbol
            kernel = generate_llvm_ir(typed, target.triple, target.data_layout, suffix)
            obj = jit.compile_object(kernel.text)
        return self._load(kernel.entry, kernel.pack_fields, iteration_cost(typed), obj,
                          kernel.text)

    def _load(self, entry, pack_fields, cost, obj, text="") -> CPUProgram:
        address = jit.load(obj, entry)
        return CPUProgram(LLVMKernel(text, entry, tuple(pack_fields)), address,
                          fastcall.builtin(address, 3), cost, obj)

    # -- the disk cache ------------------------------------------------------------
    def artifact(self, program: CPUProgram):
        """(metadata, object code) of a program, for a cache entry."""
        fields = [f if f == POINTER else f.name for f in program.kernel.pack_fields]
        meta = {"entry": program.kernel.entry, "pack_fields": fields,
                "cost": [program.cost.flops, program.cost.bytes]}
        return meta, program.object

    def load_artifact(self, meta: dict, obj: bytes) -> CPUProgram:
        fields = [f if f == POINTER else T.scalar_type(f) for f in meta["pack_fields"]]
        return self._load(meta["entry"], fields, Cost(*meta["cost"]), obj)

    # -- running ------------------------------------------------------------------
    def launcher(self, program: CPUProgram):
        """``launch(pack_address, rows, total)``: see ``fanout.make_launcher``."""
        return fanout.make_launcher(self, program)

    def fan_out(self, target) -> tuple:
        """``(run, job, owner)``: ``run(job, pack_address, rows)`` fans a launch
        of ``target`` out over the pool; ``owner`` keeps ``job`` valid."""
        pool = self.pool
        return (pool.run, *pool.job(target))

    def __repr__(self):
        return f"CPUBackend(num_threads={self.num_threads})"
