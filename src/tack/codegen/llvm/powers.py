"""Float ``x ** k`` for a literal integer exponent ``k``: multiplications
instead of a ``pow`` call.

``llvm.pow`` with an exponent other than 2 (which LLVM folds into ``x * x``)
stays a libm call, and a vectorized loop calls it once per lane: ``x ** 3``
over an f32 array ran 15 times as long as ``x * x * x``. Plain repeated
multiplication is fast but rounds at every step, up to ``|k| - 1`` roundings
where ``pow`` makes about one. So, for ``|k| <= MAX_EXPONENT`` (but not the
exponents LLVM folds exactly itself):

* **f32** multiplies in f64 and rounds once to f32 at the end. At most eight
  f64 roundings (the reciprocal, four squarings, three products: a relative
  error below 2**-49) come before the one to f32, so the result is the
  correctly rounded ``x ** k`` except where the exact value lies within about
  2**-25 of an f32 ulp from a rounding boundary, and is never more than one
  ulp away. f64 holds every f32 power up to 16 without overflowing or losing
  precision to subnormals.
* **f64** carries each product as an unevaluated sum of two f64 values
  (``fma`` gives the rounding error of a product exactly), which keeps the
  error before the final rounding near 2**-100: correctly rounded but for
  values that close to a boundary, and within one ulp, subnormal results
  included. Where the plain product chain gives zero, infinity or NaN, that
  chain is taken instead: it gets the signs of zeros and the special values
  right (``(-0.0) ** 3`` is ``-0.0``, ``0.0 ** -3`` is
  ``inf``), where the error terms would turn them into NaN or lose the sign.

A negative exponent raises the reciprocal of ``x`` (in f64 for f32; as an
exact two-term reciprocal for f64), so the powers of a huge ``x`` underflow
to the subnormal results ``pow`` gives instead of overflowing first.
"""

from __future__ import annotations

from llvmlite import ir

MAX_EXPONENT = 16    # up to 7 multiplications; beyond that pow is as fast
FOLDED = (-1, 0, 1, 2)   # LLVM folds these itself, exactly (1 / x, 1, x, x * x)


def literal_exponent(node):
    """``k`` when ``node`` is a float constant with an integer value in the
    range above, else None."""
    value = getattr(node, "value", None)
    if not isinstance(value, (int, float)) or value != value or value % 1:
        return None
    k = int(value)
    return k if abs(k) <= MAX_EXPONENT and k not in FOLDED else None


def integer_power(em, x, k: int):
    """``x ** k`` as the module doc describes (``x`` an f32 or f64 value)."""
    b = em.builder
    if x.type == ir.FloatType():
        wide = b.fpext(x, ir.DoubleType())
        base = b.fdiv(ir.Constant(wide.type, 1.0), wide) if k < 0 else wide
        return b.fptrunc(_chain(abs(k), base, b.fmul), x.type)
    plain = _chain(abs(k), b.fdiv(ir.Constant(x.type, 1.0), x) if k < 0 else x, b.fmul)
    pair = _chain(abs(k), _reciprocal(em, x) if k < 0 else (x, ir.Constant(x.type, 0.0)),
                  lambda p, q: _two_product(em, p, q))
    magnitude = b.call(em.overloaded("llvm.fabs", x.type), [plain])
    usable = b.and_(b.fcmp_ordered("<", magnitude, ir.Constant(x.type, float("inf"))),
                    b.fcmp_ordered("!=", magnitude, ir.Constant(x.type, 0.0)))
    return b.select(usable, pair[0], plain)


def _chain(n: int, base, multiply):
    """``base ** n`` by squaring and multiplying (``n >= 1``)."""
    result, square = None, base
    while n:
        if n & 1:
            result = square if result is None else multiply(result, square)
        n >>= 1
        if n:
            square = multiply(square, square)
    return result


def _fma(em, a, b_, c):
    return em.builder.call(em.overloaded("llvm.fma", a.type, 3), [a, b_, c])


def _two_product(em, p, q):
    """The product of two-term values ``p`` and ``q``, renormalized so that its
    head is the rounded sum of its terms (the low product is negligible)."""
    b = em.builder
    (ph, pl), (qh, ql) = p, q
    head = b.fmul(ph, qh)
    error = _fma(em, ph, qh, b.fneg(head))
    error = b.fadd(error, b.fadd(b.fmul(ph, ql), b.fmul(pl, qh)))
    total = b.fadd(head, error)
    return total, b.fsub(error, b.fsub(total, head))


def _reciprocal(em, x):
    """``1 / x`` as two terms: ``fma`` gives the residual ``1 - q x`` exactly."""
    b = em.builder
    one = ir.Constant(x.type, 1.0)
    q = b.fdiv(one, x)
    residual = _fma(em, b.fneg(q), x, one)
    return q, b.fdiv(residual, x)
