"""What a kernel's code depends on, found statically, for disk-cache keys: the
device functions it can reach, and what each outer name in them resolves to."""

from __future__ import annotations

import secrets
import types

from .bindings import CallBindings, Intrinsic
from .func import Func


def reachable_functions(fn, source) -> list:
    """Every @tack.func that calls in ``source`` (of ``fn``) resolve to,
    transitively, in a deterministic order (by first discovery)."""
    found: list = []
    seen: set = set()
    pending = [(fn, source)]
    while pending:
        owner, text = pending.pop()
        names = text.names
        bindings = CallBindings(owner, text.tree, dynamic=names.assigned)
        for callee in names.callees:
            target = bindings.resolve(callee)
            if isinstance(target, Func) and id(target) not in seen:
                seen.add(id(target))
                found.append(target)
                pending.append((target.fn, target.source))
    return found


def source_key(fn, source) -> tuple:
    """A kernel's or device function's part of a disk-cache key: its module,
    qualified name, source text and position, and its outer names' bindings.
    The same source compiles differently when a name in it is bound to
    another intrinsic or type (``op = math.sqrt`` or ``math.exp``, a factory's
    ``T`` argument), so the bindings are part of the key."""
    return (fn.__module__, fn.__qualname__, source.text, source.file, source.first_line,
            source.indent, outer_bindings(fn, source))


def outer_bindings(fn, source) -> tuple:
    """``(name as written, what it resolves to)`` for every name and module
    attribute in ``source`` (of ``fn``) that is bound outside the function,
    sorted. The names are the source's own (found once); what they resolve to
    is looked up each time."""
    names = source.names
    bindings = CallBindings(fn, source.tree, dynamic=names.assigned)
    found = {}
    for text, node in names.outer:
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
