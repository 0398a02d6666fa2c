"""The kernels behind ``tack.algorithms.sum/min/max``.

They live apart from the public functions because a kernel resolves ``min``
and ``max`` through its module's globals, where the public ``min``/``max``
would shadow the builtins. The length comes in as ``n``, a scalar: ``len(x)``
in a loop body would be compiled in, one variant per length.
"""

from __future__ import annotations

from .. import types as T
from ..runtime.kernel import library_kernel


@library_kernel
def float_partials(x, partial, chunk, n):
    for c in range(len(partial)):
        lo = c * chunk
        hi = min(lo + chunk, n)
        s0 = T.f64(0)
        s1 = T.f64(0)
        s2 = T.f64(0)
        s3 = T.f64(0)
        s4 = T.f64(0)
        s5 = T.f64(0)
        s6 = T.f64(0)
        s7 = T.f64(0)
        i = lo
        while i + 8 <= hi:
            s0 += x[i]
            s1 += x[i + 1]
            s2 += x[i + 2]
            s3 += x[i + 3]
            s4 += x[i + 4]
            s5 += x[i + 5]
            s6 += x[i + 6]
            s7 += x[i + 7]
            i += 8
        while i < hi:
            s0 += x[i]
            i += 1
        partial[c] = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@library_kernel
def int_partials(x, partial, chunk, n):
    for c in range(len(partial)):
        lo = c * chunk
        hi = min(lo + chunk, n)
        partial[c] = 0
        s = partial[c]   # 0 of the accumulator's type (a NumPy scalar would lose it)
        for i in range(lo, hi):
            s += x[i]
        partial[c] = s


@library_kernel
def combine_sum(partial, count) -> float:
    for _ in range(1):
        total = partial[0]
        for c in range(1, count):   # not len(partial): that would be baked
            total += partial[c]
        partial[0] = total
    return partial[0]


@library_kernel
def float_max_partials(x, partial, nans, sign, chunk, n):
    for c in range(len(partial)):   # the max of sign * x: min(x) is -max(-x), exactly
        lo = c * chunk
        hi = min(lo + chunk, n)
        m0 = sign * x[lo]
        m1 = m0
        m2 = m0
        m3 = m0
        m4 = m0
        m5 = m0
        m6 = m0
        m7 = m0
        i = lo
        while i + 8 <= hi:   # eight lanes in step, which the CPU's SLP vectorizes
            m0 = max(m0, sign * x[i])
            m1 = max(m1, sign * x[i + 1])
            m2 = max(m2, sign * x[i + 2])
            m3 = max(m3, sign * x[i + 3])
            m4 = max(m4, sign * x[i + 4])
            m5 = max(m5, sign * x[i + 5])
            m6 = max(m6, sign * x[i + 6])
            m7 = max(m7, sign * x[i + 7])
            i += 8
        while i < hi:
            m0 = max(m0, sign * x[i])
            i += 1
        partial[c] = max(max(max(m0, m1), max(m2, m3)), max(max(m4, m5), max(m6, m7)))
        bad = 0   # max() passes a NaN by (a comparison with it is false): count them
        for k in range(lo, hi):   # apart, a loop of its own that vectorizes too
            bad += x[k] != x[k]
        nans[c] = bad


@library_kernel
def int_min_partials(x, partial, chunk, n):
    for c in range(len(partial)):   # integers: one accumulator, an integer min reduction
        lo = c * chunk
        hi = min(lo + chunk, n)
        m = x[lo]
        for i in range(lo + 1, hi):
            m = min(m, x[i])
        partial[c] = m


@library_kernel
def int_max_partials(x, partial, chunk, n):
    for c in range(len(partial)):   # integers: one accumulator, an integer max reduction
        lo = c * chunk
        hi = min(lo + chunk, n)
        m = x[lo]
        for i in range(lo + 1, hi):
            m = max(m, x[i])
        partial[c] = m
