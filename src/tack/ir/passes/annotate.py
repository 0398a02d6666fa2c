"""annotate: a type on every expression, an explicit cast at every conversion.

Assumes: inferred IR (parameters typed; ``default_float`` set).
Guarantees: every expression has ``dtype``; operands of arithmetic and
comparisons already have the operation's type (casts are explicit); every
assignment's value has its local's storage type, listed in ``Function.locals``;
array indices are i64. Comparisons and logic produce i32 0/1.
Rejects (``TypeError``): a negative literal integer exponent, bit operations
on floats, float loop bounds.

Local types are found by a fixpoint: a local's type is the join (see
``tack.types``) of everything assigned to it, with literals weak.
"""

from __future__ import annotations

from ... import types as T
from ..expressions import (
    Abs, And, Atomic, BinaryOp, BlockMax, BlockMin, BlockReduce, BlockSum, BoundsCheck,
    Cast, ThreadId, Ceil, Compare, Const, DimSize, Expr, FloatCast, Floor, IndexCast, Invert,
    IsFinite, IsInf, IsNan, Load, LShift, MathBinary, MathUnary, Max, Min, Name, Neg, Not,
    Or, Pow, RShift, BitAnd, BitOr, BitXor, Select, Str, TrueDiv, Trunc, Round)
from ..registry import Registry
from ..statements import (
    Allocate, Assign, Barrier, Break, Continue, ExprStmt, Function, If, ParallelFor, Print, SeqFor,
    Store, While)
from ..traversal import walk
from ..verify import allocations
from .common import kernel_error
from .exponents import folded_exponent

_typed = Registry("type annotation")


class _Unknown(Exception):
    """A local read before the fixpoint has typed it."""


class _Context:
    def __init__(self, fn: Function, env: dict):
        self.fn = fn
        self.env = env
        self.params = {p.name: p for p in fn.params}
        self.arrays = {p.name: p.dtype for p in fn.params if p.is_array}
        self.arrays.update((a.name, a.dtype) for a in allocations(fn))
        self.fixed = {p.name: T.Typed(p.dtype) for p in fn.params if not p.is_array}
        self.fixed.update((v, T.Typed(T.i64)) for v in fn.parallel_for.vars)
        self.float = fn.default_float

    def storage(self, name: str) -> T.ScalarType:
        return (self.fixed.get(name) or self.env[name]).dtype

    def error(self, message, node):
        return kernel_error(TypeError, self.fn.name, message, node.span)


def _cast(expr: Expr, dtype: T.ScalarType) -> Expr:
    if expr.dtype == dtype:
        return expr
    if isinstance(expr, Const):
        value = T.float_value(expr.value, dtype) if dtype.is_float else expr.value
        if dtype.is_int and isinstance(value, float):
            return Cast(expr, dtype, dtype=dtype, span=expr.span)
        return Const(value, dtype=dtype, span=expr.span)
    return Cast(expr, dtype, dtype=dtype, span=expr.span)


def annotate(expr: Expr, ctx: _Context):
    """``(typed expression, Typed)`` for ``expr``."""
    return _typed(expr, ctx)


def _floatify(t: T.Typed, ctx) -> T.Typed:
    return t if t.dtype.is_float else T.Typed(ctx.float, t.weak)


# -- leaves -------------------------------------------------------------------

@_typed.register(Const)
def _const(e: Const, ctx):
    if e.dtype is not None:   # typed before annotation (a baked extent): strong
        return e, T.Typed(e.dtype)
    if isinstance(e.value, float):
        t = T.Typed(ctx.float, True)
    elif not -(1 << 63) <= e.value < (1 << 64):
        raise ctx.error(f"integer literal {e.value} is outside the 64-bit range", e)
    else:
        t = T.Typed(T.i64 if -(1 << 63) <= e.value < (1 << 63) else T.u64, True)
    return e.replace(dtype=t.dtype), t


@_typed.register(Str)
def _str(e: Str, ctx):
    return e.replace(dtype=T.i32), T.Typed(T.i32)


