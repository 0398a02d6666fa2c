"""Tack's OpenCL backend next to pyopencl driving the same kernel by hand.

Prints, for each: the warm launch time of a small saxpy (median, microseconds,
queue drained once per batch) and saxpy GB/s on 16M f32, then Tack's overhead
ratio. Needs pyopencl and an OpenCL device (PoCL runs it on the CPU).

    python benchmarks/opencl_peers.py [--quick]
"""

import argparse

import numpy as np

import tack
from timing import per_call


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


def tack_side(n_small, n_big, calls, repeats):
    dev = tack.device("opencl")
    out = {}
    for label, n in (("small", n_small), ("big", n_big)):
        x = tack.ones(n, device=dev)
        y = tack.ones(n, device=dev)
        saxpy(x, y, 2.0)
        dev.synchronize()
        seconds = per_call(lambda: saxpy(x, y, 2.0), dev.synchronize,
                          calls if label == "small" else 3, repeats)
        out[label] = seconds
        if label == "big":
            y_host = y.numpy()
            assert np.all(y_host == y_host[0]), "Tack's saxpy gave uneven results"
    return out


def raw_side(n_small, n_big, calls, repeats):
    import pyopencl as cl
    backend = tack.device("opencl").backend
    ctx, queue = backend.context, backend.queue
    program = cl.Program(ctx, RAW).build()
    kernel = program.saxpy
    out = {}
    for label, n in (("small", n_small), ("big", n_big)):
        x = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                      hostbuf=np.ones(n, np.float32))
        y = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                      hostbuf=np.ones(n, np.float32))
        size = -(-n // 256) * 256

        def run():
            kernel.set_args(x, y, np.float32(2.0), np.int64(n))
            cl.enqueue_nd_range_kernel(queue, kernel, (size,), (256,))
        run()
        queue.finish()
        out[label] = per_call(run, queue.finish, calls if label == "small" else 3, repeats)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n_big = 1 << 20 if args.quick else 16 << 20
    calls, repeats = (100, 5) if args.quick else (500, 15)
    if not tack.device_count("opencl"):
        print("no OpenCL device: install pyopencl and an OpenCL driver (pocl-opencl-icd)")
        return
    print(f"device: {tack.device('opencl').backend.device.name}")
    t = tack_side(1024, n_big, calls, repeats)
    r = raw_side(1024, n_big, calls, repeats)
    gbs = lambda s: n_big * 12 / s / 1e9  # noqa: E731
    print(f"{'':34}{'Tack':>12}{'pyopencl':>12}")
    print(f"{'launch, 1,024-element saxpy (us)':34}{t['small'] * 1e6:12.2f}"
          f"{r['small'] * 1e6:12.2f}")
    print(f"{'saxpy ' + str(n_big >> 20) + 'M f32 (GB/s)':34}{gbs(t['big']):12.2f}"
          f"{gbs(r['big']):12.2f}")
    print("\nRatios (Tack / pyopencl; target: overhead <= 1.3x)")
    print(f"  launch time: {t['small'] / r['small']:.2f}x")
    print(f"  saxpy time:  {t['big'] / r['big']:.2f}x")


if __name__ == "__main__":
    main()
