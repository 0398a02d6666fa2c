"""Device reductions of f32 arrays on CUDA: ``a.sum()``, ``a.min()``, ``a.max()``.

One kernel per operation, compiled with NVRTC the first time a device
reduces. Each thread combines a strided run of elements in binary64, each
block combines its 256 threads' results by a fixed tree in shared memory and
writes one partial; the host combines the partials with NumPy. The grid is
a function of the element count alone, so the same array always reduces in
the same order: the result is reproducible run to run. A sum accumulates in
binary64, as the host path does; up to 2**28 elements a thread combines at
most 16, so with the 8-level tree and NumPy's pairwise sum of the partials
the error stays within about 40 units of binary64 rounding of the sum of
magnitudes, under the 1e-14 relative bound the host path is tested against. min and max
propagate NaN (any NaN gives NaN), as NumPy does; between 0.0 and -0.0
either may be returned.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import compile as nvrtc_compile
from .driver import CUDAError, raw_launcher

BLOCK = 256
MAX_BLOCKS = 1 << 16   # the partials: at most 512 KiB of binary64

SOURCE = r"""
__device__ static inline double tack_pick(double a, double b, bool take_b) {
  return a != a ? a : (b != b ? b : (take_b ? b : a));
}
struct TackSum { __device__ static double combine(double a, double b) { return a + b; } };
struct TackMin { __device__ static double combine(double a, double b) {
  return tack_pick(a, b, b < a); } };
struct TackMax { __device__ static double combine(double a, double b) {
  return tack_pick(a, b, b > a); } };

template <class Op>
__device__ void tack_reduce(const float* __restrict__ x, long long n,
                            double* __restrict__ partial, double start) {
  __shared__ double lanes[256];
  double acc = start;
  long long step = (long long)gridDim.x * 256;
  for (long long i = (long long)blockIdx.x * 256 + threadIdx.x; i < n; i += step)
    acc = Op::combine(acc, (double)x[i]);
  lanes[threadIdx.x] = acc;
  __syncthreads();
  for (int half = 128; half > 0; half >>= 1) {
    if (threadIdx.x < half)
      lanes[threadIdx.x] = Op::combine(lanes[threadIdx.x], lanes[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = lanes[0];
}

extern "C" __global__ void tack_reduce_sum(const float* x, long long n, double* p) {
  tack_reduce<TackSum>(x, n, p, 0.0);
}
extern "C" __global__ void tack_reduce_min(const float* x, long long n, double* p) {
  tack_reduce<TackMin>(x, n, p, __longlong_as_double(0x7ff0000000000000LL));
}
extern "C" __global__ void tack_reduce_max(const float* x, long long n, double* p) {
  tack_reduce<TackMax>(x, n, p, __longlong_as_double(0xfff0000000000000LL));
}
"""


def blocks_for(n: int) -> int:
    """The grid of an ``n``-element reduction: at most 16 elements per thread
    up to MAX_BLOCKS blocks (a function of ``n`` alone)."""
    return max(1, min(MAX_BLOCKS, -(-n // (BLOCK * 16)), -(-n // BLOCK)))


class Reducer:
    """The reduction kernels of one CUDA device, built on first use."""

    def __init__(self, backend):
        self.backend = backend
        ptx, cubin = nvrtc_compile.compile_cuda(SOURCE, backend.arch, "tack_reduce.cu")
        self.functions = {}
        for op in ("sum", "min", "max"):
            _, function = backend._load(ptx, cubin, f"tack_reduce_{op}")
            self.functions[op] = function

    def reduce(self, array, op: str) -> float:
        """``op`` ("sum", "min" or "max") of the f32 ``array``'s elements."""
        backend, n = self.backend, array.size
        blocks = blocks_for(n)
        partial = backend.allocate(8 * blocks)
        values = (ctypes.c_uint64 * 3)(array._ptr, n, partial.address)
        pointers = (ctypes.c_void_p * 3)(*[ctypes.addressof(values) + 8 * k
                                           for k in range(3)])
        launch, function, stream, params = raw_launcher(
            backend.driver, self.functions[op], backend.stream, ctypes.addressof(pointers))
        with backend.context.active():
            code = launch(function, blocks, 1, 1, BLOCK, 1, 1, 0, stream, params, None)
            if code:
                raise CUDAError("cuLaunchKernel (reduction)", backend.driver.CUresult(code))
        out = partial.read(8 * blocks, copy=True).view(np.float64)   # waits
        if op == "sum":
            return float(np.sum(out))
        return float(out.min() if op == "min" else out.max())
