"""Kernels for test_cache_bundle.py: one set per scenario, so a bundle loaded
for one scenario never answers for another (each has its own keys)."""

import tack


@tack.func
def bumped(x):
    return x * 2.0 + 1.0


@tack.kernel
def hit_affine(a, out):
    for i in range(len(out)):
        out[i] = bumped(a[i])


@tack.kernel
def hit_square(a, out):
    for i in range(len(out)):
        out[i] = a[i] * a[i] - 3.0


@tack.kernel
def missing_cube(a, out):
    for i in range(len(out)):
        out[i] = a[i] * a[i] * a[i]


@tack.kernel
def corrupt_shift(a, out):
    for i in range(len(out)):
        out[i] = a[i] - 7.0


REFERENCE = {
    "hit_affine": lambda a: a * 2.0 + 1.0,
    "hit_square": lambda a: a * a - 3.0,
    "missing_cube": lambda a: a * a * a,
    "corrupt_shift": lambda a: a - 7.0,
}

SCENARIOS = {
    "hits": ["hit_affine", "hit_square"],
    "missing": ["missing_cube"],
    "corrupt": ["corrupt_shift"],
}
