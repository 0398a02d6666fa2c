"""Tack against NumPy, Numba, Warp and Taichi on the CPU, side by side in one run.

For each framework this measures

* the warm launch time of a one-element saxpy and of a 1,024-element saxpy
  (median over batches of calls, microseconds per call);
* saxpy ``y = a*x + y`` on float32 (GB/s, 12 bytes per element);
* a 2-D 5-point stencil on float32 (GB/s, 8 bytes per interior point);
* a sum of float32 values (GB/s, 4 bytes per element);
* the cold cost in a new process: importing the framework, defining a small
  kernel from a temporary ``.py`` file, and its first call (which includes the
  compilation). Tack runs there with ``TACK_CACHE=off``, Numba without
  ``cache=True`` and with an empty ``NUMBA_CACHE_DIR``, Warp with an empty
  ``wp.config.kernel_cache_dir``.

Throughputs are medians of timed repeats after a warm-up call, and every
result is checked against NumPy. The frameworks take turns on the bandwidth
metrics (per round, a few warm-up and a few timed calls of each, the order
rotating), so that the machine's drift hits them alike; their ratios are
medians over rounds of the ratio within a round. The table ends with ratios of Tack against
each peer. Peers run with their defaults (Numba: all cores through
``prange``; Warp: ``device="cpu"``, default module options; Taichi:
``arch=ti.cpu``, kernels over ``ti.field``s, which launched and ran faster
than over ``ti.ndarray``s here). Frameworks that are not
installed are left out.

Run:  python benchmarks/cpu_peers.py [--quick] [--only tack,numpy,numba,warp,taichi]
"""

import argparse
import importlib.util
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

FRAMEWORKS = ("tack", "numpy", "numba", "warp", "taichi")
A = 2.0  # the saxpy coefficient

FULL = dict(n=1 << 24, grid=4096, repeats=20, warmup=3, batches=50, per_batch=100)
QUICK = dict(n=1 << 20, grid=1024, repeats=5, warmup=1, batches=15, per_batch=20)


# -- timing -------------------------------------------------------------------------

def median_launch_us(call, sizes) -> float:
    """Median over batches of the per-call time of ``call()``, in microseconds."""
    for _ in range(20):
        call()
    samples = []
    for _ in range(sizes["batches"]):
        start = time.perf_counter()
        for _ in range(sizes["per_batch"]):
            call()
        samples.append((time.perf_counter() - start) / sizes["per_batch"])
    return statistics.median(samples) * 1e6


def median_seconds(call, sizes) -> float:
    for _ in range(sizes["warmup"]):
        call()
    samples = []
    for _ in range(sizes["repeats"]):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def check(name, got, expected, rtol=1e-5, atol=1e-5):
    if not np.allclose(got, expected, rtol=rtol, atol=atol):
        worst = float(np.max(np.abs(np.asarray(got, np.float64) - expected)))
        raise AssertionError(f"{name}: result differs from NumPy (max abs error {worst:g})")


# -- the frameworks -----------------------------------------------------------------
# Each framework gives: kernels() -> namespace, to_dev(host), to_host(dev),
# saxpy(ns, x, y), stencil(ns, u, out), total(ns, x) -> float, sync().

