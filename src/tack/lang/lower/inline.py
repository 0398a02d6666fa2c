"""Inlining ``@tack.func`` device functions at their call sites.

Each call validates the callee's source, checks its arity and rejects
recursion, restructures its returns so every return ends its path (LC7),
renames its parameters and locals to fresh names, aliases its array
parameters to the caller's arrays, and lowers its body into the caller.
"""

from __future__ import annotations

import ast
import copy

from ..func import Func
from ..validate import validate_source
from .arrays import func_array_params, func_definite_arrays, ndim_of
from .scope import Scope
from .vectors import Vec


def _ends_in_return(body) -> bool:
    if not body:
        return False
    last = body[-1]
    if isinstance(last, ast.Return):
        return True
    return (isinstance(last, ast.If) and _ends_in_return(last.body)
            and _ends_in_return(last.orelse))


def _has_return(stmt) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(stmt))


def structure_returns(body: list) -> list:
    """Move the statements after an ``if`` that returns into its branches."""
    out = []
    for k, stmt in enumerate(body):
        if isinstance(stmt, ast.If) and _has_return(stmt):
            rest = body[k + 1:]
            new = copy.copy(stmt)
            new.body = structure_returns(
                stmt.body if _ends_in_return(stmt.body) else stmt.body + rest)
            new.orelse = structure_returns(
                stmt.orelse if _ends_in_return(stmt.orelse) else stmt.orelse + rest)
            out.append(new)
            return out
        out.append(stmt)
    return out


def _return_arity(func: Func, scope: Scope) -> int:
    counts = set()
    for node in ast.walk(func.source.tree):
        if isinstance(node, ast.Return):
            if node.value is None:
                counts.add(0)
            elif isinstance(node.value, ast.Tuple):
                counts.add(len(node.value.elts))
            else:
                counts.add(1)
    if len(counts) > 1:
        raise scope.unsupported("mix of returns with different numbers of values",
                                func.source.tree)
    return counts.pop() if counts else 0


class InlineLowering:
    """Mixin of the Lowerer: ``inline`` returns the result slot names."""

    def inline(self, func: Func, node: ast.Call) -> list:
        caller = self.scope
        if func in self.active:
            raise caller.unsupported(f"recursive call of device function "
                                     f"'{func.name}'", node)
        source = func.source
        if not getattr(func, "_validated", False):
            validate_source(source)
            func._validated = True
        params = [a.arg for a in source.tree.args.args]
        if len(node.args) != len(params):
            raise caller.error(TypeError, f"device function '{func.name}' expects "
                               f"{len(params)} arguments, got {len(node.args)}", node)
        child = Scope.for_function(source, source.tree, func.fn, caller=caller,
                                   extra=getattr(func, "_extra", None))
        self.bind_arguments(func, child, params, node)
        for name in sorted(child.bound - set(params)):
            child.rename[name] = self.names.fresh(f"{func.name}_{name}")
        body = structure_returns(source.tree.body)
        arity = _return_arity(func, child)
        if arity and not _ends_in_return(body):
            raise child.unsupported("path that ends without returning a value "
                                    "(every path must return)", source.tree)
        child.results = tuple(self.names.fresh(f"{func.name}_result")
                              for _ in range(arity))
        self.active.add(func)
        saved, self.scope = self.scope, child
        try:
            stmts = self.block(body)
        finally:
            self.scope = saved
            self.active.discard(func)
        if child.outside_parallel_loop():
            child.check_outside_loop(stmts)
        self.pre.extend(stmts)
        span = caller.span(node)
        return [self.local_value(slot, span) for slot in child.results]

    def bind_arguments(self, func: Func, child: Scope, params, node) -> None:
        caller = self.scope
        arrays = func_array_params(func)
        definite = func_definite_arrays(func)
        scalars = []
        for param, arg in zip(params, node.args):
            is_array_arg = isinstance(arg, ast.Name) and arg.id in caller.arrays
            if param in arrays and (is_array_arg or param in definite):
                if not is_array_arg:
                    raise caller.unsupported(
                        f"argument for array parameter '{param}' of device function "
                        f"'{func.name}' that is not an array name", arg)
                ndim_of(arrays, param)   # raises an indexing conflict
                child.arrays[param] = caller.arrays[arg.id]
            elif is_array_arg:
                raise caller.error(TypeError, f"array '{arg.id}' passed to scalar "
                                   f"parameter '{param}' of device function "
                                   f"'{func.name}'", arg)
            else:
                scalars.append((param, arg))
        values = self.ordered([arg for _, arg in scalars], vectors=True)
        for (param, arg), value in zip(scalars, values):
            if param in arrays and not isinstance(value, Vec):
                # only subscripted: a vector or matrix value would do, a scalar not
                raise caller.unsupported(
                    f"scalar argument for parameter '{param}' of device function "
                    f"'{func.name}', which subscripts it (pass an array name, or a "
                    f"vector or matrix)", arg)
            name = self.names.fresh(f"{func.name}_{param}")
            self.pre.extend(self.assign_local(name, value, arg))
            child.rename[param] = name
