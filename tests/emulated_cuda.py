"""Tack's "cuda" device with its kernels run on the CPU, for the tests.

The real ``CUDABackend`` runs unchanged (the scalar pack, the C-family emitter
with ``CUDATarget``, the launch code, grids, items per thread, the stream
reductions) over ``fake_cuda.FakeDriver``, whose device memory is host
memory, here with 64-byte red zones around every allocation checked after
each launch. NVRTC is replaced by clang++: the emitted CUDA C is compiled
with ``emulated_cuda.h`` (CUDA's spellings and documented semantics on the
CPU) into a shared object, and ``cuLaunchKernel`` calls its
``tack_emu_launch_<entry>(blocks, threads, params)``, which runs every block
and thread (as fibers where the kernel has barriers or warp shuffles), with
``__shared__`` memory filled with 0xff bytes before each block.

It shows what the offline compile checks cannot: that the CUDA (and HIP) C
Tack emits computes what the CPU backend computes. It cannot show real
concurrency (races, memory ordering, atomic contention), stream ordering,
CUDA's own math library (glibc stands in; CUDA documents its ulp bounds),
NVRTC's diagnostics and limits, or out-of-bounds reads.

As a pytest plugin (``tests/test_backend_suites.py`` runs the kernel suites
so)::

    python -m pytest -p emulated_cuda tests/lang tests/codegen tests/algorithms

Environment: ``EMULATED_CUDA_DIR`` (where the shared objects go, keyed by
source, header and flags; default: a new temporary directory),
``EMULATED_CUDA_DIALECT`` (``cuda``, or ``hip`` for ``HIPTarget``'s source),
``EMULATED_CUDA_CXX`` (default ``clang++-14``), ``EMULATED_CUDA_FLAGS`` (more
compiler flags: ``-DTACK_EMU_REVERSE=1`` runs blocks and threads last to
first; ``-fsanitize=undefined`` checks the emitted code for undefined
behaviour). Problems the driver sees (red-zone writes, barrier deadlocks)
fail the launch, and are listed at the end of the run.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = os.path.join(HERE, "emulated_cuda.h")
BUILD = os.environ.get("EMULATED_CUDA_DIR") or tempfile.mkdtemp(prefix="tack-emulated-cuda-")
CXX = os.environ.get("EMULATED_CUDA_CXX", "clang++-14")
FLAGS = ["-std=c++20", "-O1", "-shared", "-fPIC", "-ffp-contract=off",
         "-fno-strict-aliasing", "-w"] + os.environ.get("EMULATED_CUDA_FLAGS", "").split()


def _sanitizer_runtime(flags) -> list:
    """A sanitized shared object needs the sanitizer's runtime, which a plain
    ``python3`` does not load: link it, and find it where clang keeps it."""
    if not any(f.startswith("-fsanitize") for f in flags):
        return []
    where = subprocess.run([CXX, "-print-runtime-dir"], capture_output=True,
                           text=True).stdout.strip()
    return ["-shared-libsan", f"-Wl,-rpath,{where}"]


FLAGS += _sanitizer_runtime(FLAGS)
RED_ZONE = 64          # bytes of 0xA5 before and after every allocation
_ENTRY = re.compile(r'extern\s+"C"\s+__global__\s+void\s+(\w+)\s*\(')
_HIP_INCLUDE = "#include <hip/hip_runtime.h>\n"
LAUNCH_FAILED = 719    # CUDA_ERROR_LAUNCH_FAILED

stats = {"compiled": 0, "reused": 0, "launches": 0, "compile_s": 0.0}
problems: list = []    # red-zone overwrites, deadlocks: (what, detail)


def emulator_flags(source: str, dialect: str) -> list:
    fibers = "__syncthreads" in source or "__shfl" in source
    return [f"-DTACK_EMU_FIBERS={int(fibers)}",
            f"-DTACK_EMU_WARP={64 if dialect == 'hip' else 32}",
            f"-DTACK_EMU_ATOMIC_FTZ={int(dialect != 'hip')}"]


def build(source: str, dialect: str = "cuda") -> str:
    """The path of the shared object of CUDA (or HIP) ``source``."""
    if dialect == "hip":
        source = source.replace(_HIP_INCLUDE, "")
    flags = FLAGS + emulator_flags(source, dialect)
    entries = _ENTRY.findall(source)
    if "##" in source:   # entries made by macros (reduce.py): preprocess to find them
        pre = subprocess.run([CXX, "-E", "-P", "-x", "c++", "-"],
                             input=source, capture_output=True, text=True)
        entries = sorted(set(entries) | set(_ENTRY.findall(pre.stdout)))
    with open(HEADER, "rb") as f:
        header = f.read()
    key = hashlib.sha256(header + source.encode() + " ".join(flags + entries).encode() +
                         CXX.encode()).hexdigest()[:24]
    os.makedirs(BUILD, exist_ok=True)
    so = os.path.join(BUILD, f"k{key}.so")
    if os.path.exists(so):
        stats["reused"] += 1
        return so
    cu = os.path.join(BUILD, f"k{key}.cpp")
    text = ('#line 1 "kernel.cu"\n' + source + "\n" +
            "".join(f"TACK_EMU_ENTRY({e})\n" for e in entries))
    with open(cu, "w") as f:
        f.write(text)
    start = time.perf_counter()
    tmp = f"{so}.{os.getpid()}.{threading.get_ident()}.tmp"
    pch = _pch(header, flags)
    done = subprocess.run([CXX, *flags, "-include-pch", pch, "-o", tmp, cu],
                          capture_output=True, text=True)
    stats["compile_s"] += time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"compilation failed (emulated CUDA, {cu}):\n{done.stderr[-4000:]}")
    os.replace(tmp, so)
    stats["compiled"] += 1
    return so


def _pch(header: bytes, flags: list) -> str:
    """emulated_cuda.h precompiled for ``flags`` (halves each kernel's compile time)."""
    key = hashlib.sha256(header + " ".join(flags).encode() + CXX.encode()).hexdigest()[:16]
    pch = os.path.join(BUILD, f"emulated_cuda-{key}.pch")
    if not os.path.exists(pch):
        tmp = f"{pch}.{os.getpid()}.{threading.get_ident()}.tmp"
        options = [f for f in flags if f not in ("-shared", "-shared-libsan")
                   and not f.startswith("-Wl,")]
        subprocess.run([CXX, *options, "-x", "c++-header", HEADER, "-o", tmp], check=True)
        os.replace(tmp, pch)
    return pch


class Module:
    def __init__(self, path: str):
        self.path = path
        self.library = ctypes.CDLL(path)


def _fake_driver_class():
    sys.path.insert(0, HERE)
    try:
        from fake_cuda import FakeDriver
    finally:
        sys.path.remove(HERE)
    return FakeDriver


def make_driver():
    FakeDriver = _fake_driver_class()

    class EmuDriver(FakeDriver):
        """FakeDriver with red-zoned memory, loadable modules and real launches."""

        def __init__(self):
            super().__init__()
            self.blocks = {}      # user address -> (whole buffer, size)
            self.modules_ = {}    # handle -> Module
            self.kernels = []     # function handle - 1 -> (Module, entry, C function)
            self.lock = threading.RLock()   # a free from a collection inside a locked step

        def cuDeviceGetName(self, length, device):
            return (self.ok, b"Tack CUDA emulator\0")

        def cuMemAllocAsync(self, size, stream):
            whole = np.full(size + 2 * RED_ZONE, 0xA5, np.uint8)
            whole[RED_ZONE:RED_ZONE + size] = 0
            address = whole.ctypes.data + RED_ZONE
            with self.lock:
                self.blocks[address] = (whole, size)
                self.memory[address] = whole[RED_ZONE:RED_ZONE + size]
                self.owners[address] = int(self.current) >> 8
            return (self.ok, self.real.CUdeviceptr(address))

        def cuMemFreeAsync(self, address, stream):
            address = int(address)
            with self.lock:
                self.check_zone(address, "free")
                self.blocks.pop(address)
                self.memory.pop(address)
            return (self.ok,)

        def check_zone(self, address, when):
            whole, size = self.blocks[address]
            if (whole[:RED_ZONE] != 0xA5).any() or (whole[RED_ZONE + size:] != 0xA5).any():
                bad = np.nonzero(np.concatenate([whole[:RED_ZONE],
                                                 whole[RED_ZONE + size:]]) != 0xA5)[0]
                problems.append(("red zone", f"{when}: allocation of {size} bytes at "
                                 f"{address:#x} written outside its bounds "
                                 f"({len(bad)} bytes)"))
                print(f"emulated CUDA: out-of-bounds write next to a {size}-byte allocation "
                      f"({when})", file=sys.stderr)
                whole[:RED_ZONE] = 0xA5
                whole[RED_ZONE + size:] = 0xA5

        def cuModuleLoadData(self, address):
            path = ctypes.string_at(address).decode()
            with self.lock:
                handle = len(self.modules_) + 1
                self.modules_[handle] = Module(path)
            return (self.ok, self.real.CUmodule(handle))

        def cuModuleUnload(self, module):
            return (self.ok,)

        def cuModuleGetFunction(self, module, name):
            name = name.decode() if isinstance(name, bytes) else name
            m = self.modules_[int(module)]
            fn = getattr(m.library, f"tack_emu_launch_{name}")
            fn.argtypes = [ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p]
            fn.restype = ctypes.c_int
            with self.lock:
                self.kernels.append((m, name, fn))
                handle = len(self.kernels)
            return (self.ok, self.real.CUfunction(handle))

        def cuLaunchKernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
            m, name, fn = self.kernels[int(f) - 1]
            assert (gy, gz, by, bz) == (1, 1, 1, 1), "the emulator launches 1-D grids only"
            stats["launches"] += 1
            seen = len(problems)
            code = fn(int(gx), int(bx), ctypes.c_void_p(int(params)))
            with self.lock:
                for address in list(self.blocks):
                    self.check_zone(address, f"after a launch of {name}")
            if len(problems) > seen:        # it wrote outside an allocation: fail it
                return (self.real.CUresult(LAUNCH_FAILED),)
            if code:
                problems.append(("launch", f"{name}: status {code} (1: deadlock)"))
                return (self.real.CUresult(LAUNCH_FAILED),)
            self.launches.append(((gx, gy, gz), (bx, by, bz), []))
            if len(self.launches) > 1000:
                del self.launches[:500]
            return (self.ok,)

    return EmuDriver


_installed = None


def install(dialect: str = None):
    """Make Tack's "cuda" device the emulator (call before making it). Returns the
    driver."""
    global _installed
    dialect = dialect or os.environ.get("EMULATED_CUDA_DIALECT", "cuda")
    if _installed is not None:
        return _installed
    from cuda.bindings import nvrtc

    from tack.codegen.c_family.targets import HIPTarget
    from tack.runtime.cuda import driver
    from tack.runtime.cuda.backend import CUDABackend
    emu = make_driver()()
    driver.modules = lambda: (emu, nvrtc)
    driver._initialized = False

    def compile_source(self, source: str, entry: str) -> tuple:
        return build(source, dialect).encode() + b"\0", None
    CUDABackend.compile_source = compile_source
    if dialect == "hip":
        CUDABackend.target = HIPTarget()
        CUDABackend.reduction_dialect = "hip"
    _installed = emu
    return emu


def report() -> str:
    return (f"emulated CUDA: {stats['launches']} launches, {stats['compiled']} shared objects "
            f"compiled ({stats['compile_s']:.0f} s), {stats['reused']} reused; "
            f"{len(problems)} problems" +
            "".join(f"\n  {what}: {detail}" for what, detail in problems[:50]))


# -- as a pytest plugin: ``-p emulated_cuda`` makes the emulated device the default ------------

def pytest_configure(config):
    install()
    import tack
    tack.set_default_device("cuda")


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(report())
