"""Expression nodes. One class per operation; ``dtype`` is filled by annotation.

Every expression carries ``dtype`` (``None`` until the ``annotate`` pass, a
:class:`~tack.types.ScalarType` afterwards) and a span. Array accesses use a
flat, row-major index built during lowering.
"""

from __future__ import annotations

import math
from typing import Optional, Union

from ..types import ScalarType
from .node import Node, Span, attr, field, node, operand, span_field, NO_SPAN


@node
class Expr(Node):
    """Base of every expression."""

    dtype: Optional[ScalarType] = field(default=None, kw_only=True,
                                        metadata={"role": "attr"})
    span: Span = span_field()


# -- leaves -------------------------------------------------------------------

@node
class Const(Expr):
    """A numeric literal (Python bools are stored as ints)."""

    value: Union[int, float] = attr()


@node
class Str(Expr):
    """A string label; only valid as an argument of ``print``."""

    value: str = attr()


@node
class Name(Expr):
    """A read of a parameter, loop variable or local."""

    id: str = attr()


@node
class DimSize(Expr):
    """Extent ``dim`` of array parameter ``array`` (``a.shape[k]``, ``len(a)``)."""

    array: str = attr()
    dim: int = attr()


@node
class Load(Expr):
    """``array[index]`` with a flat element index.

    ``checked`` (debug mode): the index comes from a :class:`BoundsCheck` and a
    negative one means "out of bounds": the load yields zero instead.
    """

    array: str = attr()
    index: Expr = operand()
    checked: bool = attr(default=False)


@node
class BoundsCheck(Expr):
    """Debug mode: the flat index of one access, or -1 when any index is outside
    its extent, after recording the violation in the ``errors`` array.

    ``site`` numbers the access in the kernel's table of access sites (file,
    line, the access as written); ``extents`` are run-time values.
    """

    site: int = attr()
    errors: str = attr()
    indices: tuple = operand()
    extents: tuple = operand()


# -- arithmetic ---------------------------------------------------------------

@node
class BinaryOp(Expr):
    """Base of two-operand arithmetic; the result type is the operands' join."""

    lhs: Expr = operand()
    rhs: Expr = operand()


@node
class Add(BinaryOp):
    pass


@node
class Sub(BinaryOp):
    pass


@node
class Mul(BinaryOp):
    pass


@node
class TrueDiv(BinaryOp):
    """``/``: always a float result."""


@node
class FloorDiv(BinaryOp):
    """``//`` rounding toward negative infinity, on ints and floats."""


@node
class Mod(BinaryOp):
    """``%`` with the sign of the divisor, on ints and floats."""


@node
class Pow(BinaryOp):
    """``**``; an integer base with an integer exponent stays an integer."""


@node
class LShift(BinaryOp):
    pass


@node
class RShift(BinaryOp):
    pass


@node
class BitAnd(BinaryOp):
    pass


@node
class BitOr(BinaryOp):
    pass


@node
class BitXor(BinaryOp):
    pass


@node
class Min(BinaryOp):
    """``min(a, b)``; more arguments nest."""


@node
class Max(BinaryOp):
    """``max(a, b)``; more arguments nest."""


# -- comparisons and logic (results are i32 0/1) ----------------------------

@node
class Compare(BinaryOp):
    """Base of comparisons; operands are promoted to a common type."""


@node
class Lt(Compare):
    pass


@node
class Le(Compare):
    pass


@node
class Gt(Compare):
    pass


@node
class Ge(Compare):
    pass


@node
class Eq(Compare):
    pass


@node
class Ne(Compare):
    pass


@node
class And(BinaryOp):
    """Short-circuit ``and`` of truth values."""


@node
class Or(BinaryOp):
    """Short-circuit ``or`` of truth values."""


@node
class UnaryOp(Expr):
    """Base of one-operand operations."""

    operand: Expr = operand()


@node
class Neg(UnaryOp):
    pass


@node
class Invert(UnaryOp):
    """``~x`` on integers."""


@node
class Not(UnaryOp):
    """``not x``: i32 0/1."""


@node
class Abs(UnaryOp):
    """``abs(x)`` on ints and floats."""


@node
class Select(Expr):
    """``a if cond else b``; only the chosen side is evaluated."""

    cond: Expr = operand()
    if_true: Expr = operand()
    if_false: Expr = operand()


# -- conversions --------------------------------------------------------------

@node
class Cast(UnaryOp):
    """Conversion to ``to``; float to int truncates toward zero."""

    to: ScalarType = attr()


