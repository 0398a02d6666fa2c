"""A periodic neighbour difference, ``a[(i + 1) % n] - a[(i - 1) % n]``, against Numba.

The remainder by the loop's own extent is where a periodic boundary costs:
Tack rewrites it into a compare (``ir/passes/wrap.py``); Numba divides. This
measures, on one array of f64, the median time per call of:

* Tack with the length baked into the variant (a constant divisor);
* Tack with the length read at run time (the variant a kernel gets once its
  lengths keep changing, see ``benchmarks/changing_lengths.py``);
* Tack with ``n`` passed as an argument (``range(n)``, ``% n``);
* Tack with ``n`` an argument and the loop over ``range(len(a))``: a divisor
  that is not the loop's extent, versioned on a test of the two;
* Numba (``parallel=True``, ``prange``, ``n = len(a)``).

Every result is checked against NumPy's ``roll``; calls alternate in turns.

Run:  python benchmarks/periodic.py [--quick]
"""

import argparse
import statistics

import numpy as np

import tack
from timing import in_turns


def tack_kernels():
    def make():
        @tack.kernel
        def difference(a, out):
            for i in range(len(a)):
                out[i] = a[(i + 1) % len(a)] - a[(i - 1) % len(a)]
        return difference

    @tack.kernel
    def by_argument(a, out, n):
        for i in range(n):
            out[i] = a[(i + 1) % n] - a[(i - 1) % n]

    @tack.kernel
    def over_length(a, out, n):
        for i in range(len(a)):
            out[i] = a[(i + 1) % n] - a[(i - 1) % n]
    return make(), make(), by_argument, over_length


def numba_kernel():
    import numba

    @numba.njit(parallel=True)
    def difference(a, out):
        n = len(a)
        for i in numba.prange(n):
            out[i] = a[(i + 1) % n] - a[(i - 1) % n]
    return difference


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    n = 1 << (20 if args.quick else 22)
    x = np.random.default_rng(0).standard_normal(n)
    want = np.roll(x, -1) - np.roll(x, 1)
    baked, run_time, by_argument, over_length = tack_kernels()
    for m in (3, 5, 7, 9, 11):              # five lengths: read at run time from now on
        run_time(tack.zeros(m, tack.f64), tack.zeros(m, tack.f64))
    a, outs = tack.array(x), [tack.zeros(n, tack.f64) for _ in range(4)]
    contenders = {
        "tack, length baked": (lambda: baked(a, outs[0]), tack.sync),
        "tack, length at run time": (lambda: run_time(a, outs[1]), tack.sync),
        "tack, n an argument": (lambda: by_argument(a, outs[2], n), tack.sync),
        "tack, n, loop over len(a)": (lambda: over_length(a, outs[3], n), tack.sync),
    }
    try:
        numba_difference = numba_kernel()
    except ImportError:
        numba_difference = None
    if numba_difference is not None:
        nout = np.zeros(n)
        contenders["numba"] = (lambda: numba_difference(x, nout), lambda: None)
    times = in_turns(contenders, calls=5 if args.quick else 10,
                     rounds=5 if args.quick else 9)
    for out in outs + ([tack.array(nout)] if numba_difference is not None else []):
        assert np.array_equal(out.numpy(), want)
    median = {name: statistics.median(t) * 1e3 for name, t in times.items()}
    print(f"a[(i + 1) % n] - a[(i - 1) % n], {n} f64, median ms per call:")
    for name, ms in median.items():
        print(f"  {name:28s} {ms:8.3f}")
    if numba_difference is not None:
        print("ratios (time / numba): " + ", ".join(
            f"{name} {ms / median['numba']:.2f}x" for name, ms in median.items()
            if name != "numba"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
