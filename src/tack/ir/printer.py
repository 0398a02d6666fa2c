"""A stable text form of the IR, used by ``tack.inspect(mode="ir")`` and tests.

Expressions print with Python-like operators; annotated IR shows each local's
type in a header and each conversion as ``f32(...)``.
"""

from __future__ import annotations

from . import expressions as E
from . import statements as S
from .registry import Registry

_SYMBOLS = {
    E.Add: "+", E.Sub: "-", E.Mul: "*", E.TrueDiv: "/", E.FloorDiv: "//",
    E.Mod: "%", E.Pow: "**", E.LShift: "<<", E.RShift: ">>", E.BitAnd: "&",
    E.BitOr: "|", E.BitXor: "^", E.Lt: "<", E.Le: "<=", E.Gt: ">",
    E.Ge: ">=", E.Eq: "==", E.Ne: "!=", E.And: "and", E.Or: "or",
}
_UNARY = {E.Neg: "-", E.Invert: "~", E.Not: "not "}

expr_text = Registry("IR printer")


@expr_text.register(E.Const)
def _const(e: E.Const) -> str:
    return repr(e.value) if e.dtype is None else f"{e.value!r}:{e.dtype}"


@expr_text.register(E.Str)
def _str(e: E.Str) -> str:
    return repr(e.value)


@expr_text.register(E.Name)
def _name(e: E.Name) -> str:
    return e.id


@expr_text.register(E.DimSize)
def _dim(e: E.DimSize) -> str:
    return f"{e.array}.shape[{e.dim}]"


@expr_text.register(E.Load)
def _load(e: E.Load) -> str:
    return f"{e.array}[{expr_text(e.index)}]"


@expr_text.register(E.BoundsCheck)
def _bounds(e: E.BoundsCheck) -> str:
    indices = ", ".join(expr_text(i) for i in e.indices)
    extents = ", ".join(expr_text(x) for x in e.extents)
    return f"checked#{e.site}([{indices}] < [{extents}])"


@expr_text.register(E.ThreadId)
def _thread_id(e) -> str:
    return "thread_id()"


@expr_text.register(E.BinaryOp)
def _binary(e: E.BinaryOp) -> str:
    symbol = _SYMBOLS.get(type(e))
    if symbol is None:
        return f"{_call_name(e)}({expr_text(e.lhs)}, {expr_text(e.rhs)})"
    return f"({expr_text(e.lhs)} {symbol} {expr_text(e.rhs)})"


@expr_text.register(E.UnaryOp)
def _unary(e: E.UnaryOp) -> str:
    symbol = _UNARY.get(type(e))
    if symbol is None:
        return f"{_call_name(e)}({expr_text(e.operand)})"
    return f"({symbol}{expr_text(e.operand)})"


@expr_text.register(E.Cast)
def _cast(e: E.Cast) -> str:
    return f"{e.to}({expr_text(e.operand)})"


@expr_text.register(E.Select)
def _select(e: E.Select) -> str:
    return (f"({expr_text(e.if_true)} if {expr_text(e.cond)} "
            f"else {expr_text(e.if_false)})")


@expr_text.register(E.Atomic)
def _atomic(e: E.Atomic) -> str:
    return f"{_call_name(e)}({e.array}, {expr_text(e.index)}, {expr_text(e.value)})"


def _call_name(e) -> str:
    name = type(e).__name__
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


stmt_lines = Registry("IR printer")


def _block(body, depth):
    lines = []
    for stmt in body:
        lines.extend(stmt_lines(stmt, depth))
    return lines or ["  " * depth + "pass"]


@stmt_lines.register(S.Assign)
def _assign(s, depth):
    return ["  " * depth + f"{s.target} = {expr_text(s.value)}"]


@stmt_lines.register(S.Store)
def _store(s, depth):
    return ["  " * depth + f"{s.array}[{expr_text(s.index)}] = {expr_text(s.value)}"]


@stmt_lines.register(S.ExprStmt)
def _expr_stmt(s, depth):
    return ["  " * depth + expr_text(s.value)]


@stmt_lines.register(S.If)
def _if(s, depth):
    lines = ["  " * depth + f"if {expr_text(s.cond)}:"] + _block(s.body, depth + 1)
    if s.orelse:
        lines += ["  " * depth + "else:"] + _block(s.orelse, depth + 1)
    return lines


@stmt_lines.register(S.SeqFor)
def _seq_for(s, depth):
    head = (f"for {s.var} in range({expr_text(s.start)}, {expr_text(s.stop)}, "
            f"{expr_text(s.step)}):")
    return ["  " * depth + head] + _block(s.body, depth + 1)


@stmt_lines.register(S.While)
def _while(s, depth):
    return ["  " * depth + f"while {expr_text(s.cond)}:"] + _block(s.body, depth + 1)


@stmt_lines.register(S.Break)
def _break(s, depth):
    return ["  " * depth + "break"]


@stmt_lines.register(S.Continue)
def _continue(s, depth):
    return ["  " * depth + ("continue  # next parallel iteration" if s.outermost
                            else "continue")]


@stmt_lines.register(S.Barrier)
def _barrier(s, depth):
    return ["  " * depth + "barrier()"]


@stmt_lines.register(S.Allocate)
def _allocate(s, depth):
    kind = "shared" if s.space == "shared" else "local_array"
    return ["  " * depth + f"{s.name} = {kind}({s.size}, {s.dtype})"]


@stmt_lines.register(S.Print)
def _print(s, depth):
    return ["  " * depth + "print(" + ", ".join(expr_text(a) for a in s.args) + ")"]


@stmt_lines.register(S.ParallelFor)
def _parallel_for(s, depth):
    space = " x ".join(f"[0, {expr_text(e)})" for e in s.extents)
    head = f"parallel for {', '.join(s.vars)} in {space}:"
    return ["  " * depth + head] + _block(s.body, depth + 1)


def _param_text(p: S.Param) -> str:
    if p.dtype is None:
        return p.name
    return f"{p.name}: {p.dtype}[{p.ndim}d]" if p.is_array else f"{p.name}: {p.dtype}"


def format_function(fn: S.Function) -> str:
    """The whole kernel as text."""
    params = ", ".join(_param_text(p) for p in fn.params)
    lines = [f"kernel {fn.name}({params}):"]
    if fn.locals:
        decl = ", ".join(f"{name}: {dtype}" for name, dtype in fn.locals)
        lines.append(f"  # locals: {decl}")
    lines.extend(_block(fn.body, 1))
    return "\n".join(lines) + "\n"
