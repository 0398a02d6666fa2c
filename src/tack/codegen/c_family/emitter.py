"""Typed, packed Tack IR to C source, for every C-family target.

The kernel runs one work-item per iteration of the parallel loop, flattened
to one dimension: ``tack_flat`` in ``[0, tack_total)``, with the indices of
``tack.ndindex`` recovered by ``/`` and ``%`` over the inner extents (passed
as arguments after the pack buffers). An outermost ``continue`` ends the
work-item. Every generated name goes through ``identifiers.variable_name``,
so no user name can collide with a C keyword or a builtin.

A target may run several iterations per thread (``items_per_thread``, CUDA's
4) in kernels without workgroup features: iteration ``first + k * 256`` for
``k < items``. A thread whose items are all in range runs them unrolled with
no bounds test between them, so that, with ``__restrict__`` pointers (when
the arrays are disjoint), the compiler issues all their loads before the
first store: on an H200 a saxpy streams at the copy bandwidth that way,
against 81% with one iteration per thread and 87% with the tests left in
(benchmarks/gpu_shapes.py). Workgroup kernels keep one iteration per thread.
"""

from __future__ import annotations

import numpy as np

from ... import types as T
from ...ir import expressions as E
from ...ir import statements as S
from ...ir.passes.workgroups import requires_full_workgroups
from ...ir.registry import Registry
from ...ir.traversal import walk
from ..identifiers import kernel_entry_name, variable_name
from . import powers
from .prelude import Prelude, bounds_check
from .prints import emit_print, print_statements

expr = Registry("C-family code generator")
stmt = Registry("C-family code generator")

_INFIX = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.TrueDiv: "/", E.BitAnd: "&",
          E.BitOr: "|", E.BitXor: "^", E.Lt: "<", E.Le: "<=", E.Gt: ">", E.Ge: ">=",
          E.Eq: "==", E.Ne: "!="}
_WRAPPING = (E.Add, E.Sub, E.Mul)
_MATH = {E.Sqrt: "sqrt", E.Exp: "exp", E.Log: "log", E.Log2: "log2", E.Log10: "log10",
         E.Sin: "sin", E.Cos: "cos", E.Tan: "tan", E.Asin: "asin", E.Acos: "acos",
         E.Atan: "atan", E.Sinh: "sinh", E.Cosh: "cosh", E.Tanh: "tanh", E.Fabs: "fabs",
         E.Atan2: "atan2", E.Hypot: "hypot", E.Copysign: "copysign", E.PowF: "pow",
         E.Expm1: "expm1", E.Log1p: "log1p", E.Asinh: "asinh", E.Acosh: "acosh",
         E.Atanh: "atanh", E.Erf: "erf", E.Erfc: "erfc", E.Cbrt: "cbrt", E.Exp2: "exp2",
         E.Gamma: "tgamma", E.Lgamma: "lgamma", E.Fmod: "fmod"}
WORKGROUP = 256
_ATOMIC_OPS = {E.AtomicAdd: "add", E.AtomicSub: "sub", E.AtomicMin: "min",
               E.AtomicMax: "max"}