class TackPeer:
    name = "tack"

    def __init__(self):
        import tack
        self.tack = tack
        self.version = tack.__version__
        self.threads = tack.get_default_device().backend.num_threads

    def kernels(self):
        tack = self.tack

        @tack.kernel
        def saxpy(x, y, a):
            for i in range(len(x)):
                y[i] = a * x[i] + y[i]

        @tack.kernel
        def stencil(u, out):
            for i, j in tack.ndindex(u.shape[0] - 2, u.shape[1] - 2):
                out[i + 1, j + 1] = 0.25 * (u[i, j + 1] + u[i + 2, j + 1]
                                            + u[i + 1, j] + u[i + 1, j + 2])

        # One partial sum per block (eight accumulators so the adds overlap),
        # one atomic per block, the total returned by the annotated return.
        @tack.kernel
        def block_sum(x, acc, block) -> float:
            for b in range((len(x) + block - 1) // block):
                lo = b * block
                hi = min(lo + block, len(x))
                s0 = 0.0; s1 = 0.0; s2 = 0.0; s3 = 0.0  # noqa: E702
                s4 = 0.0; s5 = 0.0; s6 = 0.0; s7 = 0.0  # noqa: E702
                k = lo
                while k + 8 <= hi:
                    s0 += x[k]; s1 += x[k + 1]; s2 += x[k + 2]; s3 += x[k + 3]  # noqa: E702
                    s4 += x[k + 4]; s5 += x[k + 5]; s6 += x[k + 6]; s7 += x[k + 7]  # noqa: E702
                    k += 8
                while k < hi:
                    s0 += x[k]
                    k += 1
                tack.atomic_add(acc, 0, ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)))
            return acc[0]

        return dict(saxpy=saxpy, stencil=stencil, block_sum=block_sum,
                    acc=self.tack.zeros(1, self.tack.f64))

    def to_dev(self, host):
        return self.tack.array(host)

    def to_host(self, dev):
        return dev.numpy()

    def saxpy(self, ns, x, y):
        ns["saxpy"](x, y, A)

    def stencil(self, ns, u, out):
        ns["stencil"](u, out)

    def total(self, ns, x):
        ns["acc"].fill(0)
        return ns["block_sum"](x, ns["acc"], 16384)

    def sync(self):
        pass  # CPU launches complete before the call returns


class NumpyPeer:
    name = "numpy"
    threads = 1

    def __init__(self):
        self.version = np.__version__
        self._tmp = {}

    def kernels(self):
        return {}

    def to_dev(self, host):
        return host.copy()

    def to_host(self, dev):
        return dev.copy()

    def saxpy(self, ns, x, y):
        tmp = self._tmp.get(x.shape)
        if tmp is None:
            tmp = self._tmp[x.shape] = np.empty_like(x)
        np.multiply(x, np.float32(A), out=tmp)  # no temporary allocated per call
        np.add(y, tmp, out=y)

    def stencil(self, ns, u, out):
        out[1:-1, 1:-1] = np.float32(0.25) * (u[:-2, 1:-1] + u[2:, 1:-1]
                                              + u[1:-1, :-2] + u[1:-1, 2:])

    def total(self, ns, x):
        return float(x.sum())

    def sync(self):
        pass


class NumbaPeer:
    name = "numba"

    def __init__(self):
        import numba
        self.numba = numba
        self.version = numba.__version__
        self.threads = numba.get_num_threads()

    def kernels(self):
        numba, prange = self.numba, self.numba.prange

        @numba.njit(parallel=True, cache=False)
        def saxpy(x, y, a):
            for i in prange(x.shape[0]):
                y[i] = a * x[i] + y[i]

        @numba.njit(parallel=True, cache=False)
        def stencil(u, out):
            quarter = np.float32(0.25)
            for i in prange(u.shape[0] - 2):
                for j in range(u.shape[1] - 2):
                    out[i + 1, j + 1] = quarter * (u[i, j + 1] + u[i + 2, j + 1]
                                                   + u[i + 1, j] + u[i + 1, j + 2])

        @numba.njit(parallel=True, cache=False)
        def total(x):
            s = 0.0
            for i in prange(x.shape[0]):
                s += x[i]
            return s

        return dict(saxpy=saxpy, stencil=stencil, total=total)

    def to_dev(self, host):
        return host.copy()

    def to_host(self, dev):
        return dev.copy()

    def saxpy(self, ns, x, y):
        ns["saxpy"](x, y, np.float32(A))

    def stencil(self, ns, u, out):
        ns["stencil"](u, out)

    def total(self, ns, x):
        return float(ns["total"](x))

    def sync(self):
        pass


