"""atomics: every atomic targets an array parameter of a dtype the backend supports.

Rejects: ``TypeError`` naming the kernel, the atomic, the array and its dtype.
"""

from __future__ import annotations

from ...types import SCALAR_TYPES
from ..expressions import Atomic
from ..statements import Function
from ..traversal import walk
from .common import kernel_error

_SPELLING = {"AtomicAdd": "atomic_add", "AtomicSub": "atomic_sub",
             "AtomicMin": "atomic_min", "AtomicMax": "atomic_max"}


def check_atomic_support(fn: Function, atomic_dtypes, backend_name: str) -> Function:
    params = {p.name: p for p in fn.params}
    for stmt in fn.body:
        for node in walk(stmt):
            if not isinstance(node, Atomic):
                continue
            param = params.get(node.array)
            if param is None or not param.is_array:
                raise kernel_error(TypeError, fn.name, f"the target of "
                                   f"tack.{_SPELLING[type(node).__name__]} must be an "
                                   f"array parameter", node.span)
            if param.dtype not in atomic_dtypes:
                names = ", ".join(t.name for t in SCALAR_TYPES if t in atomic_dtypes)
                raise kernel_error(
                    TypeError, fn.name, f"tack.{_SPELLING[type(node).__name__]} on "
                    f"'{node.array}' of dtype {param.dtype} is not supported on "
                    f"{backend_name} (atomics take {names})", node.span)
    return fn
