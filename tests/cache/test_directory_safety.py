"""The trust boundary: compiled code in the cache is executed, so a directory is
used only when it belongs to the user, nobody else can write to it and no
symbolic link leads to it. Otherwise: one RuntimeWarning, the cache is off
for the process, and kernels still compile and run."""

from __future__ import annotations

import os
import stat
import warnings

import numpy as np
import pytest

import tack


def run_twice(kernels, seed):
    """Two fresh kernels (two templates, two variants); the warnings they raised."""
    gen = np.random.default_rng(seed)
    host = gen.uniform(-5, 5, 21)
    a, out = tack.array(host), tack.zeros(21, dtype=tack.f64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernels.fresh(kernels.affine)(a, out)
        np.testing.assert_array_equal(out.numpy(), host * 3 + 1, err_msg=f"seed={seed}")
        kernels.fresh(kernels.square_plus)(a, out)
        np.testing.assert_array_equal(out.numpy(), host * host + 2, err_msg=f"seed={seed}")
    return [w for w in caught if issubclass(w.category, RuntimeWarning)]


def files_under(directory):
    return sorted(os.path.join(r, n) for r, _, names in os.walk(directory) for n in names)


def snapshot(directory):
    """Each file's modification time and bytes."""
    found = {}
    for path in files_under(directory):
        with open(path, "rb") as f:
            found[path] = (os.stat(path).st_mtime_ns, f.read())
    return found


def refused(directory, reason):
    return (f"Tack's kernel cache is off: {directory} is not used because {reason}")


@pytest.mark.parametrize("mode", ["write", "read", "bundle"])
@pytest.mark.parametrize("bits", [stat.S_IWGRP, stat.S_IWOTH], ids=["group", "others"])
def test_a_directory_others_can_write_to_is_refused(bits, mode, tmp_path, kernels,
                                                    seed):
    directory = tmp_path / "shared"
    directory.mkdir()
    os.chmod(directory, 0o700 | bits)
    tack.cache.configure(directory=directory, mode=mode)
    try:
        tack.cache.reset_stats()
        caught = run_twice(kernels, seed)
        assert [str(w.message) for w in caught] == [
            refused(directory, "other users can write to it")]
        assert issubclass(caught[0].category, RuntimeWarning)
        assert tack.cache.stats()["writes"] == 0
        assert files_under(directory) == []
    finally:
        tack.cache.configure()


def test_a_directory_reached_through_a_symbolic_link_is_refused(tmp_path, kernels,
                                                                seed):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    tack.cache.configure(directory=link, mode="write")
    try:
        caught = run_twice(kernels, seed)
        assert [str(w.message) for w in caught] == [
            refused(link, "it is reached through a symbolic link")]
        assert files_under(real) == []
    finally:
        tack.cache.configure()


def test_a_directory_below_a_symbolic_link_is_refused(tmp_path, kernels, seed):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    directory = tmp_path / "link" / "cache"
    tack.cache.configure(directory=directory, mode="write")
    try:
        caught = run_twice(kernels, seed)
        assert [str(w.message) for w in caught] == [
            refused(directory, "it is reached through a symbolic link")]
        assert files_under(real) == []
    finally:
        tack.cache.configure()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="giving a directory to another user needs root")
def test_a_directory_of_another_user_is_refused(tmp_path, kernels, seed):
    directory = tmp_path / "theirs"
    directory.mkdir(mode=0o700)
    os.chown(directory, 65534, 65534)
    tack.cache.configure(directory=directory, mode="write")
    try:
        caught = run_twice(kernels, seed)
        assert [str(w.message) for w in caught] == [
            refused(directory, "it belongs to another user")]
        assert files_under(directory) == []
    finally:
        tack.cache.configure()


def test_write_mode_creates_a_missing_directory_private(tmp_path, kernels, seed):
    directory = tmp_path / "new" / "cache"
    tack.cache.configure(directory=directory, mode="write")
    try:
        assert run_twice(kernels, seed) == []
        for level in (directory.parent, directory):   # every level it made
            assert stat.S_IMODE(os.stat(level).st_mode) == 0o700, level
        assert tack.cache.describe()["entries"] == 4
        for path in files_under(directory):
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    finally:
        tack.cache.clear(directory=directory, all_versions=True)
        tack.cache.configure()


def test_read_mode_does_not_create_a_missing_directory(tmp_path, kernels, seed):
    directory = tmp_path / "absent"
    tack.cache.configure(directory=directory, mode="read")
    try:
        tack.cache.reset_stats()
        assert run_twice(kernels, seed) == []
        assert not directory.exists()
        assert tack.cache.stats() == {"hits": 0, "misses": 4, "writes": 0}
    finally:
        tack.cache.configure()


def test_a_read_only_directory_serves_hits_in_read_mode(cache_dir, kernels, seed):
    assert run_twice(kernels, seed) == []             # warm it in write mode
    folder = os.path.join(cache_dir, tack.__version__)
    before = snapshot(cache_dir)
    for path in files_under(cache_dir):
        os.chmod(path, 0o400)
    os.chmod(folder, 0o500)
    os.chmod(cache_dir, 0o500)
    try:
        tack.cache.configure(directory=cache_dir, mode="read")
        tack.cache.reset_stats()
        assert run_twice(kernels, seed + 1) == []
        assert tack.cache.stats() == {"hits": 4, "misses": 0, "writes": 0}
        assert snapshot(cache_dir) == before          # not even the LRU stamps
    finally:
        os.chmod(cache_dir, 0o700)
        os.chmod(folder, 0o700)
        tack.cache.configure(directory=cache_dir, mode="write")


