"""The disk cache across processes: hits, misses and stats, eight writers at once,
and no pickle on the way (spec 003, ``tack.cache``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

import tack

CALLS = [["cache_kernels", "affine", "float32", 0],
         ["cache_kernels", "affine", "float32", 1],
         ["cache_kernels", "affine", "float32", 37],
         ["cache_kernels", "square_plus", "int16", 19],
         ["cache_kernels", "doubled_first", "float64", 5]]


def test_a_new_process_hits_what_another_wrote(cache_dir, seed, tools):
    # 3 templates and 4 variants: the three sizes share one variant, and the
    # returned value's epilogue is a variant of its own.
    cold = tools.run_child(cache_dir, CALLS, seed)
    assert cold["stats"] == {"hits": 0, "misses": 7, "writes": 7}, seed
    assert len(tools.entries(cache_dir, ".ir")) == 3
    assert len(tools.entries(cache_dir, ".variant")) == 4
    warm = tools.run_child(cache_dir, CALLS, seed + 1)
    assert warm["stats"] == {"hits": 7, "misses": 0, "writes": 0}, seed
    assert cold["warnings"] == warm["warnings"] == []
    # the hits never load the compiler (about a third of import tack's time)
    assert cold["compiler"] == ["tack.lang.lower.kernel", "tack.ir.passes.pipeline",
                                "tack.codegen.llvm.module"]
    assert warm["compiler"] == []


def test_a_read_mode_process_hits_and_never_writes(cache_dir, seed, tools):
    tools.run_child(cache_dir, CALLS[:1], seed)
    before = {p: os.stat(p).st_mtime_ns for p in tools.entries(cache_dir)}
    reader = tools.run_child(cache_dir, CALLS[:1] + CALLS[3:4], seed, mode="read")
    assert reader["stats"] == {"hits": 2, "misses": 2, "writes": 0}, seed
    assert {p: os.stat(p).st_mtime_ns for p in tools.entries(cache_dir)} == before


def test_an_off_process_neither_reads_nor_writes(cache_dir, seed, tools):
    tools.run_child(cache_dir, CALLS[:1], seed)
    off = tools.run_child(cache_dir, CALLS[:1] + CALLS[3:4], seed, mode="off")
    assert off["stats"] == {"hits": 0, "misses": 0, "writes": 0}
    assert len(tools.entries(cache_dir)) == 2


WRITER_DTYPES = ["float64", "int32", "int64", "uint32", "uint64", "int16", "int8",
                 "uint16"]


def test_eight_processes_writing_at_once_leave_a_consistent_cache(cache_dir, seed,
                                                                   tools):
    """Every writer stores the same template and f32 variant (same keys) and one
    variant of its own (different keys), all starting at the same moment."""
    start = cache_dir.parent / "go"
    calls = [[["cache_kernels", "affine", "float32", 33],
              ["cache_kernels", "affine", dtype, 17]] for dtype in WRITER_DTYPES]
    writers = [subprocess.Popen(
        tools.child_command(c, seed, start_file=os.fspath(start)),
        env=tools.child_env(cache_dir), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True) for c in calls]
    try:
        time.sleep(0.5)           # let them all reach the start line
        start.touch()
        for process, c in zip(writers, calls):
            out, err = process.communicate(timeout=300)
            assert process.returncode == 0, err
            result = json.loads(out.strip().splitlines()[-1])
            tools.check_outputs(c, seed, result)
            assert result["warnings"] == [], result["warnings"]
    finally:
        for process in writers:
            if process.poll() is None:
                process.kill()
                process.wait()
    found = tools.entries(cache_dir)
    assert len(found) == 1 + 1 + len(WRITER_DTYPES)   # template, f32, one each
    for path in found:
        with open(path, "rb") as f:
            header, _ = tools.read_entry(f.read())
        key, kind = os.path.basename(path).split(".")
        assert (header["key"], header["kind"]) == (key, kind)
    leftovers = [n for n in os.listdir(os.path.dirname(found[0])) if n.startswith(".")]
    assert leftovers == []
    every = [["cache_kernels", "affine", d, 9] for d in ["float32"] + WRITER_DTYPES]
    check = tools.run_child(cache_dir, every, seed)
    assert check["stats"] == {"hits": 1 + len(every), "misses": 0, "writes": 0}


def test_no_pickle_is_used_to_store_load_pack_or_load_a_bundle(cache_dir, seed, tools):
    """Every pickle entry point fails in these children; the cache still works."""
    calls = [["cache_kernels", "affine", "float64", 11],
             ["cache_kernels", "doubled_first", "float32", 3]]
    cold = tools.run_child(cache_dir, calls, seed, forbid_pickle=True)
    assert cold["stats"] == {"hits": 0, "misses": 5, "writes": 5}  # 2 templates, 3 variants
    warm = tools.run_child(cache_dir, calls, seed, forbid_pickle=True)
    assert warm["stats"] == {"hits": 5, "misses": 0, "writes": 0}
    subprocess.run([sys.executable, "-m", "tack.cache", "pack"], check=True,
                   env=tools.child_env(cache_dir), capture_output=True, timeout=120)
    bundled = tools.run_child(cache_dir, calls, seed, mode="bundle",
                              forbid_pickle=True, load_bundle=True)
    assert bundled["loaded"] == 5
    assert bundled["stats"] == {"hits": 5, "misses": 0, "writes": 0}


BANNED_MODULES = {"pickle", "_pickle", "marshal", "shelve", "dill", "cloudpickle",
                  "joblib"}
# eval/exec run text; mpi4py's lower-case collectives pickle their objects.
BANNED_CALLS = {"eval", "exec", "bcast", "recv", "scatter", "gather", "allgather"}


def cache_sources():
    root = os.path.dirname(tack.__file__)
    folder = os.path.join(root, "cache")
    return sorted([os.path.join(folder, n) for n in os.listdir(folder)
                   if n.endswith(".py")] + [os.path.join(root, "ir", "serialize.py")])


@pytest.mark.parametrize("path", cache_sources(), ids=os.path.basename)
def test_no_cache_module_uses_a_serializer_that_runs_code(path):
    """Entries are JSON and object code: nothing in the cache, or the IR codec it
    uses, imports pickle, marshal or shelve, evaluates text or sends objects
    through mpi4py's pickling collectives."""
    import ast
    with open(path) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bad = {a.name.split(".")[0] for a in node.names} & BANNED_MODULES
        elif isinstance(node, ast.ImportFrom):
            bad = {(node.module or "").split(".")[0]} & BANNED_MODULES
        elif isinstance(node, ast.Call):
            called = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            bad = {called} & BANNED_CALLS
        else:
            continue
        assert not bad, f"{path}:{node.lineno} uses {bad}"


