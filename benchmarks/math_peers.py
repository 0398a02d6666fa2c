"""The math module's functions in a kernel, Tack against Numba, element-wise over f64.

Each function is one kernel ``out[i] = math.f(x[i])`` over 4M f64 (1M with
``--quick``) on every thread, Tack and Numba (``parallel=True``, ``prange``)
taking turns. Both call the C library for most of these (``erf``, ``lgamma``,
...); Tack's results are checked against Numba's within a few ulp first.
Prints the median time per call and the ratio Tack / Numba (below 1: Tack
is faster). Each batch starts once the other side's threads have stopped
spinning (``timing.in_turns``'s ``settle``): run straight after a Numba
batch, Tack's sqrt measured 1.15-1.47x Numba's time, and 0.77-1.11x settled.

Run:  python benchmarks/math_peers.py [--quick]
"""

import argparse
import math
import statistics

import numpy as np

import tack
from timing import in_turns

FUNCTIONS = ("sqrt", "exp", "erf", "erfc", "expm1", "log1p", "lgamma", "tanh")   # Numba has no cbrt
DOMAIN = {"lgamma": (0.5, 50.0), "log1p": (0.0, 100.0)}


def kernels(name: str):
    """``(tack kernel, numba kernel)`` of ``out[i] = math.<name>(x[i])``."""
    import numba
    source = (f"def apply(x, out):\n"
              f"    for i in RANGE(len(x)):\n"
              f"        out[i] = math.{name}(x[i])\n")
    tack_scope, numba_scope = {"math": math, "RANGE": range}, {"math": math}
    path = f"<math_peers {name}>"
    exec(compile(source, path, "exec"), tack_scope)
    numba_scope["RANGE"] = numba.prange
    exec(compile(source, path, "exec"), numba_scope)
    return tack.kernel(_with_source(tack_scope["apply"], source)), \
        numba.njit(parallel=True)(numba_scope["apply"])


def _with_source(fn, source: str):
    """Tack reads a kernel's source: keep it where ``inspect`` finds it."""
    import linecache
    name = fn.__code__.co_filename
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    return fn


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    n = 1 << (20 if args.quick else 22)
    rng = np.random.default_rng(0)
    print(f"{'':10}{'Tack (ms)':>12}{'Numba (ms)':>12}{'ratio':>8}")
    for name in FUNCTIONS:
        lo, hi = DOMAIN.get(name, (-5.0, 5.0) if name != "sqrt" else (0.0, 100.0))
        x = rng.uniform(lo, hi, n)
        ours, theirs = kernels(name)
        a, out, out_numba = tack.array(x), tack.zeros(n, tack.f64), np.empty(n)
        ours(a, out)
        theirs(x, out_numba)
        np.testing.assert_allclose(out.numpy(), out_numba, rtol=1e-13, atol=1e-300)
        times = in_turns({"tack": (lambda: ours(a, out), lambda: None),
                          "numba": (lambda: theirs(x, out_numba), lambda: None)},
                         3 if args.quick else 5, 5 if args.quick else 9, settle=0.03)
        t, u = statistics.median(times["tack"]), statistics.median(times["numba"])
        ratio = statistics.median(p / q for p, q in zip(times["tack"], times["numba"]))
        print(f"{name:10}{t * 1e3:12.2f}{u * 1e3:12.2f}{ratio:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