class WarpPeer:
    name = "warp"
    threads = 1  # Warp runs a CPU launch on the calling thread

    def __init__(self):
        import warp as wp
        self.wp = wp
        self.version = wp.__version__
        self._cache = tempfile.TemporaryDirectory(prefix="warp_cache_")
        wp.config.kernel_cache_dir = self._cache.name  # leave ~/.cache alone
        wp.config.log_level = logging.ERROR  # no banner, no "module load" lines
        wp.init()

    def kernels(self):
        wp = self.wp

        @wp.kernel
        def saxpy(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32),
                  a: wp.float32):
            i = wp.tid()
            y[i] = a * x[i] + y[i]

        @wp.kernel
        def stencil(u: wp.array2d(dtype=wp.float32), out: wp.array2d(dtype=wp.float32)):
            i, j = wp.tid()
            out[i + 1, j + 1] = 0.25 * (u[i, j + 1] + u[i + 2, j + 1]
                                        + u[i + 1, j] + u[i + 1, j + 2])

        return dict(saxpy=saxpy, stencil=stencil)

    def to_dev(self, host):
        return self.wp.array(host, dtype=self.wp.float32, device="cpu")

    def to_host(self, dev):
        return dev.numpy().copy()

    def saxpy(self, ns, x, y):
        self.wp.launch(ns["saxpy"], dim=x.shape[0], inputs=[x, y, A], device="cpu")

    def stencil(self, ns, u, out):
        n, m = u.shape
        self.wp.launch(ns["stencil"], dim=(n - 2, m - 2), inputs=[u, out], device="cpu")

    def total(self, ns, x):
        return float(self.wp.utils.array_sum(x))

    def sync(self):
        self.wp.synchronize_device("cpu")


class TaichiPeer:
    name = "taichi"

    def __init__(self):
        import taichi as ti
        self.ti = ti
        self.version = ".".join(map(str, ti.__version__))
        ti.init(arch=ti.cpu, offline_cache=False, log_level=ti.ERROR)
        self.threads = os.cpu_count()   # its CPU backend's default: one per core

    def kernels(self):
        ti = self.ti
        vector = grid = ti.template()   # fields: faster here than ti.ndarray arguments

        @ti.kernel
        def saxpy(x: vector, y: vector, a: ti.f32):
            for i in range(x.shape[0]):
                y[i] = a * x[i] + y[i]

        @ti.kernel
        def stencil(u: grid, out: grid):
            for i in range(1, u.shape[0] - 1):   # rows in parallel: faster than ndrange
                for j in range(1, u.shape[1] - 1):
                    out[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1]
                                        + u[i, j + 1])

        @ti.kernel
        def total(x: vector) -> ti.f32:
            s = 0.0
            for i in range(x.shape[0]):
                s += x[i]     # a reduction: Taichi makes it an atomic per thread block
            return s

        return dict(saxpy=saxpy, stencil=stencil, total=total)

    def to_dev(self, host):
        dev = self.ti.field(dtype=self.ti.f32, shape=host.shape)
        dev.from_numpy(host)
        return dev

    def to_host(self, dev):
        return dev.to_numpy()

    def saxpy(self, ns, x, y):
        ns["saxpy"](x, y, A)

    def stencil(self, ns, u, out):
        ns["stencil"](u, out)

    def total(self, ns, x):
        return float(ns["total"](x))

    def sync(self):
        self.ti.sync()


PEERS = dict(tack=TackPeer, numpy=NumpyPeer, numba=NumbaPeer, warp=WarpPeer,
             taichi=TaichiPeer)
MODULES = dict(tack="tack", numpy="numpy", numba="numba", warp="warp", taichi="taichi")
DISPLAY = dict(tack="Tack", numpy="NumPy", numba="Numba", warp="Warp", taichi="Taichi")
NOTES = (
    "saxpy: NumPy multiplies into a preallocated temporary, then adds in place.",
    "sum: Tack = block partials (8 accumulators each) + one atomic_add per block, "
    "read by an annotated return; NumPy = ndarray.sum; Numba = prange reduction "
    "(f64 accumulator); Warp = wp.utils.array_sum; Taichi = a kernel's += into "
    "its returned sum (an f32 reduction).",
    "cold: a new process; Tack with TACK_CACHE=off, Numba without cache, Warp with "
    "an empty kernel cache (its default options, so adjoints are compiled too), "
    "Taichi with offline_cache=False.",
)


# -- warm measurements --------------------------------------------------------------

