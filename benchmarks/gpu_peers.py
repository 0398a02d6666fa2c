"""Tack's CUDA backend next to CuPy, Numba-CUDA and Warp (each if installed) on one NVIDIA GPU.

Prints, for each library (medians):

* warm launch: microseconds per call of a one-element kernel, 1,000 calls
  per batch, the stream drained once per batch; beside it the driver's own
  floor, ``cuLaunchKernel`` of an empty kernel called straight through
  ctypes in the same loop (ctypes converting eleven arguments costs a few
  hundred nanoseconds more than the compiled trampoline Tack's launches end
  in, so Tack's overhead is best read against the trampoline, below);
* the same with a new scalar each call (a one-element saxpy whose ``a``
  alternates): Tack copies its scalars into the variant's pack buffer when
  they change, CuPy passes them by value;
* saxpy (``y = a * x + y``) on 256M f32 in GB/s (12 bytes per element), next
  to the device-to-device copy bandwidth measured on the same device
  (``cuMemcpyDtoDAsync`` of 1 GiB, counted as read + write);
* sum: ``x.sum()`` of the 256M f32 to a Python float, in GB/s read (Tack
  accumulates in binary64; CuPy's f32 sum returns f32);
* cold compile: the first call of a small kernel in a fresh process, with
  every compile cache off or empty.

The warm launches are measured once more taking turns (Tack, the bare driver
call, the same call through Tack's trampoline, and CuPy, a batch of each per
round, the order rotating), which gives Tack's overhead over the driver (and
over the trampoline: Tack's Python alone) and its ratio to CuPy as medians
of paired differences. Ratios come last. Targets on an H200-class GPU: warm launch <= 5
us; saxpy >= 90% of the copy bandwidth. Without a GPU it says so and exits 0.

    PYTHONPATH=src python benchmarks/gpu_peers.py [--quick]
"""

import argparse
import ctypes
import itertools
import os
import statistics
import subprocess
import sys
import tempfile


import tack
from timing import in_turns, paired, per_call

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@tack.kernel
def bump(a):
    for i in range(len(a)):
        a[i] = a[i] + 1.0


@tack.kernel
def saxpy(x, y, a):
    for i in range(len(x)):
        y[i] = a * x[i] + y[i]


CUPY_SOURCE = r"""
extern "C" __global__ void bump(float* a, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = a[i] + 1.0f;
}
extern "C" __global__ void saxpy(const float* x, float* y, float a, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
"""


def copy_bandwidth(dev, nbytes: int, repeats: int) -> float:
    """GB/s of a device-to-device copy on Tack's stream (read + write bytes)."""
    backend = dev.backend
    driver = backend.driver
    src, dst = backend.allocate(nbytes), backend.allocate(nbytes)

    def run():
        code, = driver.cuMemcpyDtoDAsync(dst.address, src.address, nbytes, backend.stream)
        assert code == 0, code
    return 2 * nbytes / per_call(run, dev.synchronize, 3, repeats) / 1e9


EMPTY = 'extern "C" __global__ void tack_empty() {}'


