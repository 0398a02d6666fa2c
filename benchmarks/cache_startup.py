"""Start-up with Tack's disk cache: the first call of 20 kernels in a new process.

A temporary module defines 20 kernels (four shapes of code, each with its own
constants, some with a device function). Each scenario starts new processes
that import Tack, import the module and call every kernel once, timing each
first call (results are checked against NumPy afterwards):

* ``cold``: an empty cache directory (``TACK_CACHE=write``): every kernel
  is lowered, optimized, compiled and stored;
* ``warm``: the directory ``cold`` filled: every template and variant is a
  disk hit (read, verify, decode the IR, load the object code);
* ``bundle``: a directory holding only the bundle packed from it
  (``TACK_CACHE=bundle``; ``tack.cache.load_bundle()`` first);
* ``mpi4 bundle``: the same under ``mpiexec -n 4``, the bundle loaded
  collectively with ``tack.cache.load_bundle(comm=MPI.COMM_WORLD)``;
  ``mpi4 warm`` for comparison: every rank reads the directory itself.

* ``cold large``/``warm large``: the same two for a module of 6 large kernels
  (a 30-line body calling five of six shared 12-line device functions, about
  1,100 IR nodes once inlined), where decoding the IR and working out the keys
  weigh most.

Reported per scenario (medians over repeats; for MPI the slowest rank):
interpreter start-up (launch to the script's first line), ``import tack``
(and ``mpi4py``), defining the module, loading the bundle, the first call of
the first kernel (which also pays the process's one-time costs: LLVM's target
setup, the MCJIT engine, the thread pool's JIT, the compiler fingerprint),
the median first call of the other 19 (the per-kernel hit cost), the mean over
all 20, and the process's wall time. Targets (the project's design notes; docs/cache.md): a hit costs at most
10 ms per kernel in a new process, start-up excluded; four ranks starting
from the bundle take at most 1.5x one process's warm start-up.

Run:  python benchmarks/cache_startup.py [--repeats N] [--profile] [--no-mpi]
"""

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

KERNELS = 20
N = 1000

SHAPES = [
    # (device function or "", kernel body, NumPy reference of out from a, b, c)
    ("@tack.func\ndef f{k}(x):\n    return x * {c1} + {c2}\n",
     "for i in range(len(out)):\n        out[i] = f{k}(a[i]) - b[i] * {c3}",
     lambda a, b, c: (a * c["c1"] + c["c2"]) - b * c["c3"]),
    ("",
     "for i in range(1, len(out) - 1):\n"
     "        out[i] = (a[i - 1] + a[i + 1]) * {c1} - a[i] * {c2} + b[i]",
     lambda a, b, c: stencil(a, b, c["c1"], c["c2"])),
    ("@tack.func\ndef f{k}(x, y):\n    if x > y:\n        return x - y * {c1}\n"
     "    return y + x * {c2}\n",
     "for i in range(len(out)):\n        s = 0.0\n        for j in range(4):\n"
     "            s += f{k}(a[i], b[i]) * j\n        out[i] = s + {c3}",
     lambda a, b, c: np.where(a > b, a - b * c["c1"], b + a * c["c2"]) * 6.0 + c["c3"]),
    ("",
     "for i in range(len(out)):\n        out[i] = math.sqrt(a[i] * a[i] + b[i] * b[i])"
     " * {c1} + math.floor(b[i] * {c2})",
     lambda a, b, c: np.sqrt(a * a + b * b) * c["c1"] + np.floor(b * c["c2"])),
]


def stencil(a, b, c1, c2):
    out = np.zeros_like(a)
    out[1:-1] = (a[:-2] + a[2:]) * c1 - a[1:-1] * c2 + b[1:-1]
    return out


def module_source() -> str:
    lines = ["import math", "import tack", ""]
    for k in range(KERNELS):
        func, body, _ = SHAPES[k % len(SHAPES)]
        c = constants(k)
        if func:
            lines.append(func.format(k=k, **c))
        lines.append(f"@tack.kernel\ndef k{k}(a, b, out):\n    "
                     + body.format(k=k, **c) + "\n")
    return "\n".join(lines)


