"""CallBindings: what a name in a kernel or device function refers to, statically.

A bare name is looked up in the function's closure cells, then its globals;
an attribute is followed only through module objects. Names the function
binds itself (parameters, assignments, loop targets) are dynamic and shadow
any outer binding. Nothing is evaluated: no property, no call.
"""

from __future__ import annotations

import ast
import builtins
import math
import types
from dataclasses import dataclass

from .func import Func
from .intrinsics import TACK_INTRINSICS
from .names import assigned_names

_MISSING = object()


@dataclass(frozen=True)
class Intrinsic:
    """A kernel intrinsic, named ``module.name`` (``math.sqrt``, ``tack.f32``)."""

    name: str


def _intrinsic_of(obj, spelled: str):
    if id(obj) in TACK_INTRINSICS:
        return Intrinsic("tack." + TACK_INTRINSICS[id(obj)])
    for module in (builtins, math):
        if getattr(module, spelled, _MISSING) is obj:
            return Intrinsic(f"{module.__name__}.{spelled}")
    if callable(obj):  # imported under another name: ``from math import sqrt as r``
        for module in (builtins, math):
            for name, value in vars(module).items():
                if value is obj and not name.startswith("_"):
                    return Intrinsic(f"{module.__name__}.{name}")
    return None


class CallBindings:
    def __init__(self, fn, tree: ast.FunctionDef, extra=None, dynamic=None):
        # ``dynamic``: the names ``tree`` binds, where the caller has them
        self.dynamic = assigned_names(tree) if dynamic is None else dynamic
        # Names bound by a rewrite (device-class methods), ahead of closure and globals.
        self.extra = extra or {}
        self.globals = fn.__globals__
        self.closure = {}
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:
                    pass

    def lookup_name(self, name: str):
        """The object bound to a bare name, or ``_MISSING``."""
        if name in self.dynamic:
            return _MISSING
        if name in self.extra:
            return self.extra[name]
        if name in self.closure:
            return self.closure[name]
        return self.globals.get(name, _MISSING)

    def is_unbound(self, name: str) -> bool:
        """True when nothing binds ``name``: not the function, a closure cell,
        a global or a builtin."""
        return (name not in self.dynamic and self.lookup_name(name) is _MISSING
                and not hasattr(builtins, name))

    def resolve(self, node: ast.expr):
        """Resolve a callee expression: a Func, an Intrinsic, an object, or None.

        ``None`` means the name is dynamic, or an attribute of something that is
        not a module.
        """
        if isinstance(node, ast.Name):
            if node.id in self.dynamic:
                return None
            obj = self.lookup_name(node.id)
            if obj is _MISSING:
                return Intrinsic(f"builtins.{node.id}")
            return obj if isinstance(obj, Func) else (_intrinsic_of(obj, node.id) or obj)
        if isinstance(node, ast.Attribute):
            base = self.resolve_module(node.value)
            if base is None:
                return None
            obj = vars(base).get(node.attr, _MISSING)
            if obj is _MISSING:
                return None
            if isinstance(obj, Func):
                return obj
            return _intrinsic_of(obj, node.attr) or obj
        return None

    def resolve_module(self, node: ast.expr):
        if isinstance(node, ast.Name):
            obj = self.lookup_name(node.id)
        elif isinstance(node, ast.Attribute):
            base = self.resolve_module(node.value)
            obj = _MISSING if base is None else vars(base).get(node.attr, _MISSING)
        else:
            return None
        return obj if isinstance(obj, types.ModuleType) else None
