"""A kernel whose body reads a length that changes every step, against Numba.

A particle code calls ``kernel(x[:n], v[:n], ...)`` with a new ``n`` each
step, and the body reads ``len(x)`` (here for a periodic neighbour,
``v[(i + 1) % n]``). Tack bakes such a length into its first variants and,
once four variants differ only in it, reads it at run time. This measures,
in one run:

* **steps with a new length**: ``--steps`` calls, each with ``n`` drawn from
  ``[N/2, N]``: the total time (compilation included: what a user waits) and
  the median step after the first ten. Tack as it is; Tack with the switch
  turned off (``EXTENT_VARIANTS`` raised so every length stays baked and
  compiles, Tack's behaviour before run-time extents); Numba (``parallel=True``,
  ``prange``), which compiles once and always reads the length at run time.
* **one length every step**: the median step of the baked variant (the
  modulo by a constant), of the run-time one (a division), and of Numba.

Every result is checked against NumPy. Numba takes its defaults (all cores);
Tack its default CPU device. The machine is noisy: the medians alternate
frameworks call by call.

Run:  python benchmarks/changing_lengths.py [--quick]
"""

import argparse
import statistics
import time

import numpy as np

import tack
from tack.runtime import kernel as kernel_module


def tack_kernels():
    """Two copies of one kernel, so each keeps its own variants."""
    def make():
        @tack.kernel
        def drift(x, v, out, dt):
            for i in range(len(x)):
                n = len(x)
                out[i] = x[i] + dt * (v[(i + 1) % n] - v[i])
        return drift
    return make(), make()


def numba_kernel():
    import numba

    @numba.njit(parallel=True, fastmath=False)
    def drift(x, v, out, dt):
        n = len(x)
        for i in numba.prange(n):
            out[i] = x[i] + dt * (v[(i + 1) % n] - v[i])
    return drift


def reference(x, v, dt):
    return x + dt * (np.roll(v, -1) - v)


def run_steps(call, lengths) -> tuple:
    """(total seconds, median step after the tenth) over ``lengths``."""
    times = []
    for n in lengths:
        start = time.perf_counter()
        call(n)
        times.append(time.perf_counter() - start)
    return sum(times), statistics.median(times[10:])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer steps")
    parser.add_argument("--steps", type=int, default=None)
    args = parser.parse_args(argv)
    N = 1 << (18 if args.quick else 22)
    steps = args.steps or (40 if args.quick else 100)
    rng = np.random.default_rng(7)
    x, v = rng.standard_normal(N), rng.standard_normal(N)
    dt = 0.01
    lengths = [int(n) for n in rng.integers(N // 2, N + 1, steps)]

    adaptive, always_baked = tack_kernels()
    tx, tv, tout = tack.array(x), tack.array(v), tack.zeros(N, tack.f64)
    nout = np.zeros(N)
    drift_numba = numba_kernel()
    drift_numba(x[:8], v[:8], nout[:8], dt)   # its compilation, outside the steps

    def tack_call(kernel):
        def call(n):
            kernel(tx[:n], tv[:n], tout[:n], dt)
        return call

    def numba_call(n):
        drift_numba(x[:n], v[:n], nout[:n], dt)

    results = {}
    results["tack"] = run_steps(tack_call(adaptive), lengths)
    np.testing.assert_allclose(tout.numpy()[:lengths[-1]],
                               reference(x[:lengths[-1]], v[:lengths[-1]], dt), rtol=1e-12)
    saved = kernel_module.EXTENT_VARIANTS
    kernel_module.EXTENT_VARIANTS = 1 << 60   # every length stays baked (compiles)
    try:
        results["tack, every length baked"] = run_steps(tack_call(always_baked), lengths)
    finally:
        kernel_module.EXTENT_VARIANTS = saved
    np.testing.assert_allclose(tout.numpy()[:lengths[-1]],
                               reference(x[:lengths[-1]], v[:lengths[-1]], dt), rtol=1e-12)
    results["numba"] = run_steps(numba_call, lengths)
    np.testing.assert_allclose(nout[:lengths[-1]],
                               reference(x[:lengths[-1]], v[:lengths[-1]], dt), rtol=1e-12)

    print(f"{steps} steps, each with a new length in [{N // 2}, {N}] (f64):")
    print(f"{'':28s} {'total s':>10s} {'median step ms':>15s}")
    for name, (total, step) in results.items():
        print(f"{name:28s} {total:10.3f} {step * 1e3:15.3f}")
    t, b, nb = results["tack"], results["tack, every length baked"], results["numba"]
    print(f"ratios, total time: tack / numba {t[0] / nb[0]:.2f}x, "
          f"tack / every length baked {t[0] / b[0]:.3f}x")
    print(f"ratio, median step: tack / numba {t[1] / nb[1]:.2f}x")

    # one length every step: baked (adaptive's variant for N, built fresh) vs
    # run time (adaptive now reads lengths at run time) vs Numba, alternating
    baked, _ = tack_kernels()
    fixed = {"tack baked": lambda: baked(tx, tv, tout, dt),
             "tack run time": lambda: adaptive(tx, tv, tout, dt),
             "numba": lambda: drift_numba(x, v, nout, dt)}
    samples = {name: [] for name in fixed}
    for call in fixed.values():
        call()
    for _ in range(10 if args.quick else 30):
        for name, call in fixed.items():
            start = time.perf_counter()
            call()
            samples[name].append(time.perf_counter() - start)
    print(f"\none length ({N}) every step, median ms:")
    medians = {name: statistics.median(s) for name, s in samples.items()}
    for name, m in medians.items():
        print(f"{name:28s} {m * 1e3:10.3f}")
    print(f"ratios: tack run time / tack baked {medians['tack run time'] / medians['tack baked']:.2f}x, "
          f"tack baked / numba {medians['tack baked'] / medians['numba']:.2f}x, "
          f"tack run time / numba {medians['tack run time'] / medians['numba']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
