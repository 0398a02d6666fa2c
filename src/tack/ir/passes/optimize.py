"""optimize: conservative copy propagation, the only Tack-level optimization.

A local assigned exactly once, from a scalar parameter or the parallel loop's
variable that nothing assigns, is replaced by that name and its assignment is
dropped. This removes the parameter copies that inlining emits. Nothing is
hoisted or merged: an invariant address is not an invariant value, and
hoisting out of a loop that runs zero times changes behaviour (LC1); LLVM and
the vendor compilers do those optimizations with the analyses they need.
"""

from __future__ import annotations

from ..expressions import Name
from ..statements import Assign, Function
from ..traversal import rewrite, walk
from .names import assigned


def _copies(fn: Function) -> dict:
    loop = fn.parallel_for
    counts = assigned(fn.body)
    stable = {p.name for p in fn.params if not p.is_array} | set(loop.vars)
    stable = {name for name in stable if name not in counts}
    copies = {}
    for stmt in fn.body:
        for node in walk(stmt):
            if (isinstance(node, Assign) and counts.get(node.target) == 1
                    and isinstance(node.value, Name) and node.value.id in stable):
                copies[node.target] = node.value.id
    return copies


def _drop(stmts, copies):
    out = []
    for stmt in stmts:
        if isinstance(stmt, Assign) and stmt.target in copies:
            continue
        changes = {}
        for f in stmt._operands:
            value = getattr(stmt, f)
            if f in ("body", "orelse"):
                changes[f] = _drop(value, copies)
        out.append(stmt.replace(**changes) if changes else stmt)
    return tuple(out)


def propagate_copies(fn: Function) -> Function:
    copies = _copies(fn)
    if not copies:
        return fn

    def substitute(node):
        if isinstance(node, Name) and node.id in copies:
            return node.replace(id=copies[node.id])
        return node

    body = tuple(rewrite(s, substitute) for s in _drop(fn.body, copies))
    return fn.replace(body=body)
