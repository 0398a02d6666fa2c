"""LLVM code for each statement kind, and the parallel loop nest of a chunk."""

from __future__ import annotations

from llvmlite import ir

from ...ir import statements as S
from ...ir.access import write_only_params
from ...ir.registry import Registry
from .expressions import condition, guarded, value
from .peel import emit_peeled, peel_store
from .types import F64, I64, I8

emit_stmt = Registry("LLVM code generator")


def emit_block(stmts, em) -> None:
    for stmt in stmts:
        emit_stmt(stmt, em)


@emit_stmt.register(S.Assign)
def _assign(s: S.Assign, em):
    em.store_local(s.target, value(s.value, em))


@emit_stmt.register(S.Store)
def _store(s: S.Store, em):
    stored = value(s.value, em)   # the value, then the index, as Python does
    index = value(s.index, em)

    def access():
        em.builder.store(stored, em.store_pointer(s, index))
    if s.checked:
        guarded(em, index, access)
    else:
        access()


@emit_stmt.register(S.ExprStmt)
def _expr_stmt(s: S.ExprStmt, em):
    value(s.value, em)


@emit_stmt.register(S.If)
def _if(s: S.If, em):
    b = em.builder
    cond = condition(s.cond, em)
    then, other, done = em.block("if.then"), em.block("if.else"), em.block("if.done")
    b.cbranch(cond, then, other)
    for block, body in ((then, s.body), (other, s.orelse)):
        b.position_at_end(block)
        emit_block(body, em)
        em.branch_if_open(done)
    b.position_at_end(done)


@emit_stmt.register(S.While)
def _while(s: S.While, em):
    b = em.builder
    head, body, done = em.block("while.head"), em.block("while.body"), em.block("while.done")
    b.branch(head)
    b.position_at_end(head)
    b.cbranch(condition(s.cond, em), body, done)
    b.position_at_end(body)
    em.loops.append((head, done))
    emit_block(s.body, em)
    em.loops.pop()
    em.branch_if_open(head)
    b.position_at_end(done)


@emit_stmt.register(S.SeqFor)
def _seq_for(s: S.SeqFor, em):
    """A counted loop; the step's sign picks the comparison, and a step past the
    type's limits ends the loop (Python's range)."""
    b = em.builder
    dtype = em.dtypes[s.var]
    start, stop, step = (value(x, em) for x in (s.start, s.stop, s.step))
    current = em.entry_alloca(start.type, name=s.var + ".next")
    b.store(start, current)
    head, body, latch, done = (em.block(s.var + n) for n in
                               (".head", ".body", ".latch", ".done"))
    b.branch(head)
    b.position_at_end(head)
    now = b.load(current)
    compare = b.icmp_signed if dtype.is_signed else b.icmp_unsigned
    if _constant_sign(s.step) is not None:
        keep = compare("<" if _constant_sign(s.step) > 0 else ">", now, stop)
    else:   # a zero step runs no iterations (as the C family's trip count says)
        up = b.icmp_signed(">", step, ir.Constant(step.type, 0))
        down = b.icmp_signed("<", step, ir.Constant(step.type, 0))
        keep = b.select(up, compare("<", now, stop),
                        b.and_(down, compare(">", now, stop)))
    b.cbranch(keep, body, done)
    b.position_at_end(body)
    em.store_local(s.var, now)
    em.loops.append((latch, done))
    emit_block(s.body, em)
    em.loops.pop()
    em.branch_if_open(latch)
    b.position_at_end(latch)
    following, overflow = _next_value(em, dtype, b.load(current), step, s.step)
    b.store(following, current)
    b.cbranch(overflow, done, head)  # past the type's range is past ``stop`` too
    b.position_at_end(done)


def _next_value(em, dtype, now, step, step_node):
    """``(now + step, whether the true sum leaves the type)``, as Python's range
    never wraps around. An unsigned step counts down when it is negative as a
    signed value, as the loop's test takes it."""
    b = em.builder
    if dtype.is_signed:
        return _add_with_overflow(em, "sadd", dtype, now, step)
    sign = _constant_sign(step_node)
    if sign == 1:
        return _add_with_overflow(em, "uadd", dtype, now, step)
    down = _add_with_overflow(em, "usub", dtype, now, b.neg(step))
    if sign == -1:
        return down
    up = _add_with_overflow(em, "uadd", dtype, now, step)
    positive = b.icmp_signed(">", step, ir.Constant(step.type, 0))
    return (b.select(positive, up[0], down[0]), b.select(positive, up[1], down[1]))


