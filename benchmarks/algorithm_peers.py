"""tack.algorithms on one CPU thread against a serial Numba loop and NumPy.

    python benchmarks/algorithm_peers.py [--quick] [--seed N]

One thread on every side (a ``tack.device("cpu", num_threads=1)``, plain
``@numba.njit``, NumPy), the configuration of one MPI rank per core, where a
busy machine slows every side alike. Each case checks Tack's result against
the loop's first, then times the contenders in turns (``timing.in_turns``) and
prints medians and the ratio of times, Tack / peer: below 1, Tack is faster.
Numba is optional; without it only NumPy is compared.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics

import numpy as np

from timing import in_turns, paired

import tack
import tack.algorithms as A

FULL = (100_000, 16_000_000)
QUICK = (100_000, 1_000_000)


def numba_loops():
    """The loops a Numba user writes, or None without Numba."""
    if importlib.util.find_spec("numba") is None:
        return None
    import numba

    @numba.njit
    def exclusive_scan(x, out):
        s = x.dtype.type(0)
        for i in range(x.size):
            v = x[i]
            out[i] = s
            s += v

    @numba.njit
    def histogram(keys, bins):   # a new array of counts, as tack's and NumPy's
        counts = np.zeros(bins, np.int64)
        for i in range(keys.size):
            counts[keys[i]] += 1
        return counts

    return {"scan": exclusive_scan, "histogram": histogram}


def scan_case(n, dtype, gen, device, loops, rounds):
    x = (gen.random(n) * 10).astype(dtype) if np.dtype(dtype).kind == "f" else \
        gen.integers(0, 100, n).astype(dtype)
    tx, tout, out = tack.array(x, device=device), tack.empty(n, x.dtype, device=device), \
        np.empty_like(x)
    contenders = {"tack": (lambda: A.exclusive_scan(tx, out=tout), _none),
                  "numpy": (lambda: np.cumsum(x, out=out), _none)}
    if loops:
        loops["scan"](x, out)
        if np.dtype(dtype).kind != "f":   # float sums round in another order
            assert np.array_equal(A.exclusive_scan(tx).numpy(), out), "scan differs"
        contenders["numba"] = (lambda: loops["scan"](x, out), _none)
    return f"exclusive_scan {n:,} {np.dtype(dtype).name}", in_turns(contenders, _calls(n),
                                                                    rounds)


def histogram_case(n, bins, gen, device, loops, rounds):
    keys = gen.integers(0, bins, n).astype(np.int32)
    tkeys = tack.array(keys, device=device)
    assert np.array_equal(A.histogram(tkeys, bins).numpy(), np.bincount(keys, minlength=bins))
    contenders = {"tack": (lambda: A.histogram(tkeys, bins), _none),
                  "numpy": (lambda: np.bincount(keys, minlength=bins), _none)}
    if loops:
        contenders["numba"] = (lambda: loops["histogram"](keys, bins), _none)
    return f"histogram {n:,} keys, {bins:,} bins", in_turns(contenders, _calls(n), rounds)


def _none():
    pass


def _calls(n: int) -> int:
    """Calls per timed batch: a few milliseconds of work, so that one slow call
    on a busy machine does not decide a round."""
    return max(1, 4_000_000 // n)


def report(label, times):
    medians = {name: statistics.median(t) for name, t in times.items()}
    parts = [f"{name} {seconds * 1e3:.2f} ms" for name, seconds in medians.items()]
    ratios = [f"Tack/{name} {paired(times, 'tack', name, lambda a, b: a / b):.2f}x"
              for name in times if name != "tack"]
    print(f"{label}: {', '.join(parts)}; {', '.join(ratios)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer rounds")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    gen = np.random.default_rng(seed)
    device = tack.device("cpu", num_threads=1)
    loops = numba_loops()
    rounds = 5 if args.quick else 9
    print(f"tack.algorithms on one thread, seed {seed}; Numba "
          f"{'present' if loops else 'not installed'} (time ratios: below 1, Tack is "
          f"faster)")
    for n in (QUICK if args.quick else FULL):
        for dtype in (np.int32, np.float32, np.float64):
            report(*scan_case(n, dtype, gen, device, loops, rounds))
        for bins in (256, 65_536):
            report(*histogram_case(n, bins, gen, device, loops, rounds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
