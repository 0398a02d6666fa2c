"""Whole-array reductions as kernels: ``sum``, ``min``, ``max`` (no axis).

Each chunk is reduced by one iteration of the parallel loop into a partial,
then the partials are combined in chunk order by a one-iteration kernel.
Floats are summed in f64 with eight interleaved accumulators (which LLVM
vectorizes without reassociating anything); integers in i64/u64, wrapping.
A NaN anywhere makes ``min``/``max`` NaN, as in NumPy.

Error bound of the float sum: each chunk is eight sequential f64 sums of at
most 8192 terms, so |error| <= (n/8 + 2*log2(chunks) + 8) * eps64 * sum(|x|),
far below f32 resolution for any f32 input.
"""

from __future__ import annotations



from .. import types as T
from .reduce_kernels import (combine_sum, float_max_partials, float_partials,
                             int_max_partials, int_min_partials, int_partials)
from .common import CHUNK, chunks_of, require_array, scratch


def _flat(name, values):
    values = require_array(name, "values", values)
    return values if values.ndim == 1 else values.reshape(values.size)


def _accumulator(dtype):
    if dtype.is_float:
        return T.f64
    return T.i64 if dtype.is_signed else T.u64


def sum(values):
    """Sum of every element: a Python float for float arrays, an int otherwise."""
    x = _flat("sum", values)
    acc = _accumulator(x.dtype)
    if x.size == 0:
        return 0.0 if acc.is_float else 0
    partial = scratch(chunks_of(x.size), acc, x.device)
    if not acc.is_float:
        int_partials(x, partial, CHUNK, x.size)
        parts = partial._values()
        return int(parts[0] if parts.size == 1 else parts.sum(dtype=acc.numpy))  # wraps
    float_partials(x, partial, CHUNK, x.size)
    if partial.size == 1:
        return float(partial._values()[0])
    return combine_sum(partial, partial.size)


def _extreme(name, values, int_kernel, sign: float):
    x = _flat(name, values)
    if x.size == 0:
        raise ValueError(f"{name} reduction requires a nonempty array")
    partial = scratch(chunks_of(x.size), x.dtype, x.device)
    if not x.dtype.is_float:
        int_kernel(x, partial, CHUNK, x.size)
        parts = partial._values()
        return int(parts.min() if sign < 0 else parts.max())
    nans = scratch(partial.size, T.i64, x.device)   # the NaNs each chunk saw
    float_max_partials(x, partial, nans, sign, CHUNK, x.size)
    if nans._values().any():
        return float("nan")
    return sign * float(partial._values().max())   # the max of sign * x


def min(values):
    """Smallest element (NaN if any element is NaN)."""
    return _extreme("min", values, int_min_partials, -1.0)


def max(values):
    """Largest element (NaN if any element is NaN)."""
    return _extreme("max", values, int_max_partials, 1.0)


__all__ = ["sum", "min", "max"]
