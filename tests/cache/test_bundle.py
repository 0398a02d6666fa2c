"""Bundles in one process: pack, load, every damaged shape (not used, one
warning, kernels compile), and the trust rule applied to the bundle's file."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import tack
from tack.cache import CacheWarning


@pytest.fixture
def packed(cache_dir, kernels, seed):
    """A bundle of affine's and square_plus's f64 entries, alone in a new
    directory (so hits can only come from it); the old directory is emptied."""
    a = tack.array(np.random.default_rng(seed).uniform(-1, 1, 5))
    out = tack.zeros(5, dtype=tack.f64)
    kernels.fresh(kernels.affine)(a, out)
    kernels.fresh(kernels.square_plus)(a, out)
    path, count = tack.cache.pack()
    assert count == 4
    directory = cache_dir.parent / "bundled"
    directory.mkdir(mode=0o700)
    moved = directory / os.path.basename(path)
    shutil.move(path, moved)
    tack.cache.clear(cache_dir)
    tack.cache.configure(directory=directory, mode="bundle")
    tack.cache.reset_stats()
    yield moved
    tack.cache.clear(directory)


def call_both(kernels, seed):
    """Fresh affine and square_plus on f64 inputs: the CacheWarnings raised."""
    host = np.random.default_rng(seed).uniform(-5, 5, 1 + seed % 50)
    a, out = tack.array(host), tack.zeros(len(host), dtype=tack.f64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernels.fresh(kernels.affine)(a, out)
        np.testing.assert_array_equal(out.numpy(), host * 3 + 1, err_msg=f"seed={seed}")
        kernels.fresh(kernels.square_plus)(a, out)
        np.testing.assert_array_equal(out.numpy(), host * host + 2,
                                      err_msg=f"seed={seed}")
    return [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


def test_a_loaded_bundle_answers_without_reading_the_directory(packed, kernels, seed):
    assert tack.cache.load_bundle() == 4
    opened = []

    def audit(event, args):
        if event == "open" and isinstance(args[0], str) and args[0].startswith(
                os.fspath(packed.parent)):
            opened.append(args[0])
    sys.addaudithook(audit)     # hooks cannot be removed: this one only records
    assert call_both(kernels, seed) == []
    assert tack.cache.stats() == {"hits": 4, "misses": 0, "writes": 0}
    assert opened == []


def test_load_bundle_takes_an_explicit_path(packed, cache_dir, kernels, seed):
    tack.cache.configure(directory=cache_dir, mode="write")
    assert tack.cache.load_bundle(packed) == 4
    assert call_both(kernels, seed) == []
    assert tack.cache.stats() == {"hits": 4, "misses": 0, "writes": 0}


def test_pack_leaves_out_damaged_entries(cache_dir, kernels, seed, tools):
    a = tack.array(np.random.default_rng(seed).uniform(-1, 1, 5))
    kernels.fresh(kernels.affine)(a, tack.zeros(5, dtype=tack.f64))
    damaged = tools.entries(cache_dir, ".variant")[0]
    with open(damaged, "r+b") as f:
        f.truncate(100)
    path, count = tack.cache.pack()
    assert count == 1
    with open(path, "rb") as f:
        header, blob = tools.read_bundle(f.read())
    (key, kind, offset, length, digest), = header["index"]
    assert kind == "ir" and tools.read_entry(blob[offset:offset + length])[0]["key"] == key


def test_an_empty_bundle_loads_nothing_quietly(cache_dir):
    path, count = tack.cache.pack()
    assert count == 0 and os.path.exists(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tack.cache.load_bundle() == 0


@pytest.mark.parametrize("comm", ["x", 0, object()])
def test_load_bundle_takes_a_communicator(cache_dir, comm):
    with pytest.raises(TypeError, match=re.escape(
            "load_bundle() takes an mpi4py communicator for comm, not "
            f"{type(comm).__name__}")):
        tack.cache.load_bundle(comm=comm)


def rewrite_header(**changes):
    def damage(data, gen, tools):
        header, blob = tools.read_bundle(data)
        return tools.make_bundle(dict(header, **changes), blob)
    return damage


def rewrite_index(change):
    def damage(data, gen, tools):
        header, blob = tools.read_bundle(data)
        index = [list(e) for e in header["index"]]
        change(index, len(blob), gen)
        return tools.make_bundle(dict(header, index=index), blob)
    return damage


def past_end(index, size, gen):
    index[int(gen.integers(0, len(index)))][2] = size


def negative(index, size, gen):
    index[int(gen.integers(0, len(index)))][3] = -1


def wrong_digest(index, size, gen):
    index[int(gen.integers(0, len(index)))][4] = "0" * 64


def without_index(data, gen, tools):
    header, blob = tools.read_bundle(data)
    del header["index"]
    return tools.make_bundle(header, blob)


def truncated(data, gen, tools):
    return data[:int(gen.integers(1, len(data)))]


def flipped(data, gen, tools):
    position = int(gen.integers(0, len(data)))
    return data[:position] + bytes([data[position] ^ 0xFF]) + data[position + 1:]


def flipped_in_an_entry(data, gen, tools):
    header, blob = tools.read_bundle(data)
    start = len(data) - len(blob)
    position = start + int(gen.integers(0, len(blob)))
    return data[:position] + bytes([data[position] ^ 0x01]) + data[position + 1:]


SHAPES = {
    "zero length": (lambda data, gen, tools: b"", ""),
    "not a bundle": (lambda data, gen, tools: b"TACKENT\x01" + data[8:],
                     "not a Tack bundle"),
    "truncated at a random offset": (truncated, ""),
    "a flipped byte anywhere": (flipped, ""),
    "a flipped bit in an entry": (flipped_in_an_entry, " is damaged"),
    "header length past the end": (
        lambda data, gen, tools: data[:8] + struct.pack("<Q", 1 << 40) + data[16:],
        "damaged header"),
    "another Tack version": (rewrite_header(tack="0.0.0-other"),
                             "made by another version (tack differ)"),
    "another bundle format": (rewrite_header(format=2),
                              "made by another version (format differ)"),
    "an index entry past the end": (rewrite_index(past_end),
                                    "an index entry points past the end of the file"),
    "a negative length": (rewrite_index(negative),
                          "an index entry points past the end of the file"),
    "a wrong digest": (rewrite_index(wrong_digest), " is damaged"),
    "an index that is not a list": (rewrite_header(index=7), "damaged index"),
    "an index entry of the wrong shape": (rewrite_header(index=[["k", "ir", "0", 1, ""]]),
                                          "damaged index"),
    "no index": (without_index, "damaged index (missing, or not a list)"),
    "an index that is an object": (rewrite_header(index={"k": 1}),
                                   "damaged index (missing, or not a list)"),
    "an index entry of the wrong length": (
        rewrite_header(index=[["k", "ir", 0]]),
        "damaged index (an entry is not [key, kind, offset, length, digest])"),
    "a header that is not an object": (
        lambda data, gen, tools: tools.make_bundle([1, 2], b""),
        "damaged header (not a JSON object)"),
    "a header nested past the recursion limit": (
        lambda data, gen, tools: data[:8] + struct.pack("<Q", 200_000)
        + b"[" * 100_000 + b"]" * 100_000,
        "damaged header (RecursionError: "),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_damaged_bundle_is_not_used_and_kernels_compile(shape, packed, kernels,
                                                          seed, tools):
    damage, reason = SHAPES[shape]
    with open(packed, "rb") as f:
        data = f.read()
    with open(packed, "wb") as f:
        f.write(damage(data, np.random.default_rng(seed), tools))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert tack.cache.load_bundle() == 0, f"seed={seed}"
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1, messages
    assert messages[0].startswith(f"Tack's kernel bundle {packed} is not used: ")
    assert reason in messages[0] and messages[0].endswith("; kernels compile instead")
    assert tack.cache.describe()["bundle_entries_loaded"] == 0
    assert call_both(kernels, seed) == []
    assert tack.cache.stats() == {"hits": 0, "misses": 4, "writes": 4}


def test_a_missing_bundle_is_not_used(cache_dir, kernels, seed):
    tack.cache.configure(directory=cache_dir, mode="bundle")
    path = os.path.join(cache_dir, f"bundle-{tack.__version__}.tackb")
    with pytest.warns(CacheWarning) as caught:
        assert tack.cache.load_bundle() == 0
    assert [str(w.message) for w in caught] == [
        f"Tack's kernel bundle {path} is not used: [Errno 2] No such file or directory: "
        f"'{path}'; kernels compile instead"]
    assert call_both(kernels, seed) == []


def test_a_fifo_where_the_bundle_should_be_is_not_used(cache_dir, kernels, seed):
    """Opening a FIFO waits for a writer: the loader must not open it."""
    tack.cache.configure(directory=cache_dir, mode="bundle")
    path = os.path.join(cache_dir, f"bundle-{tack.__version__}.tackb")
    os.mkfifo(path, 0o600)
    timer = threading.Timer(10.0, lambda: os.close(os.open(path, os.O_RDWR)))
    timer.start()   # unblocks a reader that waits, so the test fails instead of hanging
    try:
        with pytest.warns(CacheWarning) as caught:
            assert tack.cache.load_bundle() == 0
    finally:
        timer.cancel()
    assert [str(w.message) for w in caught] == [
        f"Tack's kernel bundle {path} is not used: [Errno 22] not a regular file; "
        f"kernels compile instead"]
    assert call_both(kernels, seed) == []


@pytest.mark.parametrize("what", ["a group-writable directory", "a group-writable file",
                                  "a directory through a symbolic link"])
def test_an_untrusted_bundle_is_not_used(what, packed, kernels, seed):
    """Its code would be executed: the directory rule applies to it too."""
    path = packed
    if what == "a group-writable directory":
        os.chmod(packed.parent, 0o770)
        reason = "its directory is not trusted: other users can write to it"
    elif what == "a group-writable file":
        os.chmod(packed, 0o660)
        reason = "the file is not trusted: other users can write to it"
    else:
        link = packed.parent.parent / "link"
        link.symlink_to(packed.parent)
        path = link / packed.name
        reason = "its directory is not trusted: it is reached through a symbolic link"
    with pytest.warns(CacheWarning) as caught:
        assert tack.cache.load_bundle(path) == 0
    assert [str(w.message) for w in caught] == [
        f"Tack's kernel bundle {path} is not used: {reason}; kernels compile instead"]
    os.chmod(packed.parent, 0o700)
    assert call_both(kernels, seed) == []
    assert tack.cache.stats()["hits"] == 0


def test_pack_raises_when_the_bundle_cannot_be_written(cache_dir, kernels, seed, tools):
    # Not a warning once per directory, as for an entry: the caller asked for
    # this file, and a job started "from the bundle" would compile everything.
    a = tack.array(np.random.default_rng(seed).uniform(-1, 1, 5))
    kernels.fresh(kernels.affine)(a, tack.zeros(5, dtype=tack.f64))
    path = os.path.join(cache_dir, f"bundle-{tack.__version__}.tackb")
    os.mkdir(path)   # what is in the way: a directory (or a read-only cache)
    for _ in range(2):
        with pytest.raises(OSError, match=f"Tack's kernel cache could not write {path}"):
            tack.cache.pack()
    done = subprocess.run([sys.executable, "-m", "tack.cache", "pack"],
                          env=tools.child_env(cache_dir), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(
        f"python -m tack.cache: error: Tack's kernel cache could not write {path}: ")
    assert sorted(os.listdir(cache_dir)) == sorted([tack.__version__, os.path.basename(path)])


def test_pack_since_takes_only_the_entries_used_from_then_on(cache_dir, kernels, seed,
                                                              tools):
    a = tack.array(np.random.default_rng(seed).uniform(-1, 1, 5))
    out = tack.zeros(5, dtype=tack.f64)
    kernels.fresh(kernels.affine)(a, out)               # an earlier run's entries
    old = set(tools.entries(cache_dir))
    past = max(os.stat(p).st_mtime for p in old) - 100
    for path in old:
        os.utime(path, (past, past))
    start = past + 50
    kernels.fresh(kernels.square_plus)(a, out)          # written after start
    assert tack.cache.pack(since=start)[1] == 2
    kernels.fresh(kernels.affine)(a, out)               # a hit refreshes its stamps
    path, count = tack.cache.pack(since=start)
    assert count == 4 and tack.cache.pack()[1] == 4


def test_pack_since_a_time_no_entry_was_used_after_keeps_the_bundle(cache_dir, kernels,
                                                                    seed, tools):
    a = tack.array(np.random.default_rng(seed).uniform(-1, 1, 5))
    kernels.fresh(kernels.affine)(a, tack.zeros(5, dtype=tack.f64))
    path, _ = tack.cache.pack()
    with open(path, "rb") as f:
        packed = f.read()
    later = max(os.stat(p).st_mtime for p in tools.entries(cache_dir)) + 10
    with pytest.raises(ValueError, match="no entry of .* was used since .*; the bundle "
                                         "was not written"):
        tack.cache.pack(since=later)
    with open(path, "rb") as f:
        assert f.read() == packed


@pytest.mark.parametrize("since", [np.int64(0), np.float32(1.0), 0])
def test_pack_since_takes_numpy_numbers(cache_dir, kernels, seed, since):
    a = tack.array(np.random.default_rng(seed).uniform(-1, 1, 5))
    kernels.fresh(kernels.affine)(a, tack.zeros(5, dtype=tack.f64))
    assert tack.cache.pack(since=since)[1] == 2       # every entry is newer


@pytest.mark.parametrize("since", ["yesterday", True, np.bool_(True), [1.0]])
def test_pack_refuses_a_since_that_is_not_a_time(cache_dir, since):
    with pytest.raises(TypeError, match="pack\\(\\) takes a POSIX time"):
        tack.cache.pack(since=since)


def test_loaded_entries_are_views_of_one_buffer(packed, kernels, seed):
    """The bundle is held once: every entry is a read-only view of the buffer it
    was read into, and a hit still decodes (it copies its own entry)."""
    assert tack.cache.load_bundle() == 4
    from tack.cache.core import cache
    views = list(cache().memory.values())
    assert all(isinstance(v, memoryview) and v.readonly for v in views)
    assert len({id(v.obj) for v in views}) == 1
    assert call_both(kernels, seed) == []
    assert tack.cache.stats() == {"hits": 4, "misses": 0, "writes": 0}
