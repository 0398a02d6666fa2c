"""How many loop iterations each CUDA thread should run (CUDATarget.items_per_thread).

Times Tack's saxpy (12 bytes per element) and a 3-point stencil on 256M f32
for 1, 2, 4 and 8 iterations per thread, next to the device-to-device copy
bandwidth, and prints GB/s and the fraction of the copy. The default in
codegen/c_family/targets.py is the winner of this run on an H200.

    PYTHONPATH=src python benchmarks/gpu_items.py
"""

import argparse

import tack
from tack.codegen.c_family.targets import CUDATarget
from gpu_peers import copy_bandwidth
from timing import per_call


def kernels():
    """Fresh kernels: each setting compiles its own variants."""
    @tack.kernel
    def saxpy(x, y, a):
        for i in range(len(x)):
            y[i] = a * x[i] + y[i]

    @tack.kernel
    def stencil(x, y):
        for i in range(1, len(x) - 1):
            y[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]
    return saxpy, stencil


def main():
    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args()
    if not tack.device_count("cuda"):
        print("SKIP: no CUDA device")
        return
    dev = tack.device("cuda:0")
    n = 256 << 20
    copy = copy_bandwidth(dev, 1 << 30, 10)
    x, y = tack.ones(n, device=dev), tack.ones(n, device=dev)
    default = CUDATarget.items_per_thread
    print(f"{dev.backend.device_name}: copy {copy:.0f} GB/s; 256M f32")
    print(f"{'items':>6}{'saxpy GB/s':>12}{'of copy':>9}{'stencil GB/s':>14}{'of copy':>9}")
    try:
        for items in (1, 2, 4, 8):
            CUDATarget.items_per_thread = items
            saxpy, stencil = kernels()
            s = 12 * n / per_call(lambda: saxpy(x, y, 2.0), dev.synchronize, 3, 10) / 1e9
            t = 8 * n / per_call(lambda: stencil(x, y), dev.synchronize, 3, 10) / 1e9
            print(f"{items:6}{s:12.0f}{s / copy:9.1%}{t:14.0f}{t / copy:9.1%}")
    finally:
        CUDATarget.items_per_thread = default


if __name__ == "__main__":
    main()
