"""Shared fixtures of the frontend tests: a seeded random generator."""

import secrets

import numpy as np
import pytest


class SeededRng:
    """``numpy.random.Generator`` that remembers its seed for failure messages."""

    def __init__(self, seed: int):
        self.seed = seed
        self.gen = np.random.default_rng(seed)

    def floats(self, n, dtype=np.float32, low=-4.0, high=4.0):
        return self.gen.uniform(low, high, n).astype(dtype)

    def ints(self, n, low=-50, high=50, dtype=np.int32):
        return self.gen.integers(low, high, n).astype(dtype)


@pytest.fixture
def rng():
    return SeededRng(secrets.randbits(32))
