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
  values that close to a boundary (or near the bottom of the normal range,
  where the error terms are subnormal), and within one ulp, subnormal results
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
        return b.fptrunc(chain(abs(k), base, b.fmul), x.type)
    plain = chain(abs(k), b.fdiv(ir.Constant(x.type, 1.0), x) if k < 0 else x, b.fmul)
    pair = chain(abs(k), _reciprocal(em, x) if k < 0 else (x, None),
                  lambda p, q: _two_product(em, p, q))
    return _unless_special(em, b.fadd(*pair), plain)


def _unless_special(em, precise, plain):
    """``precise``, unless the plain product chain gave zero, an infinity or
    NaN: then ``plain``, which has their signs right."""
    b = em.builder
    magnitude = b.call(em.overloaded("llvm.fabs", plain.type), [plain])
    usable = b.and_(b.fcmp_ordered("<", magnitude, ir.Constant(plain.type, float("inf"))),
                    b.fcmp_ordered("!=", magnitude, ir.Constant(plain.type, 0.0)))
    return b.select(usable, precise, plain)


def chain(n: int, base, multiply):
    """``base ** n`` by squaring and multiplying (``n >= 1``); the C-family
    targets spell the same order of products (``codegen/c_family/powers.py``)."""
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
    """The product of two-term values ``p`` and ``q`` as ``(head, rest)``: the
    rounded product of the heads and what it left out (the low product is
    negligible). A low term of None is exactly zero, and its products are left
    out (LLVM may not drop ``x * 0.0``: it is NaN for an infinite ``x``). The
    pair is not renormalized: ``|rest|`` stays within a few ulps of ``head``,
    which the next product's cross terms absorb, and the caller adds the two
    once, at the end (a renormalization per step cost three more additions)."""
    b = em.builder
    (ph, pl), (qh, ql) = p, q
    head = b.fmul(ph, qh)
    error = _fma(em, ph, qh, b.fneg(head))
    cross = [b.fmul(u, v) for u, v in ((ph, ql), (pl, qh)) if v is not None and u is not None]
    if len(cross) == 2:
        error = b.fadd(error, b.fadd(*cross))
    elif cross:
        error = b.fadd(error, cross[0])
    return head, error


def _reciprocal(em, x):
    """``1 / x`` as two terms: ``fma`` gives the residual ``1 - q x`` exactly."""
    b = em.builder
    one = ir.Constant(x.type, 1.0)
    q = b.fdiv(one, x)
    residual = _fma(em, b.fneg(q), x, one)
    return q, b.fdiv(residual, x)


def variable_integer_power(em, x, k, signed: bool):
    """``x ** k`` for an integer ``k`` known only at run time (``k`` the LLVM
    integer, ``signed`` its type's signedness; the code generator uses it for
    f32 ``x``, where it vectorizes): where ``|k| <= MAX_EXPONENT``,
    the same products as a literal exponent's, each factor picked by a bit of
    ``|k|`` (no loop, so the kernel's loop still vectorizes once LLVM moves a
    loop-invariant test out of it); otherwise ``pow``."""
    b = em.builder
    k = b.sext(k, ir.IntType(64)) if signed and k.type.width < 64 else (
        b.zext(k, ir.IntType(64)) if k.type.width < 64 else k)
    zero = ir.Constant(k.type, 0)
    negative = b.icmp_signed("<", k, zero) if signed else ir.Constant(ir.IntType(1), 0)
    n = b.select(negative, b.sub(zero, k), k)
    small = b.icmp_unsigned("<=", n, ir.Constant(k.type, MAX_EXPONENT))
    fast, slow, done = em.block("pow.bits"), em.block("pow.call"), em.block("pow.done")
    b.cbranch(small, fast, slow)
    b.position_at_end(fast)
    product = _bit_power(em, x, n, negative)
    fast_end = b.block
    b.branch(done)
    b.position_at_end(slow)
    exponent = (b.sitofp if signed else b.uitofp)(k, x.type)
    called = b.call(em.overloaded("llvm.pow", x.type, 2), [x, exponent])
    slow_end = b.block
    b.branch(done)
    b.position_at_end(done)
    phi = b.phi(x.type)
    phi.add_incoming(product, fast_end)
    phi.add_incoming(called, slow_end)
    return phi


def _bit_power(em, x, n, negative):
    """``x ** (±n)`` for ``n <= MAX_EXPONENT``: ``chain``'s arithmetic, with
    the bits of ``n`` choosing each factor (a factor of 1 is exact)."""
    b = em.builder
    bits = [b.icmp_unsigned("!=", b.and_(n, ir.Constant(n.type, 1 << k)),
                            ir.Constant(n.type, 0)) for k in range(5)]
    if x.type == ir.FloatType():
        wide = b.fpext(x, ir.DoubleType())
        one = ir.Constant(wide.type, 1.0)
        base = b.select(negative, b.fdiv(one, wide), wide)
        result = _picked(bits, base, one, b.fmul, lambda v, w: b.select(v[0], v[1], w))
        return b.fptrunc(result, x.type)
    one, nothing = ir.Constant(x.type, 1.0), ir.Constant(x.type, 0.0)
    plain = _picked(bits, b.select(negative, b.fdiv(one, x), x), one, b.fmul,
                    lambda v, w: b.select(v[0], v[1], w))
    inverse = _reciprocal(em, x)
    pair = (b.select(negative, inverse[0], x), b.select(negative, inverse[1], nothing))
    result = _picked(bits, pair, (one, nothing), lambda p, q: _two_product(em, p, q),
                     lambda v, w: (b.select(v[0], v[1][0], w[0]),
                                   b.select(v[0], v[1][1], w[1])))
    return _unless_special(em, b.fadd(*result), plain)


def _picked(bits, base, one, multiply, pick):
    """The product of ``base ** (2 ** k)`` over the set ``bits``."""
    result, square = one, base
    for k, bit in enumerate(bits):
        result = multiply(result, pick((bit, square), one))
        if k + 1 < len(bits):
            square = multiply(square, square)
    return result