CHECKS = '''
import json, sys
import numpy as np
import tack, tack.cache
sys.path.insert(0, sys.argv[1])
from tally_kernel import tally

keys = tack.array(np.array([0, 2, 2, 3], np.int64))
counts, out = tack.zeros(4, tack.i32), tack.zeros(4, tack.i64)
tally(keys, counts, out)
refused = []
held = np.zeros(4, np.int64)
read_only = tack.array_from_ptr(held, (4,), tack.i64)
raw = np.zeros(64, np.uint8)
start = (-raw.ctypes.data) % 8 + 1
misaligned = tack.array_from_ptr(raw.ctypes.data + start, (4,), tack.i32, writable=True)
for args in ((keys, counts, read_only), (keys, misaligned, out)):
    try:
        tally(*args)
    except ValueError as exc:
        refused.append(str(exc))
print(json.dumps({"counts": counts.numpy().tolist(), "out": out.numpy().tolist(),
                  "refused": refused, "untouched": not held.any() and not raw.any(),
                  "stats": tack.cache.stats()}))
'''

TALLY = '''
import tack


@tack.kernel
def tally(keys, counts, out):
    for i in range(len(keys)):
        tack.atomic_add(counts, keys[i], 1)
        out[i] = keys[i] * 2
'''


def test_a_hit_keeps_refusing_read_only_and_misaligned_arrays(tmp_path, cache_dir, tools):
    """A variant entry holds which parameters the kernel writes and targets with
    atomics (not its IR): a process whose kernel is a hit checks them as one
    that compiled it does."""
    (tmp_path / "tally_kernel.py").write_text(TALLY)
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", CHECKS, os.fspath(tmp_path)],
                              env=tools.child_env(cache_dir, PYTHONDONTWRITEBYTECODE="1"),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    assert cold["stats"]["misses"] == 2 and warm["stats"] == {"hits": 2, "misses": 0,
                                                              "writes": 0}
    for run in runs:
        assert run["counts"] == [1, 0, 2, 1] and run["out"] == [0, 4, 4, 6]
        assert run["untouched"]
        assert [m.split(":")[1].split(",")[0] for m in run["refused"]] == [
            " parameter 'out' may be written", " parameter 'counts' is an atomic target"]
    for path in tools.entries(cache_dir, ".variant"):
        with open(path, "rb") as f:
            assert b'"written": ["counts", "out"]' in f.read()