class CEmitter:
    def __init__(self, fn: S.Function, target, prelude: Prelude = None):
        self.fn = fn
        self.target = target
        self.prelude = prelude or Prelude(target)
        self.arrays = {p.name: p.dtype for p in fn.params if p.is_array}
        self.lines: list = []
        self.depth = 1
        self.counter = 0
        self.outermost_continue = "return;"   # one iteration per thread
        self.temps: list = []   # (C type, name) of variables at kernel scope
        # print statement -> its record number (a tile's body is emitted twice)
        self.prints = {id(node): k for k, node in enumerate(print_statements(fn))}

    def temp(self, c_type: str, base: str) -> str:
        """A fresh variable declared at kernel scope, so that an expression
        anywhere (a while condition, one side of ``&&``) can assign it."""
        name = self.fresh(base)
        self.temps.append((c_type, name))
        return name

    # -- helpers ------------------------------------------------------------------
    def name(self, ident: str) -> str:
        return variable_name(ident)

    def type(self, dtype) -> str:
        return self.target.type(dtype)

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    def fresh(self, base: str) -> str:
        self.counter += 1
        return f"tack_{base}{self.counter}"

    def block(self, stmts) -> None:
        self.depth += 1
        for s in stmts:
            stmt(s, self)
        self.depth -= 1

    # -- the kernel ------------------------------------------------------------------
    def kernel(self, entry: str) -> str:
        """A whole translation unit: header, helpers, and the kernel."""
        function = self.function(entry)
        return f"{self.target.header}{self.prelude.text()}\n{function}"

    def function(self, entry: str) -> str:
        """The kernel function alone (its helpers are added to ``self.prelude``)."""
        fn, t = self.fn, self.target
        loop = fn.parallel_for
        restrict = t.restrict if fn.disjoint else ""
        params = []
        for p in fn.params:
            if not p.is_array:   # a scalar passed by value (OpenCL: see its backend)
                params.append(f"{self.type(p.dtype)} {self.name(p.name)}")
                continue
            space = t.pack_space if p.name.startswith("__tack_pack_") else t.global_space
            params.append(f"{space} {self.type(p.dtype)}* {restrict}{self.name(p.name)}")
        inner = [f"{t.index_type} tack_extent{k}" for k in range(1, len(loop.extents))]
        params += [f"{t.index_type} tack_total"] + inner
        if t.array_offsets:
            params += self.offset_arrays()
        items = items_per_thread(fn, t)
        first = "tack_flat" if items == 1 else "tack_first"
        self.emit(f"{t.index_type} {first} = {t.first_id(items)};")
        # Launched in whole workgroups, every lane is in range; and PoCL hung on
        # a return ahead of a barrier (in debug variants), though none is taken.
        if not requires_full_workgroups(fn):
            self.emit(f"if ({first} >= tack_total) return;")
        for name, dtype in fn.locals:
            self.emit(f"{self.type(dtype)} {self.name(name)};")
        self.declare_arrays()
        for var in loop.vars:
            self.emit(f"{t.index_type} {self.name(var)};")
        declared = len(self.lines)
        for s in fn.body:
            if s is loop:
                self.parallel_body(loop, items)
            else:
                stmt(s, self)
        self.lines[declared:declared] = ["  " + f"{c_type} {name};"
                                         for c_type, name in self.temps]
        body = "\n".join(self.lines)
        head = f"{t.kernel_prefix} {entry}({', '.join(params)})"
        return f"{head} {{\n{body}\n}}\n"

    def offset_arrays(self) -> list:
        """The byte-offset parameters of the array parameters, each array moved
        by its offset first (``CTarget.array_offsets``)."""
        t, params = self.target, []
        arrays = [p for p in self.fn.params if p.is_array]
        for k, p in enumerate(arrays):
            name, pointer = self.name(p.name), f"{t.global_space} {self.type(p.dtype)}*"
            params.append(f"{t.index_type} tack_offset{k}")
            self.emit(f"{name} = ({pointer})(({t.global_space} char*){name} + "
                      f"tack_offset{k});")
        return params

    def parallel_body(self, loop: S.ParallelFor, items: int) -> None:
        """The loop's body for one iteration, or over ``items`` of them: a full
        tile runs them unrolled with no bounds tests between them, so the
        compiler can issue every item's loads before the first store (with
        ``__restrict__`` pointers); the last, partial tile tests each one."""
        if items == 1:
            self.bind_indices(loop)
            self.block_at_depth(loop.body)
            return
        self.outermost_continue = "continue;"
        self.emit(f"if (tack_first + {(items - 1) * WORKGROUP} < tack_total) {{")
        self.depth += 1
        self.emit("#pragma unroll")
        self.items_loop(loop, items, checked=False)
        self.depth -= 1
        self.emit("} else {")
        self.depth += 1
        self.items_loop(loop, items, checked=True)
        self.depth -= 1
        self.emit("}")

    def items_loop(self, loop: S.ParallelFor, items: int, checked: bool) -> None:
        t = self.target
        self.emit(f"for (int tack_item = 0; tack_item < {items}; tack_item++) {{")
        self.depth += 1
        self.emit(f"{t.index_type} tack_flat = tack_first + ({t.index_type})tack_item * "
                  f"{WORKGROUP};")
        if checked:
            self.emit("if (tack_flat >= tack_total) return;")
        self.bind_indices(loop)
        self.depth -= 1
        self.block(loop.body)
        self.emit("}")

    def block_at_depth(self, stmts) -> None:
        for s in stmts:
            stmt(s, self)

    def declare_arrays(self) -> None:
        """Shared and per-thread arrays, and the scratch of block reductions, all
        at kernel scope (OpenCL C requires that of __local memory)."""
        nodes = [n for s in self.fn.body for n in walk(s)]
        for node in nodes:
            if isinstance(node, S.Allocate):
                self.arrays.setdefault(node.name, node.dtype)
                space = self.target.shared_space + " " if node.space == "shared" else ""
                self.emit(f"{space}{self.type(node.dtype)} {self.name(node.name)}"
                          f"[{node.size}];")
        if any(isinstance(n, E.BlockReduce) for n in nodes):
            self.emit(f"{self.target.shared_space} float tack_scratch[{WORKGROUP}];")

    def bind_indices(self, loop: S.ParallelFor) -> None:
        """Recover ``i, j, k`` of a flattened ``tack.ndindex`` launch."""
        n = len(loop.vars)
        rest = "tack_flat"
        for k, var in enumerate(loop.vars):
            stride = " * ".join(f"tack_extent{m}" for m in range(k + 1, n))
            if k == n - 1:
                self.emit(f"{self.name(var)} = {rest};")
            else:
                self.emit(f"{self.name(var)} = {rest} / ({stride});")
                rest = f"({rest} % ({stride}))"


