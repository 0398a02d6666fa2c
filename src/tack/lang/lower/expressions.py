"""Lowering Python expressions to IR expressions.

Expression lowering may emit statements (the bodies of inlined device
functions) into ``self.pre``; :meth:`ExpressionLowering.ordered` keeps
Python's left-to-right evaluation when it does, by capturing earlier operands
into temporaries first.
"""

from __future__ import annotations

import ast
import math

import numpy as np

from ... import types as T
from ...ir import expressions as E
from ...ir import statements as S
from .arrays import chain_root, chained_index
from .vectors import Vec

BINARY = {
    ast.Add: E.Add, ast.Sub: E.Sub, ast.Mult: E.Mul, ast.Div: E.TrueDiv,
    ast.FloorDiv: E.FloorDiv, ast.Mod: E.Mod, ast.Pow: E.Pow,
    ast.LShift: E.LShift, ast.RShift: E.RShift, ast.BitAnd: E.BitAnd,
    ast.BitOr: E.BitOr, ast.BitXor: E.BitXor,
}
COMPARE = {
    ast.Lt: E.Lt, ast.LtE: E.Le, ast.Gt: E.Gt, ast.GtE: E.Ge,
    ast.Eq: E.Eq, ast.NotEq: E.Ne,
}
MATH_CONSTANTS = {"pi": math.pi, "e": math.e, "inf": math.inf,
                  "nan": math.nan, "tau": math.tau}
# NumPy's spellings of the same values (np.pi is math.pi), as Numba takes them
NUMPY_CONSTANTS = frozenset({"pi", "e", "inf", "nan"})


# NumPy's array attributes a kernel does not have (a hint names what it does)
_ARRAY_ATTRIBUTES = frozenset({"size", "ndim", "dtype", "T", "itemsize", "nbytes"})


def _is_array_name(lowering, node) -> bool:
    return isinstance(node, ast.Name) and node.id in lowering.scope.arrays


def is_trivial(expr: E.Expr) -> bool:
    """True when re-reading ``expr`` later gives the same value."""
    return isinstance(expr, (E.Const, E.Name, E.DimSize))


