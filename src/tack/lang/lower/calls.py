"""Lowering calls: kernel intrinsics by table, device functions by inlining."""

from __future__ import annotations

import ast

import numpy as np

from ... import elements
from ... import types as T
from ...ir import expressions as E
from ..bindings import Intrinsic
from ..func import Func
from .bounds import ERRORS
from .vectors import Vec, component_index

MATH_UNARY = {
    "sqrt": E.Sqrt, "exp": E.Exp, "log": E.Log, "log2": E.Log2, "log10": E.Log10,
    "sin": E.Sin, "cos": E.Cos, "tan": E.Tan, "asin": E.Asin, "acos": E.Acos,
    "atan": E.Atan, "sinh": E.Sinh, "cosh": E.Cosh, "tanh": E.Tanh,
    "fabs": E.Fabs, "floor": E.Floor, "ceil": E.Ceil, "trunc": E.Trunc, "isnan": E.IsNan,
    "isinf": E.IsInf, "isfinite": E.IsFinite, "expm1": E.Expm1, "log1p": E.Log1p,
    "asinh": E.Asinh, "acosh": E.Acosh, "atanh": E.Atanh, "erf": E.Erf, "erfc": E.Erfc,
    "cbrt": E.Cbrt, "exp2": E.Exp2, "gamma": E.Gamma, "lgamma": E.Lgamma,
    "degrees": E.Degrees, "radians": E.Radians,
}
MATH_BINARY = {"atan2": E.Atan2, "hypot": E.Hypot, "copysign": E.Copysign,
               "pow": E.PowF, "fmod": E.Fmod}
ATOMICS = {"atomic_add": E.AtomicAdd, "atomic_sub": E.AtomicSub,
           "atomic_min": E.AtomicMin, "atomic_max": E.AtomicMax}
STATEMENT_ONLY = {"builtins.print": "print()", "builtins.range": "range()",
                  "tack.ndindex": "tack.ndindex()",
                  "tack.barrier": "tack.barrier() used as a value",
                  "tack.shared": "tack.shared() outside an assignment to a name",
                  "tack.local_array": "tack.local_array() outside an assignment to a name",
                  "tack.shared_like": "tack.shared_like() outside an assignment to a name",
                  "tack.local_array_like": "tack.local_array_like() outside an assignment "
                                           "to a name"}
BLOCK_REDUCTIONS = {"block_sum": E.BlockSum, "block_min": E.BlockMin,
                    "block_max": E.BlockMax}


def _spelled(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_spelled(node.value)}.{node.attr}"
    return type(node).__name__


