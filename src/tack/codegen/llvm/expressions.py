"""LLVM code for each expression kind: one small handler per node class.

Operands arrive with the operation's type already (annotation made every
conversion an explicit ``Cast``), so handlers only choose the instruction.
Floats use no fast-math flags; integer ``//`` and ``%`` follow Python.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir

from ... import types as T
from ...ir import expressions as E
from ...ir.registry import Registry
from . import helpers, powers
from .types import F64, I32, I64, llvm_type

emit = Registry("LLVM code generator")


def value(node, em) -> ir.Value:
    return emit(node, em)


@emit.register(E.Const)
def _const(e: E.Const, em):
    if e.dtype.is_float:
        return ir.Constant(llvm_type(e.dtype), T.float_value(e.value, e.dtype))
    return ir.Constant(llvm_type(e.dtype), e.value)


@emit.register(E.Name)
def _name(e: E.Name, em):
    return em.load_local(e.id)


@emit.register(E.Load)
def _load(e: E.Load, em):
    index = value(e.index, em)
    if not e.checked:
        return em.builder.load(em.element_pointer(e.array, index))
    zero = ir.Constant(llvm_type(e.dtype), 0)
    return guarded(em, index, lambda: em.builder.load(em.element_pointer(e.array, index)),
                   zero)


def guarded(em, index, emit_access, zero=None):
    """Run ``emit_access`` only when ``index >= 0`` (debug mode); a skipped
    access's value is ``zero``."""
    b = em.builder
    start = b.block
    run, done = em.block("access.run"), em.block("access.done")
    b.cbranch(b.icmp_signed(">=", index, ir.Constant(index.type, 0)), run, done)
    b.position_at_end(run)
    result = emit_access()
    run_end = b.block
    b.branch(done)
    b.position_at_end(done)
    if zero is None:
        return None
    phi = b.phi(zero.type)
    phi.add_incoming(result, run_end)
    phi.add_incoming(zero, start)
    return phi


@emit.register(E.BoundsCheck)
def _bounds_check(e: E.BoundsCheck, em):
    """The flat index, or -1 after recording the first failing dimension in
    ``errors`` = [count, site, index, dimension, extent]."""
    b = em.builder
    indices = [value(i, em) for i in e.indices]
    extents = [value(x, em) for x in e.extents]
    inside = [b.icmp_unsigned("<", i, x) for i, x in zip(indices, extents)]
    flat = indices[0]
    for i, x in zip(indices[1:], extents[1:]):
        flat = b.add(b.mul(flat, x), i)
    all_inside = inside[0]
    for ok in inside[1:]:
        all_inside = b.and_(all_inside, ok)
    start = b.block
    bad, record, join, done = (em.block(n) for n in
                               ("bounds.bad", "bounds.record", "bounds.join", "bounds.done"))
    b.cbranch(all_inside, done, bad)
    b.position_at_end(bad)
    dim, index, extent = (ir.Constant(I64, 0), indices[0], extents[0])
    for d in range(len(indices) - 1, -1, -1):   # the first failing dimension wins
        out = b.not_(inside[d])
        dim = b.select(out, ir.Constant(I64, d), dim)
        index = b.select(out, indices[d], index)
        extent = b.select(out, extents[d], extent)
    errors = em.arrays[e.errors]
    count = b.gep(errors, [ir.Constant(I64, 0)], inbounds=True)
    before = b.atomic_rmw("add", count, ir.Constant(I64, 1), "monotonic")
    b.cbranch(b.icmp_signed("==", before, ir.Constant(I64, 0)), record, join)
    b.position_at_end(record)
    for slot, v in ((1, ir.Constant(I64, e.site)), (2, index), (3, dim), (4, extent)):
        b.store(v, b.gep(errors, [ir.Constant(I64, slot)], inbounds=True))
    b.branch(join)
    b.position_at_end(join)
    b.branch(done)
    b.position_at_end(done)
    phi = b.phi(I64)
    phi.add_incoming(flat, start)
    phi.add_incoming(ir.Constant(I64, -1), join)
    return phi


# -- arithmetic ---------------------------------------------------------------

_INT_OPS = {E.Add: "add", E.Sub: "sub", E.Mul: "mul", E.BitAnd: "and_",
            E.BitOr: "or_", E.BitXor: "xor"}
