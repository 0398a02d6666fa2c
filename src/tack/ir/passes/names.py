"""Renaming and name collection over IR, for the passes that need fresh names."""

from __future__ import annotations

from ..expressions import Name
from ..statements import Assign, Function, SeqFor
from ..traversal import rewrite, walk


def all_names(fn: Function) -> set:
    names = {p.name for p in fn.params}
    for stmt in fn.body:
        for node in walk(stmt):
            if isinstance(node, Name):
                names.add(node.id)
            for f in node._definitions:
                value = getattr(node, f)
                names.update(value if isinstance(value, tuple) else (value,))
    return names


def fresh(base: str, used: set) -> str:
    k = 1
    while f"__{base}_{k}__" in used:
        k += 1
    name = f"__{base}_{k}__"
    used.add(name)
    return name


def rename(stmts: tuple, mapping: dict) -> tuple:
    """Rename reads and definitions of the names in ``mapping``."""
    def visit(node):
        if isinstance(node, Name) and node.id in mapping:
            return node.replace(id=mapping[node.id])
        changes = {}
        for f in node._definitions:
            value = getattr(node, f)
            if isinstance(value, tuple):
                if any(v in mapping for v in value):
                    changes[f] = tuple(mapping.get(v, v) for v in value)
            elif value in mapping:
                changes[f] = mapping[value]
        return node.replace(**changes) if changes else node
    return tuple(rewrite(s, visit) for s in stmts)


def assigned(stmts) -> dict:
    """``{name: number of definitions}`` for Assign targets and loop variables."""
    counts: dict = {}
    for stmt in stmts:
        for node in walk(stmt):
            if isinstance(node, Assign):
                counts[node.target] = counts.get(node.target, 0) + 1
            elif isinstance(node, SeqFor):
                counts[node.var] = counts.get(node.var, 0) + 1
    return counts
