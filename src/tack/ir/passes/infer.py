"""infer: give every parameter its type from the call's arguments.

Assumes: resolved IR and one :class:`ArgSpec` per parameter, but for the
hidden extent parameters resolve appends (typed i64 already).
Guarantees: every parameter has a ``dtype``, ``is_array`` and ``ndim``.
Rejects (``TypeError``): a scalar where the kernel uses an array and the other
way round, and an array indexed with a number of indices other than its rank.
"""

from __future__ import annotations

from ... import types as T
from ..expressions import Name
from ..statements import Allocate, Function
from ..memo import per_function
from ..traversal import rewrite_body, walk
from .common import kernel_error


def default_float(specs) -> T.ScalarType:
    """f64 if any array argument is f64, else f32 (the kernel float rule)."""
    return T.f64 if any(s.category == "array" and s.dtype == T.f64 for s in specs) \
        else T.f32


def check_arguments(fn: Function, specs) -> Function:
    """The argument checks of inference. The pipeline also makes them before
    ``resolve``, which would otherwise report an array indexed with too many
    indices as an extent past its rank, and a scalar as an unknown array."""
    read = names_read(fn)
    for param, spec in zip(fn.params, specs):
        if spec.is_array and param.name in read:
            raise kernel_error(TypeError, fn.name, f"parameter '{param.name}' is used "
                               f"as a scalar, but the argument is an array")
        if param.is_array and not spec.is_array:
            raise kernel_error(TypeError, fn.name, f"parameter '{param.name}' is used "
                               f"as an array, but the argument is a {spec.dtype} "
                               f"scalar")
        if spec.is_array and param.ndim and param.ndim != len(spec.shape):
            raise kernel_error(TypeError, fn.name, f"parameter '{param.name}' is "
                               f"indexed with {param.ndim} indices, but its array "
                               f"has {len(spec.shape)} dimension(s)")
    return fn


@per_function
def names_read(fn: Function) -> frozenset:
    """Every name the body reads."""
    return frozenset(node.id for stmt in fn.body for node in walk(stmt)
                     if isinstance(node, Name))


def infer_param_types(fn: Function, specs) -> Function:
    check_arguments(fn, specs)
    params = []
    for param, spec in zip(fn.params, specs):
        if spec.is_array:
            params.append(param.replace(dtype=spec.dtype, is_array=True,
                                        ndim=len(spec.shape)))
        else:
            params.append(param.replace(dtype=spec.dtype, is_array=False, ndim=0))
    params += fn.params[len(specs):]   # resolve's run-time extents: typed already
    fn = fn.replace(params=tuple(params), default_float=default_float(specs))
    return _fill_like_allocations(fn)


def _fill_like_allocations(fn: Function) -> Function:
    """``tack.shared_like(a, n)``: the allocation takes ``a``'s dtype."""
    arrays = {p.name: p.dtype for p in fn.params if p.is_array}

    def fill(node):
        if isinstance(node, Allocate) and node.like:
            if node.like not in arrays:
                raise kernel_error(TypeError, fn.name, f"'{node.like}' in a *_like "
                                   f"allocation is not an array parameter", node.span)
            return node.replace(dtype=arrays[node.like])
        return node
    return fn.replace(body=rewrite_body(fn.body, fill))
