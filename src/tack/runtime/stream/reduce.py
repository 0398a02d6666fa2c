"""Device reductions of f32 arrays on CUDA and HIP: ``a.sum()``, ``a.min()``,
``a.max()``.

Two kernels per operation (f32 elements, binary64 partials), compiled by the
backend's runtime compiler (NVRTC, hipRTC) the first time a device reduces.
A block reduces tiles of 4096 elements: each thread loads 16 of them
together into four binary64 accumulators, warp shuffles and one warp combine
the block's threads in a fixed order, and the block writes one partial.
Passes over the partials reduce them on the device the same way while they
span more than one tile, and the host combines the last 16 or fewer with
NumPy. The grids are a function of the element count alone, so the same
array always reduces in the same order: the result is reproducible run to
run.

A sum accumulates in binary64, as the host path does. Up to 2**28 elements
a thread adds at most 4 values per accumulator and each pass's shuffles add
10 levels, so the error stays within a few tens of binary64 roundings of the
sum of magnitudes, under the 1e-14 relative bound the host path is tested
against. min and max propagate NaN (any NaN gives NaN), as NumPy does;
between 0.0 and -0.0 either may be returned.

The source is one text for both dialects: CUDA's warps have 32 lanes
(``__shfl_down_sync``), AMD's wavefronts 64 (32 on RDNA in wave32 mode), so
HIP's source takes the width from ``warpSize`` and shuffles with
``__shfl_down``. On CUDA the order is the one the H200 runs checked.
"""

from __future__ import annotations

import ctypes

import numpy as np


BLOCK = 256
MAX_BLOCKS = 1 << 16   # the partials: at most 512 KiB of binary64

# What differs between the dialects: the warp width and the shuffle.
DIALECTS = {
    "cuda": "#define TACK_WARP 32\n"
            "#define TACK_SHFL_DOWN(v, o) __shfl_down_sync(0xffffffffu, v, o)\n",
    # (hipcc needs the header; the runtime's hipRTC compile drops it: hip/compile.py)
    "hip": "#include <hip/hip_runtime.h>\n"
           "#define TACK_WARP warpSize\n"
           "#define TACK_SHFL_DOWN(v, o) __shfl_down(v, o)\n",
}

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
// flight together; then warp shuffles and one warp of the per-warp results
// (8 of 32 lanes, or 4 of 64) give the block's partial. Every order is fixed
// by the element count and the warp width.
template <class Op, class T>
__device__ void tack_reduce(const T* __restrict__ x, long long n,
                            double* __restrict__ partial, double start) {
  __shared__ double warps[8];   // 256 threads / 32, the narrowest warp
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
  for (int offset = TACK_WARP / 2; offset > 0; offset >>= 1)
    r = Op::combine(r, TACK_SHFL_DOWN(r, offset));
  if ((threadIdx.x & (TACK_WARP - 1)) == 0) warps[threadIdx.x / TACK_WARP] = r;
  __syncthreads();
  if (threadIdx.x < TACK_WARP) {
    const int count = 256 / TACK_WARP;   // the block's warps
    r = threadIdx.x < count ? warps[threadIdx.x] : start;
    for (int offset = count / 2; offset > 0; offset >>= 1)
      r = Op::combine(r, TACK_SHFL_DOWN(r, offset));
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


def source(dialect: str) -> str:
    """The reduction kernels in ``dialect`` ("cuda" or "hip")."""
    return DIALECTS[dialect] + SOURCE


class Reducer:
    """The reduction kernels of one CUDA or HIP device, built on first use."""

    def __init__(self, backend):
        self.backend = backend
        images = backend.compile_source(source(backend.reduction_dialect), "tack_reduce")
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
            backend.launch_failed(code)
