"""Kernels the cache tests compile, in this process and in child processes.

They live in one file that both import by path, so a child and the test
process compute the same keys. ``REFERENCE`` gives the ``out`` each kernel
writes, by NumPy; ``doubled_first`` also returns ``out[0]``.
"""

import tack


@tack.func
def shifted(x):
    return x * 3 + 1


@tack.kernel
def affine(a, out):
    for i in range(len(out)):
        out[i] = shifted(a[i])


@tack.kernel
def square_plus(a, out):
    for i in range(len(out)):
        out[i] = a[i] * a[i] + 2


@tack.kernel
def doubled_first(a, out) -> float:
    for i in range(len(out)):
        out[i] = a[i] * 2.0
    return out[0]


REFERENCE = {
    "affine": lambda a: a * a.dtype.type(3) + a.dtype.type(1),
    "square_plus": lambda a: a * a + a.dtype.type(2),
    "doubled_first": lambda a: a * a.dtype.type(2),
}


def fresh(kernel):
    """A new Kernel object for the same function: it has no in-memory tiers, so
    its first call asks the disk cache (same source, same keys)."""
    return tack.kernel(kernel.__wrapped__)
