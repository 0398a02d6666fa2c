"""The warm launch path of the CUDA backend, timed without a GPU.

A GPU launch costs the driver's ``cuLaunchKernel`` (about 3.5-5 us on the
H200 VMs Tack was measured on) plus what Tack spends getting there: the
kernel call, the signature lookup, the generated runner and launch, the
trampoline. This script measures that second part on any machine: a CUDA
device over the tests' fake driver (``tests/fake_cuda.py``), with real NVRTC
builds, whose ``cuLaunchKernel`` is a compiled function that returns at once.

Taking turns (``timing.in_turns``), medians over rounds, in nanoseconds a call:

* ``trampoline``: the compiled trampoline alone, called as Tack calls it
  (``fire(job, blocks)``), i.e. the floor under any launch Tack makes;
* ``ctypes 11 args``: the no-op called through ctypes with
  ``cuLaunchKernel``'s eleven arguments, as a ctypes-based launcher (and
  ``gpu_peers.py``'s "bare driver call") pays it;
* ``Tack bump(a)`` and ``Tack saxpy(x, y, a)``: whole warm calls of a
  one-array kernel and of a kernel with two arrays and a scalar.

Tack's dispatch overhead is the whole call minus the trampoline.

    PYTHONPATH=src python benchmarks/stream_dispatch.py [--quick]
"""

import argparse
import ctypes
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import tack  # noqa: E402
from gpu_peers import bump, saxpy  # noqa: E402  (the kernels gpu_peers.py launches)
from timing import in_turns  # noqa: E402

NO_OP = r"""
define i32 @no_op_launch(i8* %f, i32 %gx, i32 %gy, i32 %gz, i32 %bx, i32 %by, i32 %bz,
                         i32 %shared, i8* %stream, i8* %params, i8* %extra) {
  ret i32 0
}
"""


def no_op_launch():
    """The no-op as libcuda's ``cuLaunchKernel`` is bound (ctypes, no argtypes)."""
    from tack.runtime.cpu import jit
    address = jit.load(jit.compile_object(NO_OP), "no_op_launch")
    launch = ctypes.CFUNCTYPE(ctypes.c_int)(address)
    launch.restype = ctypes.c_int
    return launch


def fake_cuda_device(launch):
    """A CUDA device over the fake driver, launching through ``launch``."""
    from cuda.bindings import nvrtc
    from fake_cuda import FakeDriver

    from tack.runtime.cuda import backend as cuda_backend
    from tack.runtime.cuda import driver
    from tack.runtime.device import Device
    fake = FakeDriver()
    driver.modules = lambda: (fake, nvrtc)
    cuda_backend.raw_launcher = lambda _, function, stream, params: (
        launch, ctypes.c_void_p(int(function)), ctypes.c_void_p(int(stream)),
        ctypes.c_void_p(params))
    backend = cuda_backend.CUDABackend(0)
    backend.memory_domain = ("fake-cuda", 0)   # never mixed with a real device
    return Device(backend, "cuda", 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few short rounds")
    options = parser.parse_args()
    calls, rounds = (2_000, 5) if options.quick else (20_000, 21)
    try:
        import cuda.bindings.nvrtc  # noqa: F401
    except ImportError:
        print("cuda-python (with NVRTC) is not installed: nothing to measure.")
        return
    launch = no_op_launch()
    device = fake_cuda_device(launch)
    one = tack.zeros(1, tack.f32, device=device)
    x = tack.zeros(1024, tack.f32, device=device)
    y = tack.zeros(1024, tack.f32, device=device)
    bump(one)
    saxpy(x, y, 2.0)
    from tack.runtime.stream.trampoline import bind
    f, s, p = (ctypes.c_void_p(k) for k in (1, 2, 3))   # the no-op reads none of them
    fire, job, owner = bind(launch, f, s, p, 256)

    def nothing():
        pass

    times = in_turns({
        "trampoline": (lambda: fire(job, 1), nothing),
        "ctypes 11 args": (lambda: launch(f, 1, 1, 1, 256, 1, 1, 0, s, p, None), nothing),
        "Tack bump(a)": (lambda: bump(one), nothing),
        "Tack saxpy(x, y, a)": (lambda: saxpy(x, y, 2.0), nothing),
    }, calls, rounds)
    print(f"CUDA warm launch path over a no-op driver (fake device, {rounds} rounds of "
          f"{calls:,} calls; medians, ns a call)")
    for name, values in times.items():
        print(f"  {name:<22} {statistics.median(values) * 1e9:8.0f}")
    floor = times["trampoline"]
    for name in ("Tack bump(a)", "Tack saxpy(x, y, a)"):
        over = statistics.median(a - b for a, b in zip(times[name], floor))
        print(f"  dispatch overhead, {name[5:]:<17} {over * 1e9:6.0f} ns over the trampoline")
    ratio = statistics.median(a / b for a, b in zip(times["Tack bump(a)"],
                                                    times["ctypes 11 args"]))
    print(f"  whole bump(a) / one ctypes call of the launch: {ratio:.2f}x")


if __name__ == "__main__":
    main()
