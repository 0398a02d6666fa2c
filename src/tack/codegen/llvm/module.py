"""One typed kernel as an LLVM module with a uniform, packed entry point.

Every kernel exports ``void tack_kernel_<name>(i8* pack, i64 start, i64 end)``.
``pack`` points at a struct laid out like a C struct of the parameters
(array data pointers, scalars by value) followed by the extents of the inner
loop dimensions (i64 each); ``[start, end)`` is the chunk of dimension 0 to
run. The entry unpacks the struct and calls an internal body function whose
array parameters are ``noalias`` when the variant was built for disjoint
arrays, which is what lets LLVM vectorize without runtime overlap checks.
"""

from __future__ import annotations

from llvmlite import ir

from ...ir import expressions as E
from ...ir.passes.resolve import extent_param
from ...ir.statements import Function, ParallelFor
from ...types import i64
from ..identifiers import kernel_entry_name
from .artifact import POINTER, LLVMKernel
from .emitter import Emitter
from .statements import emit_block, emit_parallel_loop
from .types import BYTE_PTR, I32, I64, VOID, llvm_type, pointer_to


def _field_types(fn: Function):
    fields = [POINTER if p.is_array else p.dtype for p in fn.params]
    inner = len(fn.parallel_for.extents) - 1
    return tuple(fields) + (i64,) * inner


def _llvm_field(f):
    return BYTE_PTR if f == POINTER else llvm_type(f)


def generate_llvm_ir(fn: Function, triple: str = "", data_layout: str = "",
                     entry_suffix: str = "") -> LLVMKernel:
    """The LLVM module of a typed kernel (``fn`` must have passed 'typed').

    ``entry_suffix`` makes the exported symbol unique per variant: every
    variant is loaded into one process-wide JIT, where symbols share a space.
    """
    module = ir.Module(name=fn.name)
    module.triple = triple
    module.data_layout = data_layout
    fields = _field_types(fn)
    body = _body_function(module, fn)
    entry_name = kernel_entry_name(fn.name) + entry_suffix
    _entry_function(module, entry_name, fields, body, len(fn.params))
    return LLVMKernel(str(module), entry_name, fields)


def _body_function(module: ir.Module, fn: Function) -> ir.Function:
    arg_types = [pointer_to(p.dtype) if p.is_array else llvm_type(p.dtype)
                 for p in fn.params]
    inner = len(fn.parallel_for.extents) - 1
    fnty = ir.FunctionType(VOID, arg_types + [I64] * (2 + inner))
    function = ir.Function(module, fnty, name="tack.body")
    function.linkage = "internal"
    em = Emitter(module, fn, function)
    for p, arg in zip(fn.params, function.args):
        arg.name = p.name
        if p.is_array:
            if fn.disjoint:
                arg.add_attribute("noalias")
            em.arrays[p.name] = arg
        else:
            em.declare_local(p.name, p.dtype)
            em.store_local(p.name, arg)
    for name, dtype in fn.locals:
        em.declare_local(name, dtype)
    loop_args = function.args[len(fn.params):]
    start, end, extents = loop_args[0], loop_args[1], loop_args[2:]
    _assume_chunk_within_length(em, fn, function, start, end)
    for var in fn.parallel_for.vars:
        em.declare_local(var, i64)
    for stmt in fn.body:
        if isinstance(stmt, ParallelFor):
            emit_parallel_loop(stmt, em, start, end, list(extents))
        else:
            emit_block((stmt,), em)
    em.builder.ret_void()
    return function


def _assume_chunk_within_length(em, fn: Function, function, start, end) -> None:
    """Where the loop runs over ``range(len(a))`` and the body reads ``len(a)``
    at run time (a hidden parameter), tell LLVM the chunk lies within it: the
    bound then relates to ``(i + 1) % len(a)``, which becomes a compare, as
    with a loop bound LLVM sees (the launch makes ``end <= len(a)`` true)."""
    first = fn.parallel_for.extents[0]
    if not isinstance(first, E.DimSize):
        return
    name = extent_param(first.array, first.dim)
    for p, arg in zip(fn.params, function.args):
        if p.name == name:
            assume = em.module.globals.get("llvm.assume") or ir.Function(
                em.module, ir.FunctionType(VOID, [ir.IntType(1)]), name="llvm.assume")
            b = em.builder
            b.call(assume, [b.icmp_signed("<=", end, arg)])
            b.call(assume, [b.icmp_signed(">=", start, ir.Constant(I64, 0))])
            return


def _entry_function(module, name, fields, body: ir.Function, n_params: int) -> None:
    struct = ir.LiteralStructType([_llvm_field(f) for f in fields] or [I32])
    fnty = ir.FunctionType(VOID, [BYTE_PTR, I64, I64])
    entry = ir.Function(module, fnty, name=name)
    b = ir.IRBuilder(entry.append_basic_block("entry"))
    pack = b.bitcast(entry.args[0], ir.PointerType(struct))
    values = []
    for k, f in enumerate(fields):
        slot = b.gep(pack, [ir.Constant(I32, 0), ir.Constant(I32, k)], inbounds=True)
        values.append(b.load(slot))
    params = [b.bitcast(v, a.type) if isinstance(a.type, ir.PointerType) else v
              for v, a in zip(values[:n_params], body.args)]
    extents = values[n_params:]
    b.call(body, params + [entry.args[1], entry.args[2]] + extents)
    b.ret_void()