_FLOAT_OPS = {E.Add: "fadd", E.Sub: "fsub", E.Mul: "fmul", E.TrueDiv: "fdiv"}


@emit.register(E.Add, E.Sub, E.Mul, E.TrueDiv, E.BitAnd, E.BitOr, E.BitXor)
def _arith(e, em):
    lhs, rhs = value(e.lhs, em), value(e.rhs, em)
    op = _FLOAT_OPS[type(e)] if e.dtype.is_float else _INT_OPS[type(e)]
    return getattr(em.builder, op)(lhs, rhs)


@emit.register(E.FloorDiv)
def _floordiv(e, em):
    return helpers.call(em, "floordiv", e.dtype, value(e.lhs, em), value(e.rhs, em))


@emit.register(E.Mod)
def _mod(e, em):
    return helpers.call(em, "mod", e.dtype, value(e.lhs, em), value(e.rhs, em))


@emit.register(E.Pow)
def _pow(e, em):
    lhs = value(e.lhs, em)
    k = powers.literal_exponent(e.rhs) if e.dtype.is_float else None
    if k is not None:
        return powers.integer_power(em, lhs, k)
    exponent = e.rhs.operand if isinstance(e.rhs, E.Cast) else None
    # f32 only: the f64 two-term chain behind bit selects stayed scalar (4M
    # f64 ** a run-time k: 25 ms, against pow's 19.6 ms)
    if e.dtype == T.f32 and exponent is not None and exponent.dtype.is_int:
        return powers.variable_integer_power(em, lhs, value(exponent, em),
                                             exponent.dtype.is_signed)
    rhs = value(e.rhs, em)
    if e.dtype.is_float:
        return em.builder.call(em.overloaded("llvm.pow", lhs.type, 2), [lhs, rhs])
    return helpers.call(em, "ipow", e.dtype, lhs, rhs)


@emit.register(E.LShift, E.RShift)
def _shift(e, em):
    b = em.builder
    lhs, rhs = value(e.lhs, em), value(e.rhs, em)
    width = ir.Constant(lhs.type, e.dtype.bits)
    in_range = b.icmp_unsigned("<", rhs, width)
    safe = b.select(in_range, rhs, ir.Constant(rhs.type, 0))
    if isinstance(e, E.LShift):
        return b.select(in_range, b.shl(lhs, safe), ir.Constant(lhs.type, 0))
    if e.dtype.is_signed:
        fill = b.ashr(lhs, ir.Constant(lhs.type, e.dtype.bits - 1))
        return b.select(in_range, b.ashr(lhs, safe), fill)
    return b.select(in_range, b.lshr(lhs, safe), ir.Constant(lhs.type, 0))


def _less(em, dtype, a, b_):
    b = em.builder
    if dtype.is_float:
        return b.fcmp_ordered("<", a, b_)
    return (b.icmp_signed if dtype.is_signed else b.icmp_unsigned)("<", a, b_)


@emit.register(E.Min)
def _min(e, em):
    a, b_ = value(e.lhs, em), value(e.rhs, em)
    return em.builder.select(_less(em, e.dtype, b_, a), b_, a)  # Python: first wins


@emit.register(E.Max)
def _max(e, em):
    a, b_ = value(e.lhs, em), value(e.rhs, em)
    return em.builder.select(_less(em, e.dtype, a, b_), b_, a)


# -- comparisons and logic ------------------------------------------------------

_SYMBOL = {E.Lt: "<", E.Le: "<=", E.Gt: ">", E.Ge: ">=", E.Eq: "==", E.Ne: "!="}


def compare_i1(e: E.Compare, em) -> ir.Value:
    b = em.builder
    lhs, rhs = value(e.lhs, em), value(e.rhs, em)
    dtype, symbol = e.lhs.dtype, _SYMBOL[type(e)]
    if dtype.is_float:
        if symbol == "!=":
            return b.fcmp_unordered("!=", lhs, rhs)
        return b.fcmp_ordered(symbol, lhs, rhs)
    return (b.icmp_signed if dtype.is_signed else b.icmp_unsigned)(symbol, lhs, rhs)


@emit.register(E.Compare)
def _compare(e, em):
    return em.bool_to_i32(compare_i1(e, em))


def condition(node, em) -> ir.Value:
    """A truth value as i1, without a round trip through i32 for comparisons."""
    if isinstance(node, E.Compare):
        return compare_i1(node, em)
    return em.truth(value(node, em), node.dtype)


