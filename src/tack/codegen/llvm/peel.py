"""Peeling for alignment: the streaming variant's stores become aligned.

X86 has non-temporal vector stores for aligned addresses only. A vector store
that LLVM cannot prove 32-byte aligned and that ``streaming.py`` marks
non-temporal is split into 8-byte ``movnti`` stores of its elements, which
costs more than the cache traffic it saves. LLVM's vectorizer does not peel
iterations to reach an aligned address, so for a streaming variant Tack does:
the innermost loop of the parallel nest is emitted twice,

    for j in [lo, split):  body      # at most 64 / itemsize iterations
    for j in [split, hi):  body      # the store addressed from an aligned base

where ``split`` is the first iteration whose store into a streamed array is
64-byte aligned. In the second loop that store's address is computed from
``llvm.ptrmask(address at split, -64)`` (the same address, with its low six
bits known to be zero), so LLVM gives the vectorized stores their alignment
and they become ``vmovntps``.

Only a store whose flat index grows by exactly one per iteration qualifies
(``a[k, j + 1]`` in a loop over ``j``), since only then does the alignment of
its address at ``split`` fix the alignment of every later vector of it; an
array whose address is not a multiple of its item size (a misaligned import)
runs the whole loop in the head.
"""

from __future__ import annotations

from llvmlite import ir

from ...ir import expressions as E
from ...ir import statements as S
from ...ir.traversal import rewrite, walk
from .expressions import value
from .types import I64

LINE = 64   # bytes: the alignment the second loop's stores start at


def peel_store(body: tuple, var: str, streamed: tuple):
    """``(store, index)``: the first store in ``body`` into one of the
    ``streamed`` arrays whose index grows by exactly one per step of ``var``,
    and that index in terms of ``var`` and loop invariants alone (a local the
    body assigns once, before the store, is replaced by its value, as in
    ``i = 1 + k; out[i] = ...``); ``None`` if there is none."""
    nodes = [n for s in body for n in walk(s)]
    targets = [n.target for n in nodes if isinstance(n, S.Assign)]
    varying = {var} | set(targets) | {n.var for n in nodes if isinstance(n, S.SeqFor)}
    known = {}
    for stmt in body:
        for node in walk(stmt):
            if (isinstance(node, S.Store) and node.array in streamed and not node.checked):
                index = _substitute(node.index, known)
                if _coefficient(index, var, varying - known.keys()) == 1:
                    return node, index
        if isinstance(stmt, S.Assign) and targets.count(stmt.target) == 1:
            defined = _substitute(stmt.value, known)
            if _coefficient(defined, var, varying - known.keys()) is not None:
                known[stmt.target] = defined
    return None


def _substitute(expr, known: dict):
    """``expr`` with each name in ``known`` replaced by its value."""
    return rewrite(expr, lambda n: known.get(n.id, n) if isinstance(n, E.Name) else n)


def _coefficient(expr, var: str, varying: set):
    """How much ``expr`` grows per step of ``var``, when that is a constant
    integer; ``None`` when it is not (or this analysis cannot tell)."""
    if isinstance(expr, E.Name):
        if expr.id == var:
            return 1
        return None if expr.id in varying else 0
    if isinstance(expr, (E.Const, E.DimSize)):
        return 0
    if isinstance(expr, (E.Add, E.Sub)):
        lhs = _coefficient(expr.lhs, var, varying)
        rhs = _coefficient(expr.rhs, var, varying)
        if lhs is None or rhs is None:
            return None
        return lhs + rhs if isinstance(expr, E.Add) else lhs - rhs
    if isinstance(expr, E.Mul):
        lhs = _coefficient(expr.lhs, var, varying)
        rhs = _coefficient(expr.rhs, var, varying)
        if lhs == 0 and rhs == 0:
            return 0
        if lhs == 0 and isinstance(expr.lhs, E.Const) and rhs is not None:
            return expr.lhs.value * rhs
        if rhs == 0 and isinstance(expr.rhs, E.Const) and lhs is not None:
            return expr.rhs.value * lhs
        return None
    return _invariant(expr, varying)


# Invariant index terms the head may evaluate before the loop: none of them
# can trap or read memory, whatever the iteration count.
_SAFE = (E.Const, E.DimSize, E.Name, E.Add, E.Sub, E.Mul, E.Neg, E.Min, E.Max, E.Cast)


def _invariant(expr, varying: set):
    """0 when ``expr`` is built of ``_SAFE`` nodes and reads no varying name."""
    for node in walk(expr):
        if not isinstance(node, _SAFE) or (isinstance(node, E.Name) and node.id in varying):
            return None
    return 0


def emit_peeled(em, found: tuple, lo, hi, var: str, emit_body) -> None:
    """``for var in [lo, hi)`` as a head loop up to the first iteration at which
    the store's address is ``LINE``-aligned, then the rest with that alignment
    assumed; ``found`` is what :func:`peel_store` returned."""
    store, index_of_var = found
    b = em.builder
    item = em.fn.param(store.array).dtype.bits // 8
    em.store_local(var, lo)
    # Not ``inbounds``: with an empty loop this address may lie outside the array.
    start = b.ptrtoint(b.gep(em.arrays[store.array], [value(index_of_var, em)]), I64)
    misaligned = b.icmp_unsigned("!=", b.and_(start, ir.Constant(I64, item - 1)),
                                 ir.Constant(I64, 0))
    gap = b.and_(b.sub(ir.Constant(I64, 0), start), ir.Constant(I64, LINE - 1))
    aligned_at = b.add(lo, b.lshr(gap, ir.Constant(I64, item.bit_length() - 1)))
    head_end = b.select(b.icmp_signed("<", aligned_at, hi), aligned_at, hi)
    split = b.select(misaligned, hi, head_end)
    em.counted_loop(lo, split, var, emit_body)
    rest, done = em.block(var + ".aligned"), em.block(var + ".peeled")
    b.cbranch(b.icmp_signed("<", split, hi), rest, done)
    b.position_at_end(rest)
    em.store_local(var, split)
    index = value(index_of_var, em)
    pointer = em.element_pointer(store.array, index)
    mask = em.intrinsic("llvm.ptrmask.p0.i64", pointer.type, [pointer.type, I64])
    em.aligned = (store, b.call(mask, [pointer, ir.Constant(I64, -LINE)]), index)
    em.counted_loop(split, hi, var, emit_body)
    em.aligned = None
    b.branch(done)
    b.position_at_end(done)
