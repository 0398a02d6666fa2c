"""workgroups: workgroup features only where the backend has workgroups, and
collectives only where every lane of a workgroup reaches them.

Rejects: on a backend without workgroups (the CPU), ``tack.thread_id``,
``tack.barrier``, ``tack.shared`` and the block reductions
(``NotImplementedError``; ``tack.local_array`` is fine everywhere). On the
others, a barrier or block reduction inside an ``if``, a ``while``, a loop
whose bounds differ between lanes or that a ``break``/``continue`` may leave
early, one side of a conditional expression or the right side of
``and``/``or``, or in a kernel whose parallel loop can ``continue`` past it
(``ValueError``): some lanes would skip it and the workgroup would hang. A
bound is the same on every lane when it is computed from scalar parameters
and such locals, assigned under conditions and loops that are themselves
the same on every lane. ``requires_full_workgroups`` tells dispatch that the
launch count must be a multiple of the workgroup size (256).
"""

from __future__ import annotations

from .. import expressions as E
from .. import statements as S
from ..traversal import walk
from .common import kernel_error

WORKGROUP_SIZE = 256
_COLLECTIVES = (S.Barrier, E.BlockReduce)
_SPELLING = {S.Barrier: "tack.barrier()", E.BlockSum: "tack.block_sum()",
             E.BlockMin: "tack.block_min()", E.BlockMax: "tack.block_max()",
             E.ThreadId: "tack.thread_id()", S.Allocate: "tack.shared()"}


def _workgroup_only(node) -> bool:
    if isinstance(node, S.Allocate):
        return node.space == "shared"
    return isinstance(node, (E.ThreadId,) + _COLLECTIVES)


def _nodes(fn):
    for stmt in fn.body:
        yield from walk(stmt)


def requires_full_workgroups(fn: S.Function) -> bool:
    return any(isinstance(n, _COLLECTIVES) or (isinstance(n, S.Allocate)
                                                and n.space == "shared")
               for n in _nodes(fn))


def check_workgroups(fn: S.Function, supported: bool, backend_name: str) -> S.Function:
    for node in _nodes(fn):
        if _workgroup_only(node) and not supported:
            raise NotImplementedError(
                f"Kernel '{fn.name}': {_SPELLING[type(node)]} needs a backend with "
                f"workgroups, and {backend_name} has none (run it on a GPU backend, "
                f"such as tack.device('opencl'))")
    if supported:
        _check_participation(fn)
    return fn


_DIVERGES = object()   # a guard no lane set agrees on: a loop left early by some lanes


def _guarded_assignments(stmts, guards=()):
    """``(target, value, guards)`` for every assignment in ``stmts``: ``guards``
    are what decides whether it runs (enclosing conditions, loop bounds, and
    ``_DIVERGES`` inside a loop that a ``break`` or ``continue`` may leave
    early). A loop variable's value is None (never uniform)."""
    for stmt in stmts:
        if isinstance(stmt, S.Assign):
            yield stmt.target, stmt.value, guards
        elif isinstance(stmt, S.If):
            yield from _guarded_assignments(stmt.body + stmt.orelse, guards + (stmt.cond,))
        elif isinstance(stmt, (S.SeqFor, S.While)):
            inner = guards + ((stmt.start, stmt.stop, stmt.step)
                              if isinstance(stmt, S.SeqFor) else (stmt.cond,))
            if _own_jumps(stmt.body):
                inner += (_DIVERGES,)
            if isinstance(stmt, S.SeqFor):
                yield stmt.var, None, inner
            yield from _guarded_assignments(stmt.body, inner)
        elif isinstance(stmt, S.ParallelFor):
            yield from _guarded_assignments(stmt.body, guards)


def _own_jumps(body) -> bool:
    """Whether ``body`` has a ``break`` or ``continue`` of its own loop (not of
    a loop nested in it)."""
    for stmt in body:
        if isinstance(stmt, (S.Break, S.Continue)):
            return True
        if isinstance(stmt, S.If) and _own_jumps(stmt.body + stmt.orelse):
            return True
    return False


def _uniform_names(fn) -> set:
    """Scalar parameters, and locals every assignment of which gives a uniform
    value under uniform control (a lane set that every lane agrees on)."""
    uniform = {p.name for p in fn.params if not p.is_array}
    assigned = {}
    for target, value, guards in _guarded_assignments(fn.body):
        assigned.setdefault(target, []).append((value, guards))
    changed = True
    while changed:
        changed = False
        for name, values in assigned.items():
            if name not in uniform and all(
                    v is not None and _uniform(v, uniform)
                    and all(g is not _DIVERGES and _uniform(g, uniform) for g in guards)
                    for v, guards in values):
                uniform.add(name)
                changed = True
    return uniform


def _uniform(expr, names) -> bool:
    for node in walk(expr):
        if isinstance(node, (E.Load, E.ThreadId, E.Atomic)):
            return False
        if isinstance(node, E.Name) and node.id not in names:
            return False
    return True


def _check_participation(fn: S.Function) -> None:
    loop = fn.parallel_for
    collectives = [n for s in loop.body for n in walk(s) if isinstance(n, _COLLECTIVES)]
    if not collectives:
        return
    for node in (n for s in loop.body for n in walk(s)):
        if isinstance(node, S.Continue) and node.outermost:
            raise _divergent(fn, collectives[0], "the parallel loop can `continue` past "
                             "it")
        if isinstance(node, E.Select):
            _refuse_inside(fn, (S.ExprStmt(node.if_true), S.ExprStmt(node.if_false)),
                           "one side of a conditional expression")
        elif isinstance(node, (E.And, E.Or)):
            _refuse_inside(fn, (S.ExprStmt(node.rhs),), "the right side of `and`/`or`, "
                           "which not every lane evaluates")
    _check_body(fn, loop.body, _uniform_names(fn))


def _check_body(fn, body, uniform) -> None:
    for stmt in body:
        if isinstance(stmt, S.If):
            _refuse_inside(fn, stmt.body + stmt.orelse, "an `if`")
            _refuse_inside(fn, (S.ExprStmt(stmt.cond),), "an `if` condition")
        elif isinstance(stmt, S.While):
            _refuse_inside(fn, stmt.body, "a `while` loop")
        elif isinstance(stmt, S.SeqFor):
            if not all(_uniform(x, uniform) for x in (stmt.start, stmt.stop, stmt.step)):
                _refuse_inside(fn, stmt.body, "a loop whose bounds differ between lanes")
            elif _own_jumps(stmt.body):
                _refuse_inside(fn, stmt.body, "a loop that a `break` or `continue` may "
                               "leave early on some lanes")
            else:
                _check_body(fn, stmt.body, uniform)


def _refuse_inside(fn, body, where: str) -> None:
    for stmt in body:
        for node in walk(stmt):
            if isinstance(node, _COLLECTIVES):
                raise _divergent(fn, node, f"it is inside {where}")


def _divergent(fn, node, why: str) -> ValueError:
    return kernel_error(ValueError, fn.name, f"{_SPELLING[type(node)]} must be reached by "
                        f"every thread of a workgroup, but {why}", node.span)