def items_per_thread(fn: S.Function, target) -> int:
    """Iterations each thread runs: the target's number, or 1 in a kernel with
    workgroup features (barriers, shared or local arrays, thread ids, block
    reductions), whose lanes map one to one onto iterations."""
    if target.items_per_thread == 1:
        return 1
    for s in fn.body:
        for node in walk(s):
            if isinstance(node, (S.Allocate, S.Barrier, E.ThreadId, E.BlockReduce)):
                return 1
    return target.items_per_thread


def generate_c_source(fn: S.Function, target) -> tuple:
    """(source, entry name) of a typed, packed kernel for ``target``."""
    entry = kernel_entry_name(fn.name)
    return CEmitter(fn, target).kernel(entry), entry


# -- expressions -----------------------------------------------------------------------

def c(node, em) -> str:
    return expr(node, em)


@expr.register(E.Const)
def _const(e: E.Const, em):
    dtype = e.dtype
    if dtype.is_float:
        value = T.float_value(e.value, dtype)
        if dtype.bits == 32:   # its f32 value: one past the range is infinity
            with np.errstate(over="ignore"):
                value = float(np.float32(value))
        if value != value:
            helper = em.target.nan_helper(dtype)
            if helper is None:
                return em.target.special_float(dtype, "nan")
            em.prelude.add_text(helper[0], helper[1])
            return helper[0]
        if value in (float("inf"), float("-inf")):
            sign = "-" if value < 0 else ""
            return f"({sign}{em.target.special_float(dtype, 'inf')})"
        text = repr(value)
        if "e" not in text and "." not in text:
            text += ".0"
        return f"({text}{em.target.literal_suffix(dtype)})"
    value = int(e.value)
    suffix = em.target.literal_suffix(dtype)
    if dtype.is_signed and value == -(1 << (dtype.bits - 1)):
        return f"(({em.type(dtype)})({value + 1}{suffix} - 1))"
    return f"(({em.type(dtype)}){value}{suffix})"


@expr.register(E.Name)
def _name(e: E.Name, em):
    return em.name(e.id)


@expr.register(E.Load)
def _load(e: E.Load, em):
    if not e.checked:
        return f"{em.name(e.array)}[{c(e.index, em)}]"
    at = em.temp(em.target.index_type, "at")   # debug mode: -1 skips, a zero is read
    return (f"(({at} = {c(e.index, em)}) >= 0 ? {em.name(e.array)}[{at}] : "
            f"({em.type(e.dtype)})0)")


def wrapping_unsigned(dtype):
    """The unsigned type that ``dtype``'s wrapping ``+ - *`` run in: C turns
    narrower operands (``ushort`` too) into a signed ``int``, where 65535 *
    65535 overflows, which is undefined; at 32 bits or more, the unsigned type
    of the same width."""
    return T.scalar_type(f"u{max(dtype.bits, 32)}")


_FOLDED = {E.Add: np.add, E.Sub: np.subtract, E.Mul: np.multiply,
           E.TrueDiv: np.divide}