def attempt(results, metric, fn):
    """``results[metric] = fn()``; a failing metric reports its error."""
    try:
        results[metric] = fn()
    except Exception as exc:  # reported in the table, never a crash
        results[metric] = f"error: {type(exc).__name__}: {exc}"
        results.setdefault("_errors", []).append(f"{metric}: {results[metric]}")


def measure_launches(peer, ns, sizes, host) -> dict:
    """The warm launch metrics of one framework."""
    results = {}

    def launch(n):
        x, y = peer.to_dev(host["x"][:n].copy()), peer.to_dev(host["y"][:n].copy())
        peer.saxpy(ns, x, y)
        peer.sync()
        check(f"{peer.name} saxpy n={n}", peer.to_host(y), host["ref"][:n])
        return median_launch_us(lambda: peer.saxpy(ns, x, y), sizes)

    attempt(results, "launch1", lambda: launch(1))
    attempt(results, "launch1024", lambda: launch(1024))
    return results


BANDWIDTH = ("saxpy", "stencil", "sum")
# A turn's warm-up lasts at least this many seconds (and TURN_WARM calls): the
# previous framework may leave worker threads spinning (OpenMP spin-waits up to
# about 20 ms, Tack's pool about 1 ms), which would slow this framework's
# threads on a small machine; after the warm-up they sleep, and this
# framework's own threads run as they do in a run of calls.
TURN_WARM_SECONDS = 0.03
TURN_WARM, TURN_TIMED = 2, 3


def bandwidth_setups(peer, ns, host) -> dict:
    """``{metric: (call, bytes moved per call)}`` for one framework, each checked
    against NumPy once; a metric that fails to set up is a string (its error)."""
    setups = {}

    def saxpy():
        x, y = peer.to_dev(host["x"]), peer.to_dev(host["y"])
        peer.saxpy(ns, x, y)
        peer.sync()
        check(f"{peer.name} saxpy", peer.to_host(y), host["ref"])

        def once():
            peer.saxpy(ns, x, y)
            peer.sync()
        return once, 12 * x.shape[0]

    def stencil():
        u, out = peer.to_dev(host["u"]), peer.to_dev(np.zeros_like(host["u"]))
        peer.stencil(ns, u, out)
        peer.sync()
        check(f"{peer.name} stencil", peer.to_host(out)[1:-1, 1:-1], host["lap"])

        def once():
            peer.stencil(ns, u, out)
            peer.sync()
        return once, 8 * (u.shape[0] - 2) * (u.shape[1] - 2)

    def total():
        x = peer.to_dev(host["x"])
        got = peer.total(ns, x)
        if abs(got - host["sum"]) > 1e-4 * abs(host["sum"]):
            raise AssertionError(f"{peer.name} sum: {got!r}, NumPy (f64) {host['sum']!r}")
        return (lambda: peer.total(ns, x)), 4 * host["x"].size

    for metric, make in zip(BANDWIDTH, (saxpy, stencil, total)):
        attempt(setups, metric, make)
    setups.pop("_errors", None)
    return setups


def measure_bandwidths(setups: dict, sizes, results: dict) -> None:
    """Run every framework's bandwidth metrics in turns, so that the machine's
    drift hits every framework alike: per round, each framework (the order
    rotating) makes untimed calls for ``TURN_WARM_SECONDS`` (at least
    ``TURN_WARM``), which bring its own arrays back into the caches and its
    threads back to work as a run of calls would have them, then
    ``TURN_TIMED`` timed ones, whose median is the round's sample. Stores each
    framework's median over rounds in GB/s, and for Tack the median over rounds
    of its throughput ratio to each peer within the round."""
    names = list(setups)
    for metric in BANDWIDTH:
        calls = {n: setups[n][metric] for n in names
                 if not isinstance(setups[n].get(metric, "missing"), str)}
        for n in names:
            if n not in calls:
                results[n][metric] = setups[n].get(metric, "n/a")
        order = list(calls)
        for _ in range(sizes["warmup"]):
            for n in order:
                calls[n][0]()
        seconds = {n: [] for n in order}
        for r in range(sizes["repeats"]):
            for n in order[r % len(order):] + order[:r % len(order)]:
                call, warm, until = calls[n][0], 0, time.perf_counter() + TURN_WARM_SECONDS
                while warm < TURN_WARM or time.perf_counter() < until:
                    call()
                    warm += 1
                turn = []
                for _ in range(TURN_TIMED):
                    start = time.perf_counter()
                    call()
                    turn.append(time.perf_counter() - start)
                seconds[n].append(statistics.median(turn))
        for n in order:
            results[n][metric] = calls[n][1] / statistics.median(seconds[n]) / 1e9
        if "tack" in seconds:
            for n in order:
                if n != "tack":
                    ratios = [p / t for t, p in zip(seconds["tack"], seconds[n])]
                    results["tack"][f"paired_{metric}_{n}"] = statistics.median(ratios)


