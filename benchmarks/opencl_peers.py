"""Tack's OpenCL backend next to pyopencl driving the same kernel by hand.

Prints, for each: the warm launch time of a small saxpy (median, microseconds,
queue drained once per batch) and saxpy GB/s on 16M f32, the two sides taking
turns, then Tack's overhead ratios. Needs pyopencl and an OpenCL device (PoCL runs it on the CPU).

    python benchmarks/opencl_peers.py [--quick]
"""

import argparse
import statistics

import numpy as np

import tack
from timing import in_turns, paired


@tack.kernel
def saxpy(x, y, a):
    for i in range(len(x)):
        y[i] = a * x[i] + y[i]


RAW = """
__kernel void saxpy(__global const float* x, __global float* y, float a, long n) {
  long i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
"""


def tack_run(n):
    """``(run, sync)`` of Tack's saxpy on ``n`` f32 (checked once for evenness)."""
    dev = tack.device("opencl")
    x = tack.ones(n, device=dev)
    y = tack.ones(n, device=dev)
    saxpy(x, y, 2.0)
    y_host = y.numpy()
    assert np.all(y_host == y_host[0]), "Tack's saxpy gave uneven results"
    return (lambda: saxpy(x, y, 2.0)), dev.synchronize


def raw_run(n):
    """``(run, sync)`` of the same saxpy through pyopencl by hand, on Tack's
    context and queue."""
    import pyopencl as cl
    backend = tack.device("opencl").backend
    ctx, queue = backend.context, backend.queue
    kernel = cl.Program(ctx, RAW).build().saxpy
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
    x = cl.Buffer(ctx, flags, hostbuf=np.ones(n, np.float32))
    y = cl.Buffer(ctx, flags, hostbuf=np.ones(n, np.float32))
    size = -(-n // 256) * 256
    # pyopencl's fast way to pass scalars: declared types, Python numbers
    # (a NumPy scalar argument costs about 6 us through its generic path)
    kernel.set_scalar_arg_dtypes([None, None, np.float32, np.int64])

    def run():
        kernel.set_args(x, y, 2.0, n)
        cl.enqueue_nd_range_kernel(queue, kernel, (size,), (256,))
    return run, queue.finish


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n_big = 1 << 20 if args.quick else 16 << 20
    calls, rounds = (100, 5) if args.quick else (500, 15)
    if not tack.device_count("opencl"):
        print("no OpenCL device: install pyopencl and an OpenCL driver (pocl-opencl-icd)")
        return
    print(f"device: {tack.device('opencl').backend.device.name}")
    # Each size in turns (timing.in_turns): the VM's speed drifts between
    # batches, and one side measured after the other could not separate 30%.
    small = in_turns({"tack": tack_run(1024), "raw": raw_run(1024)}, calls, rounds)
    big = in_turns({"tack": tack_run(n_big), "raw": raw_run(n_big)}, 3, rounds)
    t = {"small": statistics.median(small["tack"]), "big": statistics.median(big["tack"])}
    r = {"small": statistics.median(small["raw"]), "big": statistics.median(big["raw"])}
    gbs = lambda s: n_big * 12 / s / 1e9  # noqa: E731
    print(f"{'':34}{'Tack':>12}{'pyopencl':>12}")
    print(f"{'launch, 1,024-element saxpy (us)':34}{t['small'] * 1e6:12.2f}"
          f"{r['small'] * 1e6:12.2f}")
    print(f"{'saxpy ' + str(n_big >> 20) + 'M f32 (GB/s)':34}{gbs(t['big']):12.2f}"
          f"{gbs(r['big']):12.2f}")
    ratio = lambda a, b: a / b  # noqa: E731
    print("\nRatios (Tack / pyopencl, medians of the ratios within a round; "
          "target: overhead <= 1.3x)")
    print(f"  launch time: {paired(small, 'tack', 'raw', ratio):.2f}x")
    print(f"  saxpy time:  {paired(big, 'tack', 'raw', ratio):.2f}x")


if __name__ == "__main__":
    main()