class CallLowering:
    """Mixin of the Lowerer: ``call`` returns a list of result expressions."""

    def call(self, node: ast.Call):
        target = self.scope.bindings.resolve(node.func)
        if node.keywords and not (isinstance(target, Intrinsic)
                                  and target.name[5:] in elements.CONSTRUCTORS):
            raise self.scope.unsupported("keyword argument", node.keywords[0].value)
        if isinstance(target, Func):
            return self.inline(target, node)
        if isinstance(target, Intrinsic):
            handler = self.intrinsic_handler(target.name)
            if handler is not None:
                return [handler(node)]
            if target.name in STATEMENT_ONLY:
                raise self.scope.unsupported(
                    f"{STATEMENT_ONLY[target.name]} here", node)
        unbound = self.unbound_root(node.func)
        if unbound is not None:
            raise self.scope.error(NameError, f"name '{unbound.id}' is not defined",
                                   unbound)
        param = self.called_parameter(node.func)
        if param is not None:
            raise self.scope.error(
                TypeError, f"'{_spelled(node.func)}()' calls a method of parameter "
                f"'{param}', but the argument is an array or a number; methods are "
                f"called on device-class objects (such as a tack.Texture3D)", node)
        raise self.scope.unsupported(
            f"call to '{_spelled(node.func)}' (not a statically bound @tack.func or "
            f"a supported kernel intrinsic{_tack_type_for(target)})", node,
            _call_hint(_spelled(node.func)))

    def called_parameter(self, callee: ast.expr):
        """The kernel's parameter ``callee`` is a method of (``t.sample``), else
        None. A device-class argument's methods were bound before lowering, so
        this parameter's argument is an array or a number."""
        scope = self.scope
        if not (isinstance(callee, ast.Attribute) and isinstance(callee.value, ast.Name)
                and scope.caller is None):
            return None
        name = callee.value.id
        return name if name in {a.arg for a in scope.tree.args.args} else None

    def unbound_root(self, callee: ast.expr):
        """The name ``callee`` starts from when nothing binds it, else None."""
        root = callee
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and self.scope.bindings.is_unbound(root.id):
            return root
        return None

    def intrinsic_handler(self, name: str):
        module, _, short = name.partition(".")
        if module == "math":
            if short in MATH_UNARY:
                return lambda node: self.unary(MATH_UNARY[short], node, name)
            if short in MATH_BINARY:
                return lambda node: self.binary(MATH_BINARY[short], node, name)
        if module == "builtins":
            return getattr(self, f"builtin_{short}", None)
        if module == "tack":
            if short in elements.CONSTRUCTORS:
                kind, shape = elements.CONSTRUCTORS[short]._tack_element
                return lambda node: self.construct(kind, shape, node)
            if short in elements.FUNCTIONS:
                return getattr(self, f"intrinsic_{short}")
            if short in BLOCK_REDUCTIONS:
                return lambda node: self.unary(BLOCK_REDUCTIONS[short], node, name)
            if short == "thread_id":
                return self.thread_id
            if short in ATOMICS:
                return lambda node: self.atomic(ATOMICS[short], node)
            if short in {t.name for t in T.SCALAR_TYPES}:
                to = T.scalar_type(short)
                return lambda node: self.unary(
                    lambda v, span: E.Cast(v, to, span=span), node, name)
        return None

    def arity(self, node: ast.Call, name: str, low: int, high: int = None):
        count = len(node.args)
        high = low if high is None else high
        if not low <= count <= high:
            wanted = str(low) if low == high else (f"at least {low}" if high > 99
                                                   else f"{low} to {high}")
            raise self.scope.error(TypeError, f"{name.split('.')[-1]}() takes "
                                   f"{wanted} argument(s), got {count}", node)

    def unary(self, kind, node, name):
        """``kind`` of the one argument; per component for a vector or matrix."""
        self.arity(node, name, 1)
        return self.map_unary(kind, self.value(node.args[0]), self.scope.span(node))

    def binary(self, kind, node, name):
        self.arity(node, name, 2)
        lhs, rhs = self.ordered(node.args)
        return kind(lhs, rhs, span=self.scope.span(node))

    def nary(self, kind, node, name):
        self.arity(node, name, 2, 1000)
        values = self.ordered(node.args, vectors=True)
        result = values[0]
        span = self.scope.span(node)
        for value in values[1:]:
            result = self.combine(kind, result, value, span, node)
        return result

    # -- builtins ---------------------------------------------------------------
    def builtin_abs(self, node):
        return self.unary(E.Abs, node, "abs")

    def builtin_min(self, node):
        return self.nary(E.Min, node, "min")

    def builtin_max(self, node):
        return self.nary(E.Max, node, "max")

    def builtin_round(self, node):
        if len(node.args) == 2:
            raise self.scope.unsupported("round() with a number of digits (round(x) "
                                         "rounds to an integer)", node)
        return self.unary(E.Round, node, "round")

    def builtin_int(self, node):
        return self.unary(lambda v, span: E.Cast(v, T.i64, span=span), node, "int")

    def builtin_float(self, node):
        return self.unary(E.FloatCast, node, "float")

    def builtin_bool(self, node):
        return self.unary(lambda v, span: E.Ne(v, E.Const(0, span=span), span=span),
                          node, "bool")

    def builtin_len(self, node):
        self.arity(node, "len", 1)
        arg = node.args[0]
        if isinstance(arg, ast.Name):   # a vector's components, a matrix's rows (NumPy's len)
            local = self.vector_locals.get(self.scope.rename.get(arg.id, arg.id))
            if local is not None:
                return E.Const(local.shape[0], dtype=T.i64, span=self.scope.span(node))
        return self.extent(self.array_name(arg), 0, self.scope.span(node))

    def thread_id(self, node):
        if node.args:
            raise self.scope.unsupported("tack.thread_id() with arguments", node)
        return E.ThreadId(span=self.scope.span(node))

    def atomic(self, kind, node):
        """An atomic on one element; on a vector or matrix array, a vector value
        updates each component (one atomic each) and a scalar value updates the
        component at a flat index into the scalar storage."""
        self.arity(node, _spelled(node.func), 3)
        array = self.array_name(node.args[0])
        index = node.args[1]
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        values = self.ordered(parts + [node.args[2]], vectors=True)
        span = self.scope.span(node)
        element = self.elements.get(array)
        value = values[-1]
        if element is not None and not isinstance(value, Vec):
            return self.component_atomic(kind, array, element, values[:-1], value, node)
        if isinstance(value, Vec) and element is None:
            raise self.scope.error(TypeError, f"atomic update of the scalar array "
                                   f"'{node.args[0].id}' with a {value.describe()}", node)
        flat = self.access_index(array, values[:-1], node)
        if element is None:
            return kind(array, flat, value, self.debug, span=span)
        value = self.broadcast(value, element.kind, element.shape, node)
        flat = self.captured(flat, "index")
        return value.like(kind(array, component_index(flat, element.count, k, span), c,
                               self.debug, span=span)
                          for k, c in enumerate(value.comps))

    def component_atomic(self, kind, array, element, indices, value, node):
        if len(indices) != 1:
            raise self.scope.error(TypeError, "a scalar atomic on a vector or matrix array "
                                   "takes one flat index into its components", node)
        span = self.scope.span(node)
        if not self.debug:
            return kind(array, indices[0], value, span=span)
        count = E.Mul(self.extent(array, 0, span), E.Const(element.count, span=span),
                      span=span)
        for d in range(1, self.array_ndims[array]):
            count = E.Mul(count, self.extent(array, d, span), span=span)
        site = self.record_site(node, 1)
        flat = E.BoundsCheck(site, ERRORS, (indices[0],), (count,), span=span)
        return kind(array, flat, value, True, span=span)


def _tack_type_for(target) -> str:
    """For a NumPy scalar type called in a kernel, the Tack type to call instead."""
    if not (isinstance(target, type) and issubclass(target, np.generic)):
        return ""
    try:
        return f"; for a conversion, call tack.{T.from_numpy(np.dtype(target)).name}()"
    except TypeError:
        return ""


def _call_hint(spelled: str):
    """What to call instead of a function users of NumPy and Warp reach for."""
    head, _, name = spelled.rpartition(".")
    if head in ("np", "numpy"):
        return (f"NumPy's functions do not run in kernels; the math module's do "
                f"(math.{name}(x) where it has one), and so do abs, min, max and round")
    if name == "tid":
        return ("a kernel's parallel loop gives each iteration its index: "
                "for i in range(n):")
    return None
