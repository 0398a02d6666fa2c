"""The size limit: least recently used entries go first, down to 90% of the
limit; only files named like the cache's are touched; processes that store
entries prune at most once an hour, and only past the limit."""

from __future__ import annotations

import hashlib
import os
import time

import numpy as np
import pytest

import tack

HOUR = 3600


def fake_entries(directory, gen, count, version=None, age=HOUR, sizes=(100, 3000)):
    """``count`` entry files of random sizes, oldest first: [(path, size, mtime)]."""
    folder = os.path.join(directory, version or tack.__version__)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    made = []
    now = time.time()
    for k in range(count):
        size = int(gen.integers(*sizes))
        key = hashlib.sha256(gen.bytes(16)).hexdigest()
        path = os.path.join(folder, f"{key}.{'ir' if k % 2 else 'variant'}")
        with open(path, "wb") as f:
            f.write(gen.bytes(size))
        stamp = now - age - (count - k) * 10
        os.utime(path, (stamp, stamp))
        made.append((path, size, stamp))
    return made


def survivors(made, max_size):
    """The newest entries that fit in 90% of ``max_size`` (the documented rule)."""
    kept, total = [], sum(size for _, size, _ in made)
    budget = int(max_size * 0.9)
    for path, size, _ in sorted(made, key=lambda e: e[2]):
        if total <= budget:
            kept.append(path)
        else:
            total -= size
    return sorted(kept), total


def present(made):
    return sorted(p for p, _, _ in made if os.path.exists(p))


def test_prune_removes_the_least_recently_used_entries_of_every_version(cache_dir,
                                                                        seed):
    gen = np.random.default_rng(seed)
    made = fake_entries(cache_dir, gen, 6, version="0.0.1-old")
    made += fake_entries(cache_dir, gen, 6)
    made.sort(key=lambda e: e[2])
    total = sum(size for _, size, _ in made)
    limit = int(total * gen.uniform(0.2, 0.9))
    kept, left = survivors(made, limit)
    removed, bytes_left = tack.cache.prune(max_size=limit)
    assert present(made) == kept, f"seed={seed}"
    assert (removed, bytes_left) == (len(made) - len(kept), left), f"seed={seed}"
    assert bytes_left <= 0.9 * limit


def test_prune_touches_only_the_caches_own_names(cache_dir, seed):
    gen = np.random.default_rng(seed)
    made = fake_entries(cache_dir, gen, 3)
    folder = os.path.dirname(made[0][0])
    old = time.time() - 2 * HOUR
    keep = {"notes.ir": folder, "ABC.variant": folder, "x.tackb": cache_dir,
            ".tmp-fresh": folder, "last-prune": cache_dir,
            ".tmp-deep": os.path.join(folder, "sub")}
    for name, where in keep.items():
        os.makedirs(where, exist_ok=True)
        with open(os.path.join(where, name), "wb") as f:
            f.write(b"x" * 5000)
        if name != ".tmp-fresh":
            os.utime(os.path.join(where, name), (old, old))
    abandoned = [os.path.join(folder, ".tmp-abandoned"), os.path.join(cache_dir, ".tmp-a")]
    for path in abandoned:
        with open(path, "wb") as f:
            f.write(b"x")
        os.utime(path, (old, old))
    tack.cache.pack(cache_dir)
    removed, left = tack.cache.prune(max_size=0)
    assert (removed, left) == (3 + 2, 0)
    assert present(made) == []
    assert not any(os.path.exists(p) for p in abandoned)
    for name, where in keep.items():
        assert os.path.exists(os.path.join(where, name)), name
    assert os.path.exists(os.path.join(cache_dir, f"bundle-{tack.__version__}.tackb"))


def test_prune_defaults_to_the_size_limit(cache_dir, seed):
    gen = np.random.default_rng(seed)
    made = fake_entries(cache_dir, gen, 5)
    limit = sum(size for _, size, _ in made) // 2
    tack.cache.configure(directory=cache_dir, mode="write", max_size=limit)
    assert tack.cache.size_limit() == limit
    kept, left = survivors(made, limit)
    assert tack.cache.prune() == (5 - len(kept), left)
    assert present(made) == kept


def test_a_hit_makes_an_entry_the_most_recently_used(cache_dir, kernels, seed):
    a = tack.array(np.random.default_rng(seed).uniform(-1, 1, 9))
    out = tack.zeros(9, dtype=tack.f64)
    kernels.fresh(kernels.affine)(a, out)
    first = set(os.listdir(os.path.join(cache_dir, tack.__version__)))
    kernels.fresh(kernels.square_plus)(a, out)
    folder = os.path.join(cache_dir, tack.__version__)
    second = set(os.listdir(folder)) - first
    paths = {n: os.path.join(folder, n) for n in first | second}
    old = time.time() - 2 * HOUR
    for k, name in enumerate(sorted(first) + sorted(second)):   # affine's oldest
        os.utime(paths[name], (old + k, old + k))
    kernels.fresh(kernels.affine)(a, out)                         # two hits
    assert tack.cache.stats()["hits"] == 2
    affine_size = sum(os.path.getsize(paths[n]) for n in first)
    tack.cache.prune(max_size=int(affine_size / 0.9) + 1)
    assert sorted(os.listdir(folder)) == sorted(first)