def _constant_nan(e) -> bool:
    """Whether ``e`` is float arithmetic on two constants whose result is NaN
    (``0.0 / 0.0``, ``inf - inf``, ``inf * 0.0``): PoCL folds such a NaN
    itself and then drops the stores that depend on it, so it is spelled as
    the target's NaN constant instead, as ``math.nan`` is."""
    kind = _FOLDED.get(type(e))
    if kind is None or not e.dtype.is_float or not (
            isinstance(e.lhs, E.Const) and isinstance(e.rhs, E.Const)):
        return False
    scalar = e.dtype.numpy.type
    with np.errstate(all="ignore"):
        value = kind(scalar(T.float_value(e.lhs.value, e.dtype)),
                     scalar(T.float_value(e.rhs.value, e.dtype)))
    return bool(np.isnan(value))


@expr.register(E.BinaryOp)
def _infix(e, em):
    symbol = _INFIX.get(type(e))
    if symbol is None:
        raise NotImplementedError(f"{em.target.name}: no spelling for {type(e).__name__}")
    if _constant_nan(e):
        return _const(E.Const(float("nan"), dtype=e.dtype, span=e.span), em)
    if isinstance(e, _WRAPPING) and e.dtype.is_int and (e.dtype.is_signed
                                                        or e.dtype.bits < 32):
        u = em.type(wrapping_unsigned(e.dtype))
        return in_order(em, lambda lhs, rhs: (f"(({em.type(e.dtype)})(({u}){lhs} {symbol} "
                                               f"({u}){rhs}))"), e.lhs, e.rhs)
    if isinstance(e, E.Compare):
        return in_order(em, lambda lhs, rhs: f"({lhs} {symbol} {rhs})", e.lhs, e.rhs)
    return in_order(em, lambda lhs, rhs: f"(({em.type(e.dtype)})({lhs} {symbol} {rhs}))",
                    e.lhs, e.rhs)


def _helper(name):
    def build(e, em):
        fn = em.prelude.helper(name, e.dtype)
        return in_order(em, lambda lhs, rhs: f"{fn}({lhs}, {rhs})", e.lhs, e.rhs)
    return build


expr.register(E.FloorDiv)(_helper("floordiv"))
expr.register(E.Mod)(_helper("mod"))
expr.register(E.Min)(_helper("min"))
expr.register(E.Max)(_helper("max"))
expr.register(E.LShift)(_helper("shl"))
expr.register(E.RShift)(_helper("shr"))


@expr.register(E.Pow)
def _pow(e, em):
    k = powers.literal_exponent(e.rhs) if e.dtype.is_float else None
    if k is not None:       # multiplied out as on the CPU, for the same bits
        name, text = powers.power_helper(em.target, e.dtype, k)
        em.prelude.add_text(name, text)
        return f"{name}({c(e.lhs, em)})"
    if e.dtype.is_float:
        name = em.target.math('pow', e.dtype)
        return in_order(em, lambda lhs, rhs: f"{name}({lhs}, {rhs})", e.lhs, e.rhs)
    return _helper("ipow")(e, em)


@expr.register(E.And)
def _and(e, em):
    return f"(({c(e.lhs, em)}) && ({c(e.rhs, em)}))"


@expr.register(E.Or)
def _or(e, em):
    return f"(({c(e.lhs, em)}) || ({c(e.rhs, em)}))"


@expr.register(E.Not)
def _not(e, em):
    return f"(!({c(e.operand, em)}))"


@expr.register(E.Neg)
def _neg(e, em):
    operand = c(e.operand, em)
    if e.dtype.is_int:
        u = em.type(T.scalar_type(f"u{e.dtype.bits}"))
        return f"(({em.type(e.dtype)})(0 - ({u}){operand}))"
    return f"(-{operand})"


@expr.register(E.Invert)
def _invert(e, em):
    return f"(({em.type(e.dtype)})~{c(e.operand, em)})"


@expr.register(E.Abs)
def _abs(e, em):
    if e.dtype.is_float:
        return f"{em.target.math('fabs', e.dtype)}({c(e.operand, em)})"
    if not e.dtype.is_signed:
        return c(e.operand, em)
    return f"{em.prelude.helper('abs', e.dtype)}({c(e.operand, em)})"


@expr.register(E.Select)
def _select(e, em):
    cond = c(e.cond, em)
    if e.cond.dtype is not None and e.cond.dtype.is_float:   # OpenCL C takes no float
        cond = f"({cond}) != 0"                               # as the `?:` condition
    return f"(({cond}) ? {c(e.if_true, em)} : {c(e.if_false, em)})"


@expr.register(E.Cast)
def _cast(e, em):
    src, dst = e.operand.dtype, e.to
    operand = c(e.operand, em)
    if src.is_float and dst.is_int:
        return em.target.saturating(dst, operand)
    return f"(({em.type(dst)}){operand})"