def constants(k):
    """Each kernel's constants, as the text the module spells them with."""
    return {"c1": f"{1.0 + k / 8:.3f}", "c2": f"{0.5 + k / 16:.4f}",
            "c3": f"{0.25 * (k + 1):.2f}"}


def reference(k, a, b):
    values = {name: float(text) for name, text in constants(k).items()}
    return SHAPES[k % len(SHAPES)][2](a, b, values)


LARGE_KERNELS, HELPERS, HELPER_LINES, BODY_LINES = 6, 6, 12, 30


def large_lines() -> tuple:
    """``(helpers, bodies)``: each helper's and each large kernel's lines of
    arithmetic, which stay within [-4, 4] for inputs in [-2, 2]; the module's
    source and the NumPy reference are both made from them."""
    helpers = [[f"x = x * {0.5 + 0.01 * j:.2f} + y * {0.25 + 0.01 * n:.2f} "
                f"- x * y * 0.0625" for n in range(HELPER_LINES)] for j in range(HELPERS)]
    bodies = []
    for k in range(LARGE_KERNELS):
        lines, called = [], [j for j in range(HELPERS) if j != k % HELPERS]
        for n in range(BODY_LINES // 2):     # a call on every third line
            lines.append(f"v = h{called[n // 3]}(v, w) * 0.75 + w * {0.125 + 0.01 * k:.3f}"
                         if n % 3 == 0 else f"v = v * 0.75 + w * {0.125 + 0.01 * n:.3f}")
            lines.append(f"w = w * 0.5 - v * {0.25 + 0.01 * n:.2f}")
        bodies.append(lines)
    return helpers, bodies


def large_module_source() -> str:
    helpers, bodies = large_lines()
    out = ["import tack", ""]
    for j, lines in enumerate(helpers):
        out += ["@tack.func", f"def h{j}(x, y):"] + [f"    {x}" for x in lines] + [
            "    return x", ""]
    for k, lines in enumerate(bodies):
        out += ["@tack.kernel", f"def k{k}(a, b, out):", "    for i in range(len(out)):",
                "        v = a[i]", "        w = b[i]"] + [f"        {x}" for x in lines] + [
            "        out[i] = v + w", ""]
    return "\n".join(out)


def large_reference(k, a, b):
    """The large kernel ``k`` on whole NumPy arrays: its lines run as they are."""
    helpers, bodies = large_lines()
    scope = {}
    for j, lines in enumerate(helpers):
        exec(f"def h{j}(x, y):\n" + "".join(f"    {x}\n" for x in lines) +
             "    return x\n", scope)
    scope.update(v=a.copy(), w=b.copy())
    exec("\n".join(bodies[k]), scope)
    return scope["v"] + scope["w"]


SUITES = {   # module name, kernel count, reference
    "small": ("startup_kernels", KERNELS, reference),
    "large": ("startup_large", LARGE_KERNELS, large_reference),
}


# -- the child: one new process (or one MPI rank) ------------------------------------

def child(args) -> None:
    started = time.time()
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    comm = None
    if args.mpi:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    t_mpi = time.perf_counter()
    import tack
    import tack.cache
    t_import = time.perf_counter()
    if args.profile:
        timers = instrument()
    sys.path.insert(0, args.module_dir)
    name, count, expected = SUITES[args.suite]
    module = importlib.import_module(name)
    t_define = time.perf_counter()
    cpu_define = time.process_time()
    loaded = None
    if args.bundle:
        loaded = tack.cache.load_bundle(comm=comm)
    t_load = time.perf_counter()
    cpu_load = time.process_time()
    gen = np.random.default_rng(7)
    inputs = [(gen.uniform(-2, 2, N), gen.uniform(-2, 2, N)) for _ in range(count)]
    arrays = [(tack.array(a), tack.array(b), tack.zeros(N, dtype=tack.f64))
              for a, b in inputs]
    calls = []
    for k in range(count):
        start = time.perf_counter()
        getattr(module, f"k{k}")(*arrays[k])
        calls.append(time.perf_counter() - start)
    cpu = (cpu_define - cpu0) + (time.process_time() - cpu_load)
    for k, ((a, b), (_, _, out)) in enumerate(zip(inputs, arrays)):
        np.testing.assert_allclose(out.numpy(), expected(k, a, b), rtol=1e-12,
                                   atol=1e-12, err_msg=f"kernel k{k}")
    result = {"started": started, "mpi": t_mpi - t0, "import": t_import - t_mpi,
              "define": t_define - t_import, "load": t_load - t_define,
              "calls": calls, "cpu": cpu, "stats": tack.cache.stats(), "loaded": loaded}
    if args.profile:
        result["profile"] = {name: sum(times) for name, times in timers.items()}
    if comm is not None:
        everyone = comm.gather(result)
        if comm.Get_rank() != 0:
            return
        result = {"ranks": everyone}
    print(json.dumps(result))


def instrument() -> dict:
    """Wrap the steps of a cache hit, and the process's one-time costs, with timers
    (for --profile). Only functions that do not call themselves are wrapped."""
    from tack.cache import core, kernels, store
    from tack.runtime.cpu import backend, jit, native_pool
    timers = {}

    def timed(owner, name, label):
        original = getattr(owner, name)
        timers[label] = []

        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                timers[label].append(time.perf_counter() - start)
        setattr(owner, name, wrapper)

    timed(kernels, "load_template", "hit: template, in all")
    timed(kernels, "load_variant", "hit: variant, in all")
    timed(core.KernelCache, "lookup", "hit: find, read and verify entries (lookup)")
    timed(store, "read_file", "hit:   of which reading the files")
    timed(store, "decode_entry", "hit:   of which SHA-256 and header checks")
    timed(backend.CPUBackend, "load_artifact", "hit: load object code (MCJIT)")
    timed(kernels, "ir_key", "key: template (sources, reachable functions)")
    timed(kernels, "variant_key", "key: variant")
    timed(core, "compiler_fingerprint", "once: compiler fingerprint (hash Tack's sources)")
    timed(jit, "host", "once: LLVM target machine")
    timed(jit, "engine", "once: MCJIT engine")
    timed(native_pool.NativePool, "__init__", "once: thread pool (compiles its own IR)")
    return timers


def derived(profile: dict) -> dict:
    """Add the IR decoding time: a hit's total less finding and loading."""
    hits = profile["hit: template, in all"] + profile["hit: variant, in all"]
    profile["hit: decode IR and metadata (JSON -> nodes)"] = (
        hits - profile["hit: find, read and verify entries (lookup)"]
        - profile["hit: load object code (MCJIT)"])
    return profile


# -- the parent -------------------------------------------------------------------------

def launch(command, env, timeout=600):
    launched = time.time()
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True,
                          timeout=timeout)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:4])} failed:\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    runs = result["ranks"] if "ranks" in result else [result]
    for run in runs:
        run["interpreter"] = run["started"] - launched
        run["wall"] = wall
    return runs


