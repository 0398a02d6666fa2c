"""The cost model: flops and bytes per iteration of the parallel loop.

Each node kind has a handler in ``node_cost`` returning its own
``(flops, bytes)``; a sequential loop multiplies its body by its trip count
when that is a constant and by ``UNKNOWN_TRIPS`` otherwise. The CPU
threading decision multiplies the result by the launch's iteration count;
``tack.inspect(..., mode="cost")`` prints it.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import expressions as E
from . import statements as S
from .registry import Registry
from .traversal import children

UNKNOWN_TRIPS = 64  # a loop with run-time bounds is assumed to be long
node_cost = Registry("cost model")


@dataclass(frozen=True)
class Cost:
    flops: float
    bytes: float

    def __add__(self, other):
        return Cost(self.flops + other.flops, self.bytes + other.bytes)

    def __mul__(self, k):
        return Cost(self.flops * k, self.bytes * k)


def _itemsize(node, fn) -> int:
    try:
        dtype = fn.param(node.array).dtype
    except KeyError:  # a shared or local allocation: on-chip, counted as 4 bytes
        return 4
    return dtype.itemsize if dtype is not None else 4


@node_cost.register(E.Expr, S.Stmt)
def _free(node, fn):
    return Cost(0, 0)


@node_cost.register(E.BinaryOp, E.UnaryOp, E.Select)
def _one_flop(node, fn):
    return Cost(1, 0)


@node_cost.register(E.Cast)
def _cast(node, fn):
    return Cost(0.5, 0)


@node_cost.register(E.TrueDiv, E.FloorDiv, E.Mod, E.Sqrt)
def _division(node, fn):
    return Cost(4, 0)


@node_cost.register(E.MathUnary, E.MathBinary, E.Pow)
def _transcendental(node, fn):
    return Cost(20, 0)


@node_cost.register(E.Floor, E.Ceil, E.Trunc, E.Round, E.Fabs, E.IsNan, E.IsInf, E.IsFinite,
                    E.Degrees, E.Radians)
def _cheap_math(node, fn):
    return Cost(1, 0)


@node_cost.register(E.Load)
def _load(node, fn):
    return Cost(0, _itemsize(node, fn))


@node_cost.register(S.Store)
def _store(node, fn):
    return Cost(0, _itemsize(node, fn))


@node_cost.register(E.Atomic)
def _atomic(node, fn):
    return Cost(10, 2 * _itemsize(node, fn))


def _tree_cost(node, fn) -> Cost:
    if isinstance(node, S.SeqFor):
        trips = _trips(node)
        body = sum((_tree_cost(s, fn) for s in node.body), Cost(0, 0))
        return body * trips + Cost(1, 0)
    if isinstance(node, S.While):
        body = sum((_tree_cost(s, fn) for s in node.body), Cost(0, 0))
        return (body + _tree_cost(node.cond, fn)) * UNKNOWN_TRIPS
    total = node_cost(node, fn)
    for child in children(node):
        total = total + _tree_cost(child, fn)
    return total


def _trips(loop: S.SeqFor) -> float:
    parts = (loop.start, loop.stop, loop.step)
    if all(isinstance(p, E.Const) for p in parts) and loop.step.value:
        start, stop, step = (p.value for p in parts)
        return max(0, -(-(stop - start) // step))
    return UNKNOWN_TRIPS


def iteration_cost(fn: S.Function) -> Cost:
    """Cost of one iteration of ``fn``'s parallel loop: one point of its
    iteration space, whatever its number of dimensions (a launch multiplies it
    by the number of points)."""
    loop = fn.parallel_for
    body = sum((_tree_cost(s, fn) for s in loop.body), Cost(0, 0))
    return body
