"""Which CUDA code shape streams memory fastest: hand-written saxpy variants.

The measurement behind the shape Tack's CUDA target emits
(codegen/c_family: iterations per thread, __restrict__, the launch grid).
Each variant computes ``y = a * x + y`` on 256M f32 (12 bytes per element);
the table gives GB/s and the fraction of a device-to-device copy measured
in the same run. Uses CuPy to compile and launch (skips without it).

    python benchmarks/gpu_shapes.py
"""

import argparse
import statistics

SOURCE = r"""
#define N_ARGS const float* __restrict__ x, float* __restrict__ y, float a, long long n
extern "C" __global__ void one(N_ARGS) {
  long long i = (long long)blockIdx.x * 256 + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
template <int K> __device__ void strided(N_ARGS) {
  long long first = (long long)blockIdx.x * (256 * K) + threadIdx.x;
  #pragma unroll
  for (int k = 0; k < K; k++) {
    long long i = first + (long long)k * 256;
    if (i >= n) return;
    y[i] = a * x[i] + y[i];
  }
}
extern "C" __global__ void strided4(N_ARGS) { strided<4>(x, y, a, n); }
extern "C" __global__ void strided8(N_ARGS) { strided<8>(x, y, a, n); }
template <int K> __device__ void loads_first(N_ARGS) {
  long long first = (long long)blockIdx.x * (256 * K) + threadIdx.x;
  float xs[K], ys[K];
  if (first + (K - 1) * 256LL < n) {
    #pragma unroll
    for (int k = 0; k < K; k++) { xs[k] = x[first + k * 256]; ys[k] = y[first + k * 256]; }
    #pragma unroll
    for (int k = 0; k < K; k++) y[first + k * 256] = a * xs[k] + ys[k];
    return;
  }
  for (int k = 0; k < K; k++) {
    long long i = first + (long long)k * 256;
    if (i < n) y[i] = a * x[i] + y[i];
  }
}
extern "C" __global__ void loads_first4(N_ARGS) { loads_first<4>(x, y, a, n); }
extern "C" __global__ void loads_first8(N_ARGS) { loads_first<8>(x, y, a, n); }
extern "C" __global__ void streaming4(N_ARGS) {
  long long first = (long long)blockIdx.x * 1024 + threadIdx.x;
  #pragma unroll
  for (int k = 0; k < 4; k++) {
    long long i = first + (long long)k * 256;
    if (i >= n) return;
    __stcs(&y[i], a * __ldcs(&x[i]) + __ldcs(&y[i]));
  }
}
extern "C" __global__ void vector4(N_ARGS) {
  long long q = (long long)blockIdx.x * 256 + threadIdx.x;
  if (4 * q + 3 < n) {
    float4 xv = reinterpret_cast<const float4*>(x)[q];
    float4 yv = reinterpret_cast<float4*>(y)[q];
    yv.x = a * xv.x + yv.x; yv.y = a * xv.y + yv.y;
    yv.z = a * xv.z + yv.z; yv.w = a * xv.w + yv.w;
    reinterpret_cast<float4*>(y)[q] = yv;
  } else {
    for (long long i = 4 * q; i < n; i++) y[i] = a * x[i] + y[i];
  }
}
extern "C" __global__ void gridstride4(N_ARGS) {
  long long step = (long long)gridDim.x * 1024;
  for (long long first = (long long)blockIdx.x * 1024 + threadIdx.x; first < n;
       first += step) {
    #pragma unroll
    for (int k = 0; k < 4; k++) {
      long long i = first + (long long)k * 256;
      if (i < n) y[i] = a * x[i] + y[i];
    }
  }
}
"""

# name, elements per block, fixed grid (blocks per SM) or None
VARIANTS = [("one", 256, None), ("strided4", 1024, None), ("strided8", 2048, None),
            ("loads_first4", 1024, None), ("loads_first8", 2048, None),
            ("streaming4", 1024, None), ("vector4", 1024, None),
            ("gridstride4", 1024, 8), ("gridstride4", 1024, 32)]


def timed(cp, run, repeats=20):
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    run()
    times = []
    for _ in range(repeats):
        start.record()
        run()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times)


def main():
    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args()
    try:
        import cupy as cp
    except ImportError:
        print("SKIP: CuPy is not installed")
        return
    n = 256 << 20
    module = cp.RawModule(code=SOURCE, options=("--fmad=false", "-std=c++17"))
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    src, dst = cp.ones(n, cp.float32), cp.empty(n, cp.float32)
    runtime = cp.cuda.runtime
    copy = 8 * n / timed(cp, lambda: runtime.memcpyAsync(
        dst.data.ptr, src.data.ptr, 4 * n, runtime.memcpyDeviceToDevice,
        cp.cuda.get_current_stream().ptr)) / 1e9
    x, y = cp.ones(n, cp.float32), cp.ones(n, cp.float32)
    print(f"copy {copy:.0f} GB/s (read + write); {sms} SMs; 256M f32")
    for name, per_block, per_sm in VARIANTS:
        kernel = module.get_function(name)
        blocks = sms * per_sm if per_sm else -(-n // per_block)
        args = (x, y, cp.float32(2.0), cp.int64(n))
        seconds = timed(cp, lambda: kernel((blocks,), (256,), args))
        rate = 12 * n / seconds / 1e9
        label = name + (f" ({per_sm}/SM)" if per_sm else "")
        print(f"{label:24}{rate:8.0f} GB/s {rate / copy:7.1%}")


if __name__ == "__main__":
    main()