@node
class IndexCast(Cast):
    """One index of a multi-dimensional access, converted to i64 before the
    indices are combined row-major, so that each truncates on its own
    (``m[0.5, 1]`` is ``m[0, 1]``, not the flat ``int(0.5 * n + 1)``); ``to`` is
    i64. Annotation makes it a ``Cast``, or drops it from an index that is an
    i64 already."""


@node
class FloatCast(UnaryOp):
    """``float(x)``: conversion to the kernel's default float type."""


# -- math intrinsics ------------------------------------------------------------

@node
class MathUnary(UnaryOp):
    """Base of one-argument float functions of ``math``; ints are converted first."""


@node
class Sqrt(MathUnary):
    pass


@node
class Exp(MathUnary):
    pass


@node
class Log(MathUnary):
    pass


@node
class Log2(MathUnary):
    pass


@node
class Log10(MathUnary):
    pass


@node
class Sin(MathUnary):
    pass


@node
class Cos(MathUnary):
    pass


@node
class Tan(MathUnary):
    pass


@node
class Asin(MathUnary):
    pass


@node
class Acos(MathUnary):
    pass


@node
class Atan(MathUnary):
    pass


@node
class Sinh(MathUnary):
    pass


@node
class Cosh(MathUnary):
    pass


@node
class Tanh(MathUnary):
    pass


@node
class Fabs(MathUnary):
    pass


@node
class Expm1(MathUnary):
    pass


@node
class Log1p(MathUnary):
    pass


@node
class Asinh(MathUnary):
    pass


@node
class Acosh(MathUnary):
    pass


@node
class Atanh(MathUnary):
    pass


@node
class Erf(MathUnary):
    pass


@node
class Erfc(MathUnary):
    pass


@node
class Cbrt(MathUnary):
    pass


@node
class Exp2(MathUnary):
    pass


@node
class Gamma(MathUnary):
    """``math.gamma``: C's ``tgamma``."""


@node
class Lgamma(MathUnary):
    """``math.lgamma``: ``log(|gamma(x)|)``."""


@node
class Degrees(MathUnary):
    """``math.degrees``: a product with ``FACTOR`` rounded to the argument's type
    (CPython multiplies by the same double)."""

    FACTOR = 180.0 / math.pi


@node
class Radians(MathUnary):
    """``math.radians``: as :class:`Degrees`, by ``pi / 180``."""

    FACTOR = math.pi / 180.0


@node
class Floor(MathUnary):
    """``math.floor``: an i64 result, as Python returns an int."""


@node
class Ceil(MathUnary):
    """``math.ceil``: an i64 result, as Python returns an int."""


@node
class Trunc(MathUnary):
    """``math.trunc``: an i64 result, as Python returns an int."""


@node
class Round(MathUnary):
    """``round(x)``: to the nearest integer, halves to even, an i64 result (Python's
    one-argument ``round``)."""


@node
class IsNan(MathUnary):
    pass


@node
class IsInf(MathUnary):
    pass


@node
class IsFinite(MathUnary):
    pass


@node
class MathBinary(BinaryOp):
    """Base of two-argument float functions of ``math``."""


@node
class Atan2(MathBinary):
    pass


@node
class Hypot(MathBinary):
    pass


@node
class Copysign(MathBinary):
    pass


@node
class Fmod(MathBinary):
    """``math.fmod``: C's remainder, with the dividend's sign (not Python's ``%``)."""


@node
class PowF(MathBinary):
    """``math.pow``: always a float."""


# -- workgroups (GPU backends) ------------------------------------------------

@node
class ThreadId(Expr):
    """``tack.thread_id()``: this thread's lane in its workgroup (0 to 255)."""


@node
class BlockReduce(UnaryOp):
    """Base of workgroup reductions: every lane gets the combined value (f32)."""


@node
class BlockSum(BlockReduce):
    pass


@node
class BlockMin(BlockReduce):
    pass


@node
class BlockMax(BlockReduce):
    pass


# -- atomics ------------------------------------------------------------------

@node
class Atomic(Expr):
    """Base of read-modify-write atomics; the value is the element's old value."""

    array: str = attr()
    index: Expr = operand()
    value: Expr = operand()
    checked: bool = attr(default=False)


@node
class AtomicAdd(Atomic):
    pass


@node
class AtomicSub(Atomic):
    pass


@node
class AtomicMin(Atomic):
    pass


@node
class AtomicMax(Atomic):
    pass


__all__ = [name for name, obj in dict(globals()).items()
           if isinstance(obj, type) and issubclass(obj, Node)] + ["NO_SPAN"]
