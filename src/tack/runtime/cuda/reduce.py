"""Device reductions of f32 arrays on CUDA: ``a.sum()``, ``a.min()``, ``a.max()``.

Two kernels per operation (f32 elements, binary64 partials), compiled with
NVRTC the first time a device reduces. A block reduces tiles of 4096
elements: each thread loads 16 of them together into four binary64
accumulators, warp shuffles and one warp combine the block's threads in a
fixed order, and the block writes one partial. Passes over the partials
reduce them on the device the same way while they span more than one tile,
and the host combines the last 16 or fewer with NumPy. The grids are a
function of the element count alone, so the same array always reduces in
the same order: the result is reproducible run to run.

A sum accumulates in binary64, as the host path does. Up to 2**28 elements
a thread adds at most 4 values per accumulator and each pass's shuffles add
10 levels, so the error stays within a few tens of binary64 roundings of the
sum of magnitudes, under the 1e-14 relative bound the host path is tested
against. min and max propagate NaN (any NaN gives NaN), as NumPy does;
between 0.0 and -0.0 either may be returned.
"""

from __future__ import annotations

import ctypes

import numpy as np


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

// Each block reduces tiles of 4096 elements (16 per thread, 256 apart, so a
// warp reads consecutive floats), tile after tile, gridDim.x apart. A thread
// keeps four accumulators (element k goes to k % 4), so its 16 loads are in
// flight together; then warp shuffles and one warp of the 8 per-warp results
// give the block's partial. Every order is fixed by the element count.
template <class Op, class T>
__device__ void tack_reduce(const T* __restrict__ x, long long n,
                            double* __restrict__ partial, double start) {
  __shared__ double warps[8];
  double acc[4] = {start, start, start, start};
  long long tiles = (n + 4095) / 4096;
  for (long long tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    long long base = tile * 4096 + threadIdx.x;
    if (base + 15 * 256 < n) {
      T v[16];
      #pragma unroll
      for (int k = 0; k < 16; k++) v[k] = x[base + k * 256];
      #pragma unroll
      for (int k = 0; k < 16; k++) acc[k % 4] = Op::combine(acc[k % 4], (double)v[k]);
    } else {
      for (int k = 0; k < 16; k++)
        if (base + k * 256 < n)
          acc[k % 4] = Op::combine(acc[k % 4], (double)x[base + k * 256]);
    }
  }
  double r = Op::combine(Op::combine(acc[0], acc[1]), Op::combine(acc[2], acc[3]));
  #pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    r = Op::combine(r, __shfl_down_sync(0xffffffffu, r, offset));
  if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = r;
  __syncthreads();
  if (threadIdx.x < 32) {
    r = threadIdx.x < 8 ? warps[threadIdx.x] : start;
    #pragma unroll
    for (int offset = 4; offset > 0; offset >>= 1)
      r = Op::combine(r, __shfl_down_sync(0xffffffffu, r, offset));
    if (threadIdx.x == 0) partial[blockIdx.x] = r;
  }
}

#define TACK_REDUCE(OP, OPS, START) \
  extern "C" __global__ void tack_reduce_##OP##_f32(const float* x, long long n, \
                                                     double* p) { \
    tack_reduce<OPS, float>(x, n, p, START); } \
  extern "C" __global__ void tack_reduce_##OP##_f64(const double* x, long long n, \
                                                     double* p) { \
    tack_reduce<OPS, double>(x, n, p, START); }
TACK_REDUCE(sum, TackSum, 0.0)
TACK_REDUCE(min, TackMin, __longlong_as_double(0x7ff0000000000000LL))
TACK_REDUCE(max, TackMax, __longlong_as_double(0xfff0000000000000LL))
"""

TILE = 4096   # elements per block per step: 16 per thread


def blocks_for(n: int) -> int:
    """The grid of an ``n``-element reduction, a function of ``n`` alone: one
    block per tile of 4096 elements, at most MAX_BLOCKS."""
    return max(1, min(MAX_BLOCKS, -(-n // TILE)))


class Reducer:
    """The reduction kernels of one CUDA device, built on first use."""

    def __init__(self, backend):
        self.backend = backend
        images = backend.compile_source(SOURCE, "tack_reduce")
        self.functions = {}
        for op in ("sum", "min", "max"):
            for kind in ("f32", "f64"):
                name = f"tack_reduce_{op}_{kind}"
                self.functions[op, kind] = backend._load(images, name)[1]

    def reduce(self, array, op: str) -> float:
        """``op`` ("sum", "min" or "max") of the f32 ``array``'s elements: the
        f32 pass writes one partial per block, f64 passes reduce the partials
        on the device while there are more than one tile of them, and the host
        combines the last few."""
        backend = self.backend
        address, n, kind = array._ptr, array.size, "f32"
        keep = []   # the partial buffers, alive until the final read
        with backend.context.active():
            while True:
                blocks = blocks_for(n)
                partial = backend.allocate(8 * blocks)
                keep.append(partial)
                self._launch(self.functions[op, kind], address, n, partial.address,
                             blocks)
                address, n, kind = partial.address, blocks, "f64"
                if blocks <= 16:
                    break
        out = keep[-1].read(8 * n, copy=True).view(np.float64)   # waits
        if op == "sum":
            return float(np.sum(out))
        return float(out.min() if op == "min" else out.max())

    def _launch(self, function, address: int, n: int, partial: int, blocks: int) -> None:
        backend = self.backend
        values = (ctypes.c_uint64 * 3)(address, n, partial)
        pointers = (ctypes.c_void_p * 3)(*[ctypes.addressof(values) + 8 * k
                                           for k in range(3)])
        launch, function, stream, params = backend.launch_function(
            function, ctypes.addressof(pointers))
        code = launch(function, blocks, 1, 1, BLOCK, 1, 1, 0, stream, params, None)
        if code:
            backend.launch_failed(code, "cuLaunchKernel (reduction)")
