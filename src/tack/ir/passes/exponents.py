"""A float power whose exponent is arithmetic on literals (typing).

``x ** (1 + 2)`` or ``x ** (2 * 4 - 1)`` would reach the backends as ``x`` to
the power of a computed value, which they pass to ``pow``, while ``x ** 3``
becomes multiplications (``codegen/llvm/powers.py``); the two could differ by
an ulp, and ``pow`` costs more. Typing (``annotate``) replaces such an
exponent by the literal it computes, so both spellings compile alike on every
backend.

The arithmetic is evaluated exactly (integers and fractions), and folds only
where every step's exact result is a value of its type, so that each backend
would compute that very value: integer ``+ - * // % **`` and unary ``-``
that do not wrap (``//`` and ``%`` floor, as the kernel's do; by zero they
keep the expression), and float ``+ - * / **`` whose results need no rounding
(``6.5 * 2``, ``1 / 2``, ``2.0 ** 2``: a power by a whole exponent from 0 to
64), and float ``//`` and ``%`` of whole values (``9.0 // 2``). A wrapped or
rounded step keeps the expression: its meaning is the backends' arithmetic,
which this does not model.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from ..expressions import Add, Cast, Const, FloorDiv, Mod, Mul, Neg, Pow, Sub, TrueDiv

_ANY = {Add: lambda a, b: a + b, Sub: lambda a, b: a - b, Mul: lambda a, b: a * b}
_INTEGER = {FloorDiv: lambda a, b: a // b, Mod: lambda a, b: a % b,
            Pow: lambda a, b: a ** b}
_FLOAT = {TrueDiv: lambda a, b: Fraction(a) / b, FloorDiv: lambda a, b: Fraction(a // b),
          Mod: lambda a, b: Fraction(a % b), Pow: lambda a, b: Fraction(a) ** int(b)}
_LARGEST_POWER = 64      # an integer power past this wraps unless its base is 0 or +-1


def folded_exponent(rhs):
    """The literal a float power's typed exponent ``rhs`` computes, or None
    (``rhs`` a literal already, or not exact literal arithmetic)."""
    if isinstance(rhs, Const) or not rhs.dtype.is_float:
        return None
    value = _value(rhs)
    if value is None:
        return None
    return Const(float(value), dtype=rhs.dtype, span=rhs.span)


def _value(e):
    """The exact value (an int or a Fraction) of literal arithmetic ``e``, or None
    where ``e`` is anything else or a step's result is not a value of its type."""
    if e.dtype is None:
        return None
    if isinstance(e, Cast):
        value = _value(e.operand)
        if value is not None and e.operand.dtype.is_float and e.dtype.is_int:
            return None                    # float to integer: saturation, not modelled
    elif isinstance(e, Const):
        value = _literal(e.value)
    elif isinstance(e, Neg):
        inner = _value(e.operand)
        value = None if inner is None else -inner
    else:
        value = _binary(e)
    return value if value is not None and _holds(value, e.dtype) else None


def _binary(e):
    operation = _ANY.get(type(e)) or (_INTEGER if e.dtype.is_int else _FLOAT).get(type(e))
    if operation is None:
        return None
    lhs, rhs = _value(e.lhs), _value(e.rhs)
    if lhs is None or rhs is None:
        return None
    if type(e) in (FloorDiv, Mod, TrueDiv) and rhs == 0:
        return None
    if type(e) is Pow and not (_whole(rhs) and (0 <= rhs <= _LARGEST_POWER
                                               or lhs in (-1, 0, 1) and rhs >= 0)):
        return None
    if type(e) in (FloorDiv, Mod) and not (_whole(lhs) and _whole(rhs)):
        return None              # floats: C's fmod and a floor, rounded; not modelled
    return operation(lhs, rhs)


def _whole(value) -> bool:
    return not isinstance(value, Fraction) or value.denominator == 1


def _literal(value):
    if type(value) is int:
        return value
    if type(value) is float and math.isfinite(value):
        return Fraction(value)
    return None


def _holds(value, dtype) -> bool:
    """Whether ``value`` is exactly a value of ``dtype``."""
    if dtype.is_int:
        if isinstance(value, Fraction) and value.denominator != 1:
            return False
        low, high = ((-(1 << dtype.bits - 1), 1 << dtype.bits - 1) if dtype.is_signed
                     else (0, 1 << dtype.bits))
        return low <= value < high
    as_float = float(value) if abs(value) < 1 << 1000 else math.inf
    if dtype.bits == 32:
        with np.errstate(over="ignore"):
            as_float = float(np.float32(as_float))
    return math.isfinite(as_float) and Fraction(as_float) == value
