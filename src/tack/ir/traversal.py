"""Generic traversal over field roles: ``children``, ``walk`` and ``rewrite``.

Nothing here knows a node kind by name; a value in an operand field that is
not a registered node fails loudly.
"""

from __future__ import annotations

from typing import Callable, Iterator

from .node import Node


def _check(value, owner: Node) -> Node:
    if not isinstance(value, Node):
        raise TypeError(
            f"Unknown IR node {type(value).__name__} in {type(owner).__name__}")
    return value


def children(node: Node) -> Iterator[Node]:
    """The direct child nodes of ``node``, in field order."""
    for name in node._operands:
        value = getattr(node, name)
        if isinstance(value, tuple):
            for item in value:
                yield _check(item, node)
        elif value is not None:
            yield _check(value, node)


def walk(root: Node) -> Iterator[Node]:
    """Every node under ``root`` (included), in preorder. (``children`` inlined:
    passes, dispatch and disk-cache hits walk whole kernels, and a generator
    per node made a walk take 2.5 times as long.)"""
    stack = [root]
    pop = stack.pop
    while stack:
        current = pop()
        yield current
        kids = []
        for name in current._operands:
            value = getattr(current, name)
            if isinstance(value, tuple):
                kids.extend(value)
            elif value is not None:
                kids.append(value)
        for kid in kids:
            if not isinstance(kid, Node):
                _check(kid, current)
        kids.reverse()
        stack.extend(kids)


def walk_with_path(root: Node, path: str = "function") -> Iterator[tuple[Node, "Path"]]:
    """Like :func:`walk`, with each node's structural path for diagnostics (a
    ``Path``, spelled by ``str()``: only a failure reads it). Iterative, and
    the paths are spelled lazily: nested generators and path strings made each
    node cost as much as its depth, and verifying a sum of 800 terms took 12 s."""
    stack = [(root, path)]
    pop = stack.pop
    while stack:
        current, where = pop()
        yield current, where
        kids = []
        for name in current._operands:
            value = getattr(current, name)
            if isinstance(value, tuple):
                kids.extend((_check(item, current), Path(where, name, i))
                            for i, item in enumerate(value))
            elif value is not None:
                kids.append((_check(value, current), Path(where, name)))
        kids.reverse()
        stack.extend(kids)


class Path:
    """Where a node sits below the root: ``function.body[2].value.lhs``."""

    __slots__ = ("parent", "field", "index")

    def __init__(self, parent, field: str, index: int = None):
        self.parent, self.field, self.index = parent, field, index

    def __str__(self) -> str:
        steps, at = [], self
        while isinstance(at, Path):
            steps.append(f".{at.field}" if at.index is None else f".{at.field}[{at.index}]")
            at = at.parent
        return str(at) + "".join(reversed(steps))

    __repr__ = __str__


def rewrite(root: Node, fn: Callable[[Node], Node]) -> Node:
    """Rebuild ``root`` bottom-up, replacing each node by ``fn(node)``.

    Children are rewritten first; a node whose children did not change is
    passed to ``fn`` as it is, so unchanged subtrees stay shared.
    """
    changes = {}
    for name in root._operands:
        value = getattr(root, name)
        if isinstance(value, tuple):
            new = tuple(rewrite(_check(v, root), fn) for v in value)
            if any(a is not b for a, b in zip(new, value)):
                changes[name] = new
        elif value is not None:
            new = rewrite(_check(value, root), fn)
            if new is not value:
                changes[name] = new
    if changes:
        root = root.replace(**changes)
    return fn(root)


def rewrite_body(stmts: tuple, fn: Callable[[Node], Node]) -> tuple:
    """:func:`rewrite` applied to each statement of a body."""
    return tuple(rewrite(s, fn) for s in stmts)