def make_host(sizes, seed):
    rng = np.random.default_rng(seed)
    n, g = sizes["n"], sizes["grid"]
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    u = rng.random((g, g), dtype=np.float32)
    lap = np.float32(0.25) * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return dict(x=x, y=y, ref=np.float32(A) * x + y, u=u, lap=lap,
                sum=float(x.sum(dtype=np.float64)))


# -- cold first call in a new process -----------------------------------------------

COLD_IMPORT = dict(
    tack="import tack",
    numpy="import numpy",
    numba="import numba",
    warp="import warp as wp\nwp.config.kernel_cache_dir = os.path.join(TMP, 'warp')\n"
         "wp.config.log_level = 40\nwp.init()",
    taichi="import taichi as ti\nti.init(arch=ti.cpu, offline_cache=False, "
           "log_level=ti.ERROR)",
)

COLD_KERNEL = dict(
    tack='''
        import numpy as np
        import tack

        @tack.kernel
        def saxpy(x, y, a):
            for i in range(len(x)):
                y[i] = a * x[i] + y[i]

        def make(x, y):
            return tack.array(x), tack.array(y)

        def call(x, y):
            saxpy(x, y, 2.0)
            return y.numpy()
        ''',
    numpy='''
        import numpy as np

        def make(x, y):
            return x.copy(), y.copy()

        def call(x, y):
            y += np.float32(2.0) * x
            return y
        ''',
    numba='''
        import numpy as np
        import numba

        @numba.njit(parallel=True, cache=False)
        def saxpy(x, y, a):
            for i in numba.prange(x.shape[0]):
                y[i] = a * x[i] + y[i]

        def make(x, y):
            return x.copy(), y.copy()

        def call(x, y):
            saxpy(x, y, np.float32(2.0))
            return y
        ''',
    warp='''
        import numpy as np
        import warp as wp

        @wp.kernel
        def saxpy(x: wp.array(dtype=wp.float32), y: wp.array(dtype=wp.float32),
                  a: wp.float32):
            i = wp.tid()
            y[i] = a * x[i] + y[i]

        def make(x, y):
            return wp.array(x, device="cpu"), wp.array(y, device="cpu")

        def call(x, y):
            wp.launch(saxpy, dim=x.shape[0], inputs=[x, y, 2.0], device="cpu")
            wp.synchronize_device("cpu")
            return y.numpy()
        ''',
    taichi='''
        import numpy as np
        import taichi as ti

        @ti.kernel
        def saxpy(x: ti.types.ndarray(dtype=ti.f32, ndim=1),
                  y: ti.types.ndarray(dtype=ti.f32, ndim=1), a: ti.f32):
            for i in range(x.shape[0]):
                y[i] = a * x[i] + y[i]

        def make(x, y):
            dx, dy = ti.ndarray(ti.f32, x.shape), ti.ndarray(ti.f32, y.shape)
            dx.from_numpy(x)
            dy.from_numpy(y)
            return dx, dy

        def call(x, y):
            saxpy(x, y, 2.0)
            ti.sync()
            return y.to_numpy()
        ''',
)