@expr.register(E.MathUnary, E.MathBinary)
def _math(e, em):
    name = em.target.math(_MATH[type(e)], e.dtype)
    if isinstance(e, E.MathBinary):
        return in_order(em, lambda lhs, rhs: f"{name}({lhs}, {rhs})", e.lhs, e.rhs)
    return f"{name}({c(e.operand, em)})"


@expr.register(E.Degrees, E.Radians)
def _angle(e, em):
    factor = e.FACTOR
    if e.dtype == T.f32:
        factor = float(np.float32(factor))
    return f"({c(e.operand, em)} * ({em.type(e.dtype)}){factor!r})"


@expr.register(E.Floor, E.Ceil, E.Trunc, E.Round)
def _round(e, em):
    # rint rounds in the current mode, which is to nearest, halves to even
    spelled = {E.Floor: "floor", E.Ceil: "ceil", E.Trunc: "trunc", E.Round: "rint"}[type(e)]
    name = em.target.math(spelled, e.operand.dtype)
    helper = em.target.rint_helper(e.operand.dtype) \
        if spelled == "rint" and e.operand.dtype.is_float else None
    if helper is not None:
        name = helper[0]
        em.prelude.add_text(name, helper[1])
    return em.target.saturating(e.dtype, f"{name}({c(e.operand, em)})")


@expr.register(E.IsNan, E.IsInf, E.IsFinite)
def _classify(e, em):
    name = {E.IsNan: "isnan", E.IsInf: "isinf", E.IsFinite: "isfinite"}[type(e)]
    return f"((int)({name}({c(e.operand, em)}) != 0))"


@expr.register(E.Atomic)
def _atomic(e, em):
    op = _ATOMIC_OPS[type(e)]
    helper = em.target.atomic_helper(op, e.dtype)
    if helper:
        em.prelude.add_text(f"tack_atomic_{op}_{e.dtype.name}", helper)
    if not e.checked:
        return in_order(em, lambda index, value: em.target.atomic(
            op, e.dtype, f"&{em.name(e.array)}[{index}]", value), e.index, e.value)
    # debug mode: the index, then the operand, as on the CPU; -1 skips (a zero)
    at, v = em.temp(em.target.index_type, "at"), em.temp(em.type(e.dtype), "v")
    update = em.target.atomic(op, e.dtype, f"&{em.name(e.array)}[{at}]", v)
    return (f"(({at} = {c(e.index, em)}), ({v} = {c(e.value, em)}), "
            f"{at} >= 0 ? {update} : ({em.type(e.dtype)})0)")


@expr.register(E.BoundsCheck)
def _bounds(e, em):
    name, text = bounds_check(em.target, len(e.indices))
    em.prelude.add_text(name, text)
    operands = "".join(f", {c(i, em)}, {c(x, em)}" for i, x in zip(e.indices, e.extents))
    return f"{name}({em.name(e.errors)}, {e.site}{operands})"


@expr.register(E.Str)
def _str(e, em):
    raise NotImplementedError("a string outside print()")


# -- statements --------------------------------------------------------------------------

@stmt.register(S.Assign)
def _assign(s, em):
    em.emit(f"{em.name(s.target)} = {c(s.value, em)};")


@stmt.register(S.Store)
def _store(s, em):
    if not s.checked and not _has_atomic(s.index, s.value):
        em.emit(f"{em.name(s.array)}[{c(s.index, em)}] = {c(s.value, em)};")
        return
    # The value, then the index, as Python (and the CPU) evaluate them: C
    # leaves the order of an assignment's sides open, which matters once an
    # atomic is in either. In debug mode an index of -1 skips the store.
    v = em.temp(em.type(em.arrays[s.array]), "v")
    at = em.temp(em.target.index_type, "at")
    em.emit(f"{v} = {c(s.value, em)};")
    em.emit(f"{at} = {c(s.index, em)};")
    guard = f"if ({at} >= 0) " if s.checked else ""
    em.emit(f"{guard}{em.name(s.array)}[{at}] = {v};")


def _has_atomic(*exprs) -> bool:
    return any(isinstance(node, E.Atomic) for e in exprs for node in walk(e))


