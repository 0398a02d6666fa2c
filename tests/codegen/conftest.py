"""Shared fixture of the code generation tests: seeded random inputs."""

from __future__ import annotations

import secrets

import numpy as np
import pytest


class Random:
    """A fresh generator per test; ``seed`` goes into every assertion message."""

    def __init__(self):
        self.seed = secrets.randbits(63)
        self.gen = np.random.default_rng(self.seed)

    def ints(self, dtype, n, lo=None, hi=None):
        info = np.iinfo(dtype.numpy)
        lo = info.min if lo is None else max(lo, info.min)
        hi = info.max if hi is None else min(hi, info.max)
        return self.gen.integers(lo, hi, size=n, dtype=dtype.numpy, endpoint=True)

    def floats(self, dtype, n, lo=-100.0, hi=100.0):
        return self.gen.uniform(lo, hi, size=n).astype(dtype.numpy)

    def values(self, dtype, n):
        """Full-range integers (with small ones mixed in) or spread-out floats."""
        if dtype.is_float:
            scale = 10.0 ** self.gen.integers(-3, 4, size=n)
            return (self.gen.standard_normal(n) * scale).astype(dtype.numpy)
        wide = self.ints(dtype, n)
        small = self.ints(dtype, n, -9, 9)
        return np.where(self.gen.random(n) < 0.5, wide, small).astype(dtype.numpy)

    def __repr__(self):
        return f"seed={self.seed}"


@pytest.fixture
def rng():
    return Random()
