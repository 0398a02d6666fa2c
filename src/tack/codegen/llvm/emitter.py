"""The state of generating one LLVM function from typed Tack IR.

:class:`Emitter` owns the builder, the storage of every local (an ``alloca``
in the entry block, promoted to registers by LLVM), the array pointers, and
the stack of loop targets that ``break`` and ``continue`` jump to. The
per-node handlers live in ``expressions.py`` and ``statements.py``.
"""

from __future__ import annotations

from llvmlite import ir

from ...types import ScalarType
from .types import I1, I64, llvm_type


class Emitter:
    def __init__(self, module: ir.Module, fn, function: ir.Function):
        self.module = module
        self.fn = fn
        self.function = function
        self.entry = function.append_basic_block("entry")
        self.builder = ir.IRBuilder(self.entry)
        self.storage: dict[str, ir.AllocaInstr] = {}
        self.dtypes: dict[str, ScalarType] = {}
        self.arrays: dict[str, ir.Value] = {}
        self.loops: list[tuple[ir.Block, ir.Block]] = []   # (continue, break)
        self.parallel_continue: ir.Block = None
        # (store, aligned pointer, its index) while a peeled loop is emitted (peel.py)
        self.aligned = None
        self._strings: dict[str, ir.GlobalVariable] = {}

    # -- storage ------------------------------------------------------------------
    def entry_alloca(self, typ: ir.Type, name: str = "") -> ir.AllocaInstr:
        """An alloca in the entry block, whatever block the builder is in."""
        saved = self.builder.block
        if self.entry.instructions:
            self.builder.position_before(self.entry.instructions[0])
        else:
            self.builder.position_at_end(self.entry)
        slot = self.builder.alloca(typ, name=name)
        self.builder.position_at_end(saved)
        return slot

    def declare_local(self, name: str, dtype: ScalarType) -> None:
        self.storage[name] = self.entry_alloca(llvm_type(dtype), name=name)
        self.dtypes[name] = dtype

    def load_local(self, name: str) -> ir.Value:
        return self.builder.load(self.storage[name], name=name)

    def store_local(self, name: str, value: ir.Value) -> None:
        self.builder.store(value, self.storage[name])

    def element_pointer(self, array: str, index: ir.Value) -> ir.Value:
        return self.builder.gep(self.arrays[array], [index], inbounds=True)

    def store_pointer(self, store, index: ir.Value) -> ir.Value:
        """Where ``store`` writes: relative to the aligned pointer of a peeled
        loop (``peel.py``) when it stores into that loop's array, so LLVM knows
        the alignment. Every store into the array, not only the one peeled for:
        through two unrelated pointers LLVM guarded the vector loop with an
        overlap check that always failed, and the loop ran scalar."""
        if self.aligned is None or self.aligned[0].array != store.array:
            return self.element_pointer(store.array, index)
        _, base, base_index = self.aligned
        return self.builder.gep(base, [self.builder.sub(index, base_index)], inbounds=True)

    # -- control flow -------------------------------------------------------------
    def block(self, name: str) -> ir.Block:
        return self.function.append_basic_block(name)

    def branch_if_open(self, target: ir.Block) -> None:
        if not self.builder.block.is_terminated:
            self.builder.branch(target)

    def after_jump(self) -> None:
        """Continue emitting in a fresh (unreachable) block after a jump."""
        self.builder.position_at_end(self.block("after_jump"))

    def counted_loop(self, lo: ir.Value, hi: ir.Value, var: str, emit_body,
                     signed=True) -> None:
        """``for var in [lo, hi)`` stepping by one; ``emit_body(latch, exit)``."""
        b = self.builder
        counter = self.entry_alloca(lo.type, name=var + ".counter")
        b.store(lo, counter)
        head, body, latch, exit_ = (self.block(var + s) for s in
                                    (".head", ".body", ".latch", ".exit"))
        b.branch(head)
        b.position_at_end(head)
        current = b.load(counter)
        compare = b.icmp_signed if signed else b.icmp_unsigned
        b.cbranch(compare("<", current, hi), body, exit_)
        b.position_at_end(body)
        emit_body(current, latch, exit_)
        self.branch_if_open(latch)
        b.position_at_end(latch)
        b.store(b.add(b.load(counter), ir.Constant(lo.type, 1)), counter)
        b.branch(head)
        b.position_at_end(exit_)

    # -- values -------------------------------------------------------------------
    def truth(self, value: ir.Value, dtype: ScalarType) -> ir.Value:
        """Python truthiness as i1: nonzero, and NaN is true."""
        if dtype.is_float:
            return self.builder.fcmp_unordered("!=", value, ir.Constant(value.type, 0))
        return self.builder.icmp_unsigned("!=", value, ir.Constant(value.type, 0))

    def intrinsic(self, name: str, ret: ir.Type, args) -> ir.Function:
        return self.module.declare_intrinsic(name, (), ir.FunctionType(ret, args))

    def overloaded(self, name: str, typ: ir.Type, arity: int = 1) -> ir.Function:
        suffix = "f32" if typ == ir.FloatType() else "f64"
        return self.external(f"{name}.{suffix}", ir.FunctionType(typ, [typ] * arity))

    def external(self, name: str, fnty: ir.FunctionType) -> ir.Function:
        existing = self.module.globals.get(name)
        if existing is not None:
            return existing
        return ir.Function(self.module, fnty, name=name)

    def string(self, text: str) -> ir.Value:
        """A pointer to a NUL-terminated constant copy of ``text``."""
        glob = self._strings.get(text)
        if glob is None:
            data = bytearray(text.encode("utf-8") + b"\0")
            typ = ir.ArrayType(ir.IntType(8), len(data))
            glob = ir.GlobalVariable(self.module, typ,
                                     name=f"tack.str.{len(self._strings)}")
            glob.global_constant = True
            glob.linkage = "internal"
            glob.initializer = ir.Constant(typ, data)
            self._strings[text] = glob
        return self.builder.gep(glob, [ir.Constant(I64, 0), ir.Constant(I64, 0)],
                                inbounds=True)

    def bool_to_i32(self, value: ir.Value) -> ir.Value:
        return self.builder.zext(value, ir.IntType(32))

    def is_i1(self, value) -> bool:
        return value.type == I1