COLD_DRIVER = '''
import json, os, sys, time
TMP = sys.argv[1]
t0 = time.perf_counter()
{imports}
t1 = time.perf_counter()
sys.path.insert(0, TMP)
import cold_kernel as K
t2 = time.perf_counter()
import numpy as np
x = np.linspace(0, 1, 1024, dtype=np.float32)
y = np.ones(1024, dtype=np.float32)
dx, dy = K.make(x, y)
t3 = time.perf_counter()
got = K.call(dx, dy)
t4 = time.perf_counter()
ok = bool(np.allclose(got, np.float32(2.0) * x + y, rtol=1e-6))
print(json.dumps(dict(import_s=t1 - t0, define_s=t2 - t1, first_s=t4 - t3, ok=ok)))
'''


def measure_cold(name) -> dict:
    """Import, kernel definition and first-call times of ``name`` in a new process."""
    with tempfile.TemporaryDirectory(prefix=f"cold_{name}_") as tmp:
        with open(os.path.join(tmp, "cold_kernel.py"), "w") as f:
            f.write(textwrap.dedent(COLD_KERNEL[name]))
        env = dict(os.environ, TACK_CACHE="off", NUMBA_CACHE_DIR=os.path.join(tmp, "numba"))
        driver = COLD_DRIVER.format(imports=COLD_IMPORT[name])
        done = subprocess.run([sys.executable, "-c", driver, tmp], env=env, cwd=tmp,
                              capture_output=True, text=True, timeout=600)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"cold subprocess failed (rc={done.returncode}): {tail}")
    out = json.loads(lines[-1])
    if not out["ok"]:
        raise AssertionError(f"{name} cold saxpy differs from NumPy")
    return dict(cold_import=out["import_s"] * 1e3, cold_define=out["define_s"] * 1e3,
                cold_first=out["first_s"] * 1e3)


# -- report -------------------------------------------------------------------------

def metric_rows(sizes):
    n, g = sizes["n"], sizes["grid"]
    count = f"{n / (1 << 20):g}M"
    # key, label, unit, higher is better
    return [
        ("launch1", "launch, 1-element saxpy", "us", False),
        ("launch1024", "launch, 1,024-element saxpy", "us", False),
        ("saxpy", f"saxpy {count} f32", "GB/s", True),
        ("stencil", f"5-point stencil {g}x{g} f32", "GB/s", True),
        ("sum", f"sum {count} f32", "GB/s", True),
        ("cold_import", "cold: import framework", "ms", False),
        ("cold_define", "cold: define kernel (module import)", "ms", False),
        ("cold_first", "cold: first call (compile + run)", "ms", False),
    ]


def fmt(value) -> str:
    if isinstance(value, str):
        return value if len(value) <= 14 else value[:11] + "..."
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if value < 10 else f"{value:.1f}"


def print_report(names, results, sizes):
    rows = metric_rows(sizes)
    label_w = max(len(f"{label} ({unit})") for _, label, unit, _ in rows) + 2
    print(f"{'':{label_w}}" + "".join(f"{DISPLAY[n]:>15}" for n in names))
    for key, label, unit, _ in rows:
        cells = []
        for n in names:
            r = results[n]
            cells.append(r if isinstance(r, str) else fmt(r.get(key, "n/a")))
        print(f"{label + f' ({unit})':{label_w}}" + "".join(f"{c:>15}" for c in cells))
    errors = [(n, e) for n in names if isinstance(results[n], dict)
              for e in results[n].get("_errors", [])]
    for n, e in errors:
        print(f"  {n}: {e}")

    print()
    for note in NOTES:
        print(textwrap.fill(note, 100, subsequent_indent="    "))

    tack = results.get("tack")
    peers = [n for n in names if n != "tack" and isinstance(results[n], dict)]
    if not isinstance(tack, dict) or not peers:
        return
    print("\nRatios, Tack / peer (throughput: >1 means Tack is faster; "
          "times: <1 means Tack is faster)")
    for key, label, unit, _ in rows:
        parts = []
        for n in peers:
            t, p = tack.get(key), results[n].get(key)
            paired = tack.get(f"paired_{key}_{n}")
            if paired is not None:
                parts.append(f"Tack/{DISPLAY[n]} {paired:.2f}x")
            elif isinstance(t, float) and isinstance(p, float) and p > 0:
                parts.append(f"Tack/{DISPLAY[n]} {t / p:.2f}x")
        if parts:
            print(f"  {label} ({unit}): " + ", ".join(parts))
    print("  (bandwidth ratios: the median over rounds of the ratio within a round, "
          "the frameworks taking turns)")


