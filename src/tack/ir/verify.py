"""The IR verifier, run at every stage boundary of a variant build (cache misses only).

``verify(fn, stage)`` is read-only. Every stage gets the structural checks;
later stages add their own (see ``_STAGE_CHECKS``). A failure is an
``IRVerificationError`` naming the kernel, the stage, the node kind and the
structural path: it means a pass broke an invariant, a compiler bug.

What it does not prove: definite assignment (only that each name is bound
somewhere), bounds safety, race freedom or numerical equivalence; those are
the job of the differential and contract tests.
"""

from __future__ import annotations

from ..errors import IRVerificationError
from ..types import ScalarType, i32, i64
from . import expressions as E
from . import statements as S
from .node import Node
from .traversal import walk_with_path

STAGES = ("lowered", "resolved", "inferred", "localized", "optimized", "packed",
          "typed")
_LOOP_ONLY = (S.Store, S.Print, E.Atomic, S.SeqFor, S.While, S.Barrier, S.Allocate,
              E.BlockReduce)
_I32_RESULTS = (E.Compare, E.And, E.Or, E.Not, E.IsNan, E.IsInf, E.IsFinite)


class _Failure(Exception):
    def __init__(self, node, path, problem):
        self.node, self.path, self.problem = node, path, problem


def _fail(node, path, problem):
    raise _Failure(node, path, problem)


def _structure(fn: S.Function):
    names = [p.name for p in fn.params]
    if len(set(names)) != len(names):
        _fail(fn, "function.params", "parameter names are not unique")
    loops = [(k, s) for k, s in enumerate(fn.body) if isinstance(s, S.ParallelFor)]
    if len(loops) != 1:
        _fail(fn, "function.body", f"{len(loops)} top-level parallel loops, not 1")
    k, loop = loops[0]
    if not loop.vars or len(loop.vars) != len(loop.extents):
        _fail(loop, f"function.body[{k}]", "loop variables and extents disagree")
    bound = set(names) | set(loop.vars)
    for j, stmt in enumerate(fn.body):
        for node, path in walk_with_path(stmt, f"function.body[{j}]"):
            _node_rules(node, path, stmt is loop)
            if isinstance(node, S.Assign):
                bound.add(node.target)
            elif isinstance(node, S.SeqFor):
                bound.add(node.var)
    _loop_rules(loop.body, f"function.body[{k}].body", depth=0)
    for j, stmt in enumerate(fn.body):
        for node, path in walk_with_path(stmt, f"function.body[{j}]"):
            if isinstance(node, E.Name) and node.id not in bound:
                _fail(node, path, f"name '{node.id}' is never bound")


def _node_rules(node: Node, path: str, in_loop: bool):
    if not in_loop and isinstance(node, _LOOP_ONLY):
        _fail(node, path, "only allowed inside the parallel loop")
    if isinstance(node, E.Const) and (isinstance(node.value, bool)
                                      or not isinstance(node.value, (int, float))):
        _fail(node, path, f"non-numeric constant {node.value!r}")
    for f in node._definitions:
        value = getattr(node, f)
        for name in value if isinstance(value, tuple) else (value,):
            if not isinstance(name, str) or not name:
                _fail(node, path, f"empty name in field '{f}'")
    if isinstance(node, S.Function):
        _fail(node, path, "nested function")


def _loop_rules(body, path, depth):
    """break targets a sequential loop; a continue's flag matches its loop."""
    for k, stmt in enumerate(body):
        here = f"{path}[{k}]"
        if isinstance(stmt, S.Break) and depth == 0:
            _fail(stmt, here, "break out of the parallel loop")
        if isinstance(stmt, S.Continue) and stmt.outermost != (depth == 0):
            _fail(stmt, here, "continue's outermost flag does not match its loop")
        if isinstance(stmt, S.If):
            _loop_rules(stmt.body, here + ".body", depth)
            _loop_rules(stmt.orelse, here + ".orelse", depth)
        elif isinstance(stmt, (S.SeqFor, S.While)):
            _loop_rules(stmt.body, here + ".body", depth + 1)


