"""What a kernel's code depends on, found statically, for disk-cache keys: the
device functions it can reach, and what each outer name in them resolves to."""

from __future__ import annotations

import ast
import secrets
import types

from .bindings import CallBindings, Intrinsic
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


def source_key(fn, source) -> tuple:
    """A kernel's or device function's part of a disk-cache key: its module,
    qualified name, source text and position, and its outer names' bindings.
    The same source compiles differently when a name in it is bound to
    another intrinsic or type (``op = math.sqrt`` or ``math.exp``, a factory's
    ``T`` argument), so the bindings are part of the key."""
    return (fn.__module__, fn.__qualname__, source.text, source.file, source.first_line,
            source.indent, outer_bindings(fn, source.tree))


def outer_bindings(fn, tree: ast.FunctionDef) -> tuple:
    """``(name as written, what it resolves to)`` for every name and module
    attribute in ``tree`` that is bound outside the function, sorted."""
    bindings = CallBindings(fn, tree)
    found = {}
    parts = [tree.args, *tree.body] + ([tree.returns] if tree.returns else [])
    for node in (n for part in parts for n in ast.walk(part)):   # not the decorators
        if not isinstance(node, (ast.Name, ast.Attribute)):
            continue
        text = ast.unparse(node)
        if text not in found:
            target = bindings.resolve(node)
            if target is not None:
                found[text] = _describe(target)
    return tuple(sorted(found.items()))


_PROCESS = secrets.token_hex(8)   # no other process's key can hold it


def _describe(target) -> str:
    """A stable description of a resolved object (an object whose ``repr``
    holds its address gets a key of its own in each process: a miss, never
    a wrong hit)."""
    if isinstance(target, Func):
        return f"func {target.fn.__module__}.{target.fn.__qualname__}"
    if isinstance(target, Intrinsic):
        return f"intrinsic {target.name}"
    if isinstance(target, types.ModuleType):
        return f"module {target.__name__}"
    if isinstance(target, (type, types.FunctionType, types.BuiltinFunctionType)):
        return f"{type(target).__name__} {target.__module__}.{target.__qualname__}"
    kind = type(target)
    try:
        shown = repr(target)
    except Exception:   # noqa: BLE001 - a host object's broken repr is not the kernel's error
        shown = f"unrepresentable {_PROCESS} {id(target)}"   # a key of this process alone
    return f"{kind.__module__}.{kind.__qualname__} {shown}"
