// emulated_cuda.h: run Tack's emitted CUDA C (and HIP C) on the CPU.
//
// Included ahead of the kernel source, compiled as C++20 by clang++ into a
// shared object that emulated_cuda.py loads with ctypes. It defines the CUDA
// spellings the C-family emitter (src/tack/codegen/c_family) and the stream
// reductions (runtime/stream/reduce.py) use, with CUDA's documented semantics:
//
// * __global__/__device__ are empty; __shared__ is `static` (one block runs at
//   a time, launches of one shared object are serialized by a mutex), placed in
//   a section of its own that is filled with 0xff bytes before each block (NaN,
//   -1: CUDA leaves shared memory undefined, so a read before the block wrote
//   it shows);
//   __restrict__ is clang's own (so clang may exploit it as nvcc would).
// * threadIdx/blockIdx/blockDim/gridDim are globals (x only: Tack launches 1-D).
// * A kernel without __syncthreads or warp shuffles runs its threads one after
//   the other, block by block. One with them (TACK_EMU_FIBERS=1, set by the
//   driver from the source) runs each block's threads as ucontext fibers on one
//   OS thread: __syncthreads and the shuffles are barriers; a thread that
//   returned counts as arrived (as on sm_70+); a barrier no live thread can
//   leave is reported as a deadlock (launch status 1) instead of hanging.
// * Atomics are plain read-modify-writes (nothing runs concurrently), with
//   CUDA's overload set only, so a call NVRTC would reject is rejected here.
// * __double2*_rz: round toward zero, saturate; NaN gives what an H200 gave
//   (INT_MIN, 0, LLONG_MIN, 0x8000000000000000), which the emitter tests first.
// * Math functions map to <cmath> (glibc): CUDA's results may differ by its
//   documented ulp bounds (CUDA C Programming Guide, "Mathematical Functions").
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <utility>
#include <sys/mman.h>
#include <ucontext.h>

#define __global__
#define __device__
#define __host__
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline __attribute__((always_inline))
#define __shared__ static __attribute__((section("tack_emu_shared"), used))
#define __constant__ static

#ifndef TACK_EMU_WARP
#define TACK_EMU_WARP 32
#endif
#ifndef TACK_EMU_FIBERS
#define TACK_EMU_FIBERS 0
#endif
// TACK_EMU_REVERSE=1 runs blocks and threads last to first (order-dependence shows)
#ifndef TACK_EMU_REVERSE
#define TACK_EMU_REVERSE 0
#endif

struct tack_emu_uint3 { unsigned int x, y, z; };
static tack_emu_uint3 threadIdx, blockIdx, blockDim, gridDim;
static const int warpSize = TACK_EMU_WARP;

// -- bit casts -------------------------------------------------------------------
template <class To, class From> static inline To tack_emu_bits(From v) {
  static_assert(sizeof(To) == sizeof(From), "bit cast of different sizes");
  To r; std::memcpy(&r, &v, sizeof r); return r;
}
static inline float __int_as_float(int v) { return tack_emu_bits<float>(v); }
static inline float __uint_as_float(unsigned int v) { return tack_emu_bits<float>(v); }
static inline int __float_as_int(float v) { return tack_emu_bits<int>(v); }
static inline unsigned int __float_as_uint(float v) { return tack_emu_bits<unsigned int>(v); }
static inline double __longlong_as_double(long long v) { return tack_emu_bits<double>(v); }
static inline long long __double_as_longlong(double v) { return tack_emu_bits<long long>(v); }

// -- float -> integer, round toward zero, saturating (CUDA Math API) ---------------
static inline int __double2int_rz(double v) {
  if (v != v) return INT_MIN;
  if (v >= 2147483648.0) return INT_MAX;
  if (v <= -2147483649.0) return INT_MIN;
  return (int)v;
}
static inline unsigned int __double2uint_rz(double v) {
  if (v != v) return 0;
  if (v >= 4294967296.0) return UINT_MAX;
  if (v <= -1.0) return 0;
  return (unsigned int)v;
}
static inline long long __double2ll_rz(double v) {
  if (v != v) return LLONG_MIN;
  if (v >= 9223372036854775808.0) return LLONG_MAX;
  if (v < -9223372036854775808.0) return LLONG_MIN;
  return (long long)v;
}
static inline unsigned long long __double2ull_rz(double v) {
  if (v != v) return 0x8000000000000000ULL;
  if (v >= 18446744073709551616.0) return ULLONG_MAX;
  if (v <= -1.0) return 0;
  return (unsigned long long)v;
}
static inline int __float2int_rz(float v) { return __double2int_rz(v); }
static inline unsigned int __float2uint_rz(float v) { return __double2uint_rz(v); }
static inline long long __float2ll_rz(float v) { return __double2ll_rz(v); }
static inline unsigned long long __float2ull_rz(float v) { return __double2ull_rz(v); }

