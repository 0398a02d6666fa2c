"""Prefix sums: ``exclusive_scan`` and ``inclusive_scan``, in three kernel passes.

1. each chunk's total; 2. an exclusive scan of the totals (one iteration);
3. each chunk scanned from its offset. Integers wrap like kernel arithmetic;
floats add in a fixed order (within a chunk, then across chunks), from -0.0.
The length is a scalar argument, ``n``: one variant serves every length.

One chunk, or a CPU device of one thread, runs the three passes as one
(``serial_scan``), reading the values once: it keeps each chunk's total beside
the running sum, so it adds in the same order and gets the same bits.
"""

from __future__ import annotations


from ..runtime.array import shares_memory
from ..runtime.creation import empty
from ..runtime.kernel import library_kernel
from .common import (CHUNK, chunks_of, one_thread, require_1d, require_array,
                     require_writable, same_device)


@library_kernel
def chunk_totals(x, totals, chunk, zero, n):
    for c in range(len(totals)):
        lo = c * chunk
        hi = min(lo + chunk, n)
        s = zero
        for i in range(lo, hi):
            s += x[i]
        totals[c] = s


@library_kernel
def scan_totals(totals, zero, count):
    for _ in range(1):
        running = zero
        for c in range(count):   # not len(totals): that would be baked into the variant
            t = totals[c]
            totals[c] = running
            running += t


@library_kernel
def chunk_scan(x, out, offsets, chunk, inclusive, empty_sum, n):
    for c in range(len(offsets)):
        lo = c * chunk
        hi = min(lo + chunk, n)
        running = offsets[c]
        if inclusive:
            for i in range(lo, hi):
                running += x[i]
                out[i] = running
        else:   # no test per element: the first element is set after the loop
            for i in range(lo, hi):
                v = x[i]
                out[i] = running
                running += v
            if c == 0:
                out[0] = empty_sum


@library_kernel
def serial_scan(x, out, chunk, count, inclusive, exact, zero, empty_sum, n):
    for _ in range(1):
        if exact:   # integers: every order of additions gives the same sums
            running = zero
            if inclusive:
                for i in range(n):
                    running += x[i]
                    out[i] = running
            else:
                for i in range(n):
                    v = x[i]
                    out[i] = running
                    running += v
        else:
            offset = zero             # the sum of the chunk totals so far
            for c in range(count):
                lo = c * chunk
                hi = min(lo + chunk, n)
                running = offset
                total = zero
                if inclusive:
                    for i in range(lo, hi):
                        v = x[i]
                        running += v
                        total += v
                        out[i] = running
                else:
                    for i in range(lo, hi):
                        v = x[i]
                        out[i] = running
                        running += v
                        total += v
                offset += total
        if not inclusive:
            out[0] = empty_sum


def _scan(name: str, values, out, inclusive: int):
    values = require_1d(name, "values", require_array(name, "values", values))
    if out is None:
        out = empty(values.shape, values.dtype, device=values.device)
    else:
        require_1d(name, "out", require_array(name, "out", out))
        require_writable(name, "out", out)
        if out.shape != values.shape or out.dtype != values.dtype:
            raise ValueError(f"{name}() out must have shape {values.shape} and dtype "
                             f"{values.dtype}, got {out.shape} {out.dtype}")
    same_device(name, values, out)
    if values.size == 0:
        return out
    if shares_memory(values, out) and values._lo != out._lo:
        values = values.copy()   # partly overlapping: out would change values unread
    zero, empty_sum, exact = _constants(values.dtype)
    count = chunks_of(values.size)
    if count == 1 or one_thread(values.device):
        serial_scan(values, out, CHUNK, count, inclusive, exact, zero, empty_sum,
                    values.size)
        return out
    totals = empty(count, values.dtype, device=values.device)
    chunk_totals(values, totals, CHUNK, zero, values.size)
    scan_totals(totals, zero, count)   # each chunk's offset: the sums before it
    chunk_scan(values, out, totals, CHUNK, inclusive, empty_sum, values.size)
    return out


_CONSTANTS: dict = {}


def _constants(dtype) -> tuple:
    """``(zero, empty sum, exact)`` for scans of ``dtype``, made once per dtype.
    Sums start from -0.0 for floats (0 for integers): -0.0 + v is v for every
    v, so a run of negative zeros sums to -0.0, as in Python; the exclusive
    scan's first element, the sum of no values, is +0.0. Integer sums are
    exact in any order (``serial_scan``)."""
    found = _CONSTANTS.get(dtype)
    if found is None:
        kind = dtype.numpy
        found = _CONSTANTS[dtype] = (kind.type(-0.0 if dtype.is_float else 0),
                                     kind.type(0), int(not dtype.is_float))
    return found


def exclusive_scan(values, out=None):
    """``out[i] = values[0] + ... + values[i-1]`` (``out[0]`` is 0); a new array
    unless ``out`` is given (which may be ``values`` itself)."""
    return _scan("exclusive_scan", values, out, 0)


def inclusive_scan(values, out=None):
    """``out[i] = values[0] + ... + values[i]``."""
    return _scan("inclusive_scan", values, out, 1)


__all__ = ["exclusive_scan", "inclusive_scan"]