def driver_floor(dev, calls: int, repeats: int) -> dict:
    """Seconds per launch of an empty kernel by ctypes ``cuLaunchKernel`` alone:
    on Tack's stream (drained once per batch, and the enqueueing alone, which
    is what the host spends), and on a new non-blocking stream."""
    import time
    from tack.runtime.cuda.compile import compile_cuda
    from tack.runtime.cuda.driver import check, raw_launcher
    backend = dev.backend
    driver = backend.driver
    ptx, cubin = compile_cuda(EMPTY, backend.arch)
    _, function = backend._load((ptx, cubin), "tack_empty")
    launch, f, stream, _ = raw_launcher(driver, function, backend.stream, 0)

    def run():
        launch(f, 1, 1, 1, 256, 1, 1, 0, stream, None, None)
    # the same launch through the trampoline Tack's launches end in (a builtin
    # call, stream/trampoline.py): the driver's cost with the least Python
    from tack.runtime.stream.trampoline import bind
    fire, job, owner = bind(launch, f, stream, ctypes.c_void_p(0), 256)
    out = {"floor": per_call(run, dev.synchronize, calls, repeats),
           "floor_call": (run, dev.synchronize),
           "trampoline_call": (lambda: fire(job, 1), dev.synchronize), "job": owner}
    enqueue = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls // 2):   # well inside the launch queue
            run()
        enqueue.append((time.perf_counter() - start) / (calls // 2))
        dev.synchronize()
    out["enqueue"] = statistics.median(enqueue)
    with backend.context.active():
        other = check(driver.cuStreamCreate(
            int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING)), "cuStreamCreate")
    launch2, f2, stream2, _ = raw_launcher(driver, function, other, 0)

    def run2():
        launch2(f2, 1, 1, 1, 256, 1, 1, 0, stream2, None, None)

    def sync2():
        check(driver.cuStreamSynchronize(other), "cuStreamSynchronize")
    out["nonblocking"] = per_call(run2, sync2, calls, repeats)
    return out


def tack_side(n: int, calls: int, repeats: int) -> dict:
    dev = tack.device("cuda:0")
    one = tack.zeros(1, device=dev)
    bump(one)   # the launches timed must compute: check one of each kernel first
    assert one.numpy()[0] == 1.0, "Tack's bump gave a wrong result"
    launch = per_call(lambda: bump(one), dev.synchronize, calls, repeats)
    call = (lambda: bump(one), dev.synchronize)
    x, y = tack.ones(n, device=dev), tack.ones(n, device=dev)
    saxpy(x, y, 2.0)
    assert y[0] == y[n - 1] == 3.0, "Tack's saxpy gave a wrong result"
    sx, sy = tack.ones(1, device=dev), tack.ones(1, device=dev)
    a = itertools.cycle((2.0, 3.0))
    changing = per_call(lambda: saxpy(sx, sy, next(a)), dev.synchronize, calls, repeats)
    seconds = per_call(lambda: saxpy(x, y, 2.0), dev.synchronize, 3, repeats)
    assert y[n - 1] == y[0], "Tack's saxpy gave uneven results"
    reduce = per_call(x.sum, lambda: None, 3, repeats)   # each sum waits for its result
    return {"launch": launch, "changing": changing, "saxpy": 12 * n / seconds / 1e9,
            "sum": 4 * n / reduce / 1e9, "launch_call": call,
            **driver_floor(dev, calls, repeats)}


def cupy_side(n: int, calls: int, repeats: int):
    try:
        import cupy as cp
    except ImportError:
        return None
    module = cp.RawModule(code=CUPY_SOURCE, options=("--fmad=false",))
    bump_k, saxpy_k = module.get_function("bump"), module.get_function("saxpy")
    one = cp.zeros(1, cp.float32)
    sync = cp.cuda.get_current_stream().synchronize
    launch = per_call(lambda: bump_k((1,), (256,), (one, cp.int64(1))), sync, calls,
                      repeats)
    call = (lambda: bump_k((1,), (256,), (one, cp.int64(1))), sync)
    x, y = cp.ones(n, cp.float32), cp.ones(n, cp.float32)
    sx, sy = cp.ones(1, cp.float32), cp.ones(1, cp.float32)
    a = itertools.cycle((2.0, 3.0))
    changing = per_call(lambda: saxpy_k((1,), (256,), (sx, sy, cp.float32(next(a)),
                                                       cp.int64(1))), sync, calls, repeats)
    blocks = (-(-n // 256),)
    seconds = per_call(lambda: saxpy_k(blocks, (256,), (x, y, cp.float32(2.0),
                                                        cp.int64(n))), sync, 3, repeats)
    reduce = per_call(lambda: float(x.sum()), sync, 3, repeats)
    return {"launch": launch, "changing": changing, "saxpy": 12 * n / seconds / 1e9,
            "sum": 4 * n / reduce / 1e9, "launch_call": call, "version": cp.__version__}


def warp_side(n: int, calls: int, repeats: int):
    try:
        import warp as wp
    except ImportError:
        return None
    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def wbump(a: wp.array(dtype=wp.float32)):
        i = wp.tid()
        a[i] = a[i] + 1.0

    @wp.kernel
    def wsaxpy(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32), a: float):
        i = wp.tid()
        y[i] = a * x[i] + y[i]

    one = wp.zeros(1, dtype=wp.float32, device="cuda:0")
    sync = wp.synchronize_device
    launch = per_call(lambda: wp.launch(wbump, dim=1, inputs=[one], device="cuda:0"),
                      lambda: sync("cuda:0"), calls, repeats)
    x = wp.ones(n, dtype=wp.float32, device="cuda:0")
    y = wp.ones(n, dtype=wp.float32, device="cuda:0")
    seconds = per_call(lambda: wp.launch(wsaxpy, dim=n, inputs=[x, y, 2.0],
                                         device="cuda:0"), lambda: sync("cuda:0"), 3,
                       repeats)
    return {"launch": launch, "saxpy": 12 * n / seconds / 1e9, "version": wp.__version__}


def numba_side(n: int, calls: int, repeats: int):
    try:
        import numpy as np
        from numba import cuda
    except ImportError:
        return None

    @cuda.jit
    def nbump(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = a[i] + 1.0

    @cuda.jit
    def nsaxpy(x, y, a):
        i = cuda.grid(1)
        if i < x.size:
            y[i] = a * x[i] + y[i]

    one = cuda.to_device(np.zeros(1, np.float32))
    launch = per_call(lambda: nbump[1, 256](one), cuda.synchronize, calls, repeats)
    x = cuda.to_device(np.ones(n, np.float32))
    y = cuda.to_device(np.ones(n, np.float32))
    blocks = -(-n // 256)
    seconds = per_call(lambda: nsaxpy[blocks, 256](x, y, np.float32(2.0)),
                       cuda.synchronize, 3, repeats)
    import numba
    return {"launch": launch, "saxpy": 12 * n / seconds / 1e9, "version": numba.__version__}


COLD = {
    "tack": """
import time, tack
@tack.kernel
def cold_k{tag}(x, y, a):
    for i in range(len(x)):
        y[i] = a * x[i] + y[i] * {tag}.0
dev = tack.device("cuda:0")
x, y = tack.ones(1000, device=dev), tack.ones(1000, device=dev)
start = time.perf_counter()
cold_k{tag}(x, y, 2.0)
dev.synchronize()
print(time.perf_counter() - start)
""",
    "cupy": """
import time, cupy as cp
x, y = cp.ones(1000, cp.float32), cp.ones(1000, cp.float32)
cp.cuda.get_current_stream().synchronize()
start = time.perf_counter()
k = cp.RawKernel(r'''extern "C" __global__ void cold_k{tag}(const float* x, float* y,
  float a, long long n) {{ long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i] * {tag}.0f; }}''', "cold_k{tag}")
k((4,), (256,), (x, y, cp.float32(2.0), cp.int64(1000)))
cp.cuda.get_current_stream().synchronize()
print(time.perf_counter() - start)
""",
    "warp": """
import time, warp as wp
wp.config.quiet = True
wp.init()
x = wp.ones(1000, dtype=wp.float32, device="cuda:0")
y = wp.ones(1000, dtype=wp.float32, device="cuda:0")
wp.synchronize_device("cuda:0")
start = time.perf_counter()
@wp.kernel
def cold_k{tag}(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32), a: float):
    i = wp.tid()
    y[i] = a * x[i] + y[i] * {tag}.0
wp.launch(cold_k{tag}, dim=1000, inputs=[x, y, 2.0], device="cuda:0")
wp.synchronize_device("cuda:0")
print(time.perf_counter() - start)
""",
}


def cold_compile(lib: str, repeats: int):
    """Median seconds of a first call in a fresh process, caches empty (None
    when the library is missing)."""
    times = []
    for k in range(repeats):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, TACK_CACHE="off", CUPY_CACHE_DIR=cache,
                       WARP_CACHE_PATH=cache, CUDA_CACHE_DISABLE="1",
                       PYTHONPATH=os.path.join(ROOT, "src") + os.pathsep +
                       os.environ.get("PYTHONPATH", ""))
            with open(os.path.join(cache, "cold.py"), "w") as f:
                f.write(COLD[lib].format(tag=k + 2))
            done = subprocess.run([sys.executable, os.path.join(cache, "cold.py")],
                                  capture_output=True, text=True, env=env, timeout=120)
        if done.returncode:
            if "No module named" in done.stderr:
                return None
            raise RuntimeError(f"cold compile with {lib} failed:\n{done.stderr[-2000:]}")
        times.append(float(done.stdout.split()[-1]))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64M elements, fewer repeats")
    args = parser.parse_args()
    if not tack.device_count("cuda"):
        print("SKIP: no CUDA device: this benchmark needs an NVIDIA GPU, its driver, "
              "cuda-python and nvidia-cuda-nvrtc")
        return
    n = (64 if args.quick else 256) << 20
    calls, repeats, cold_repeats = (300, 5, 1) if args.quick else (1000, 15, 3)
    dev = tack.device("cuda:0")
    print(f"device: {dev}: {dev.backend.device_name}; saxpy on {n >> 20}M f32")
    copy = copy_bandwidth(dev, 1 << 30, repeats)
    results = {"Tack": tack_side(n, calls, repeats)}
    for name, side in (("CuPy", cupy_side), ("Numba", numba_side), ("Warp", warp_side)):
        try:
            found = side(n, calls, repeats)
        except Exception as exc:  # a peer that breaks is reported, not fatal
            print(f"{name} failed: {type(exc).__name__}: {exc}")
            continue
        if found is not None:
            results[name] = found
    for name, lib in (("Tack", "tack"), ("CuPy", "cupy"), ("Warp", "warp")):
        if name in results:
            try:
                results[name]["cold"] = cold_compile(lib, cold_repeats)
            except Exception as exc:  # reported, not fatal
                print(f"{name} cold compile failed: {type(exc).__name__}: {exc}")
    names = list(results)
    print(f"\n{'':34}" + "".join(f"{name:>12}" for name in names))
    print(f"{'warm launch, 1 element (us)':34}" +
          "".join(f"{results[k]['launch'] * 1e6:12.2f}" for k in names))
    print(f"{'  with a new scalar each call (us)':34}" + "".join(
        f"{results[k]['changing'] * 1e6:12.2f}" if results[k].get("changing") else
        f"{'-':>12}" for k in names))
    print(f"{'saxpy (GB/s)':34}" + "".join(f"{results[k]['saxpy']:12.1f}" for k in names))
    print(f"{'saxpy / copy bandwidth':34}" +
          "".join(f"{results[k]['saxpy'] / copy:12.1%}" for k in names))
    print(f"{'sum() to a Python float (GB/s)':34}" + "".join(
        f"{results[k]['sum']:12.1f}" if results[k].get("sum") else f"{'-':>12}"
        for k in names))
    print(f"{'cold compile (ms)':34}" + "".join(
        f"{results[k]['cold'] * 1e3:12.0f}" if results[k].get("cold") else f"{'-':>12}"
        for k in names))
    print(f"device-to-device copy: {copy:.1f} GB/s (1 GiB, read + write)")
    t = results["Tack"]
    print(f"driver floor: {t['floor'] * 1e6:.2f} us per ctypes cuLaunchKernel of an empty "
          f"kernel on Tack's stream ({t['enqueue'] * 1e6:.2f} us to enqueue alone, "
          f"{t['nonblocking'] * 1e6:.2f} us on a non-blocking stream); ctypes itself "
          f"costs more than Tack's trampoline: see the in-turns line for Tack's share")
    report_turns(results, calls, repeats)
    versions = ", ".join(f"{k} {results[k]['version']}" for k in names if "version" in
                         results[k])
    if versions:
        print(f"versions: {versions}")
    tack_r = results["Tack"]
    print("\nRatios (Tack / peer; below 1.0 Tack is faster, for saxpy above 1.0)")
    for name in names[1:]:
        peer = results[name]
        cold = (f", cold compile {tack_r['cold'] / peer['cold']:.2f}x"
                if tack_r.get("cold") and peer.get("cold") else "")
        print(f"  vs {name}: launch {tack_r['launch'] / peer['launch']:.2f}x, saxpy "
              f"{tack_r['saxpy'] / peer['saxpy']:.2f}x{cold}")
    print(f"  targets: warm launch {tack_r['launch'] * 1e6:.2f} us (<= 5), saxpy "
          f"{tack_r['saxpy'] / copy:.0%} of copy bandwidth (>= 90%)")
    print(f"FIGURE launch {tack_r['launch'] * 1e6:.2f} us, saxpy {tack_r['saxpy']:.0f} "
          f"GB/s = {tack_r['saxpy'] / copy:.0%} of copy {copy:.0f} GB/s, cold "
          f"{(tack_r.get('cold') or 0) * 1e3:.0f} ms")


def report_turns(results: dict, calls: int, rounds: int) -> None:
    """The warm launches again, taking turns (``timing.in_turns``): Tack, the bare
    driver call and CuPy, so that the VM's drift between batches (about 0.5 us
    on the H200 VMs) does not decide Tack's overhead or its ratio to CuPy."""
    t = results["Tack"]
    contenders = {"Tack": t["launch_call"], "driver": t["floor_call"],
                  "trampoline": t["trampoline_call"]}
    if "CuPy" in results:
        contenders["CuPy"] = results["CuPy"]["launch_call"]
    times = in_turns(contenders, calls, rounds)
    medians = {k: statistics.median(v) * 1e6 for k, v in times.items()}
    line = (f"launch in turns ({rounds} rounds): Tack {medians['Tack']:.2f} us, bare "
            f"driver call {medians['driver']:.2f} us, Tack adds "
            f"{paired(times, 'Tack', 'driver', lambda a, b: a - b) * 1e6:.2f} us (paired); "
            f"the driver through Tack's trampoline {medians['trampoline']:.2f} us, Tack adds "
            f"{paired(times, 'Tack', 'trampoline', lambda a, b: a - b) * 1e6:.2f} us to it")
    if "CuPy" in times:
        line += (f"; CuPy {medians['CuPy']:.2f} us, Tack / CuPy "
                 f"{paired(times, 'Tack', 'CuPy', lambda a, b: a / b):.2f} (paired)")
    print(line)


if __name__ == "__main__":
    main()
