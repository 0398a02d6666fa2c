"""Shared fixtures of the runtime contract tests (spec 003)."""

from __future__ import annotations

import os
import secrets

import numpy as np
import pytest

import tack


class Random:
    """A fresh generator per test; ``seed`` goes into every assertion message."""

    def __init__(self):
        self.seed = secrets.randbits(63)
        self.gen = np.random.default_rng(self.seed)

    def values(self, dtype, n):
        """Integers over (most of) the dtype's range, or spread-out floats."""
        if dtype.is_float:
            scale = 10.0 ** self.gen.integers(-3, 4, size=n)
            return (self.gen.standard_normal(n) * scale).astype(dtype.numpy)
        info = np.iinfo(dtype.numpy)
        return self.gen.integers(info.min, info.max, size=n, dtype=dtype.numpy,
                                 endpoint=True)

    def __repr__(self):
        return f"seed={self.seed}"


@pytest.fixture
def rng():
    return Random()


@pytest.fixture(autouse=True)
def restore_default_device(monkeypatch):
    """Every test leaves the process-wide default device as it found it."""
    saved = tack.get_default_device()
    yield saved
    monkeypatch.delenv("TACK_NO_REINIT", raising=False)
    tack.set_default_device(saved)


@pytest.fixture
def count_launches(monkeypatch):
    """``count_launches(device)`` -> a list that grows by one per launch on it.

    Wraps the launcher that the device's backend (internal) hands out for each
    compiled program, so it must be installed on a device no kernel has run on
    yet: use a fresh ``tack.device("cpu", num_threads=N)``.
    """
    def install(device):
        calls = []
        original = device.backend.launcher

        def launcher(program):
            launch = original(program)

            def counted(address, rows, total):
                calls.append(rows)
                return launch(address, rows, total)
            return counted
        monkeypatch.setattr(device.backend, "launcher", launcher)
        return calls
    return install


@pytest.fixture
def opencl():
    """An OpenCL device, or a skip with the reason (a failure when CI sets
    TACK_REQUIRE_OPENCL)."""
    if tack.device_count("opencl"):
        return tack.device("opencl")
    reason = "no OpenCL device (pip install pyopencl and an OpenCL driver)"
    if os.environ.get("TACK_REQUIRE_OPENCL", "").strip() not in ("", "0"):
        pytest.fail(reason + "; TACK_REQUIRE_OPENCL is set")
    pytest.skip(reason)