def summarize(runs) -> dict:
    """One process's (or the slowest rank's) numbers."""
    worst = max(runs, key=lambda r: r["mpi"] + r["import"] + r["define"] + r["load"]
                + sum(r["calls"]))
    calls = worst["calls"]
    return {
        "interpreter": worst["interpreter"], "mpi4py": worst["mpi"],
        "import": worst["import"], "define": worst["define"], "load": worst["load"],
        "first": calls[0], "other": statistics.median(calls[1:]),
        "mean": sum(calls) / len(calls), "calls": sum(calls),
        "startup": worst["import"] + worst["define"] + worst["load"] + sum(calls),
        "cpu": worst["cpu"], "wall": worst["wall"], "stats": [r["stats"] for r in runs],
    }


def median_of(summaries) -> dict:
    keys = [k for k in summaries[0] if k != "stats"]
    merged = {k: statistics.median(s[k] for s in summaries) for k in keys}
    merged["stats"] = summaries[-1]["stats"]
    return merged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true",
                        help="also time the steps of a hit in a warm process")
    parser.add_argument("--no-mpi", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mpi", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--bundle", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--module-dir", help=argparse.SUPPRESS)
    parser.add_argument("--suite", default="small", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return 0

    work = tempfile.mkdtemp(prefix="tack-startup-")
    os.chmod(work, 0o700)
    try:
        return run_all(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_all(args, work) -> int:
    module_dir = os.path.join(work, "module")
    os.makedirs(module_dir)
    for name, text in (("startup_kernels", module_source()),
                       ("startup_large", large_module_source())):
        with open(os.path.join(module_dir, name + ".py"), "w") as f:
            f.write(text)
    base = [sys.executable, os.path.abspath(__file__), "--child", "--module-dir",
            module_dir]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TACK_CACHE")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"

    def directory(name):
        path = os.path.join(work, name)
        os.makedirs(path, mode=0o700, exist_ok=True)
        return path

    results = {}
    cold = []
    for r in range(args.repeats):
        fresh = directory(f"cold{r}")
        cold.append(summarize(launch(base, dict(env, TACK_CACHE="write",
                                                TACK_CACHE_DIR=fresh))))
    results["cold"] = median_of(cold)
    warm_dir = os.path.join(work, f"cold{args.repeats - 1}")
    warm_env = dict(env, TACK_CACHE="write", TACK_CACHE_DIR=warm_dir)
    results["warm"] = median_of([summarize(launch(base, warm_env))
                                 for _ in range(args.repeats)])
    subprocess.run([sys.executable, "-m", "tack.cache", "pack"], env=warm_env,
                   check=True, capture_output=True)
    bundle_dir = directory("bundle")
    for name in os.listdir(warm_dir):
        if name.endswith(".tackb"):
            shutil.copy2(os.path.join(warm_dir, name), bundle_dir)
    bundle_env = dict(env, TACK_CACHE="bundle", TACK_CACHE_DIR=bundle_dir)
    results["bundle"] = median_of([summarize(launch(base + ["--bundle"], bundle_env))
                                   for _ in range(args.repeats)])
    large = base + ["--suite", "large"]
    large_dir = directory("large")
    results["cold large"] = median_of([summarize(launch(large, dict(
        env, TACK_CACHE="write", TACK_CACHE_DIR=directory(f"large{r}"))))
        for r in range(args.repeats)])
    launch(large, dict(env, TACK_CACHE="write", TACK_CACHE_DIR=large_dir))
    results["warm large"] = median_of([summarize(launch(large, dict(
        env, TACK_CACHE="write", TACK_CACHE_DIR=large_dir))) for _ in range(args.repeats)])
    mpiexec = shutil.which("mpiexec")
    mpi_ok = not args.no_mpi and mpiexec and _has_mpi4py()
    if mpi_ok:
        hydra = {"HYDRA_LAUNCHER": env.get("HYDRA_LAUNCHER", "fork")}
        for ranks in (4, 2):
            mpi = [mpiexec, "-n", str(ranks)]
            results[f"mpi{ranks} bundle"] = median_of([
                summarize(launch(mpi + base + ["--mpi", "--bundle"],
                                 dict(bundle_env, **hydra)))
                for _ in range(args.repeats)])
            results[f"mpi{ranks} warm"] = median_of([
                summarize(launch(mpi + base + ["--mpi"], dict(warm_env, **hydra)))
                for _ in range(args.repeats)])
    report(results, mpi_ok)
    if args.profile:
        profile(base, warm_env)
    return 0


def _has_mpi4py() -> bool:
    try:
        import mpi4py  # noqa: F401
        return True
    except ImportError:
        return False


def ms(seconds) -> str:
    return f"{seconds * 1e3:8.1f}"


def report(results, mpi_ok) -> None:
    import llvmlite
    import tack
    print(f"Tack {tack.__version__}, Python {sys.version.split()[0]}, llvmlite "
          f"{llvmlite.__version__}, {os.cpu_count()} CPUs; {KERNELS} kernels, "
          f"times in ms (median of repeats; MPI: the slowest rank)")
    columns = ["interpreter", "mpi4py", "import", "define", "load", "first", "other",
               "mean", "calls", "startup", "cpu", "wall"]
    print(f"{'scenario':<12}" + "".join(f"{c:>11}" for c in columns))
    for name, r in results.items():
        print(f"{name:<12}" + "".join(f"{ms(r[c]):>11}" for c in columns))
    print("  interpreter: launch to the script's first line; import: import tack; "
          "define: import the module of 20 kernels;")
    print("  first: the first kernel's first call (with the process's one-time costs); "
          "other: median first call of the others (19; 5 large);")
    print("  mean: all 20 first calls / 20; startup: import + define + load + calls; "
          "cpu: CPU time of import + define + calls")
    print("  (not the load, where MPI ranks spin); wall: the whole process (or mpiexec)")
    for name, r in results.items():
        print(f"  {name} cache stats: {r['stats'][0]}" + (
            f" (rank 0 of {len(r['stats'])})" if len(r["stats"]) > 1 else ""))
    warm, bundle = results["warm"], results["bundle"]
    print()
    print(f"per-kernel hit cost, new process, start-up excluded: warm {ms(warm['other'])} "
          f"ms (mean over all 20 {ms(warm['mean']).strip()} ms), bundle "
          f"{ms(bundle['other']).strip()} ms (mean {ms(bundle['mean']).strip()} ms); "
          f"target <= 10 ms")
    print(f"cold compile per kernel: {ms(results['cold']['other']).strip()} ms "
          f"(hit is {results['cold']['other'] / warm['other']:.0f}x faster)")
    cold_large, warm_large = results["cold large"], results["warm large"]
    print(f"large kernels ({BODY_LINES}-line body, five {HELPER_LINES}-line device "
          f"functions): hit {ms(warm_large['other']).strip()} ms per kernel, cold compile "
          f"{ms(cold_large['other']).strip()} ms ({cold_large['other'] / warm_large['other']:.0f}x); "
          f"target <= 10 ms")
    if mpi_ok:
        for ranks in (4, 2):
            many = results[f"mpi{ranks} bundle"]
            print(f"{ranks}-rank bundle start-up vs one warm process: "
                  f"{many['startup'] / warm['startup']:.2f}x in-process "
                  f"({ms(many['startup']).strip()} vs {ms(warm['startup']).strip()} ms; "
                  f"{(many['startup'] + many['mpi4py']) / warm['startup']:.2f}x with "
                  f"mpi4py's import), {many['wall'] / warm['wall']:.2f}x wall with "
                  f"mpiexec, "
                  f"{many['cpu'] / warm['cpu']:.2f}x CPU time per rank; target <= 1.5x")
        print(f"  ({os.cpu_count()} CPUs: more ranks than CPUs share them, so start-up "
              f"cannot beat ranks/CPUs times one process's)")
    else:
        print("MPI scenarios skipped (needs mpi4py and mpiexec: pip install mpi4py mpich)")


def profile(base, warm_env) -> None:
    runs = launch(base + ["--profile"], warm_env)
    r = runs[0]
    calls = sum(r["calls"])
    print()
    print(f"profile of one warm process: {KERNELS} first calls took {ms(calls).strip()} ms")
    for label, seconds in sorted(derived(r["profile"]).items()):
        print(f"  {label:<56}{ms(seconds)} ms  ({seconds / KERNELS * 1e3:.2f} ms/kernel)")


if __name__ == "__main__":
    sys.exit(main())
