"""A float power whose exponent is integer arithmetic on literals (typing).

``x ** (1 + 2)`` or ``x ** (2 * 4 - 1)`` would reach the backends as ``x`` to
the power of a conversion of an integer sum, which they pass to ``pow``,
while ``x ** 3`` becomes multiplications (``codegen/llvm/powers.py``); the
two could differ by an ulp, and ``pow`` costs more. Typing (``annotate``)
replaces such an exponent by the literal it computes, so both spellings
compile alike on every backend.

Only ``+``, ``-``, unary ``-`` and ``*`` of integer literals fold, and only
where no step leaves its type's range: a wrapped value keeps the expression
(its meaning is the backends' wrapping, which this does not model).
"""

from __future__ import annotations

from ..expressions import Add, Cast, Const, Mul, Neg, Sub

_ARITHMETIC = {Add: lambda a, b: a + b, Sub: lambda a, b: a - b,
               Mul: lambda a, b: a * b}


def folded_exponent(rhs):
    """The literal a float power's typed exponent ``rhs`` computes, or None
    (``rhs`` a literal already, or not integer-literal arithmetic)."""
    if isinstance(rhs, Const) or not rhs.dtype.is_float:
        return None
    k = _integer_value(rhs)
    if k is None or abs(k) > 1 << 24:   # exact in either float type
        return None
    return Const(float(k), dtype=rhs.dtype, span=rhs.span)


def _integer_value(e):
    """The value of integer-literal arithmetic ``e`` (possibly converted to a
    float), or None where ``e`` is anything else or a step wraps."""
    if e.dtype is None or e.dtype.is_float and not isinstance(e, Cast):
        return None
    if isinstance(e, Cast):
        value = _integer_value(e.operand) if e.operand.dtype.is_int else None
        if value is None or e.dtype.is_float:
            return value
    elif isinstance(e, Const):
        value = e.value if type(e.value) is int else None
    elif isinstance(e, Neg):
        inner = _integer_value(e.operand)
        value = None if inner is None else -inner
    elif type(e) in _ARITHMETIC:
        lhs, rhs = _integer_value(e.lhs), _integer_value(e.rhs)
        value = None if lhs is None or rhs is None else _ARITHMETIC[type(e)](lhs, rhs)
    else:
        return None
    return value if value is not None and _fits(value, e.dtype) else None


def _fits(value: int, dtype) -> bool:
    if dtype.is_signed:
        return -(1 << dtype.bits - 1) <= value < 1 << dtype.bits - 1
    return 0 <= value < 1 << dtype.bits