def _outside_extents(fn: S.Function):
    """``(statement, path)`` for every statement, the parallel loop's body in
    place of the loop (its extents are evaluated on the host)."""
    for j, stmt in enumerate(fn.body):
        if isinstance(stmt, S.ParallelFor):
            for r, inner in enumerate(stmt.body):
                yield inner, f"function.body[{j}].body[{r}]"
        else:
            yield stmt, f"function.body[{j}]"


def _resolved(fn: S.Function):
    for root, base in _outside_extents(fn):
        for node, path in walk_with_path(root, base):
            if isinstance(node, E.DimSize):
                _fail(node, path, "array extent left outside the loop's extents")


def _inferred(fn: S.Function):
    arrays = set()
    for p in fn.params:
        if not isinstance(p.dtype, ScalarType) or not isinstance(p.is_array, bool):
            _fail(p, f"function.params[{p.name}]", "parameter without a type")
        if p.is_array:
            arrays.add(p.name)
    arrays |= {a.name for a in allocations(fn)}
    for j, stmt in enumerate(fn.body):
        for node, path in walk_with_path(stmt, f"function.body[{j}]"):
            if isinstance(node, (E.Load, S.Store, E.Atomic)) and node.array not in arrays:
                _fail(node, path, f"'{node.array}' is neither an array parameter nor "
                                  f"an allocation")


def _packed(fn: S.Function):
    for p in fn.params:
        if not p.is_array:
            _fail(p, f"function.params[{p.name}]", "a scalar parameter left after packing")


def allocations(fn: S.Function) -> list:
    """Every ``Allocate`` of the kernel (shared and local arrays)."""
    from .traversal import walk
    return [n for stmt in fn.body for n in walk(stmt) if isinstance(n, S.Allocate)]


def _typed(fn: S.Function):
    _inferred(fn)
    loop = fn.parallel_for
    local_types = dict(fn.locals)
    local_types.update((p.name, p.dtype) for p in fn.params if not p.is_array)
    local_types.update((v, i64) for v in loop.vars)
    for root, base in _outside_extents(fn):
        for node, path in walk_with_path(root, base):
            _typed_node(node, path, local_types)


def _typed_node(node, path, local_types):
    if isinstance(node, E.Expr) and not isinstance(node.dtype, ScalarType):
        _fail(node, path, "expression without a type")
    if isinstance(node, _I32_RESULTS) and node.dtype != i32:
        _fail(node, path, "truth value that is not i32")
    if isinstance(node, S.SeqFor) and local_types.get(node.var) != node.start.dtype:
        _fail(node, path, f"loop bounds of a type other than '{node.var}''s")
    if isinstance(node, S.Assign):
        if local_types.get(node.target) != node.value.dtype:
            _fail(node, path, f"value of type {node.value.dtype} assigned to "
                              f"'{node.target}' of type {local_types.get(node.target)}")


_STAGE_CHECKS = {
    "lowered": (), "resolved": (_resolved,), "inferred": (_resolved, _inferred),
    "localized": (_resolved, _inferred), "optimized": (_resolved, _inferred),
    "packed": (_resolved, _inferred, _packed),
    "typed": (_resolved, _typed),
}


def verify(fn: S.Function, stage: str) -> S.Function:
    """Check ``fn`` against the invariants of ``stage``; returns ``fn``."""
    try:
        _structure(fn)
        for check in _STAGE_CHECKS[stage]:
            check(fn)
    except _Failure as failure:
        raise IRVerificationError(
            f"Kernel '{fn.name}': IR verification failed after stage '{stage}': "
            f"{type(failure.node).__name__} at {failure.path}: {failure.problem}"
        ) from None
    except TypeError as exc:  # an unregistered node kind, from traversal
        raise IRVerificationError(
            f"Kernel '{fn.name}': IR verification failed after stage '{stage}': {exc}"
        ) from None
    return fn
