"""resolve: bake array extents into constants everywhere but the loop's extents.

Assumes: lowered IR; ``shapes`` maps each array parameter to its shape;
``runtime`` holds the ``(array, dim)`` extents passed at run time instead.
Guarantees: no ``DimSize`` outside the parallel loop's extents, which stay
symbolic because the host evaluates them per launch. A baked extent becomes
part of the variant key (``shape_dependencies``), so a new shape compiles a
new variant instead of running stale strides (regression LC1). A run-time
extent becomes a read of a hidden i64 parameter (``extent_param``), appended
after the others in ``runtime_extents`` order, which the launch fills from
the array's shape: the kernel reaches it when its lengths keep changing.
Rejects: an extent past the array's rank (``TypeError``); an unknown array
(``RuntimeError``, a compiler bug).
"""

from __future__ import annotations

from ... import types as T
from ..expressions import Const, DimSize, Name
from ..statements import Function, ParallelFor, Param
from ..traversal import rewrite, rewrite_body, walk
from ..memo import per_function
from .common import kernel_error


@per_function
def shape_dependencies(fn: Function) -> dict:
    """``{array: sorted dims}`` whose extents resolve bakes into a variant: those
    the statements read, and those the wrap pass tests (``wrap.versioned_extents``)."""
    from .wrap import versioned_extents     # (wrap imports extent_param from here)
    deps: dict = {}
    for stmt in fn.body:
        for node in _outside_extents(stmt):
            if isinstance(node, DimSize):
                deps.setdefault(node.array, set()).add(node.dim)
        if isinstance(stmt, ParallelFor):
            for array, dim in versioned_extents(fn, stmt):
                deps.setdefault(array, set()).add(dim)
    return {name: tuple(sorted(dims)) for name, dims in deps.items()}


def runtime_extents(fn: Function, runtime) -> tuple:
    """The ``(array, dim)`` of ``runtime`` that ``fn``'s body reads, in
    parameter order: its hidden parameters, in the order resolve appends them."""
    deps = shape_dependencies(fn)
    return tuple((p.name, d) for p in fn.params for d in deps.get(p.name, ())
                 if (p.name, d) in runtime)


def extent_param(array: str, dim: int) -> str:
    """The hidden parameter holding ``array.shape[dim]`` (no user name starts
    with ``__tack``; the digits end before the array's name)."""
    return f"__tack_shape{dim}_{array}"


def _outside_extents(stmt):
    if isinstance(stmt, ParallelFor):
        for s in stmt.body:
            yield from walk(s)
    else:
        yield from walk(stmt)


def resolve(fn: Function, shapes: dict, runtime=frozenset()) -> Function:
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
        if (node.array, node.dim) in runtime:
            return Name(extent_param(node.array, node.dim), span=node.span)
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
    hidden = tuple(Param(extent_param(a, d), dtype=T.i64, is_array=False, span=fn.span)
                   for a, d in runtime_extents(fn, runtime))
    return fn.replace(body=tuple(body), params=fn.params + hidden)
