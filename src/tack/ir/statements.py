"""Statement nodes, parameters and the function node.

A kernel is one :class:`Function`: statements that run once per chunk, then
exactly one :class:`ParallelFor` whose iterations are spread over the device.
"""

from __future__ import annotations

from typing import Optional

from ..types import ScalarType
from .expressions import Expr
from .node import Node, Span, attr, definition, node, operand, span_field


@node
class Stmt(Node):
    """Base of every statement."""

    span: Span = span_field()


@node
class Assign(Stmt):
    """``target = value`` for a scalar local."""

    target: str = definition()
    value: Expr = operand()


@node
class Store(Stmt):
    """``array[index] = value`` with a flat index (skipped when ``checked`` and
    the index is negative: see :class:`~tack.ir.expressions.BoundsCheck`)."""

    array: str = attr()
    index: Expr = operand()
    value: Expr = operand()
    checked: bool = attr(default=False)


@node
class ExprStmt(Stmt):
    """An expression evaluated for its effect (an atomic whose value is unused)."""

    value: Expr = operand()


@node
class If(Stmt):
    cond: Expr = operand()
    body: tuple = operand()
    orelse: tuple = operand()


@node
class SeqFor(Stmt):
    """``for var in range(start, stop, step)`` inside the parallel loop.

    ``start``, ``stop`` and ``step`` are names or constants captured on entry,
    so they are evaluated once; ``step`` is never zero.
    """

    var: str = definition()
    start: Expr = operand()
    stop: Expr = operand()
    step: Expr = operand()
    body: tuple = operand()


@node
class While(Stmt):
    cond: Expr = operand()
    body: tuple = operand()


@node
class Break(Stmt):
    pass


@node
class Continue(Stmt):
    """``continue``; ``outermost`` marks one that ends a parallel iteration (LC8)."""

    outermost: bool = attr(default=False)


@node
class Barrier(Stmt):
    """``tack.barrier()``: every lane of the workgroup waits here; shared memory
    written before it is visible after it."""


@node
class Allocate(Stmt):
    """``name = tack.shared(size, dtype)`` (``space="shared"``: one array per
    workgroup) or ``tack.local_array(size, dtype)`` (``"local"``: per thread)."""

    name: str = definition()
    size: int = attr()
    dtype: Optional[ScalarType] = attr()
    space: str = attr()
    like: str = attr(default="")  # shared_like/local_array_like: take this array's dtype


@node
class Print(Stmt):
    """``print(...)`` of scalars and string labels."""

    args: tuple = operand()


@node
class ParallelFor(Stmt):
    """The kernel's one parallel loop over ``[0, extents[0]) x ...``.

    ``extents`` are evaluated on the host from the arguments; the iteration
    space starts at zero (a nonzero start or a step is moved into the body).
    """

    vars: tuple = definition()
    extents: tuple = operand()
    body: tuple = operand()


@node
class Param(Node):
    """A kernel parameter; ``dtype`` and ``is_array`` are set by inference."""

    name: str = definition()
    dtype: Optional[ScalarType] = attr(default=None)
    is_array: Optional[bool] = attr(default=None)
    ndim: int = attr(default=0)
    span: Span = span_field()


@node
class Function(Node):
    """A kernel: parameters, and a body ending in (or containing) one ParallelFor.

    ``locals`` is filled by annotation: ``(name, dtype)`` for every scalar
    local, in order of first assignment. ``default_float`` is the float type
    of this variant (f64 if any array is f64, else f32).
    """

    name: str = attr()
    params: tuple = operand()
    body: tuple = operand()
    locals: tuple = attr(default=())
    default_float: Optional[ScalarType] = attr(default=None)
    disjoint: bool = attr(default=False)
    streaming: bool = attr(default=False)
    span: Span = span_field()

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def parallel_for(self) -> ParallelFor:
        for stmt in self.body:
            if isinstance(stmt, ParallelFor):
                return stmt
        raise LookupError(f"kernel '{self.name}' has no parallel loop")
