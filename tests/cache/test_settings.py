"""TACK_CACHE, TACK_CACHE_SIZE and TACK_CACHE_DIR, configure() over them, and the
reporting functions: settings, size_limit, describe, stats, reset_stats."""

from __future__ import annotations

import os
import pathlib
import re

import numpy as np
import pytest

import tack

MPI_VARIABLES = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
                 "PMIX_RANK", "MPI_LOCALNRANKS", "SLURM_NTASKS", "SLURM_PROCID")


@pytest.fixture
def env(monkeypatch, tmp_path):
    """A clean environment for the cache variables; settings are read from it."""
    for name in ("TACK_CACHE", "TACK_CACHE_SIZE", "TACK_CACHE_DIR", "XDG_CACHE_HOME")\
            + MPI_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", os.fspath(tmp_path / "home"))
    tack.cache.configure()
    yield monkeypatch
    tack.cache.configure()   # read again (from the restored environment) when next used


@pytest.mark.parametrize("value,mode", [
    ("write", "write"), ("read", "read"), ("bundle", "bundle"), ("off", "off"),
    ("0", "off"), ("false", "off"), ("no", "off"), ("none", "off"), ("OFF", "off"),
    (" Read ", "read"), ("", "write"),
])
def test_tack_cache_selects_the_mode(env, value, mode):
    env.setenv("TACK_CACHE", value)
    assert tack.cache.settings()[1] == mode


def test_bundle_is_the_default_mode_under_mpi(env):
    env.setenv("PMI_SIZE", "4")
    env.setenv("PMI_RANK", "2")
    assert tack.cache.settings()[1:] == ("bundle", 2)
    env.setenv("TACK_CACHE", "write")
    tack.cache.configure()
    assert tack.cache.settings()[1:] == ("write", 2)


def test_one_process_is_not_mpi(env):
    env.setenv("PMI_SIZE", "1")
    env.setenv("PMI_RANK", "0")
    assert tack.cache.settings()[1:] == ("write", 0)


@pytest.mark.parametrize("value", ["fast", "yes", "1", "on", "writeable"])
def test_a_bad_tack_cache_raises_value_error(env, value):
    env.setenv("TACK_CACHE", value)
    with pytest.raises(ValueError, match=re.escape(
            f"TACK_CACHE={value!r}: use write, read, bundle or off")):
        tack.cache.settings()


def test_a_bad_value_raises_at_the_first_kernel_compiled(env, kernels):
    env.setenv("TACK_CACHE", "sometimes")
    a = tack.zeros(3, dtype=tack.f64)
    with pytest.raises(ValueError, match=re.escape(
            "TACK_CACHE='sometimes': use write, read, bundle or off")):
        kernels.fresh(kernels.affine)(a, a)


@pytest.mark.parametrize("value,size", [
    ("0", 0), ("123", 123), ("500M", 500 << 20), ("2G", 2 << 30), ("1.5G", 3 << 29),
    ("64K", 64 << 10), ("1T", 1 << 40), ("10MB", 10 << 20), ("10MiB", 10 << 20),
    ("7 g", 7 << 30), ("5B", 5), ("unlimited", None), ("UNLIMITED", None),
    ("", 1 << 30),
])
def test_tack_cache_size_parses_sizes(env, value, size):
    env.setenv("TACK_CACHE_SIZE", value)
    assert tack.cache.size_limit() == size


@pytest.mark.parametrize("value", ["lots", "-5", "1.2.3", "12Q", "G", "1e9", "5 GB x"])
def test_a_bad_tack_cache_size_raises_value_error(env, value):
    env.setenv("TACK_CACHE_SIZE", value)
    with pytest.raises(ValueError, match=re.escape(
            f"TACK_CACHE_SIZE={value!r}: use bytes, a size such as 500M or 2G, "
            f"or unlimited")):
        tack.cache.size_limit()


def test_tack_cache_dir_is_made_absolute(env, tmp_path):
    env.chdir(tmp_path)
    env.setenv("TACK_CACHE_DIR", "relative/cache")
    assert tack.cache.settings()[0] == os.fspath(tmp_path / "relative" / "cache")