def _short_circuit(e, em, is_and: bool):
    b = em.builder
    first = condition(e.lhs, em)
    start = b.block
    rhs_block, done = em.block("logic.rhs"), em.block("logic.done")
    if is_and:
        b.cbranch(first, rhs_block, done)
    else:
        b.cbranch(first, done, rhs_block)
    b.position_at_end(rhs_block)
    second = condition(e.rhs, em)
    rhs_end = b.block
    b.branch(done)
    b.position_at_end(done)
    phi = b.phi(first.type)
    phi.add_incoming(ir.Constant(first.type, 0 if is_and else 1), start)
    phi.add_incoming(second, rhs_end)
    return em.bool_to_i32(phi)


@emit.register(E.And)
def _and(e, em):
    return _short_circuit(e, em, True)


@emit.register(E.Or)
def _or(e, em):
    return _short_circuit(e, em, False)


@emit.register(E.Not)
def _not(e, em):
    return em.bool_to_i32(em.builder.not_(condition(e.operand, em)))


@emit.register(E.Neg)
def _neg(e, em):
    operand = value(e.operand, em)
    if e.dtype.is_float:
        return em.builder.fneg(operand)
    return em.builder.neg(operand)


@emit.register(E.Invert)
def _invert(e, em):
    return em.builder.not_(value(e.operand, em))


@emit.register(E.Abs)
def _abs(e, em):
    operand = value(e.operand, em)
    if e.dtype.is_float:
        return em.builder.call(em.overloaded("llvm.fabs", operand.type), [operand])
    if not e.dtype.is_signed:
        return operand
    negative = em.builder.icmp_signed("<", operand, ir.Constant(operand.type, 0))
    return em.builder.select(negative, em.builder.neg(operand), operand)


@emit.register(E.Select)
def _select(e, em):
    b = em.builder
    cond = condition(e.cond, em)
    yes, no, done = em.block("select.true"), em.block("select.false"), em.block("select.done")
    b.cbranch(cond, yes, no)
    results = []
    for block, arm in ((yes, e.if_true), (no, e.if_false)):
        b.position_at_end(block)
        results.append((value(arm, em), b.block))
        b.branch(done)
    b.position_at_end(done)
    phi = b.phi(results[0][0].type)
    for v, block in results:
        phi.add_incoming(v, block)
    return phi


@emit.register(E.Cast)
def _cast(e, em):
    return convert(em, value(e.operand, em), e.operand.dtype, e.to)


def convert(em, v: ir.Value, src, dst) -> ir.Value:
    """Conversion with the language's rules: float to int saturates, NaN gives 0."""
    b = em.builder
    target = llvm_type(dst)
    if src == dst:
        return v
    if src.is_float and dst.is_float:
        return b.fpext(v, target) if dst.bits > src.bits else b.fptrunc(v, target)
    if src.is_float:
        return _saturating_int(b, v, dst, target)
    if dst.is_float:
        return b.sitofp(v, target) if src.is_signed else b.uitofp(v, target)
    if dst.bits < src.bits:
        return b.trunc(v, target)
    if dst.bits > src.bits:
        return b.sext(v, target) if src.is_signed else b.zext(v, target)
    return v


def _saturating_int(b, v: ir.Value, dst, target) -> ir.Value:
    """``v`` truncated toward zero to the integer type ``dst``, saturating at its
    ends, NaN giving 0: what ``llvm.fptosi.sat`` computes, written as compares
    and selects around a plain conversion, which x86 vectorizes (the
    intrinsic's vector form was one scalar conversion per element, 2-3 times
    as long as Numba's ``int(x)``). The ends are powers of two, exact in f32."""
    lowest = -(1 << (dst.bits - 1)) if dst.is_signed else 0
    past = 1 << (dst.bits - 1 if dst.is_signed else dst.bits)   # first value too large
    low, high = ir.Constant(v.type, float(lowest)), ir.Constant(v.type, float(past))
    mantissa = 24 if v.type == ir.FloatType() else 53
    if (past - 1).bit_length() <= mantissa:   # the largest value is a float: clamp
        return _clamped_int(b, v, low, ir.Constant(v.type, float(past - 1)), dst, target)
    # below the range: its lowest value; too large or NaN: the conversion is
    # poison, which the selects after it never pick (one compare and select
    # fewer than clamping those first: f32 to i32 over 100K, 12.0 to 9.2 us)
    safe = b.select(b.fcmp_ordered("<", v, low), low, v)
    whole = b.fptosi(safe, target) if dst.is_signed else b.fptoui(safe, target)
    largest = ir.Constant(target, past - 1)
    whole = b.select(b.fcmp_ordered(">=", v, high), largest, whole)
    return b.select(b.fcmp_unordered("uno", v, v), ir.Constant(target, 0), whole)