def automatic_prune(cache_dir, tools, seed, limit, stamp_age=None):
    """A child storing two entries (a few KB) under TACK_CACHE_SIZE=limit(total),
    over 8 old entries of 50-100 KB: [(path, size, mtime)] of those, and total."""
    gen = np.random.default_rng(seed)
    made = fake_entries(cache_dir, gen, 8, sizes=(50_000, 100_000))
    total = sum(size for _, size, _ in made)
    stamp = os.path.join(cache_dir, "last-prune")
    if stamp_age is not None:
        open(stamp, "wb").close()
        os.utime(stamp, (time.time() - stamp_age,) * 2)
    size = str(limit(total)) if callable(limit) else limit
    result = tools.run_child(cache_dir, [["cache_kernels", "affine", "float32", 5]],
                             seed, env={"TACK_CACHE_SIZE": size})
    assert result["stats"]["writes"] == 2
    return made, total


def test_a_process_that_stores_prunes_past_the_limit(cache_dir, tools, seed):
    made, total = automatic_prune(cache_dir, tools, seed, lambda t: t // 2)
    oldest_first = [p for p, _, _ in sorted(made, key=lambda e: e[2])]
    kept = present(made)
    # Oldest first, down to 90% of the limit (the child's own entries count too).
    assert sorted(oldest_first[len(oldest_first) - len(kept):]) == kept, f"seed={seed}"
    assert sum(os.path.getsize(p) for p in kept) <= 0.9 * (total // 2), f"seed={seed}"
    assert 0 <= time.time() - os.stat(os.path.join(cache_dir, "last-prune")).st_mtime < HOUR


@pytest.mark.parametrize("case", ["pruned less than an hour ago", "under the limit",
                                  "unlimited"])
def test_a_process_that_stores_does_not_prune(case, cache_dir, tools, seed):
    if case == "pruned less than an hour ago":
        made, _ = automatic_prune(cache_dir, tools, seed, lambda t: t // 2,
                                  stamp_age=HOUR - 60)
    elif case == "under the limit":     # between 90% and 100% of it: kept
        made, _ = automatic_prune(cache_dir, tools, seed, lambda t: int(t / 0.93))
    else:
        made, _ = automatic_prune(cache_dir, tools, seed, "unlimited")
    assert present(made) == sorted(p for p, _, _ in made), f"seed={seed}"
    if case != "pruned less than an hour ago":   # a look that prunes nothing
        assert not os.path.exists(os.path.join(cache_dir, "last-prune"))   # keeps the hour


@tack.kernel
def _first_store(a):
    for i in range(len(a)):
        a[i] = 1.0


@tack.kernel
def _second_store(a):
    for i in range(len(a)):
        a[i] = 2.0


def test_each_configured_directory_gets_its_own_pruning(tmp_path, seed):
    gen = np.random.default_rng(seed)
    limit = 20_000
    try:
        for name, kernel in (("first", _first_store), ("second", _second_store)):
            directory = tmp_path / name
            directory.mkdir(mode=0o700)
            made = fake_entries(str(directory), gen, 30, sizes=(1000, 2000))
            tack.cache.configure(directory=str(directory), mode="write", max_size=limit)
            kernel(tack.zeros(4))   # stores entries, which prunes once per directory
            remaining = sum(os.path.getsize(p) for p, _, _ in made if os.path.exists(p))
            assert remaining <= limit, (name, remaining)
    finally:
        tack.cache.configure()


@tack.kernel
def _third_store(a):
    for i in range(len(a)):
        a[i] = 3.0


def test_a_process_that_keeps_storing_prunes_once_it_passes_the_limit(tmp_path, seed,
                                                                      monkeypatch):
    from tack.cache import core
    monkeypatch.setattr(core, "PRUNE_CHECK_SECONDS", 0.0)   # look at every store
    gen = np.random.default_rng(seed)
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    limit = 200_000
    try:
        tack.cache.configure(directory=str(directory), mode="write", max_size=limit)
        made = fake_entries(str(directory), gen, 10, sizes=(5_000, 10_000))
        _first_store(tack.zeros(4))       # under the limit: nothing pruned
        assert present(made) == sorted(p for p, _, _ in made)
        made += fake_entries(str(directory), gen, 30, sizes=(5_000, 10_000))
        _third_store(tack.zeros(4))       # past it now, in the same process
        left = sum(os.path.getsize(p) for p, _, _ in made if os.path.exists(p))
        assert left <= 0.9 * limit, f"seed={seed}"
    finally:
        tack.cache.configure()


def test_prune_counts_only_the_files_it_deleted(cache_dir, seed):
    # A name like an entry's that cannot be deleted (here a directory; a
    # read-only cache does the same) is neither counted nor subtracted.
    gen = np.random.default_rng(seed)
    made = fake_entries(cache_dir, gen, 3)
    stuck = os.path.join(os.path.dirname(made[0][0]), "b" * 64 + ".ir")
    os.mkdir(stuck)
    left = os.path.getsize(stuck)
    assert tack.cache.prune(max_size=0) == (3, left)
    assert present(made) == [] and os.path.isdir(stuck)
    assert tack.cache.describe()["bytes"] == left
