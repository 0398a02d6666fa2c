"""Fresh names for everything lowering generates, never colliding with user names."""

from __future__ import annotations

import ast


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
