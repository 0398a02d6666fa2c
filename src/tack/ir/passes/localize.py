"""localize: per-iteration copies of outer scalars that the loop body assigns.

Assumes: inferred IR. Statements before the parallel loop run once per chunk,
so a scalar parameter or outer local that an iteration assigns would carry its
value into the next iteration of the same chunk (regression LC6).
Guarantees: each such name is read through a fresh local seeded from the
outer value at the top of every iteration. The loop's extents keep naming the
parameter, since the host evaluates them.
"""

from __future__ import annotations

from ..expressions import Name
from ..statements import Assign, Function
from .names import all_names, assigned, fresh, rename


def localize_outer_scalars(fn: Function) -> Function:
    loop = fn.parallel_for
    outer = {p.name for p in fn.params if not p.is_array}
    outer |= set(assigned([s for s in fn.body if s is not loop]))
    targets = sorted(outer & set(assigned(loop.body)))
    if not targets:
        return fn
    used = all_names(fn)
    mapping = {name: fresh(f"local_{name}", used) for name in targets}
    seed = tuple(Assign(new, Name(old, span=loop.span), span=loop.span)
                 for old, new in mapping.items())
    new_loop = loop.replace(body=seed + rename(loop.body, mapping))
    body = tuple(new_loop if s is loop else s for s in fn.body)
    return fn.replace(body=body)
