"""The device functions a kernel can reach, found statically, for cache keys."""

from __future__ import annotations

import ast

from .bindings import CallBindings
from .func import Func


def reachable_functions(fn, tree: ast.FunctionDef) -> list:
    """Every @tack.func that calls in ``tree`` resolve to, transitively, in a
    deterministic order (by first discovery)."""
    found: list = []
    seen: set = set()
    pending = [(fn, tree)]
    while pending:
        owner, node = pending.pop()
        bindings = CallBindings(owner, node)
        for call in ast.walk(node):
            if not isinstance(call, ast.Call):
                continue
            target = bindings.resolve(call.func)
            if isinstance(target, Func) and id(target) not in seen:
                seen.add(id(target))
                found.append(target)
                pending.append((target.fn, target.source.tree))
    return found
