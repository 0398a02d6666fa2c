"""The allow-list validator: every AST construct a kernel may contain, checked first.

``validate_source`` walks a kernel's or device function's ``FunctionDef``
before anything is lowered. Any node type outside ``_SUPPORTED`` is rejected,
and the constructs whose support depends on context (constants, expression
statements, loops, ``break``/``continue``, ``return``) have their own checks.
Each rejection is an :class:`UnsupportedSyntaxError` naming the function, the
construct and its line and column. Lowering never silently drops a statement
it has no case for, because anything it lacks a case for is rejected here.
"""

from __future__ import annotations

import ast

from .. import types as T
from ..errors import UnsupportedSyntaxError, add_source_note
from .source import Source

_SUPPORTED = (
    ast.arguments, ast.arg, ast.Expr, ast.Assign, ast.AugAssign, ast.For,
    ast.While, ast.If, ast.Break, ast.Continue, ast.Pass, ast.Return, ast.Name,
    ast.Constant, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
    ast.Call, ast.Attribute, ast.Subscript, ast.Tuple, ast.Load, ast.Store,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.LShift, ast.RShift, ast.BitOr, ast.BitXor, ast.BitAnd, ast.UAdd,
    ast.USub, ast.Not, ast.Invert, ast.And, ast.Or, ast.Eq, ast.NotEq, ast.Lt,
    ast.LtE, ast.Gt, ast.GtE, ast.MatMult,
)
_TERMINATORS = (ast.Return, ast.Break, ast.Continue)
RESERVED_PREFIX = "__tack_"


def is_none_annotation(annotation) -> bool:
    """``-> None`` (or ``-> "None"``), which a function returning nothing may say."""
    return isinstance(annotation, ast.Constant) and annotation.value in (None, "None")


def _cast_hint(arg: ast.arg) -> str:
    """``tack.u32(seed)``, or the annotation's own type as a cast where it names
    a Tack scalar type or a Python number type (``float(x)`` for ``x: float``)."""
    text = ast.unparse(arg.annotation)
    types = {f"tack.{t.name}" for t in T.SCALAR_TYPES} | {"int", "float", "bool"}
    return f"{text if text in types else 'tack.u32'}({arg.arg})"


def unsupported(source: Source, construct: str, node,
                hint: str = None) -> UnsupportedSyntaxError:
    """The error for ``construct`` at ``node``, with a source note attached, and
    a note saying what to write instead where there is one."""
    exc = UnsupportedSyntaxError(
        f"{source.kind} '{source.name}': unsupported {construct} {source.where(node)}")
    add_source_note(exc, source.span(node))
    if hint:
        exc.add_note(f"hint: {hint}")
    return exc


# what to write instead of the Python constructs users reach for most
_HINTS = {
    "JoinedStr": "print takes its values as arguments: print(\"x =\", x)",
    "List": "a kernel has no lists: a small array of its own is "
            "tack.local_array(n, dtype), a fixed set of numbers a tack.vec3(...)",
    "ListComp": "a kernel has no lists: fill a tack.local_array(n, dtype) in a loop",
}