// -- min / max (CUDA's integer and float overloads) ----------------------------------
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
static inline unsigned int min(int a, unsigned int b) { return min((unsigned int)a, b); }
static inline unsigned int max(int a, unsigned int b) { return max((unsigned int)a, b); }
static inline unsigned int min(unsigned int a, int b) { return min(a, (unsigned int)b); }
static inline unsigned int max(unsigned int a, int b) { return max(a, (unsigned int)b); }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }

// -- math: CUDA's names are the C ones (sinf, sin, ...), and C++ overloads -------------
using std::isnan; using std::isinf; using std::isfinite; using std::signbit;
using std::sqrt; using std::exp; using std::log; using std::log2; using std::log10;
using std::sin; using std::cos; using std::tan; using std::asin; using std::acos;
using std::atan; using std::sinh; using std::cosh; using std::tanh; using std::fabs;
using std::atan2; using std::hypot; using std::copysign; using std::pow; using std::expm1;
using std::log1p; using std::asinh; using std::acosh; using std::atanh; using std::erf;
using std::erfc; using std::cbrt; using std::exp2; using std::tgamma; using std::lgamma;
using std::fmod; using std::floor; using std::ceil; using std::trunc; using std::rint;
using std::round; using std::fma; using std::fmin; using std::fmax;

// -- atomics: CUDA's overloads (no signed 64-bit add, CAS only on the unsigned one) ----
#define TACK_EMU_RMW(T, name, expr) \
  static inline T name(T* p, T v) { T old = *p; *p = (expr); return old; }
TACK_EMU_RMW(int, atomicAdd, (int)((unsigned)old + (unsigned)v))
TACK_EMU_RMW(unsigned int, atomicAdd, old + v)
TACK_EMU_RMW(unsigned long long, atomicAdd, old + v)
// PTX ISA, atom: "atom.add.f32 rounds to nearest even and flushes subnormal inputs and
// results to sign-preserving zero" (TACK_EMU_ATOMIC_FTZ=0 turns this off; HIP: off).
#ifndef TACK_EMU_ATOMIC_FTZ
#define TACK_EMU_ATOMIC_FTZ 1
#endif
static inline float tack_emu_ftz(float x) {
  return (TACK_EMU_ATOMIC_FTZ && x != 0.0f && std::fabs(x) < 1.17549435e-38f) ? std::copysign(0.0f, x) : x;
}
TACK_EMU_RMW(float, atomicAdd, tack_emu_ftz(tack_emu_ftz(old) + tack_emu_ftz(v)))
TACK_EMU_RMW(double, atomicAdd, old + v)
TACK_EMU_RMW(int, atomicSub, (int)((unsigned)old - (unsigned)v))
TACK_EMU_RMW(unsigned int, atomicSub, old - v)
TACK_EMU_RMW(int, atomicExch, v)
TACK_EMU_RMW(unsigned int, atomicExch, v)
TACK_EMU_RMW(unsigned long long, atomicExch, v)
TACK_EMU_RMW(float, atomicExch, v)
TACK_EMU_RMW(int, atomicMin, v < old ? v : old)
TACK_EMU_RMW(unsigned int, atomicMin, v < old ? v : old)
TACK_EMU_RMW(long long, atomicMin, v < old ? v : old)
TACK_EMU_RMW(unsigned long long, atomicMin, v < old ? v : old)
TACK_EMU_RMW(int, atomicMax, v > old ? v : old)
TACK_EMU_RMW(unsigned int, atomicMax, v > old ? v : old)
TACK_EMU_RMW(long long, atomicMax, v > old ? v : old)
TACK_EMU_RMW(unsigned long long, atomicMax, v > old ? v : old)
TACK_EMU_RMW(int, atomicAnd, old & v)
TACK_EMU_RMW(unsigned int, atomicAnd, old & v)
TACK_EMU_RMW(unsigned long long, atomicAnd, old & v)
TACK_EMU_RMW(int, atomicOr, old | v)
TACK_EMU_RMW(unsigned int, atomicOr, old | v)
TACK_EMU_RMW(unsigned long long, atomicOr, old | v)
TACK_EMU_RMW(int, atomicXor, old ^ v)
TACK_EMU_RMW(unsigned int, atomicXor, old ^ v)
TACK_EMU_RMW(unsigned long long, atomicXor, old ^ v)
#undef TACK_EMU_RMW
#define TACK_EMU_CAS(T) \
  static inline T atomicCAS(T* p, T compare, T v) { T old = *p; if (old == compare) *p = v; return old; }
