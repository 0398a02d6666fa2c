"""Small internal LLVM functions for Python's ``//``, ``%`` and integer ``**``.

Each is generated once per module and type, marked ``alwaysinline``, and
branch-free where it can be, so loops that use them still vectorize.

* Integer ``//`` and ``%`` round toward negative infinity; a zero divisor
  gives 0 (a kernel cannot raise), and ``MIN // -1`` wraps instead of trapping.
* Float ``//`` and ``%`` follow CPython's ``float_floor_div``/``float_rem``:
  the remainder has the divisor's sign; division by zero gives NaN.
* Integer ``a ** b`` squares and multiplies; a negative exponent gives 0
  unless the base is 1 or -1 (the truncation of ``1 / a ** -b``).
"""

from __future__ import annotations

from llvmlite import ir

from .types import llvm_type


def call(em, name: str, dtype, lhs, rhs):
    key = f"tack.{name}.{dtype.name}"
    fn = em.module.globals.get(key)
    if fn is None:
        typ = llvm_type(dtype)
        fn = ir.Function(em.module, ir.FunctionType(typ, [typ, typ]), name=key)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        builder = ir.IRBuilder(fn.append_basic_block("entry"))
        _BUILDERS[(name, dtype.kind == "f")](builder, fn, dtype, *fn.args)
    return em.builder.call(fn, [lhs, rhs])


def _c(v, x):
    return ir.Constant(v.type, x)


def _safe_divisor(b, dtype, divisor):
    zero = b.icmp_unsigned("==", divisor, _c(divisor, 0))
    if not dtype.is_signed:
        return zero, None, b.select(zero, _c(divisor, 1), divisor)
    minus_one = b.icmp_signed("==", divisor, _c(divisor, -1))
    special = b.or_(zero, minus_one)
    return zero, minus_one, b.select(special, _c(divisor, 1), divisor)


def _needs_adjust(b, remainder, divisor):
    nonzero = b.icmp_signed("!=", remainder, _c(remainder, 0))
    signs = b.icmp_signed("<", b.xor(remainder, divisor), _c(remainder, 0))
    return b.and_(nonzero, signs)


def _int_floordiv(b, fn, dtype, x, y):
    zero, minus_one, safe = _safe_divisor(b, dtype, y)
    if not dtype.is_signed:
        b.ret(b.select(zero, _c(x, 0), b.udiv(x, safe)))
        return
    q = b.sdiv(x, safe)
    r = b.srem(x, safe)
    q = b.sub(q, b.zext(_needs_adjust(b, r, y), x.type))
    q = b.select(minus_one, b.neg(x), q)
    b.ret(b.select(zero, _c(x, 0), q))


def _int_mod(b, fn, dtype, x, y):
    zero, minus_one, safe = _safe_divisor(b, dtype, y)
    if not dtype.is_signed:
        b.ret(b.select(zero, _c(x, 0), b.urem(x, safe)))
        return
    r = b.srem(x, safe)
    r = b.select(_needs_adjust(b, r, y), b.add(r, y), r)
    r = b.select(minus_one, _c(x, 0), r)
    b.ret(b.select(zero, _c(x, 0), r))


def _float_parts(b, fn, x, y):
    """CPython's remainder and quotient before rounding (float_floor_div)."""
    mod = b.frem(x, y)
    div = b.fdiv(b.fsub(x, mod), y)
    has_mod = b.fcmp_unordered("!=", mod, _c(mod, 0.0))
    y_neg = b.fcmp_ordered("<", y, _c(y, 0.0))
    mod_neg = b.fcmp_ordered("<", mod, _c(mod, 0.0))
    fix = b.and_(has_mod, b.xor(y_neg, mod_neg))
    mod = b.select(fix, b.fadd(mod, y), mod)
    div = b.select(fix, b.fsub(div, _c(div, 1.0)), div)
    return mod, div, has_mod


def _copysign(b, fn, magnitude, sign):
    name = "llvm.copysign.f32" if magnitude.type == ir.FloatType() else "llvm.copysign.f64"
    module = fn.module
    callee = module.globals.get(name) or ir.Function(
        module, ir.FunctionType(magnitude.type, [magnitude.type] * 2), name=name)
    return b.call(callee, [magnitude, sign])


def _float_mod(b, fn, dtype, x, y):
    mod, _, has_mod = _float_parts(b, fn, x, y)
    b.ret(b.select(has_mod, mod, _copysign(b, fn, _c(x, 0.0), y)))


def _float_floordiv(b, fn, dtype, x, y):
    _, div, _ = _float_parts(b, fn, x, y)
    name = "llvm.floor.f32" if x.type == ir.FloatType() else "llvm.floor.f64"
    floor = fn.module.globals.get(name) or ir.Function(
        fn.module, ir.FunctionType(x.type, [x.type]), name=name)
    down = b.call(floor, [div])
    up = b.fcmp_ordered(">", b.fsub(div, down), _c(x, 0.5))
    rounded = b.select(up, b.fadd(down, _c(x, 1.0)), down)
    has_div = b.fcmp_unordered("!=", div, _c(div, 0.0))
    zero = _copysign(b, fn, _c(x, 0.0), b.fdiv(x, y))
    b.ret(b.select(has_div, rounded, zero))


def _int_pow(b, fn, dtype, base, exp):
    """Square-and-multiply over a loop; negative exponents handled first."""
    one = _c(base, 1)
    entry = b.block
    loop, body, done, negative = (fn.append_basic_block(n) for n in
                                  ("loop", "body", "done", "negative"))
    if dtype.is_signed:
        b.cbranch(b.icmp_signed("<", exp, _c(exp, 0)), negative, loop)
    else:
        b.branch(loop)
    b.position_at_end(loop)
    result = b.phi(base.type)
    power = b.phi(base.type)
    remaining = b.phi(base.type)
    result.add_incoming(one, entry)
    power.add_incoming(base, entry)
    remaining.add_incoming(exp, entry)
    b.cbranch(b.icmp_unsigned("!=", remaining, _c(exp, 0)), body, done)
    b.position_at_end(body)
    odd = b.trunc(remaining, ir.IntType(1))
    next_result = b.select(odd, b.mul(result, power), result)
    result.add_incoming(next_result, body)
    power.add_incoming(b.mul(power, power), body)
    remaining.add_incoming(b.lshr(remaining, _c(exp, 1)), body)
    b.branch(loop)
    b.position_at_end(done)
    b.ret(result)
    b.position_at_end(negative)
    is_one = b.icmp_signed("==", base, one)
    is_minus_one = b.icmp_signed("==", base, _c(base, -1))
    odd = b.trunc(exp, ir.IntType(1))
    minus = b.select(odd, _c(base, -1), one)
    b.ret(b.select(is_one, one, b.select(is_minus_one, minus, _c(base, 0))))


_BUILDERS = {
    ("floordiv", False): _int_floordiv, ("floordiv", True): _float_floordiv,
    ("mod", False): _int_mod, ("mod", True): _float_mod,
    ("ipow", False): _int_pow,
}