class _Validator(ast.NodeVisitor):
    def __init__(self, source: Source, tree, parallel_loop):
        self.source = source
        self.tree = tree
        self.parallel_loop = parallel_loop
        self.loops: list[ast.AST] = []
        self.position = source.tree

    def reject(self, construct: str, node=None):
        raise unsupported(self.source, construct, node or self.position,
                          _HINTS.get(construct))

    def visit(self, node):
        # An operator has no position: it is reported at its enclosing node.
        if not hasattr(node, "lineno"):
            return super().visit(node)
        saved, self.position = self.position, node
        try:
            return super().visit(node)
        finally:
            self.position = saved

    def generic_visit(self, node):
        if not isinstance(node, _SUPPORTED):
            self.reject(type(node).__name__)
        super().generic_visit(node)

    # -- the function itself --------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef):
        if node is not self.tree:
            self.reject("nested function definition (FunctionDef)", node)
        args = node.args
        if args.posonlyargs or args.vararg or args.kwonlyargs or args.kwarg:
            self.reject("parameter kind (only plain positional parameters)", node)
        if args.defaults or args.kw_defaults:
            self.reject("default parameter value", node)
        for arg in args.args:
            self._check_name(arg.arg, arg)
            if arg.annotation is not None:
                self.reject("parameter annotation (a parameter takes its argument's "
                            "type; to convert it, write a cast in the body, such as "
                            f"{_cast_hint(arg)})", arg.annotation)
        if self.source.kind != "Kernel" and node.returns is not None:
            self._device_function_returns(node)
        self._body(node.body, top=True)

    def _device_function_returns(self, node: ast.FunctionDef) -> None:
        """Only ``-> None``, and on a function that returns no value."""
        if not is_none_annotation(node.returns):
            self.reject("return annotation on a device function (its result type "
                        "follows its return values; to convert, cast the returned "
                        "value, such as return tack.i32(x))", node.returns)
        for stmt in ast.walk(node):
            if isinstance(stmt, ast.Return) and stmt.value is not None:
                self.reject("return of a value from a device function annotated "
                            "-> None", stmt)

    def _body(self, body, top=False):
        for k, stmt in enumerate(body):
            if k > 0 and isinstance(body[k - 1], _TERMINATORS):
                self.reject("unreachable statement after "
                            f"{type(body[k - 1]).__name__.lower()}", stmt)
            if top and k == 0 and _is_docstring(stmt):
                continue
            self.visit(stmt)

    # -- names -------------------------------------------------------------------
    def visit_Name(self, node: ast.Name):
        self._check_name(node.id, node)
        self.generic_visit(node)

    def _check_name(self, name: str, node) -> None:
        """Tack's hidden parameters (debug mode's arrays, the print buffer, the
        returned value) are named ``__tack_...``: no user name may be."""
        if name.startswith(RESERVED_PREFIX):
            self.reject(f"name '{name}' (names starting with {RESERVED_PREFIX} are "
                        f"Tack's own)", node)

    def visit_Slice(self, node: ast.Slice):
        exc = unsupported(self.source, "Slice", node)
        exc.add_note("A kernel does not slice arrays; to run it over part of one, "
                     "pass a range view made on the host: kernel(a[start:stop]).")
        raise exc

    # -- statements ------------------------------------------------------------
    def visit_Expr(self, node: ast.Expr):
        if not isinstance(node.value, ast.Call):
            self.reject(f"expression statement ({type(node.value).__name__})", node)
        self.visit(node.value)

    def visit_For(self, node: ast.For):
        if node.orelse:
            self.reject("for-else", node)
        self.visit(node.target)
        self.visit(node.iter)
        self._check_range_step(node.iter)
        self.loops.append(node)
        self._body(node.body)
        self.loops.pop()

    def visit_While(self, node: ast.While):
        if node.orelse:
            self.reject("while-else", node)
        self.visit(node.test)
        self.loops.append(node)
        self._body(node.body)
        self.loops.pop()

    def visit_If(self, node: ast.If):
        self.visit(node.test)
        self._body(node.body)
        self._body(node.orelse)

    def visit_Break(self, node: ast.Break):
        if not self.loops:
            self.reject("break outside a loop", node)
        if self.loops[-1] is self.parallel_loop:
            self.reject("break out of the parallel loop", node)

    def visit_Continue(self, node: ast.Continue):
        if not self.loops:
            self.reject("continue outside a loop", node)

    def visit_Return(self, node: ast.Return):
        if self.source.kind == "Kernel":
            early = ("; to end one iteration early, use continue"
                     if self.loops and self.loops[-1] is self.parallel_loop
                     and node.value is None else "")
            self.reject("Return (a kernel returns a value only from an annotated "
                        f"final return statement{early})", node)
        if self.loops:
            self.reject("return inside a loop", node)
        if node.value is not None:
            self.visit(node.value)

    # -- expressions -------------------------------------------------------------
    def visit_Constant(self, node: ast.Constant):
        if isinstance(node.value, (bool, int, float)):
            return
        if isinstance(node.value, str) and getattr(node, "_tack_label", False):
            return
        self.reject(f"constant {node.value!r}", node)

    def visit_Call(self, node: ast.Call):
        for keyword in node.keywords:  # only vector constructors take one (dtype=)
            if keyword.arg != "dtype":
                self.reject("keyword argument", keyword.value)
            self.visit(keyword.value)
        self.visit(node.func)
        is_print = isinstance(node.func, ast.Name) and node.func.id == "print"
        for arg in node.args:
            if is_print and isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                self._check_label(arg)
                continue
            self.visit(arg)

    def _check_label(self, node: ast.Constant) -> None:
        """A print label travels as UTF-8 text ending at a NUL on the CPU."""
        if "\0" in node.value:
            self.reject("print label with a NUL character", node)
        try:
            node.value.encode("utf-8")
        except UnicodeEncodeError:
            self.reject("print label that is not valid Unicode text (a lone "
                        "surrogate)", node)

    def _check_range_step(self, it):
        if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id == "range" and len(it.args) == 3):
            step = it.args[2]
            while isinstance(step, ast.UnaryOp) and isinstance(step.op,
                                                               (ast.UAdd, ast.USub)):
                step = step.operand  # -0 is a literal zero too
            if isinstance(step, ast.Constant) and step.value == 0:
                self.reject("range() step of zero", it.args[2])


def _is_docstring(stmt) -> bool:
    return (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, str))


def find_parallel_loop(tree: ast.FunctionDef):
    """The first ``for`` directly in the kernel body, or None."""
    for stmt in tree.body:
        if isinstance(stmt, ast.For):
            return stmt
    return None


def validate_source(source: Source, tree: ast.FunctionDef = None) -> None:
    """Reject every construct outside the kernel language (see module doc)."""
    tree = tree or source.tree
    loop = find_parallel_loop(tree) if source.kind == "Kernel" else None
    _Validator(source, tree, loop).visit(tree)