def in_order(em, spell, *exprs) -> str:
    """``spell(texts)`` of ``exprs``, evaluated left to right as in Python. C
    leaves the order of operands and arguments open, which shows once an
    atomic is among them (``atomic_add(c, 0, 1) - atomic_add(c, 0, 10)``,
    ``a[0] + atomic_add(a, 0, 1)``): the operands before the last one holding
    an atomic are then assigned to temporaries first, in a comma expression,
    which keeps them inside a conditional arm."""
    last = max((k for k, e in enumerate(exprs) if k and _has_atomic(e)), default=0)
    texts, steps = [c(e, em) for e in exprs], []
    for k in range(last):
        held = em.temp(em.type(exprs[k].dtype), "o")
        steps.append(f"{held} = {texts[k]}, ")
        texts[k] = held
    return f"({''.join(steps)}{spell(*texts)})" if steps else spell(*texts)


@stmt.register(S.ExprStmt)
def _expr_stmt(s, em):
    em.emit(f"(void)({c(s.value, em)});")


def _condition(text: str) -> str:
    """``(text)``, without doubling parentheses that already enclose it all."""
    if text.startswith("(") and text.endswith(")"):
        depth = 0
        for k, ch in enumerate(text):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                if k == len(text) - 1:
                    return text
                break
    return f"({text})"


@stmt.register(S.If)
def _if(s, em):
    em.emit(f"if {_condition(c(s.cond, em))} {{")
    em.block(s.body)
    if s.orelse:
        em.emit("} else {")
        em.block(s.orelse)
    em.emit("}")


@stmt.register(S.While)
def _while(s, em):
    em.emit(f"while {_condition(c(s.cond, em))} {{")
    em.block(s.body)
    em.emit("}")


@stmt.register(S.SeqFor)
def _seq_for(s, em):
    """Python's range: a trip count computed without overflow, then a counter,
    so the variable never wraps past the type's limits. An unsigned step
    counts down when it is negative as a signed value."""
    dtype = s.start.dtype  # annotation gave the bounds the variable's type
    t = em.type(dtype)
    ut = em.type(T.scalar_type(f"u{dtype.bits}"))
    st = em.type(T.scalar_type(f"i{dtype.bits}"))
    start, stop, step, trips, k = (em.fresh(n) for n in ("start", "stop", "step",
                                                         "trips", "k"))
    em.emit(f"{{ {t} {start} = {c(s.start, em)}; {t} {stop} = {c(s.stop, em)}; "
            f"{t} {step} = {c(s.step, em)}; {ut} {trips} = 0;")
    up, down = (f"({st}){step} > 0", f"({st}){step} < 0")
    less, more = (f"{start} < {stop}", f"{start} > {stop}")
    em.emit(f"if ({up} && {less}) {trips} = ({ut})(({ut}){stop} - ({ut}){start} - 1) / "
            f"({ut}){step} + 1;")
    em.emit(f"else if ({down} && {more}) {trips} = ({ut})(({ut}){start} - ({ut}){stop} "
            f"- 1) / ({ut})(0 - ({ut}){step}) + 1;")
    em.emit(f"for ({ut} {k} = 0; {k} < {trips}; {k}++) {{")
    em.depth += 1
    wt = em.type(wrapping_unsigned(dtype))
    em.emit(f"{em.name(s.var)} = ({t})(({wt}){start} + ({wt}){k} * ({wt}){step});")
    em.depth -= 1
    em.block(s.body)
    em.emit("} }")


@stmt.register(S.Break)
def _break(s, em):
    em.emit("break;")


@stmt.register(S.Continue)
def _continue(s, em):
    em.emit(em.outermost_continue if s.outermost else "continue;")


@stmt.register(S.Print)
def _print(s, em):
    """A record in the print buffer (see ``prints.py``)."""
    emit_print(s, em, em.prints[id(s)], c)


@stmt.register(S.Allocate)
def _allocate(s, em):
    """Declared at kernel scope by ``declare_arrays``."""


@stmt.register(S.Barrier)
def _barrier(s, em):
    em.emit(em.target.barrier)


@expr.register(E.ThreadId)
def _thread_id(e, em):
    return em.target.local_id()


@expr.register(E.BlockReduce)
def _block_reduce(e, em):
    op = {E.BlockSum: "sum", E.BlockMin: "min", E.BlockMax: "max"}[type(e)]
    em.prelude.add_text(f"tack_block_{op}", em.target.block_reduce_helper(op, WORKGROUP))
    return f"tack_block_{op}(tack_scratch, {c(e.operand, em)})"