def measure_sort(n: int, seed: int) -> None:
    """tack.algorithms.radix_sort_pairs against NumPy's stable argsort + gather,
    i64 keys with i64 values (the CPU-performance issue's sort row)."""
    if "tack" not in sys.modules and importlib.util.find_spec("tack") is None:
        return
    import tack
    import tack.algorithms as A
    rng = np.random.default_rng(seed)
    keys = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n, dtype=np.int64)
    values = np.arange(n, dtype=np.int64)
    tk, tv = tack.array(keys), tack.array(values)
    sk, sv = A.radix_sort_pairs(tk, tv)
    order = np.argsort(keys, kind="stable")
    check("radix_sort_pairs", sv.numpy(), order, rtol=0, atol=0)

    def numpy_sort():
        o = np.argsort(keys, kind="stable")
        return keys[o], values[o]
    tack_s = statistics.median(_times(lambda: A.radix_sort_pairs(tk, tv), 5))
    numpy_s = statistics.median(_times(numpy_sort, 5))
    print(f"\nradix_sort_pairs, {n:,} i64 keys + i64 values: Tack {tack_s * 1e3:.1f} ms, "
          f"NumPy argsort(stable)+gather {numpy_s * 1e3:.1f} ms")
    print(f"  ratio (throughput): Tack/NumPy {numpy_s / tack_s:.2f}x")


def _times(call, repeats):
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        out.append(time.perf_counter() - start)
    return out


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes and few repeats (a smoke run, < 60 s)")
    parser.add_argument("--only", default=",".join(FRAMEWORKS),
                        help="comma-separated frameworks to run (default: all of "
                             + ",".join(FRAMEWORKS) + ")")
    parser.add_argument("--seed", type=int, default=None, help="input seed (default: random)")
    args = parser.parse_args(argv)
    names = [n.strip().lower() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in names if n not in FRAMEWORKS]
    if unknown or not names:
        parser.error(f"--only takes names from {','.join(FRAMEWORKS)}; got {args.only!r}")
    args.names = list(dict.fromkeys(names))
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    started = time.perf_counter()
    print(f"CPU peers benchmark ({'quick' if args.quick else 'full'}): Python "
          f"{platform.python_version()}, {os.cpu_count()} CPUs, seed {seed}")
    host = make_host(sizes, seed)
    results, setups, failed = {}, {}, False
    for name in args.names:
        if importlib.util.find_spec(MODULES[name]) is None:
            results[name] = "not installed"
            print(f"  {name}: not installed, skipped")
            continue
        try:
            peer = PEERS[name]()
        except Exception as exc:
            results[name] = "unavailable"
            print(f"  {name}: failed to start ({type(exc).__name__}: {exc}), skipped")
            continue
        print(f"  {name} {peer.version} (threads: {peer.threads}) ...", flush=True)
        ns = peer.kernels()
        results[name] = measure_launches(peer, ns, sizes, host)
        setups[name] = bandwidth_setups(peer, ns, host)
        try:
            results[name].update(measure_cold(name))
        except Exception as exc:
            message = f"error: {type(exc).__name__}: {exc}"
            results[name]["cold_first"] = message
            results[name].setdefault("_errors", []).append(f"cold: {message}")
    print(f"  bandwidths, {', '.join(setups)} in turns ...", flush=True)
    measure_bandwidths(setups, sizes, results)
    for name in setups:
        for metric in BANDWIDTH:
            if isinstance(results[name].get(metric), str):
                results[name].setdefault("_errors", []).append(
                    f"{metric}: {results[name][metric]}")
        failed |= bool(results[name].get("_errors"))
    setups.clear()
    print()
    print_report(args.names, results, sizes)
    if "tack" in args.names:
        measure_sort(1 << 20 if args.quick else 8_000_000, seed)
    print(f"\nTotal time {time.perf_counter() - started:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
