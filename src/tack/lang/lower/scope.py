"""The per-function state of lowering: names, arrays, loops, and error helpers.

A kernel is lowered in one :class:`Scope`; each inlined device function gets a
child scope whose locals are renamed to fresh names and whose array parameters
are aliases of the caller's arrays.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Optional

from ...errors import UnsupportedSyntaxError, add_source_note
from ...ir import expressions as E
from ...ir import statements as S
from ...ir.traversal import walk
from ..bindings import CallBindings
from ..names import assigned_names
from ..source import Source
from ..validate import unsupported

_OUTSIDE = ((S.Store, "array store"), (S.Print, "print"), (E.Atomic, "atomic"),
            (S.SeqFor, "loop"), (S.While, "loop"), (S.Barrier, "barrier"),
            (E.BlockReduce, "block reduction"), (S.Allocate, "array allocation"))
# The returned value runs once, in a launch of one iteration after the loop's:
# it has no workgroup to reduce over or wait for.
_RETURNED = ((S.Barrier, "barrier"), (E.BlockReduce, "block reduction"))


@dataclass
class Scope:
    source: Source
    tree: ast.FunctionDef
    bindings: CallBindings
    rename: dict = field(default_factory=dict)   # source scalar name -> IR name
    arrays: dict = field(default_factory=dict)   # source array name -> IR array
    bound: set = field(default_factory=set)      # names the function binds
    results: Optional[tuple] = None              # result slots of a device function
    loops: list = field(default_factory=list)    # "parallel" | "seq" | "while"
    caller: Optional["Scope"] = None

    @classmethod
    def for_function(cls, source: Source, tree: ast.FunctionDef, fn, caller=None,
                     extra=None):
        return cls(source, tree, CallBindings(fn, tree, extra), bound=assigned_names(tree),
                   caller=caller)

    def unsupported(self, construct: str, node, hint: str = None):
        return unsupported(self.source, construct, node, hint)

    def error(self, exc_type, message: str, node):
        """``exc_type`` with the function's name and the node's position."""
        exc = exc_type(f"{self.describe()}: {message} {self.source.where(node)}")
        add_source_note(exc, self.source.span(node))
        return exc

    def owner(self, span) -> str:
        """``describe()``, or the device function inlined here whose source
        ``span`` is in (its line and column count in that source)."""
        if span.function and span.function != self.source.name:
            return (f"Device function '{span.function}' (inlined into kernel "
                    f"'{self.kernel_scope().source.name}')")
        return self.describe()

    def describe(self) -> str:
        text = f"{self.source.kind} '{self.source.name}'"
        root = self.kernel_scope()
        if root is not self:
            text += f" (inlined into kernel '{root.source.name}')"
        return text

    def kernel_scope(self) -> "Scope":
        """The outermost caller's scope: the kernel's."""
        root = self
        while root.caller is not None:
            root = root.caller
        return root

    def span(self, node):
        return self.source.span(node)

    def outside_parallel_loop(self) -> bool:
        """True while lowering the statements before the kernel's parallel loop."""
        scope = self
        while scope is not None:
            if scope.loops:
                return False
            scope = scope.caller
        return True

    def check_outside_loop(self, stmts) -> None:
        """Reject a store, print, atomic or loop this function lowered to ``stmts``
        before the parallel loop (inlined callees checked theirs already)."""
        self.reject(stmts, _OUTSIDE, "outside the parallel loop")

    def check_preamble_reads(self, stmts, loop) -> None:
        """Reject a read, before the parallel loop, of an array the loop stores
        to or updates atomically: the statements before the loop run again for
        every chunk of iterations (every work-item on a GPU), so a later run
        would read what earlier iterations wrote (``x0 = x[0]`` before
        ``x[i] -= x0``)."""
        written = {node.array for node in walk(loop)
                   if isinstance(node, (S.Store, E.Atomic))}
        for root in stmts:
            for node in walk(root):
                if isinstance(node, E.Load) and node.array in written:
                    span = node.span
                    exc = UnsupportedSyntaxError(
                        f"{self.owner(span)}: unsupported read of '{node.array}' before "
                        f"the parallel loop, which the loop writes: the statements "
                        f"before the loop run again for each chunk of iterations, so a "
                        f"later chunk would read what the loop wrote (read the value "
                        f"on the host and pass it as an argument) at line {span.line}, "
                        f"column {span.col}")
                    add_source_note(exc, span)
                    raise exc

    def check_returned(self, nodes) -> None:
        """Reject what needs a workgroup in the IR of a kernel's returned value
        (inlined callees included)."""
        self.reject(nodes, _RETURNED, "in the returned value")

    def reject(self, nodes, kinds, where: str) -> None:
        for root in nodes:
            for node in walk(root):
                for kind, what in kinds:
                    if isinstance(node, kind):
                        span = node.span
                        exc = UnsupportedSyntaxError(
                            f"{self.owner(span)}: unsupported {what} {where} at line "
                            f"{span.line}, column {span.col}")
                        add_source_note(exc, span)
                        raise exc