@_typed.register(Name)
def _name(e: Name, ctx):
    if e.id in ctx.fixed:
        t = ctx.fixed[e.id]
    else:
        t = ctx.env.get(e.id)
        if t is None:
            raise _Unknown(e.id)
    return e.replace(dtype=t.dtype), t


@_typed.register(DimSize)
def _dim(e: DimSize, ctx):
    return e.replace(dtype=T.i64), T.Typed(T.i64)


@_typed.register(Load)
def _load(e: Load, ctx):
    index, _ = annotate(e.index, ctx)
    dtype = ctx.arrays[e.array]
    return e.replace(index=_cast(index, T.i64), dtype=dtype), T.Typed(dtype)


@_typed.register(BoundsCheck)
def _bounds(e: BoundsCheck, ctx):
    indices = tuple(_cast(annotate(i, ctx)[0], T.i64) for i in e.indices)
    extents = tuple(_cast(annotate(x, ctx)[0], T.i64) for x in e.extents)
    return e.replace(indices=indices, extents=extents, dtype=T.i64), T.Typed(T.i64)


@_typed.register(ThreadId)
def _thread_id(e: ThreadId, ctx):
    return e.replace(dtype=T.i64), T.Typed(T.i64)


@_typed.register(BlockReduce)
def _block_reduce(e: BlockReduce, ctx):
    operand, t = annotate(e.operand, ctx)
    if t.dtype.is_float and t.dtype != T.f32 and not t.weak:
        raise ctx.error(f"{_REDUCTIONS[type(e)]} takes an f32 value, got {t.dtype}", e)
    return e.replace(operand=_cast(operand, T.f32), dtype=T.f32), T.Typed(T.f32)


_REDUCTIONS = {BlockSum: "tack.block_sum", BlockMin: "tack.block_min",
               BlockMax: "tack.block_max"}


# -- arithmetic ---------------------------------------------------------------

def _operands(e: BinaryOp, ctx):
    lhs, lt = annotate(e.lhs, ctx)
    rhs, rt = annotate(e.rhs, ctx)
    return lhs, lt, rhs, rt


def _same_type(e, lhs, rhs, t: T.Typed):
    return e.replace(lhs=_cast(lhs, t.dtype), rhs=_cast(rhs, t.dtype), dtype=t.dtype), t


@_typed.register(BinaryOp)
def _arith(e: BinaryOp, ctx):
    lhs, lt, rhs, rt = _operands(e, ctx)
    return _same_type(e, lhs, rhs, T.join(lt, rt, ctx.float))


@_typed.register(Min, Max)
def _extreme(e: BinaryOp, ctx):
    """``min``/``max``; one of several arguments is typed with the join of them
    all, as documented, not step by step (``min(a, b, c)`` lowers to
    ``min(min(a, b), c)``, the steps sharing the call's span; a literal met a
    narrower type first and wrapped, and u64 values compared unsigned before
    the join made them signed)."""
    arguments = [e.rhs]
    inner = e.lhs
    while type(inner) is type(e) and inner.span == e.span and e.span is not None:
        arguments.append(inner.rhs)
        inner = inner.lhs
    if len(arguments) == 1:
        return _arith(e, ctx)
    typed = [annotate(a, ctx) for a in [inner] + arguments[::-1]]
    strong = [u for _, u in typed if not u.weak]   # the strong types first: a weak
    t = strong[0] if strong else typed[0][1]        # literal adapts to their join
    for other in strong[1:] + [u for _, u in typed if u.weak]:
        t = T.join(t, other, ctx.float)
    result = _cast(typed[0][0], t.dtype)
    for value, _ in typed[1:]:
        result = type(e)(result, _cast(value, t.dtype), dtype=t.dtype, span=e.span)
    return result, t


@_typed.register(TrueDiv)
def _truediv(e: TrueDiv, ctx):
    lhs, lt, rhs, rt = _operands(e, ctx)
    return _same_type(e, lhs, rhs, _floatify(T.join(lt, rt, ctx.float), ctx))


