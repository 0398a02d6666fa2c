"""The parallel loop's extents as Python source, evaluated on the host.

An extent is built from constants, scalar parameters, array extents,
``+ - * // min max`` and conversions to integer types (lowering guarantees
it). It becomes one Python expression over the argument names ``a0, a1,
...``; the dispatch fast path inlines it into the generated launcher, so a
warm call walks no IR.
"""

from __future__ import annotations

import re

from .. import types as T
from ..ir import expressions as E
from ..ir.registry import Registry

_source = Registry("host extent evaluator")


def extent_source(expr, positions: dict, checked: bool = True) -> str:
    """Python source of ``expr``; ``positions`` maps parameter -> argument index.

    ``checked=False`` leaves out the rank check of array extents, for callers
    whose signature already fixed every array's rank.
    """
    text = _source(expr, positions)
    return text if checked else _UNCHECKED.sub(r"a\1._shape[\2]", text)


def extent_evaluator(expr, positions: dict, kernel: str):
    """``f(args) -> int`` for ``expr`` in kernel ``kernel`` (the slow path and
    inspection use this)."""
    names = ", ".join(f"a{k}" for k in range(max(positions.values(), default=-1) + 1))
    unpack = f"{names}, = args" if names else "pass"
    code = f"def extent(args):\n    {unpack}\n    return {extent_source(expr, positions)}"
    scope = helpers(kernel)
    exec(code, scope)
    return scope["extent"]


def floordiv(a, b, kernel):
    if b == 0:
        raise ValueError(f"Kernel '{kernel}': the parallel loop's range divides by zero")
    return a // b


def dim(array, k, name):
    shape = array._shape
    if k >= len(shape):
        raise TypeError(f"{name}.shape[{k}] of an array with {len(shape)} dimension(s)")
    return shape[k]


def in_i64(value: int, kernel: str) -> int:
    if -(1 << 63) <= value < 1 << 63:
        return value
    raise ValueError(f"Kernel '{kernel}': the parallel loop's range computes {value}, "
                     f"outside the i64 range the kernel computes it in")


_UNCHECKED = re.compile(r"_dim\(a(\d+), (\d+), '[^']*'\)")


def helpers(kernel: str) -> dict:
    """The names the evaluated source of kernel ``kernel``'s extents uses (its
    errors name the kernel, as ``ValueError``s pass ``Kernel.__call__`` unchanged)."""
    return {"_floordiv": lambda a, b: floordiv(a, b, kernel), "_dim": dim, "_int": int,
            "_in_i64": lambda value: in_i64(value, kernel)}


@_source.register(E.Const)
def _const(e, positions):
    return repr(int(e.value))


@_source.register(E.Name)
def _name(e, positions):
    return f"_int(a{positions[e.id]})"


@_source.register(E.DimSize)
def _dimsize(e, positions):
    return f"_dim(a{positions[e.array]}, {e.dim}, {e.array!r})"


def _infix(symbol):
    def build(e, positions):
        return f"({extent_source(e.lhs, positions)} {symbol} {extent_source(e.rhs, positions)})"
    return build


def _call(name):
    def build(e, positions):
        return f"{name}({extent_source(e.lhs, positions)}, {extent_source(e.rhs, positions)})"
    return build


_source.register(E.Add)(_infix("+"))
_source.register(E.Sub)(_infix("-"))
_source.register(E.Mul)(_infix("*"))
_source.register(E.FloorDiv)(_call("_floordiv"))
_source.register(E.Min)(_call("min"))
_source.register(E.Max)(_call("max"))


@_source.register(E.Neg)
def _neg(e, positions):
    return f"(-{extent_source(e.operand, positions)})"


@_source.register(E.Cast)
def _cast(e, positions):
    """To an integer type (lowering refuses others). To i64, a check that the
    value is in i64's range (see ``Lowerer.shared_bound``); to a narrower or
    unsigned type, the conversion the kernel makes, written out (no call)."""
    inner = extent_source(e.operand, positions)
    if e.to is T.i64:
        return f"_in_i64({inner})"
    mask = (1 << e.to.bits) - 1
    if not e.to.is_signed:
        return f"({inner} & {mask})"
    half = 1 << (e.to.bits - 1)
    return f"((({inner}) + {half} & {mask}) - {half})"
