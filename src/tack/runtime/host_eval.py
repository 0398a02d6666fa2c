"""Evaluating the parallel loop's extents on the host, as Python closures.

An extent is built from constants, scalar parameters, array extents and
``+ - * // min max`` (lowering guarantees it). It is compiled once per
variant into a closure over the argument tuple, so a warm call evaluates it
without walking any IR.
"""

from __future__ import annotations

from ..ir import expressions as E
from ..ir.registry import Registry

_compile = Registry("host extent evaluator")


def extent_evaluator(expr, positions: dict):
    """``f(args) -> int`` for ``expr``; ``positions`` maps parameter -> index."""
    return _compile(expr, positions)


@_compile.register(E.Const)
def _const(e, positions):
    value = int(e.value)
    return lambda args: value


@_compile.register(E.Name)
def _name(e, positions):
    k = positions[e.id]
    return lambda args: int(args[k])


@_compile.register(E.DimSize)
def _dim(e, positions):
    k, dim = positions[e.array], e.dim

    def extent(args):
        shape = args[k].shape
        if dim >= len(shape):
            raise TypeError(f"{e.array}.shape[{dim}] of an array with {len(shape)} "
                            f"dimension(s)")
        return shape[dim]
    return extent


def _binary(op):
    def build(e, positions):
        lhs, rhs = extent_evaluator(e.lhs, positions), extent_evaluator(e.rhs, positions)
        return lambda args: op(lhs(args), rhs(args))
    return build


def _floordiv(a, b):
    if b == 0:
        raise ValueError("the parallel loop's range divides by zero")
    return a // b


_compile.register(E.Add)(_binary(lambda a, b: a + b))
_compile.register(E.Sub)(_binary(lambda a, b: a - b))
_compile.register(E.Mul)(_binary(lambda a, b: a * b))
_compile.register(E.FloorDiv)(_binary(_floordiv))
_compile.register(E.Min)(_binary(min))
_compile.register(E.Max)(_binary(max))


@_compile.register(E.Neg)
def _neg(e, positions):
    inner = extent_evaluator(e.operand, positions)
    return lambda args: -inner(args)