def _clamped_int(b, v: ir.Value, low, top, dst, target) -> ir.Value:
    """``_saturating_int`` where the type's ends are both floats (f64 to 32 bits
    or less, f32 to 16 or less): clamped between them (two compares and
    selects, which x86 makes a min and a max), converted, and NaN made 0 after
    (its conversion is poison, which the select does not pick)."""
    clamped = b.select(b.fcmp_ordered(">", v, top), top, v)
    clamped = b.select(b.fcmp_ordered("<", clamped, low), low, clamped)
    whole = b.fptosi(clamped, target) if dst.is_signed else b.fptoui(clamped, target)
    return b.select(b.fcmp_unordered("uno", v, v), ir.Constant(target, 0), whole)


# -- math -----------------------------------------------------------------------

_LLVM_UNARY = {E.Sqrt: "llvm.sqrt", E.Exp: "llvm.exp", E.Log: "llvm.log",
               E.Log2: "llvm.log2", E.Log10: "llvm.log10", E.Sin: "llvm.sin",
               E.Cos: "llvm.cos", E.Fabs: "llvm.fabs", E.Exp2: "llvm.exp2"}
_LIBM_UNARY = {E.Tan: "tan", E.Asin: "asin", E.Acos: "acos", E.Atan: "atan",
               E.Sinh: "sinh", E.Cosh: "cosh", E.Tanh: "tanh", E.Expm1: "expm1",
               E.Log1p: "log1p", E.Asinh: "asinh", E.Acosh: "acosh", E.Atanh: "atanh",
               E.Erf: "erf", E.Erfc: "erfc", E.Cbrt: "cbrt", E.Gamma: "tgamma"}
_LIBM_BINARY = {E.Atan2: "atan2", E.Hypot: "hypot"}


def _libm(em, name: str, typ: ir.Type, arity: int) -> ir.Function:
    spelled = name + ("f" if typ == ir.FloatType() else "")
    return em.external(spelled, ir.FunctionType(typ, [typ] * arity))


@emit.register(E.MathUnary)
def _math_unary(e, em):
    operand = value(e.operand, em)
    kind = type(e)
    if kind in _LLVM_UNARY:
        return em.builder.call(em.overloaded(_LLVM_UNARY[kind], operand.type), [operand])
    return em.builder.call(_libm(em, _LIBM_UNARY[kind], operand.type, 1), [operand])


@emit.register(E.Lgamma)
def _lgamma(e, em):
    """``lgamma_r``: plain ``lgamma`` writes the global ``signgam``, which
    parallel iterations would race on."""
    operand = value(e.operand, em)
    typ = operand.type
    spelled = "lgammaf_r" if typ == ir.FloatType() else "lgamma_r"
    sign = em.entry_alloca(ir.IntType(32), name="lgamma.sign")
    fn = em.external(spelled, ir.FunctionType(typ, [typ, sign.type]))
    return em.builder.call(fn, [operand, sign])


@emit.register(E.Degrees, E.Radians)
def _angle(e, em):
    operand = value(e.operand, em)
    factor = e.FACTOR
    if operand.type == ir.FloatType():
        factor = float(np.float32(factor))
    return em.builder.fmul(operand, ir.Constant(operand.type, factor))


@emit.register(E.Floor, E.Ceil, E.Trunc, E.Round)
def _round(e, em):
    operand = value(e.operand, em)
    name = {E.Floor: "llvm.floor", E.Ceil: "llvm.ceil", E.Trunc: "llvm.trunc",
            E.Round: "llvm.roundeven"}[type(e)]
    rounded = em.builder.call(em.overloaded(name, operand.type), [operand])
    return convert(em, rounded, e.operand.dtype, e.dtype)


def _fabs(em, v):
    return em.builder.call(em.overloaded("llvm.fabs", v.type), [v])