@_typed.register(LShift, RShift, BitAnd, BitOr, BitXor)
def _bits(e: BinaryOp, ctx):
    lhs, lt, rhs, rt = _operands(e, ctx)
    if lt.dtype.is_float or rt.dtype.is_float:
        raise ctx.error(f"bit operation on a float ({lt.dtype} and {rt.dtype})", e)
    return _same_type(e, lhs, rhs, T.join(lt, rt, ctx.float))


@_typed.register(Pow)
def _pow(e: Pow, ctx):
    lhs, lt, rhs, rt = _operands(e, ctx)
    t = T.join(lt, rt, ctx.float)
    if t.dtype.is_int and isinstance(rhs, Const) and rhs.value < 0:
        raise ctx.error(f"integer power with the negative literal exponent "
                        f"{rhs.value} (write a float base, such as 2.0 ** "
                        f"{rhs.value})", e)
    if t.dtype.is_float:
        literal = folded_exponent(_cast(rhs, t.dtype))
        if literal is not None:
            return e.replace(lhs=_cast(lhs, t.dtype), rhs=literal, dtype=t.dtype), t
    return _same_type(e, lhs, rhs, t)


@_typed.register(Compare)
def _compare(e: Compare, ctx):
    lhs, lt, rhs, rt = _operands(e, ctx)
    joined = T.join(lt, rt, ctx.float).dtype
    return (e.replace(lhs=_cast(lhs, joined), rhs=_cast(rhs, joined), dtype=T.i32),
            T.Typed(T.i32))


@_typed.register(And, Or)
def _logic(e: BinaryOp, ctx):
    lhs, _, rhs, _ = _operands(e, ctx)
    return e.replace(lhs=lhs, rhs=rhs, dtype=T.i32), T.Typed(T.i32)


@_typed.register(Not)
def _not(e: Not, ctx):
    operand, _ = annotate(e.operand, ctx)
    return e.replace(operand=operand, dtype=T.i32), T.Typed(T.i32)


@_typed.register(Neg, Abs)
def _same(e, ctx):
    operand, t = annotate(e.operand, ctx)
    return e.replace(operand=operand, dtype=t.dtype), t


@_typed.register(Invert)
def _invert(e: Invert, ctx):
    operand, t = annotate(e.operand, ctx)
    if t.dtype.is_float:
        raise ctx.error(f"~ on a float ({t.dtype})", e)
    return e.replace(operand=operand, dtype=t.dtype), t


@_typed.register(Select)
def _select(e: Select, ctx):
    cond, _ = annotate(e.cond, ctx)
    a, at = annotate(e.if_true, ctx)
    b, bt = annotate(e.if_false, ctx)
    t = T.join(at, bt, ctx.float)
    return (e.replace(cond=cond, if_true=_cast(a, t.dtype), if_false=_cast(b, t.dtype),
                      dtype=t.dtype), t)


@_typed.register(Cast)
def _explicit_cast(e: Cast, ctx):
    operand, t = annotate(e.operand, ctx)
    if t.weak and isinstance(operand, Const) and isinstance(operand.value, float):
        # a float literal is converted once, from its exact value: typed with the
        # kernel's default float first, tack.f64(0.1) was 0.1 rounded to f32
        operand = operand.replace(dtype=T.f64)
        if e.to == T.f64:
            return operand, T.Typed(T.f64)
    return e.replace(operand=operand, dtype=e.to), T.Typed(e.to)


@_typed.register(IndexCast)
def _index_cast(e: IndexCast, ctx):
    operand, _ = annotate(e.operand, ctx)
    return _cast(operand, T.i64), T.Typed(T.i64)


@_typed.register(FloatCast)
def _float_cast(e: FloatCast, ctx):
    operand, _ = annotate(e.operand, ctx)
    return _cast(operand, ctx.float) if operand.dtype != ctx.float else operand, \
        T.Typed(ctx.float)


@_typed.register(MathUnary)
def _math_unary(e: MathUnary, ctx):
    operand, t = annotate(e.operand, ctx)
    if isinstance(e, (Floor, Ceil, Trunc, Round)) and t.dtype.is_int:
        # an integer is its own floor: no trip through a float that rounds it
        return _cast(operand, T.i64), T.Typed(T.i64)
    ft = _floatify(t, ctx)
    result = ft
    if isinstance(e, (Floor, Ceil, Trunc, Round)):
        result = T.Typed(T.i64)
    elif isinstance(e, (IsNan, IsInf, IsFinite)):
        result = T.Typed(T.i32)
    return e.replace(operand=_cast(operand, ft.dtype), dtype=result.dtype), result