TACK_EMU_CAS(int)
TACK_EMU_CAS(unsigned int)
TACK_EMU_CAS(unsigned long long)
TACK_EMU_CAS(unsigned short)
#undef TACK_EMU_CAS
static inline unsigned int atomicInc(unsigned int* p, unsigned int v) {
  unsigned int old = *p; *p = old >= v ? 0 : old + 1; return old; }
static inline unsigned int atomicDec(unsigned int* p, unsigned int v) {
  unsigned int old = *p; *p = (old == 0 || old > v) ? v : old - 1; return old; }
static inline void __threadfence() {}
static inline void __threadfence_block() {}

// -- the scheduler: fibers for kernels with barriers -----------------------------------
namespace tack_emu {
constexpr int MAX_THREADS = 1024;
constexpr size_t STACK = 256 * 1024;
struct Barrier { int arrived, gen, live; };
struct Fiber { ucontext_t ctx; char* stack; bool done; };
static Fiber fibers[MAX_THREADS];
static ucontext_t scheduler;
static int current, nthreads;
static long long events;          // arrivals, releases, exits: progress
static bool failed;               // a deadlock: the launch is abandoned
static Barrier block_barrier, warp_barriers[MAX_THREADS / TACK_EMU_WARP + 1];
static unsigned long long shuffle_slots[MAX_THREADS];
static void (*body)(void*);
static void* body_arg;
static std::mutex launch_lock;

// the linker's bounds of the __shared__ variables' section (null without any)
extern "C" char __start_tack_emu_shared[] __attribute__((weak, visibility("hidden")));
extern "C" char __stop_tack_emu_shared[] __attribute__((weak, visibility("hidden")));

static void poison_shared() {
  if (__start_tack_emu_shared)
    std::memset(__start_tack_emu_shared, 0xff, __stop_tack_emu_shared - __start_tack_emu_shared);
}

static inline void yield() { swapcontext(&fibers[current].ctx, &scheduler); }

static inline void wait(Barrier& b) {
  int gen = b.gen;
  events++;
  if (++b.arrived >= b.live) { b.arrived = 0; b.gen++; return; }
  while (b.gen == gen) yield();
}

static inline void leave(Barrier& b) {
  b.live--;
  if (b.arrived > 0 && b.arrived >= b.live) { b.arrived = 0; b.gen++; }
}

static void fiber_main() {
  body(body_arg);
  int t = current;
  fibers[t].done = true;
  events++;
  leave(block_barrier);
  leave(warp_barriers[t / TACK_EMU_WARP]);
}  // returns to uc_link: the scheduler

static int run_block_fibers() {
  for (int t = 0; t < nthreads; t++) {
    Fiber& f = fibers[t];
    if (!f.stack) {
      void* s = mmap(nullptr, STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (s == MAP_FAILED) { fprintf(stderr, "emulated CUDA: no memory for a fiber stack\n"); return 2; }
      f.stack = (char*)s;
    }
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = f.stack;
    f.ctx.uc_stack.ss_size = STACK;
    f.ctx.uc_link = &scheduler;
    makecontext(&f.ctx, fiber_main, 0);
    f.done = false;
  }
  block_barrier = {0, 0, nthreads};
  for (int w = 0; w * TACK_EMU_WARP < nthreads; w++) {
    int lanes = nthreads - w * TACK_EMU_WARP;
    warp_barriers[w] = {0, 0, lanes < TACK_EMU_WARP ? lanes : TACK_EMU_WARP};
  }
  for (;;) {
    bool alive = false;
    long long before = events;
    for (int k = 0; k < nthreads; k++) {
      int t = TACK_EMU_REVERSE ? nthreads - 1 - k : k;
      if (fibers[t].done) continue;
      alive = true;
      current = t;
      threadIdx.x = t;
      swapcontext(&scheduler, &fibers[t].ctx);
    }
    if (!alive) return 0;
    if (events == before) {
      int waiting = 0;
      for (int t = 0; t < nthreads; t++) waiting += !fibers[t].done;
      fprintf(stderr, "emulated CUDA: deadlock in block %u: %d threads wait at a barrier that "
              "%d live threads never all reach\n", blockIdx.x, waiting, block_barrier.live);
      return 1;
    }
  }
}

template <class... A, size_t... I>
static void call(void (*f)(A...), void** p, std::index_sequence<I...>) {
  f(*reinterpret_cast<A*>(p[I])...);
}

template <class... A>
struct Launch {
  void (*f)(A...);
  void** params;
  static void run(void* self) {
    Launch* l = (Launch*)self;
    call(l->f, l->params, std::index_sequence_for<A...>{});
  }
};

template <class... A>
static int launch(void (*f)(A...), unsigned gx, unsigned bx, void** params) {
  std::lock_guard<std::mutex> guard(launch_lock);
  Launch<A...> l{f, params};
  gridDim = {gx, 1, 1};
  blockDim = {bx, 1, 1};
  threadIdx = blockIdx = {0, 0, 0};
  if (bx > (unsigned)MAX_THREADS) return 3;
  for (unsigned k = 0; k < gx; k++) {
    unsigned b = TACK_EMU_REVERSE ? gx - 1 - k : k;
    blockIdx.x = b;
    poison_shared();
    if (TACK_EMU_FIBERS) {
      body = &Launch<A...>::run;
      body_arg = &l;
      nthreads = (int)bx;
      int code = run_block_fibers();
      if (code) return code;
    } else {
      for (unsigned j = 0; j < bx; j++) {
        unsigned t = TACK_EMU_REVERSE ? bx - 1 - j : j;
        threadIdx.x = t;
        Launch<A...>::run(&l);
      }
    }
  }
  return 0;
}
}  // namespace tack_emu

static inline void __syncthreads() {
  if (!TACK_EMU_FIBERS) { fprintf(stderr, "emulated CUDA: __syncthreads without fibers\n"); abort(); }
  tack_emu::wait(tack_emu::block_barrier);
}
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
  (void)mask;
  if (TACK_EMU_FIBERS) tack_emu::wait(tack_emu::warp_barriers[threadIdx.x / TACK_EMU_WARP]);
}

// __shfl_down_sync: every lane of the warp publishes its value, then reads lane + delta's
// (its own when that is past the warp), between two warp barriers.
template <class T>
static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = TACK_EMU_WARP) {
  (void)mask;
  static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
  if (!TACK_EMU_FIBERS) { fprintf(stderr, "emulated CUDA: shuffle without fibers\n"); abort(); }
  using namespace tack_emu;
  int t = (int)threadIdx.x, lane = t % width;
  std::memcpy(&shuffle_slots[t], &v, sizeof v);
  wait(warp_barriers[t / TACK_EMU_WARP]);
  T r = v;
  if (lane + (int)delta < width && t + (int)delta < nthreads)
    std::memcpy(&r, &shuffle_slots[t + delta], sizeof r);
  wait(warp_barriers[t / TACK_EMU_WARP]);
  return r;
}
template <class T>
static inline T __shfl_down(T v, unsigned delta, int width = TACK_EMU_WARP) {
  return __shfl_down_sync(0xffffffffu, v, delta, width);
}

#define TACK_EMU_ENTRY(name) \
  extern "C" int tack_emu_launch_##name(unsigned gx, unsigned bx, void** params) { \
    return tack_emu::launch(name, gx, bx, params); }
