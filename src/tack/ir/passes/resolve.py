"""resolve: bake array extents into constants everywhere but the loop's extents.

Assumes: lowered IR; ``shapes`` maps each array parameter to its shape.
Guarantees: no ``DimSize`` outside the parallel loop's extents, which stay
symbolic because the host evaluates them per launch. The shapes used become
part of the variant key (``shape_dependencies``), so a new shape compiles a
new variant instead of running stale strides (regression LC1).
Rejects: an extent past the array's rank (``TypeError``); an unknown array
(``RuntimeError``, a compiler bug).
"""

from __future__ import annotations

from ... import types as T
from ..expressions import Const, DimSize
from ..statements import Function, ParallelFor
from ..traversal import rewrite, rewrite_body, walk
from .common import kernel_error


def shape_dependencies(fn: Function) -> dict:
    """``{array: sorted dims}`` whose extents resolve bakes into a variant."""
    deps: dict = {}
    for stmt in fn.body:
        for node in _outside_extents(stmt):
            if isinstance(node, DimSize):
                deps.setdefault(node.array, set()).add(node.dim)
    return {name: tuple(sorted(dims)) for name, dims in deps.items()}


def _outside_extents(stmt):
    if isinstance(stmt, ParallelFor):
        for s in stmt.body:
            yield from walk(s)
    else:
        yield from walk(stmt)


def resolve(fn: Function, shapes: dict) -> Function:
    def bake(node):
        if not isinstance(node, DimSize):
            return node
        if node.array not in shapes:
            raise RuntimeError(f"Kernel '{fn.name}': unknown array '{node.array}' "
                               f"in resolve")
        shape = shapes[node.array]
        if node.dim >= len(shape):
            raise kernel_error(TypeError, fn.name, f"{node.array}.shape[{node.dim}] "
                               f"of an array with {len(shape)} dimension(s)", node.span)
        # a typed (strong) i64 like the extent it replaces, not a weak literal
        # that takes the other operand's type (x[i] * len(x) must not wrap in i32)
        return Const(int(shape[node.dim]), dtype=T.i64, span=node.span)

    body = []
    for stmt in fn.body:
        if isinstance(stmt, ParallelFor):
            stmt = stmt.replace(body=rewrite_body(stmt.body, bake))
        else:
            stmt = rewrite(stmt, bake)
        body.append(stmt)
    return fn.replace(body=tuple(body))