@_typed.register(MathBinary)
def _math_binary(e: MathBinary, ctx):
    lhs, lt, rhs, rt = _operands(e, ctx)
    return _same_type(e, lhs, rhs, _floatify(T.join(lt, rt, ctx.float), ctx))


@_typed.register(Atomic)
def _atomic(e: Atomic, ctx):
    index, _ = annotate(e.index, ctx)
    value, _ = annotate(e.value, ctx)
    dtype = ctx.arrays[e.array]
    return (e.replace(index=_cast(index, T.i64), value=_cast(value, dtype),
                      dtype=dtype), T.Typed(dtype))


# -- statements ---------------------------------------------------------------

def _body(stmts, ctx) -> tuple:
    return tuple(_statement(s, ctx) for s in stmts)


def _statement(s, ctx):
    if isinstance(s, Assign):
        value, _ = annotate(s.value, ctx)
        return s.replace(value=_cast(value, ctx.storage(s.target)))
    if isinstance(s, Store):
        index, _ = annotate(s.index, ctx)
        value, _ = annotate(s.value, ctx)
        dtype = ctx.arrays[s.array]
        return s.replace(index=_cast(index, T.i64), value=_cast(value, dtype))
    if isinstance(s, ExprStmt):
        return s.replace(value=annotate(s.value, ctx)[0])
    if isinstance(s, If):
        return s.replace(cond=annotate(s.cond, ctx)[0], body=_body(s.body, ctx),
                         orelse=_body(s.orelse, ctx))
    if isinstance(s, While):
        return s.replace(cond=annotate(s.cond, ctx)[0], body=_body(s.body, ctx))
    if isinstance(s, SeqFor):
        dtype = ctx.storage(s.var)
        parts = [_cast(annotate(x, ctx)[0], dtype) for x in (s.start, s.stop, s.step)]
        return s.replace(start=parts[0], stop=parts[1], step=parts[2],
                         body=_body(s.body, ctx))
    if isinstance(s, Print):
        return s.replace(args=tuple(annotate(a, ctx)[0] for a in s.args))
    if isinstance(s, ParallelFor):
        return s.replace(body=_body(s.body, ctx))
    if isinstance(s, (Break, Continue, Barrier, Allocate)):
        return s
    raise NotImplementedError(f"type annotation does not support {type(s).__name__}")


def _definitions(fn: Function):
    """(name, value expressions) for every local definition, in program order."""
    for stmt in fn.body:
        for node in walk(stmt):
            if isinstance(node, Assign):
                yield node.target, (node.value,), node
            elif isinstance(node, SeqFor):
                yield node.var, (node.start, node.stop, node.step), node


def _local_types(fn: Function, ctx: _Context) -> dict:
    env = ctx.env
    for _ in range(64):
        changed = False
        for name, values, node in _definitions(fn):
            if name in ctx.fixed:
                continue
            for value in values:
                try:
                    _, t = annotate(value, ctx)
                except _Unknown:
                    continue
                if isinstance(node, SeqFor) and t.dtype.is_float:
                    raise ctx.error("range() with a float argument", node)
                old = env.get(name)
                new = t if old is None else T.join(old, t, ctx.float)
                if new != old:
                    env[name] = new
                    changed = True
        if not changed:
            return env
    raise RuntimeError(f"Kernel '{fn.name}': local types did not converge")


def annotate_types(fn: Function) -> Function:
    ctx = _Context(fn, {})
    env = _local_types(fn, ctx)
    order = []
    for name, _, _ in _definitions(fn):
        if name not in ctx.fixed and name not in order:
            env.setdefault(name, T.Typed(T.i64))
            order.append(name)
    body = _body(fn.body, ctx)
    return fn.replace(body=body, locals=tuple((n, env[n].dtype) for n in order))