@emit.register(E.IsNan)
def _isnan(e, em):
    v = value(e.operand, em)
    return em.bool_to_i32(em.builder.fcmp_unordered("uno", v, v))


@emit.register(E.IsInf)
def _isinf(e, em):
    v = value(e.operand, em)
    inf = ir.Constant(v.type, float("inf"))
    return em.bool_to_i32(em.builder.fcmp_ordered("==", _fabs(em, v), inf))


@emit.register(E.IsFinite)
def _isfinite(e, em):
    v = value(e.operand, em)
    inf = ir.Constant(v.type, float("inf"))
    return em.bool_to_i32(em.builder.fcmp_ordered("<", _fabs(em, v), inf))


@emit.register(E.MathBinary)
def _math_binary(e, em):
    lhs, rhs = value(e.lhs, em), value(e.rhs, em)
    kind = type(e)
    if kind is E.Copysign:
        return em.builder.call(em.overloaded("llvm.copysign", lhs.type, 2), [lhs, rhs])
    if kind is E.PowF:
        return em.builder.call(em.overloaded("llvm.pow", lhs.type, 2), [lhs, rhs])
    if kind is E.Fmod:
        return em.builder.frem(lhs, rhs)     # C's fmod: the dividend's sign
    return em.builder.call(_libm(em, _LIBM_BINARY[kind], lhs.type, 2), [lhs, rhs])


# -- atomics --------------------------------------------------------------------

_ATOMIC_INT = {E.AtomicAdd: ("add", "add"), E.AtomicSub: ("sub", "sub"),
               E.AtomicMin: ("min", "umin"), E.AtomicMax: ("max", "umax")}
_ATOMIC_FLOAT = {E.AtomicAdd: "fadd", E.AtomicSub: "fsub"}
# float min/max store v only where Python's min(old, v) / max(old, v) is v:
# v < old (> old), an ordered test, so a NaN on either side and a tie of the
# two zeros keep the old value (LLVM's fmin/fmax ignore NaN and may pick
# either zero).
_FLOAT_REPLACES = {E.AtomicMin: "<", E.AtomicMax: ">"}


@emit.register(E.Atomic)
def _atomic(e, em):
    index = value(e.index, em)
    operand = value(e.value, em)
    if type(e) in _FLOAT_REPLACES and e.dtype.is_float:
        def access():
            return _float_min_max(em, em.element_pointer(e.array, index), operand,
                                  _FLOAT_REPLACES[type(e)])
        return access() if not e.checked else guarded(
            em, index, access, ir.Constant(operand.type, 0))
    if e.dtype.is_float:
        op = _ATOMIC_FLOAT[type(e)]
    else:
        signed_op, unsigned_op = _ATOMIC_INT[type(e)]
        op = signed_op if e.dtype.is_signed else unsigned_op

    def access():
        pointer = em.element_pointer(e.array, index)
        return em.builder.atomic_rmw(op, pointer, operand, "monotonic")
    if not e.checked:
        return access()
    return guarded(em, index, access, ir.Constant(operand.type, 0))


def _float_min_max(em, pointer, v, replaces: str):
    """The old value; ``v`` stored by compare-and-swap on the bits while
    ``v {replaces} old`` (see ``_FLOAT_REPLACES``)."""
    b = em.builder
    bits = ir.IntType(32 if isinstance(v.type, ir.FloatType) else 64)
    slot = b.bitcast(pointer, bits.as_pointer())
    first = b.load_atomic(slot, "monotonic", bits.width // 8)
    start = b.block
    loop, swap, done = em.block("fminmax.loop"), em.block("fminmax.swap"), \
        em.block("fminmax.done")
    b.branch(loop)
    b.position_at_end(loop)
    seen = b.phi(bits)
    seen.add_incoming(first, start)
    old = b.bitcast(seen, v.type)
    b.cbranch(b.fcmp_ordered(replaces, v, old), swap, done)
    b.position_at_end(swap)
    pair = b.cmpxchg(slot, seen, b.bitcast(v, bits), "monotonic", "monotonic")
    seen.add_incoming(b.extract_value(pair, 0), swap)
    b.cbranch(b.extract_value(pair, 1), done, loop)
    b.position_at_end(done)
    return old


__all__ = ["emit", "value", "condition", "convert", "F64", "I32", "I64"]
