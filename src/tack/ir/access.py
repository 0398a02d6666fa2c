"""How a kernel uses its arrays, as passes, dispatch and code generators ask."""

from __future__ import annotations

from . import expressions as E
from .statements import Store
from .memo import per_function
from .traversal import walk


@per_function
def write_only_params(fn) -> tuple:
    """Array parameters the kernel stores to and never reads (no load, no
    atomic): where a large launch may store around the caches
    (``Backend.supports_streaming``). Local arrays are not parameters."""
    params = {p.name for p in fn.params if p.is_array}
    stored, read = [], set()
    for stmt in fn.body:
        for node in walk(stmt):
            array = getattr(node, "array", None)
            if array is None or isinstance(node, E.DimSize):   # a shape, not a read
                continue
            if isinstance(node, Store):
                if array not in stored:
                    stored.append(array)
            else:
                read.add(array)
    return tuple(a for a in stored if a not in read and a in params)