def test_the_default_directory_is_the_users_cache_directory(env, tmp_path):
    assert tack.cache.settings()[0] == os.fspath(tmp_path / "home" / ".cache" / "tack")
    env.setenv("XDG_CACHE_HOME", os.fspath(tmp_path / "xdg"))
    env.setenv("TACK_CACHE_DIR", "")
    tack.cache.configure()
    assert tack.cache.settings()[0] == os.fspath(tmp_path / "xdg" / "tack")


def test_configure_overrides_the_environment_and_none_leaves_it(env, tmp_path):
    env.setenv("TACK_CACHE", "read")
    env.setenv("TACK_CACHE_SIZE", "1M")
    env.setenv("TACK_CACHE_DIR", os.fspath(tmp_path / "from-env"))
    tack.cache.configure(directory=pathlib.Path(tmp_path / "mine"))
    assert tack.cache.settings() == (os.fspath(tmp_path / "mine"), "read", None)
    assert tack.cache.size_limit() == 1 << 20
    tack.cache.configure(mode="off", max_size="2G")
    assert tack.cache.settings() == (os.fspath(tmp_path / "from-env"), "off", None)
    assert tack.cache.size_limit() == 2 << 30
    tack.cache.configure(max_size="unlimited")
    assert tack.cache.size_limit() is None
    env.setenv("TACK_CACHE", "not-read-while-overridden")
    tack.cache.configure(mode="write", max_size=4096)
    assert tack.cache.settings()[1] == "write" and tack.cache.size_limit() == 4096


@pytest.mark.parametrize("arguments,message", [
    ({"mode": "fast"}, "mode='fast': use write, read, bundle or off"),
    ({"max_size": "lots"}, "max_size='lots': use bytes, a size such as 500M or 2G, "
                           "or unlimited"),
    ({"max_size": -1}, "max_size must not be negative, got -1"),
    ({"max_size": True}, "max_size=True: use bytes, a size such as 500M or 2G, "
                         "or unlimited"),
])
def test_configure_rejects_bad_values(env, arguments, message):
    tack.cache.configure(mode="read")
    with pytest.raises(ValueError, match=re.escape(message)):
        tack.cache.configure(**arguments)
    assert tack.cache.settings()[1] == "read"   # a rejected call changes nothing


def test_configure_takes_the_mode_as_a_string(env):
    tack.cache.configure(mode="read")
    with pytest.raises(TypeError, match=re.escape(
            "mode takes write, read, bundle or off, not int")):
        tack.cache.configure(mode=5)
    assert tack.cache.settings()[1] == "read"


def test_configure_takes_effect_at_the_next_kernel_compiled(cache_dir, kernels, seed):
    a = tack.array(np.random.default_rng(seed).uniform(-1, 1, 5))
    out = tack.zeros(5, dtype=tack.f64)
    tack.cache.configure(directory=cache_dir, mode="off")
    kernels.fresh(kernels.affine)(a, out)
    assert tack.cache.describe()["entries"] == 0
    tack.cache.configure(directory=cache_dir, mode="write")
    kernels.fresh(kernels.affine)(a, out)
    assert tack.cache.describe()["entries"] == 2


def test_describe_stats_and_reset_stats(cache_dir, kernels, seed):
    assert tack.cache.describe() == {
        "directory": os.fspath(cache_dir), "mode": "write",
        "max_size": tack.cache.size_limit(), "rank": tack.cache.settings()[2],
        "entries": 0, "bytes": 0, "bundle": None, "bundle_entries_loaded": 0}
    a = tack.array(np.random.default_rng(seed).uniform(-1, 1, 5))
    out = tack.zeros(5, dtype=tack.f64)
    kernels.fresh(kernels.affine)(a, out)
    assert tack.cache.stats() == {"hits": 0, "misses": 2, "writes": 2}
    kernels.fresh(kernels.affine)(a, out)
    assert tack.cache.stats() == {"hits": 2, "misses": 2, "writes": 2}
    tack.cache.reset_stats()
    assert tack.cache.stats() == {"hits": 0, "misses": 0, "writes": 0}
    info = tack.cache.describe()
    folder = os.path.join(cache_dir, tack.__version__)
    assert info["entries"] == 2
    assert info["bytes"] == sum(os.path.getsize(os.path.join(folder, n))
                                for n in os.listdir(folder))
    path, count = tack.cache.pack()
    assert tack.cache.describe()["bundle"] == path and count == 2
    assert tack.cache.load_bundle() == 2
    assert tack.cache.describe()["bundle_entries_loaded"] == 2