def test_a_directory_that_cannot_be_written_warns_once(cache_dir, kernels, seed,
                                                     monkeypatch):
    # Regression: each new entry warned, naming its random temporary file, so
    # no warning filter collapsed them (a read-only directory in write mode;
    # root may write anywhere, so the refusal is made here).
    import tempfile

    def refuse(prefix, dir):
        raise PermissionError(13, "Permission denied", os.path.join(dir, prefix + "x1y2"))
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    caught = run_twice(kernels, seed)   # four entries to write, none written
    messages = [str(w.message) for w in caught]
    folder = os.path.join(cache_dir, tack.__version__)
    assert messages == [f"Tack's kernel cache could not write in {folder}: Permission "
                        f"denied (later failed writes there are not reported)"]
    assert tack.cache.stats() == {"hits": 0, "misses": 4, "writes": 0}


def _warm(kernels, seed, directory):
    """Entries written by this user, then forgotten by the process."""
    tack.cache.configure(directory=directory, mode="write")
    assert run_twice(kernels, seed) == []
    tack.cache.configure(directory=directory, mode="read")
    tack.cache.reset_stats()
    return os.path.join(directory, tack.__version__)


def _loosen(bits):
    def spoil(inner, tmp_path):
        os.chmod(inner, 0o700 | bits)
    return spoil, "other users can write to it"


def _linked(inner, tmp_path):
    moved = tmp_path / "elsewhere"
    os.rename(inner, moved)
    os.symlink(moved, inner)


@pytest.mark.parametrize("spoil, reason", [
    _loosen(stat.S_IWGRP), _loosen(stat.S_IWOTH),
    (_linked, "it is reached through a symbolic link")],
    ids=["group-writable", "others-writable", "symbolic link"])
def test_an_unsafe_version_directory_is_refused(spoil, reason, tmp_path, kernels, seed):
    # The root is private, but the entries sit one level down: a loose
    # version directory lets anyone put code there.
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    try:
        inner = _warm(kernels, seed, directory)
        spoil(inner, tmp_path)
        tack.cache.configure(directory=directory, mode="read")   # checked afresh
        caught = run_twice(kernels, seed)
        assert [str(w.message) for w in caught] == [refused(inner, reason)]
        assert tack.cache.stats()["hits"] == 0
    finally:
        tack.cache.configure()


def test_an_entry_file_others_can_write_to_is_ignored(tmp_path, kernels, seed):
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    try:
        inner = _warm(kernels, seed, directory)
        loose = sorted(os.listdir(inner))[0]
        os.chmod(os.path.join(inner, loose), 0o620)
        caught = run_twice(kernels, seed)   # results checked against NumPy inside
        assert [str(w.message) for w in caught] == [
            f"Tack's kernel cache ignores {os.path.join(inner, loose)}: "
            "other users can write to it"]
        assert tack.cache.stats() == {"hits": 3, "misses": 1, "writes": 0}
    finally:
        tack.cache.configure()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="giving a file to another user needs root")
def test_an_entry_file_of_another_user_is_ignored(tmp_path, kernels, seed):
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    try:
        inner = _warm(kernels, seed, directory)
        for name in os.listdir(inner):
            os.chown(os.path.join(inner, name), 65534, 65534)
        caught = run_twice(kernels, seed)
        assert len(caught) == 4 and all(
            str(w.message).endswith(": it belongs to another user") for w in caught)
        assert tack.cache.stats()["hits"] == 0
    finally:
        tack.cache.configure()


def test_a_directory_spelled_with_two_leading_slashes_is_used(tmp_path, kernels, seed):
    """POSIX keeps exactly two leading slashes in an absolute path (Linux reads
    them as one): no symbolic link is involved (TACK_CACHE_DIR=/$TMPDIR/x)."""
    directory = "/" + os.fspath(tmp_path / "cache")
    tack.cache.configure(directory=directory, mode="write")
    try:
        tack.cache.reset_stats()
        assert run_twice(kernels, seed) == []
        assert tack.cache.stats()["writes"] == 4
    finally:
        tack.cache.configure()


def test_a_bytes_directory_is_a_path_like_any_other(tmp_path, kernels, seed):
    directory = tmp_path / "cache"
    tack.cache.configure(directory=os.fsencode(directory), mode="write")
    try:
        tack.cache.reset_stats()
        assert run_twice(kernels, seed) == []
        assert tack.cache.stats()["writes"] == 4
        assert tack.cache.describe(os.fsencode(directory))["entries"] == 4
        path, count = tack.cache.pack(os.fsencode(directory))
        assert count == 4 and os.path.exists(path)
        assert tack.cache.prune(os.fsencode(directory), max_size=0)[0] == 4
    finally:
        tack.cache.configure()


def test_a_cache_directory_removed_during_a_run_comes_back_private(tmp_path, kernels,
                                                                   seed):
    """makedirs gives its mode to the last directory only: the cache directory
    came back as 0777 less the umask (0775 under umask 002), which the next
    process refused as writable by others."""
    import shutil
    directory = tmp_path / "cache"
    tack.cache.configure(directory=directory, mode="write")
    old = os.umask(0o002)
    try:
        assert run_twice(kernels, seed) == []
        shutil.rmtree(directory)
        assert run_twice(kernels, seed) == []
        for path in (directory, directory / tack.__version__):
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o700, path
    finally:
        os.umask(old)
        tack.cache.configure()