class ExpressionLowering:
    """Mixin of :class:`~tack.lang.lower.kernel.Lowerer` for expressions."""

    def value(self, node: ast.expr):
        """Lower an expression: an IR expression, or a :class:`Vec` for a vector
        or matrix value."""
        handler = getattr(self, "expr_" + type(node).__name__, None)
        if handler is None:
            raise self.scope.unsupported(f"{type(node).__name__} here", node)
        return handler(node)

    def expr(self, node: ast.expr) -> E.Expr:
        """Lower an expression that must be a scalar."""
        value = self.value(node)
        if isinstance(value, Vec):
            raise self.scope.error(TypeError, f"a {value.describe()} where a scalar is "
                                   f"needed", node)
        return value

    def ordered(self, nodes, vectors: bool = False) -> list:
        """Lower ``nodes`` left to right, capturing operands that later
        statements (from inlining) could change; ``vectors`` allows Vec values."""
        results = []
        for node in nodes:
            mark = len(self.pre)
            value = self.value(node) if vectors else self.expr(node)
            if len(self.pre) > mark:
                captures = []
                for k, earlier in enumerate(results):
                    results[k] = self.capture_into(earlier, captures)
                self.pre[mark:mark] = captures
            results.append(value)
        return results

    def capture_into(self, value, assigns: list):
        """``value`` with non-trivial parts moved into temporaries (appended to
        ``assigns``)."""
        if isinstance(value, Vec):
            return value.like(self.capture_into(c, assigns) for c in value.comps)
        if is_trivial(value):
            return value
        name, assign = self.capture(value)
        assigns.append(assign)
        return name

    def capture(self, value: E.Expr, base: str = "eval"):
        """A fresh temporary holding ``value``: (Name, Assign)."""
        name = self.names.fresh(base)
        return E.Name(name, span=value.span), S.Assign(name, value, span=value.span)

    def captured(self, value: E.Expr, base: str = "eval") -> E.Expr:
        """``value`` itself if trivial, else a temporary assigned in ``pre``."""
        if is_trivial(value):
            return value
        name, assign = self.capture(value, base)
        self.pre.append(assign)
        return name

    # -- leaves ---------------------------------------------------------------
    def expr_Constant(self, node: ast.Constant) -> E.Expr:
        if isinstance(node.value, str):
            raise self.scope.unsupported("string outside print()", node)
        value = int(node.value) if isinstance(node.value, bool) else node.value
        return E.Const(value, span=self.scope.span(node))

    def expr_Name(self, node: ast.Name) -> E.Expr:
        scope = self.scope
        if node.id in scope.arrays:
            self.require_no_vector_array(node.id, node)
            raise scope.unsupported(f"use of array '{node.id}' as a value", node)
        if node.id in scope.rename:
            return self.local_value(scope.rename[node.id], scope.span(node))
        if node.id in scope.bound:
            return self.local_value(node.id, scope.span(node))
        captured = "" if scope.bindings.is_unbound(node.id) else (
            " in the kernel: it is a Python value here, and kernels capture none; pass "
            "it as an argument")
        raise scope.error(NameError, f"name '{node.id}' is not defined{captured}", node)

    def require_no_vector_array(self, name: str, node) -> None:
        """The argument's ``TypeError`` where array ``name`` is a parameter given
        an array of vectors and the kernel uses it as one vector value (Warp's
        ``wp.array`` for a ``wp.vec3``)."""
        param = self.scope.arrays[name]
        if param in self.element_params:
            element = self.element_params[param][1]
            raise self.scope.error(TypeError, f"parameter '{param}' is used as a value, but "
                                   f"the argument is an array of {element} elements (pass "
                                   f"the value itself: tack.{element.name}(...), a tuple, "
                                   f"or a NumPy array of its shape)", node)

    def expr_Attribute(self, node: ast.Attribute) -> E.Expr:
        module = self.scope.bindings.resolve_module(node.value)
        if (module is math or module is np and node.attr in NUMPY_CONSTANTS) and \
                node.attr in MATH_CONSTANTS:
            return E.Const(MATH_CONSTANTS[node.attr], span=self.scope.span(node))
        if module is None and not _is_array_name(self, node.value):
            base = self.value(node.value)
            if isinstance(base, Vec):
                return self.attribute_of(base, node)
        hint = ""
        if _is_array_name(self, node.value) and node.attr == "shape":
            hint = " (a kernel reads a.shape[k], or unpacks all of it: n, m = a.shape)"
        elif _is_array_name(self, node.value) and node.attr in _ARRAY_ATTRIBUTES:
            hint = " (a kernel reads an array's len(a) and a.shape[k])"
        elif _is_array_name(self, node.value) and node.attr in ("x", "y", "z", "w"):
            self.require_no_vector_array(node.value.id, node.value)
        elif node.attr in ("x", "y", "z", "w") and isinstance(node.value, ast.Name) and \
                node.value.id in getattr(self, "scalar_params", ()):
            # the argument's mistake: a TypeError, as for other arguments
            raise self.scope.error(TypeError, (
                f"Unsupported argument type for parameter '{node.value.id}', which the "
                f"kernel uses as a vector ('{node.value.id}.{node.attr}'): it was passed a "
                f"number, or something that is no vector value; pass a NumPy array, "
                f"tuple or list of 2 to 4 numbers"), node)
        raise self.scope.unsupported(f"attribute '{node.attr}' here{hint}", node)

    # -- arrays -------------------------------------------------------------------
    def array_name(self, node: ast.expr) -> str:
        """The IR array a source expression names, or an error."""
        if isinstance(node, ast.Name) and node.id in self.scope.arrays:
            return self.scope.arrays[node.id]
        if isinstance(node, ast.Name) and node.id not in self.scope.bound:
            raise self.scope.error(NameError, f"name '{node.id}' is not defined", node)
        if isinstance(node, ast.Attribute) and node.attr == "shape":
            raise self.scope.unsupported(
                "use of a whole shape (an array's rank is the number of indices the "
                "kernel uses; its extents are a.shape[k], or n, m = a.shape)", node)
        raise self.scope.unsupported("array access on something that is not an "
                                     "array parameter", node)

    def flat_index(self, array: str, index: ast.expr, node) -> E.Expr:
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        element = self.elements.get(array)
        if element is not None and len(parts) != self.array_ndims[array]:
            ndim = self.array_ndims[array]
            element_index = ", ".join("ijklmn"[:ndim]) if ndim <= 6 else "i, ..."
            raise self.scope.error(
                TypeError, f"array '{array}' of {element} elements has {ndim} "
                f"dimension(s) but is indexed with {len(parts)} indices (index the "
                f"element, then its components: {array}[{element_index}].x)", node)
        return self.access_index(array, self.ordered(parts), node)

    def linearize(self, array: str, values, node) -> E.Expr:
        """Row-major flat index: ``(i * D1 + j) * D2 + k``, each index an i64
        first (``E.IndexCast``); one index is converted where it is used."""
        span = self.scope.span(node)
        if len(values) > 1:
            values = [E.IndexCast(v, T.i64, span=span) for v in values]
        flat = values[0]
        for dim, value in enumerate(values[1:], start=1):
            flat = E.Add(E.Mul(flat, self.extent(array, dim, span), span=span),
                         value, span=span)
        return flat

    def expr_Subscript(self, node: ast.Subscript) -> E.Expr:
        value = node.value
        if isinstance(value, ast.Attribute) and value.attr == "shape":
            return self.shape_dim(value.value, node.slice, node)
        root = chain_root(node)
        if root in self.scope.arrays and self.scope.arrays[root] not in self.elements:
            # an array of scalars has no rows: a[i][j] (the whole chain, named once)
            parameter = self.scope.arrays[root] in self.array_params
            raise self.scope.unsupported(chained_index(node, parameter), node)
        if not _is_array_name(self, value) and not (
                isinstance(value, ast.Name) and value.id not in self.scope.bound):
            base = self.value(value)
            if isinstance(base, Vec):
                return self.subscript_of(base, node.slice, node)
        array = self.array_name(value)
        index = self.flat_index(array, node.slice, node)
        span = self.scope.span(node)
        if array in self.elements:
            return self.load_element(array, index, span)
        return E.Load(array, index, self.debug, span=span)

    def shape_dim(self, array_node, index, node) -> E.Expr:
        array = self.array_name(array_node)
        if not (isinstance(index, ast.Constant) and type(index.value) is int
                and index.value >= 0):
            raise self.scope.unsupported("shape index that is not a non-negative "
                                         "integer literal", node)
        element = self.elements.get(array)
        if element is not None and index.value >= self.array_ndims[array]:
            ndim = self.array_ndims[array]
            raise self.scope.error(TypeError, f"{array}.shape[{index.value}] of an array "
                                   f"with {ndim} dimension(s) (of {element} elements)",
                                   node)
        return self.extent(array, index.value, self.scope.span(node))

    # -- operators --------------------------------------------------------------
    def expr_BinOp(self, node: ast.BinOp) -> E.Expr:
        span = self.scope.span(node)
        if isinstance(node.op, ast.MatMult):
            lhs, rhs = self.ordered([node.left, node.right], vectors=True)
            return self.matmul(lhs, rhs, span, node)
        kind = BINARY.get(type(node.op))
        if kind is None:
            raise self.scope.unsupported(type(node.op).__name__, node)
        lhs, rhs = self.ordered([node.left, node.right], vectors=True)
        return self.combine(kind, lhs, rhs, span, node)

    def expr_UnaryOp(self, node: ast.UnaryOp) -> E.Expr:
        span = self.scope.span(node)
        if isinstance(node.op, (ast.UAdd, ast.USub)):
            operand = self.value(node.operand)
            if isinstance(operand, Vec):
                return operand if isinstance(node.op, ast.UAdd) else \
                    self.map_unary(E.Neg, operand, span)
        else:
            operand = self.expr(node.operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.USub):
            if isinstance(operand, E.Const):
                return E.Const(-operand.value, span=span)
            return E.Neg(operand, span=span)
        if isinstance(node.op, ast.Not):
            return E.Not(operand, span=span)
        return E.Invert(operand, span=span)

    def expr_Compare(self, node: ast.Compare) -> E.Expr:
        operands = [node.left] + list(node.comparators)
        result = None
        left = None
        last = len(node.ops) - 1
        for k, (op, right_node) in enumerate(zip(node.ops, node.comparators)):
            kind = COMPARE.get(type(op))
            if kind is None:
                raise self.scope.unsupported(type(op).__name__, node)
            if left is None:   # the first two operands always run
                left, right = self.ordered([operands[0], right_node])
                if k < last:
                    right = self.captured(right, "cmp")
            else:              # later ones only once the comparisons before hold
                result, right = self.conditional(right_node, result, hold=k < last)
            test = kind(left, right, span=self.scope.span(node))
            result = test if result is None else E.And(result, test,
                                                       span=self.scope.span(node))
            left = right
        return result

    def expr_BoolOp(self, node: ast.BoolOp) -> E.Expr:
        kind = E.And if isinstance(node.op, ast.And) else E.Or
        result = self.expr(node.values[0])
        for value in node.values[1:]:
            result, rhs = self.conditional(value, result, negate=kind is E.Or)
            result = kind(result, rhs, span=self.scope.span(node))
        return result

    def expr_IfExp(self, node: ast.IfExp) -> E.Expr:
        cond = self.expr(node.test)
        mark = len(self.pre)
        if_true = self.value(node.body)
        if_false = self.value(node.orelse)
        if isinstance(if_true, Vec) or isinstance(if_false, Vec):
            if len(self.pre) != mark:   # a side runs statements: only the chosen one
                del self.pre[mark:]
                return self.vector_branch_value(cond, node)
            span = self.scope.span(node)
            cond = self.captured(cond, "cond")
            shape = if_true if isinstance(if_true, Vec) else if_false
            a = self.broadcast(if_true, shape.kind, shape.shape, node)
            b = self.broadcast(if_false, shape.kind, shape.shape, node)
            return a.like(E.Select(cond, x, y, span=span) for x, y in zip(a.comps, b.comps))
        if len(self.pre) == mark:
            return E.Select(cond, if_true, if_false, span=self.scope.span(node))
        # An inlined call on one side: evaluate only the chosen side.
        del self.pre[mark:]
        return self.branch_value(cond, node.body, node.orelse, node)

    def branch_value(self, cond, true_node, false_node, node) -> E.Expr:
        result = self.names.fresh("select")
        span = self.scope.span(node)
        cond = self.captured(cond, "cond")
        arms = []
        for arm in (true_node, false_node):
            saved, self.pre = self.pre, []
            value = self.expr(arm)
            arms.append(tuple(self.pre) + (S.Assign(result, value, span=span),))
            self.pre = saved
        self.pre.append(S.If(cond, arms[0], arms[1], span=span))
        return E.Name(result, span=span)

    def vector_branch_value(self, cond, node: ast.IfExp):
        """``a if c else b`` with a vector side that needs statements (an inlined
        call, a bounds check in debug mode): an ``if`` that runs only the chosen
        side, as Python does, into one temporary per component."""
        span = self.scope.span(node)
        cond = self.captured(cond, "cond")
        sides = []
        for arm in (node.body, node.orelse):
            saved, self.pre = self.pre, []
            sides.append((self.value(arm), self.pre))
            self.pre = saved
        shape = next(value for value, _ in sides if isinstance(value, Vec))
        names = [self.names.fresh("select") for _ in shape.comps]
        arms = []
        for value, pre in sides:
            saved, self.pre = self.pre, pre
            comps = self.broadcast(value, shape.kind, shape.shape, node).comps
            arms.append(tuple(self.pre) + tuple(S.Assign(name, comp, span=span)
                                                for name, comp in zip(names, comps)))
            self.pre = saved
        self.pre.append(S.If(cond, arms[0], arms[1], span=span))
        return shape.like(E.Name(name, span=span) for name in names)

    def conditional(self, node: ast.expr, guard: E.Expr, negate=False,
                    hold=False) -> tuple:
        """``(guard, value)``: ``node`` lowered to be evaluated only when
        ``guard`` is true (false if ``negate``), and the guard to test instead.

        Plain expressions stay in place (code generators short-circuit). An
        inlined call moves into an ``if`` on the guard, and so does the whole
        value with ``hold`` (a chained comparison's middle operand, which is
        compared twice but may be evaluated once, only when reached): the
        value is then a temporary, and the guard too, held before the ``if``
        so that it is evaluated once.
        """
        mark = len(self.pre)
        value = self.expr(node)
        if len(self.pre) == mark and not (hold and not is_trivial(value)):
            return guard, value
        body = tuple(self.pre[mark:])
        del self.pre[mark:]
        guard = self.captured(guard, "guard")
        result = self.names.fresh("cond")
        span = self.scope.span(node)
        test = E.Not(guard, span=span) if negate else guard
        self.pre.append(S.Assign(result, E.Const(0, span=span), span=span))
        self.pre.append(S.If(test, body + (S.Assign(result, value, span=span),), (),
                             span=span))
        return guard, E.Name(result, span=span)

    def expr_Call(self, node: ast.Call) -> E.Expr:
        results = self.call(node)
        if results is None or len(results) != 1:
            what = "no value" if not results else f"{len(results)} values"
            raise self.scope.unsupported(f"call returning {what} used as a value", node)
        return results[0]

    def expr_Tuple(self, node: ast.Tuple) -> E.Expr:
        raise self.scope.unsupported("tuple value (tuples only unpack in "
                                     "assignments and returns)", node)
