"""``python -m tack.cache info | pack | prune [--max-size SIZE] | clear [--all]``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np

import tack


def cli(tools, directory, *args, **env):
    done = subprocess.run([sys.executable, "-m", "tack.cache", *args],
                          env=tools.child_env(directory, **env), capture_output=True,
                          text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


def test_info_pack_prune_clear_round_trip(cache_dir, tools, kernels, seed):
    a = tack.array(np.random.default_rng(seed).uniform(-1, 1, 6))
    out = tack.zeros(6, dtype=tack.f64)
    kernels.fresh(kernels.affine)(a, out)
    kernels.fresh(kernels.square_plus)(a, out)
    entries = tools.entries(cache_dir)
    size = sum(os.path.getsize(p) for p in entries)

    code, text, _ = cli(tools, cache_dir, "info")
    info = json.loads(text)
    assert code == 0
    assert {k: info[k] for k in ("directory", "mode", "entries", "bytes", "bundle")} == {
        "directory": os.fspath(cache_dir), "mode": "write", "entries": 4, "bytes": size,
        "bundle": None}

    bundle = os.path.join(cache_dir, f"bundle-{tack.__version__}.tackb")
    assert cli(tools, cache_dir, "pack") == (0, f"packed 4 entries into {bundle}\n", "")
    assert json.loads(cli(tools, cache_dir, "info")[1])["bundle"] == bundle
    with open(bundle, "rb") as f:
        header, _ = tools.read_bundle(f.read())
    assert sorted(f"{key}.{kind}" for key, kind, *_ in header["index"]) == sorted(
        os.path.basename(p) for p in entries)

    assert cli(tools, cache_dir, "prune", "--max-size", "unlimited") == (
        0, f"removed 0 files; {size} bytes left\n", "")
    assert cli(tools, cache_dir, "prune", "--max-size", "0") == (
        0, "removed 4 files; 0 bytes left\n", "")
    assert os.path.exists(bundle)           # pruning keeps bundles
    old = os.path.join(cache_dir, "0.0.1-old")
    os.makedirs(old)
    with open(os.path.join(old, "a" * 64 + ".ir"), "wb") as f:
        f.write(b"old")
    assert cli(tools, cache_dir, "clear") == (0, "removed 1 files\n", "")   # the bundle
    assert cli(tools, cache_dir, "clear", "--all") == (0, "removed 1 files\n", "")
    info = json.loads(cli(tools, cache_dir, "info")[1])
    assert (info["entries"], info["bundle"]) == (0, None)


def test_prune_without_max_size_uses_tack_cache_size(cache_dir, tools, kernels, seed):
    a = tack.array(np.random.default_rng(seed).uniform(-1, 1, 6))
    kernels.fresh(kernels.affine)(a, tack.zeros(6, dtype=tack.f64))
    assert cli(tools, cache_dir, "prune", TACK_CACHE_SIZE="0") == (
        0, "removed 2 files; 0 bytes left\n", "")


def test_bad_values_are_usage_errors(cache_dir, tools):
    code, text, error = cli(tools, cache_dir, "prune", "--max-size", "lots")
    assert (code, text) == (2, "")
    assert error.endswith("python -m tack.cache: error: max_size='lots': use bytes, a "
                          "size such as 500M or 2G, or unlimited\n"), error
    code, _, error = cli(tools, cache_dir, "info", TACK_CACHE="sometimes")
    assert code == 2
    assert "error: TACK_CACHE='sometimes': use write, read, bundle or off" in error
    code, _, error = cli(tools, cache_dir)
    assert code == 2 and re.search(r"usage: python -m tack.cache .*info,pack,prune,clear",
                                   error), error


def test_pack_since_a_file_packs_what_was_used_after_it_changed(cache_dir, tools,
                                                               kernels, seed):
    a = tack.array(np.random.default_rng(seed).uniform(-1, 1, 6))
    out = tack.zeros(6, dtype=tack.f64)
    kernels.fresh(kernels.affine)(a, out)
    for path in tools.entries(cache_dir):
        os.utime(path, (1_000_000_000, 1_000_000_000))    # an old run's entries
    stamp = cache_dir.parent / "warm-start"
    stamp.touch()
    kernels.fresh(kernels.square_plus)(a, out)
    bundle = os.path.join(cache_dir, f"bundle-{tack.__version__}.tackb")
    assert cli(tools, cache_dir, "pack", "--since", os.fspath(stamp)) == (
        0, f"packed 2 entries into {bundle}\n", "")
    code, text, err = cli(tools, cache_dir, "pack", "--since", os.fspath(stamp) + "-none")
    assert (code, text) == (1, "")
    assert err == (f"python -m tack.cache: error: {stamp}-none: No such file or "
                   f"directory\n")
    for path in tools.entries(cache_dir):
        os.utime(path, (1_000_000_000, 1_000_000_000))
    code, text, err = cli(tools, cache_dir, "pack", "--since", os.fspath(stamp))
    assert (code, text) == (2, "") and "the bundle was not written" in err
