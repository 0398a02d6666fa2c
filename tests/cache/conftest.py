"""Shared fixtures of the disk cache tests (spec 003, ``tack.cache``).

Every test gets its own empty cache directory (``cache_dir``), configured for
this process and given to child processes through ``TACK_CACHE_DIR``. Kernels
come from ``cache_kernels.py``, which children import by path, so both sides
compute the same keys. Entry files are read and written here with the format
``docs/cache.md`` documents, independently of ``tack.cache``'s own code.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import secrets
import struct
import subprocess
import sys

import numpy as np
import pytest

import tack
import tack.cache

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "child.py")
ENTRY_MAGIC = b"TACKENT\x01"
BUNDLE_MAGIC = b"TACKBDL\x01"


def _load(name: str, file: str):
    """The module in ``file`` under ``name`` (children import it as ``name`` too)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="session")
def kernels():
    return _load("cache_kernels", "cache_kernels.py")


@pytest.fixture(scope="session")
def tools():
    """This module's helpers (entry formats, child processes) for the tests."""
    return sys.modules[__name__]


@pytest.fixture
def seed():
    return secrets.randbits(63)


@pytest.fixture
def cache_dir(tmp_path):
    """A private, empty cache directory in write mode, for this process."""
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    tack.cache.configure(directory=directory, mode="write")
    tack.cache.reset_stats()
    yield directory
    tack.cache.clear(directory=directory, all_versions=True)  # also forgets bundles
    tack.cache.configure()
    tack.cache.reset_stats()


def version_dir(directory) -> str:
    return os.path.join(os.fspath(directory), tack.__version__)


def entries(directory, suffix="") -> list:
    """Sorted paths of the entry files (ending in ``suffix``) under ``directory``."""
    folder = version_dir(directory)
    names = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    return [os.path.join(folder, n) for n in names
            if n.endswith((".ir", ".variant")) and n.endswith(suffix)]


# -- the documented formats ------------------------------------------------------------

def read_entry(data: bytes):
    """(header dict, payload) of an entry file, checking every documented field."""
    assert data[:8] == ENTRY_MAGIC
    (head_len,) = struct.unpack_from("<I", data, 8)
    head = data[12:12 + head_len]
    (size,) = struct.unpack_from("<Q", data, 12 + head_len)
    start = 20 + head_len
    payload = data[start:start + size]
    assert len(data) == start + size + 32
    assert hashlib.sha256(head + payload).digest() == data[start + size:]
    return json.loads(head), payload


def make_entry(header, payload: bytes) -> bytes:
    """An entry file with a valid checksum around any header and payload."""
    head = json.dumps(header, sort_keys=True).encode()
    return (ENTRY_MAGIC + struct.pack("<I", len(head)) + head
            + struct.pack("<Q", len(payload)) + payload
            + hashlib.sha256(head + payload).digest())


def read_bundle(data: bytes):
    """(header dict, the entries' bytes) of a bundle."""
    assert data[:8] == BUNDLE_MAGIC
    (size,) = struct.unpack_from("<Q", data, 8)
    return json.loads(data[16:16 + size]), data[16 + size:]


def make_bundle(header, blob: bytes) -> bytes:
    head = json.dumps(header, sort_keys=True).encode()
    return BUNDLE_MAGIC + struct.pack("<Q", len(head)) + head + blob


# -- child processes -------------------------------------------------------------------

def child_env(directory, mode="write", **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TACK_CACHE")}
    env.update(TACK_CACHE_DIR=os.fspath(directory), TACK_CACHE=mode)
    env.update(extra)
    return env


def child_command(calls, seed, **options) -> list:
    spec = dict(options, calls=calls, seed=seed, modules=[HERE])
    return [sys.executable, CHILD, json.dumps(spec)]


def run_child(directory, calls, seed, mode="write", env=None, **options) -> dict:
    """Run ``calls`` in a new process; its outputs are checked against NumPy."""
    done = subprocess.run(child_command(calls, seed, **options),
                          env=child_env(directory, mode, **(env or {})),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    check_outputs(calls, seed, result)
    return result


def check_outputs(calls, seed, result) -> None:
    inputs = _load("cache_child", "child.py").inputs
    reference = _load("cache_kernels", "cache_kernels.py").REFERENCE
    assert len(result["outputs"]) == len(calls)
    for index, (_, name, dtype, n) in enumerate(calls):
        want = reference[name](inputs(seed, index, dtype, n))
        message = f"{name} {dtype} n={n} seed={seed}"
        got = np.array(result["outputs"][index], dtype=dtype)
        np.testing.assert_array_equal(got, want, err_msg=message)
        returned = result["values"][index]
        assert returned == (want[0] if name == "doubled_first" else None), message
