"""Debug-mode lowering: every array access checked per dimension at run time.

In a debug template, each access's index becomes a :class:`BoundsCheck` over
its per-dimension indices and extents, and the access is marked ``checked``
(a negative index skips it). Extents are loads from the hidden
``__tack_extents__`` array (``SLOTS`` entries per array parameter, filled per
launch), so no shape is compiled in; violations are recorded in the hidden
``__tack_errors__`` array. Both hidden arrays follow the kernel's own
parameters. Each access gets a :class:`Site` saying where it is and how it
was written, for the ``IndexError`` raised after the launch.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ... import types as T
from ...ir import expressions as E

ERRORS = "__tack_errors__"
EXTENTS = "__tack_extents__"
SLOTS = 8   # extents recorded per array parameter: debug mode handles rank <= 8


@dataclass(frozen=True)
class Site:
    """One checked access: who (kernel or inlined device function), where, what."""

    owner: str
    file: str
    line: int
    column: int
    text: str
    dims: int = 1


class _At:
    """A stand-in AST position for an error raised from a span."""

    def __init__(self, span):
        self.lineno = span.line
        self.col_offset = span.col - 1


class BoundsLowering:
    """Mixin of the Lowerer; active when ``self.debug`` is true."""

    debug = False
    host_context = False  # lowering the loop range: extents stay symbolic

    def extent(self, array: str, dim: int, span) -> E.Expr:
        if array in self.allocation_sizes:  # shared and local arrays are 1-D
            if dim != 0:
                raise self.scope.unsupported(f"dimension {dim} of the one-dimensional "
                                             f"array '{array}'", _At(span))
            # a typed (strong) i64 literal, as every extent is an i64
            return E.Const(self.allocation_sizes[array], dtype=T.i64, span=span)
        if not self.debug or self.host_context or array not in self.extent_slots:
            return E.DimSize(array, dim, span=span)
        slot = self.extent_slots[array] + dim
        return E.Load(EXTENTS, E.Const(slot, span=span), span=span)

    def access_index(self, array: str, values, node) -> E.Expr:
        """The flat index of an access: plain, or checked in debug mode."""
        if not values:   # a[()], or an atomic's index ()
            raise self.scope.unsupported("array access without an index", node)
        span = self.scope.span(node)
        if not self.debug:
            return self.linearize(array, values, node)
        extents = tuple(self.extent(array, d, span) for d in range(len(values)))
        site = self.record_site(node, len(values))
        return E.BoundsCheck(site, ERRORS, tuple(values), extents, span=span)

    def record_site(self, node, dims: int) -> int:
        scope = self.scope
        span = scope.span(node)
        text = ast.unparse(node)
        if isinstance(node, ast.Call) and len(node.args) >= 2:   # an atomic's target
            index = node.args[1]
            inner = (", ".join(ast.unparse(e) for e in index.elts)
                     if isinstance(index, ast.Tuple) else ast.unparse(index))
            text = f"{ast.unparse(node.args[0])}[{inner}]"   # as a subscript reads
        owner = "" if scope.caller is None else f" in device function '{scope.source.name}'"
        self.sites.append(Site(owner, span.file, span.file_line, span.col, text, dims))
        return len(self.sites) - 1
