"""check_types: every array's dtype is one the backend supports.

Rejects: an unsupported dtype, with ``TypeError`` naming kernel, parameter,
dtype and backend.
"""

from __future__ import annotations

from ..statements import Function
from .common import kernel_error


def check_dispatch_types(fn: Function, supported, backend_name: str) -> Function:
    for p in fn.params:
        if p.is_array and p.dtype not in supported:
            raise kernel_error(TypeError, fn.name, f"parameter '{p.name}' has dtype "
                               f"{p.dtype}, which {backend_name} does not support")
    return fn
