"""Fresh names for everything lowering generates, never colliding with user names."""

from __future__ import annotations

import ast
from typing import NamedTuple


class NameAllocator:
    """Hands out names not used anywhere in the kernel or its device functions.

    A generated name is ``base`` plus a deterministic counter suffix, so the
    same kernel always lowers to the same IR text.
    """

    def __init__(self, used=()):
        self._used = set(used)
        self._counter = 0

    def reserve(self, names) -> None:
        self._used.update(names)

    def fresh(self, base: str) -> str:
        while True:
            self._counter += 1
            name = f"__{base}_{self._counter}__"
            if name not in self._used:
                self._used.add(name)
                return name


def names_in(tree: ast.AST) -> set[str]:
    """Every identifier spelled in ``tree`` (names, parameters, attributes)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
    return found


def stores_to(statements, name: str) -> bool:
    """Whether any of ``statements`` (AST) assigns ``name``: an assignment,
    an augmented one, or a loop target."""
    return any(isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
               and node.id == name for stmt in statements for node in ast.walk(stmt))


def assigned_names(tree: ast.FunctionDef) -> set[str]:
    """Names a function binds: parameters, assignment and loop targets."""
    bound = {a.arg for a in tree.args.args}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
    return bound


class Scanned(NamedTuple):
    """A function's names, for disk-cache keys (``lang/dependencies.py``)."""

    assigned: frozenset   # what ``assigned_names`` gives
    callees: tuple        # the callee expression of every call
    outer: tuple          # (text as written, node) of each distinct name and
    #                       attribute chain outside the decorators


def scan(tree: ast.FunctionDef) -> Scanned:
    """``tree``'s names in one pass (``ast.walk``, a generator per node, three
    times over took most of a large kernel's disk-cache hit)."""
    assigned = {a.arg for a in tree.args.args}
    callees, outer = [], {}
    decorators = {id(d) for d in tree.decorator_list}
    stack = [tree]
    while stack:
        node = stack.pop()
        if id(node) in decorators:
            callees.extend(n.func for n in ast.walk(node) if isinstance(n, ast.Call))
            continue
        kind = type(node)
        if kind is ast.Name:
            if isinstance(node.ctx, ast.Store):
                assigned.add(node.id)
            outer.setdefault(node.id, node)
        elif kind is ast.Attribute:
            outer.setdefault(_spelled(node), node)
        elif kind is ast.Call:
            callees.append(node.func)
        kids = []
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                kids.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(value, ast.AST):
                kids.append(value)
        kids.reverse()
        stack.extend(kids)
    return Scanned(frozenset(assigned), tuple(callees), tuple(outer.items()))


def _spelled(node: ast.Attribute) -> str:
    """An attribute chain of a name as written (``ast.unparse`` took most of a
    disk-cache key's time); any other attribute through ``ast.unparse``."""
    parts, base = [], node
    while isinstance(base, ast.Attribute):
        parts.append(base.attr)
        base = base.value
    if not isinstance(base, ast.Name):
        return ast.unparse(node)
    parts.append(base.id)
    return ".".join(reversed(parts))
