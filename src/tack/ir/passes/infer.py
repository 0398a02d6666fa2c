"""infer: give every parameter its type from the call's arguments.

Assumes: resolved IR and one :class:`ArgSpec` per parameter.
Guarantees: every parameter has a ``dtype``, ``is_array`` and ``ndim``.
Rejects (``TypeError``): a scalar where the kernel uses an array and the other
way round, and an array indexed with a number of indices other than its rank.
"""

from __future__ import annotations

from ... import types as T
from ..statements import Function
from .common import kernel_error


def default_float(specs) -> T.ScalarType:
    """f64 if any array argument is f64, else f32 (the kernel float rule)."""
    return T.f64 if any(s.is_array and s.dtype == T.f64 for s in specs) else T.f32


def infer_param_types(fn: Function, specs) -> Function:
    params = []
    for param, spec in zip(fn.params, specs):
        if param.is_array and not spec.is_array:
            raise kernel_error(TypeError, fn.name, f"parameter '{param.name}' is used "
                               f"as an array, but the argument is a {spec.dtype} "
                               f"scalar")
        if param.is_array is None and spec.is_array:
            params.append(param.replace(dtype=spec.dtype, is_array=True,
                                        ndim=len(spec.shape)))
            continue
        if spec.is_array:
            ndim = len(spec.shape)
            if param.ndim and param.ndim != ndim:
                raise kernel_error(TypeError, fn.name, f"parameter '{param.name}' is "
                                   f"indexed with {param.ndim} indices, but its array "
                                   f"has {ndim} dimension(s)")
            params.append(param.replace(dtype=spec.dtype, is_array=True, ndim=ndim))
        else:
            params.append(param.replace(dtype=spec.dtype, is_array=False, ndim=0))
    return fn.replace(params=tuple(params), default_float=default_float(specs))