def _add_with_overflow(em, op, dtype, lhs, rhs):
    b = em.builder
    pair = ir.LiteralStructType([lhs.type, ir.IntType(1)])
    fn = em.external(f"llvm.{op}.with.overflow.i{dtype.bits}",
                     ir.FunctionType(pair, [lhs.type] * 2))
    result = b.call(fn, [lhs, rhs])
    return b.extract_value(result, 0), b.extract_value(result, 1)


def _constant_sign(step):
    from ...ir.expressions import Const
    if isinstance(step, Const):
        return 1 if step.value > 0 else -1
    return None


@emit_stmt.register(S.Break)
def _break(s, em):
    em.builder.branch(em.loops[-1][1])
    em.after_jump()


@emit_stmt.register(S.Continue)
def _continue(s: S.Continue, em):
    target = em.parallel_continue if s.outermost else em.loops[-1][0]
    em.builder.branch(target)
    em.after_jump()


@emit_stmt.register(S.Print)
def _print(s: S.Print, em):
    """Hands the values to ``tack_print`` (the runtime formats them like Python)."""
    b = em.builder
    kinds, slots = [], em.entry_alloca(ir.ArrayType(I64, max(1, len(s.args))), "print")
    for k, arg in enumerate(s.args):
        kind, bits = _print_value(arg, em)
        kinds.append(kind)
        slot = b.gep(slots, [ir.Constant(I64, 0), ir.Constant(I64, k)], inbounds=True)
        b.store(bits, slot)
    fnty = ir.FunctionType(ir.VoidType(), [ir.PointerType(I8), ir.PointerType(I64), I64])
    callee = em.external("tack_print", fnty)
    first = b.gep(slots, [ir.Constant(I64, 0), ir.Constant(I64, 0)], inbounds=True)
    b.call(callee, [em.string("".join(kinds)), first, ir.Constant(I64, len(s.args))])


def _print_value(arg, em):
    from ...ir.expressions import Str
    b = em.builder
    if isinstance(arg, Str):
        return "s", b.ptrtoint(em.string(arg.value), I64)
    v = value(arg, em)
    dtype = arg.dtype
    if dtype.is_float:
        kind = "f" if dtype.bits == 32 else "d"
        return kind, b.bitcast(b.fpext(v, F64) if dtype.bits == 32 else v, I64)
    if dtype.bits < 64:
        v = b.sext(v, I64) if dtype.is_signed else b.zext(v, I64)
    return ("i" if dtype.is_signed else "u"), v


def emit_parallel_loop(loop: S.ParallelFor, em, start, end, inner_extents) -> None:
    """The chunk ``[start, end)`` of dimension 0, inner dimensions in full."""
    bounds = [(start, end)] + [(ir.Constant(I64, 0), e) for e in inner_extents]
    streamed = write_only_params(em.fn) if em.fn.streaming else ()

    def nest(depth):
        lo, hi = bounds[depth]
        var = loop.vars[depth]

        def body(counter, latch, exit_):
            em.store_local(var, counter)
            if depth + 1 < len(bounds):
                nest(depth + 1)
            else:
                em.parallel_continue = latch
                emit_block(loop.body, em)
        found = peel_store(loop.body, var, streamed) if depth + 1 == len(bounds) else None
        if found is None:
            em.counted_loop(lo, hi, var, body)
        else:
            emit_peeled(em, found, lo, hi, var, body)
    nest(0)


@emit_stmt.register(S.Allocate)
def _allocate(s: S.Allocate, em):
    """A per-thread array (``tack.local_array``): stack storage in the entry block."""
    from .types import llvm_type
    if s.space != "local":
        raise NotImplementedError("shared memory needs a backend with workgroups")
    slot = em.entry_alloca(ir.ArrayType(llvm_type(s.dtype), s.size), s.name)
    saved = em.builder.block
    em.builder.position_at_end(em.entry)
    em.builder.position_after(slot)
    em.arrays[s.name] = em.builder.gep(slot, [ir.Constant(I64, 0), ir.Constant(I64, 0)],
                                       inbounds=True)
    em.builder.position_at_end(saved)
