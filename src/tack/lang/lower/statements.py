"""Lowering statements inside a kernel or device function body."""

from __future__ import annotations

import ast
import copy

from ... import types as T
from ...ir import expressions as E
from ...ir import statements as S
from ..names import stores_to
from .expressions import BINARY
from .vectors import Vec


def _is_range(call, bindings, name="builtins.range") -> bool:
    if not isinstance(call, ast.Call):
        return False
    target = bindings.resolve(call.func)
    return getattr(target, "name", None) == name


class StatementLowering:
    """Mixin of the Lowerer: ``block`` lowers a list of statements."""

    def block(self, stmts) -> tuple:
        out = []
        for stmt in stmts:
            out.extend(self.statement(stmt))
        return tuple(out)

    def statement(self, node: ast.stmt) -> list:
        saved, self.pre = self.pre, []
        try:
            handler = getattr(self, "stmt_" + type(node).__name__, None)
            if handler is None:
                raise self.scope.unsupported(type(node).__name__, node)
            lowered = handler(node)
            return self.pre + lowered
        finally:
            self.pre = saved

    def stmt_Pass(self, node):
        return []

    # -- assignment -------------------------------------------------------------
    def stmt_Assign(self, node: ast.Assign):
        if len(node.targets) == 1:
            return self.assign(node.targets[0], node.value, node)
        value = self.captured(self.expr(node.value), "value")
        out = []
        for target in node.targets:
            out.extend(self.assign_value(target, value, node))
        return out

    def assign(self, target, value_node, node):
        allocation = self.allocation_kind(value_node)
        if allocation:
            return self.allocate(target, value_node, allocation, node)
        if isinstance(target, ast.Tuple):
            return self.unpack(target, value_node, node)
        return self.assign_value(target, self.value(value_node), node)

    def allocation_kind(self, value_node):
        if not isinstance(value_node, ast.Call):
            return None
        target = self.scope.bindings.resolve(value_node.func)
        return {"tack.shared": "shared", "tack.local_array": "local",
                "tack.shared_like": "shared", "tack.local_array_like": "local"}.get(
            getattr(target, "name", None))

    def allocate(self, target, call: ast.Call, space: str, node):
        """``name = tack.shared(n, dtype)`` / ``tack.local_array(n, dtype)``, or
        ``tack.shared_like(array, n)`` / ``tack.local_array_like(array, n)``."""
        scope = self.scope
        spelled = "tack.shared" if space == "shared" else "tack.local_array"
        like = getattr(scope.bindings.resolve(call.func), "name", "").endswith("_like")
        if like:
            return self.allocate_like(target, call, space, spelled + "_like", node)
        if not isinstance(target, ast.Name):
            raise scope.unsupported(f"{spelled}() assigned to something other than a "
                                    f"name", node)
        if len(call.args) != 2 or call.keywords:
            raise scope.error(TypeError, f"{spelled}() takes a size and a dtype", call)
        size, dtype_node = call.args
        if not (isinstance(size, ast.Constant) and type(size.value) is int
                and size.value > 0):
            raise scope.unsupported(f"{spelled}() size that is not a positive integer "
                                    f"literal", size)
        dtype = scope.bindings.resolve(dtype_node)
        if not isinstance(dtype, T.ScalarType):
            from ..bindings import Intrinsic
            name = dtype.name.split(".")[-1] if isinstance(dtype, Intrinsic) else ""
            if name not in {t.name for t in T.SCALAR_TYPES}:
                raise scope.unsupported(f"{spelled}() dtype that is not a tack scalar "
                                        f"type", dtype_node)
            dtype = T.scalar_type(name)
        name = self.allocation_name(target, size.value, node)
        return [S.Allocate(name, size.value, dtype, space, span=scope.span(node))]

    def allocation_name(self, target: ast.Name, size: int, node) -> str:
        """Register an allocated array (once per name) and return its IR name."""
        scope = self.scope
        name = scope.rename.get(target.id, target.id)
        if name in self.allocation_sizes:
            raise scope.unsupported(f"second allocation of '{target.id}' (allocate each "
                                    f"array once)", node)
        scope.arrays[target.id] = name
        self.allocation_sizes[name] = size
        return name

    def allocate_like(self, target, call, space, spelled, node):
        scope = self.scope
        if not isinstance(target, ast.Name):
            raise scope.unsupported(f"{spelled}() assigned to something other than a "
                                    f"name", node)
        if len(call.args) != 2 or call.keywords:
            raise scope.error(TypeError, f"{spelled}() takes an array and a size", call)
        like = self.array_name(call.args[0])
        element = self.elements.get(like)
        if element is not None:   # local and shared arrays hold scalars
            raise scope.unsupported(
                f"{spelled}() of an array of {element} elements (local and shared arrays "
                f"hold scalars: {spelled.removesuffix('_like')}(n * {element.count}, "
                f"tack.{T.scalar_of(element)}) holds the components of n)", call)
        size = call.args[1]
        if not (isinstance(size, ast.Constant) and type(size.value) is int
                and size.value > 0):
            raise scope.unsupported(f"{spelled}() size that is not a positive integer "
                                    f"literal", size)
        name = self.allocation_name(target, size.value, node)
        return [S.Allocate(name, size.value, None, space, like, span=scope.span(node))]

    def unpack(self, target: ast.Tuple, value_node, node):
        if isinstance(value_node, ast.Tuple):
            if len(value_node.elts) != len(target.elts):
                raise self.scope.unsupported("unpacking of a tuple of another length",
                                             node)
            # Every value is read before any target is bound: ``x, y = y, x``,
            # also for vectors and matrices (``p[i], q[i] = q[i], p[i]``).
            values = [v.like(self.held(c) for c in v.comps) if isinstance(v, Vec)
                      else self.held(v)
                      for v in self.ordered(value_node.elts, vectors=True)]
        elif isinstance(value_node, ast.Call):
            values = self.call(value_node)
            if not values or len(values) != len(target.elts):
                raise self.scope.unsupported(
                    f"unpacking of {len(values or ())} values into "
                    f"{len(target.elts)} names", node)
        elif (isinstance(value_node, ast.Attribute) and value_node.attr == "shape"
              and isinstance(value_node.value, ast.Name)
              and value_node.value.id in self.scope.arrays):
            values = self.unpacked_shape(value_node, len(target.elts))
        else:
            raise self.scope.unsupported("unpacking of a value that is not a tuple",
                                         node)
        out = []
        for elt, value in zip(target.elts, values):
            out.extend(self.assign_value(elt, value, node))
        return out

    def unpacked_shape(self, shape: ast.Attribute, count: int) -> list:
        """``n, m = a.shape``: each extent, the array's rank being ``count`` (a
        scalar array's rank is recorded from it; an array of vectors has its
        own, checked here)."""
        array = self.array_name(shape.value)
        element = self.elements.get(array)
        if element is not None and count != self.array_ndims[array]:
            ndim = self.array_ndims[array]
            raise self.scope.error(TypeError, f"unpacking {array}.shape, of an array with "
                                   f"{ndim} dimension(s) (of {element} elements), into "
                                   f"{count} names", shape)
        return [self.extent(array, k, self.scope.span(shape)) for k in range(count)]

    def held(self, value: E.Expr) -> E.Expr:
        """``value`` read now, into a temporary unless it is a constant."""
        if isinstance(value, E.Name):
            return self.snapshot(value)
        return self.captured(value, "value")

    def snapshot(self, name: E.Name) -> E.Name:
        copy, assign = self.capture(name, "value")
        self.pre.append(assign)
        return copy

    def assign_value(self, target, value: E.Expr, node):
        scope = self.scope
        span = scope.span(node)
        if isinstance(target, ast.Name):
            if target.id in scope.arrays:
                raise scope.unsupported(f"assignment to array '{target.id}'", node)
            if isinstance(value, E.Name) and value.id in self.array_params:
                raise scope.unsupported("assignment of an array to a name", node)
            name = scope.rename.get(target.id, target.id)
            return self.assign_local(name, value, node)
        if isinstance(target, ast.Attribute):
            return self.assign_component(target, value, node)
        if isinstance(target, ast.Subscript):
            if isinstance(target.value, ast.Attribute):
                raise scope.unsupported("assignment to an array's shape", node)
            if not (isinstance(target.value, ast.Name) and target.value.id in scope.arrays):
                return self.assign_component(target, value, node)
            array = self.array_name(target.value)
            mark = len(self.pre)
            index = self.flat_index(array, target.slice, target)
            if len(self.pre) > mark:  # Python reads the value before the index's calls
                assigns = []
                value = self.capture_into(value, assigns)
                self.pre[mark:mark] = assigns
            if array in self.elements:
                return self.store_element(array, index, value, node)
            if isinstance(value, Vec):
                raise self.vector_into_scalars(value, target.value.id, node)
            return [S.Store(array, index, value, self.debug, span=span)]
        if isinstance(target, ast.Tuple):
            raise scope.unsupported("nested tuple unpacking", node)
        raise scope.unsupported(f"assignment to {type(target).__name__}", node)

    def vector_into_scalars(self, value, array: str, node) -> TypeError:
        """The error of a vector or matrix stored into a scalar array's element,
        with a hint: an (n, 3) array made without its element type is n x 3
        scalars."""
        exc = self.scope.error(TypeError, f"a {value.describe()} stored into an element "
                                          f"of the scalar array '{array}'", node)
        exc.add_note("hint: an array of vectors or matrices is made with its element "
                     "type: tack.zeros(n, tack.vec3()), tack.array(x, dtype=tack.vec3())")
        return exc

    def stmt_AugAssign(self, node: ast.AugAssign):
        kind = BINARY.get(type(node.op))
        if kind is None:
            raise self.scope.unsupported(type(node.op).__name__, node)
        span = self.scope.span(node)
        target = node.target
        if isinstance(target, ast.Name):
            current = self.value(ast.copy_location(ast.Name(target.id, ast.Load()),
                                                   target))
            value = self.value(node.value)
            return self.assign_value(target, self.combine(kind, current, value, span, node),
                                     node)
        if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name)
                and target.value.id in self.scope.arrays):
            array = self.array_name(target.value)
            index = self.captured(self.flat_index(array, target.slice, target), "index")
            mark = len(self.pre)
            value = self.value(node.value)
            if array in self.elements:
                current = self.load_element(array, index, span)
            else:
                current = E.Load(array, index, self.debug, span=span)
            if len(self.pre) > mark:  # read the element before an inlined call runs
                assigns = []
                current = self.capture_into(current, assigns)
                self.pre[mark:mark] = assigns
            result = self.combine(kind, current, value, span, node)
            if array in self.elements:
                return self.store_element(array, index, result, node)
            if isinstance(result, Vec):
                raise self.vector_into_scalars(result, target.value.id, node)
            return [S.Store(array, index, result, self.debug, span=span)]
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            load = copy.copy(target)
            load.ctx = ast.Load()
            current = self.value(load)
            value = self.value(node.value)
            return self.assign_value(target, self.combine(kind, current, value, span, node),
                                     node)
        raise self.scope.unsupported(f"augmented assignment to "
                                     f"{type(target).__name__}", node)

    # -- calls as statements -------------------------------------------------------
    def stmt_Expr(self, node: ast.Expr):
        value = node.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return []  # a docstring
        target = self.scope.bindings.resolve(value.func)
        name = getattr(target, "name", None)
        if name in ("builtins.print", "tack.barrier") and value.keywords:
            # call() refuses keywords; these two statements do not go through it
            raise self.scope.unsupported("keyword argument", value.keywords[0].value)
        if name == "builtins.print":
            return [self.print_statement(value)]
        if name == "tack.barrier":
            if value.args:
                raise self.scope.unsupported("tack.barrier() with arguments", value)
            return [S.Barrier(span=self.scope.span(node))]
        results = self.call(value)
        if not results or len(results) != 1:
            return []
        parts = results[0].comps if isinstance(results[0], Vec) else results
        return [S.ExprStmt(p, span=self.scope.span(node)) for p in parts
                if not isinstance(p, E.Name)]

    def print_statement(self, call: ast.Call):
        args = []
        parts = [a for a in call.args
                 if not (isinstance(a, ast.Constant) and isinstance(a.value, str))]
        values = iter(self.ordered(parts))
        for arg in call.args:
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                args.append(E.Str(arg.value, span=self.scope.span(arg)))
            else:
                args.append(next(values))
        return S.Print(tuple(args), span=self.scope.span(call))

    # -- control flow ----------------------------------------------------------------
    def stmt_If(self, node: ast.If):
        cond = self.expr(node.test)
        return [S.If(cond, self.block(node.body), self.block(node.orelse),
                     span=self.scope.span(node))]

    def stmt_While(self, node: ast.While):
        span = self.scope.span(node)
        cond = self.expr(node.test)
        self.scope.loops.append("while")
        try:
            body = self.block(node.body)
        finally:
            self.scope.loops.pop()
        if not self.pre:
            return [S.While(cond, body, span=span)]
        # The condition inlined a call: re-evaluate it at the top of each trip.
        head = tuple(self.pre)
        self.pre = []
        exit_ = S.If(E.Not(cond, span=span), (S.Break(span=span),), (), span=span)
        return [S.While(E.Const(1, span=span), head + (exit_,) + body, span=span)]

    def stmt_For(self, node: ast.For):
        scope = self.scope
        if _is_range(node.iter, scope.bindings, "tack.ndindex"):
            raise scope.unsupported("tack.ndindex() outside the kernel's parallel "
                                    "loop", node)
        if not _is_range(node.iter, scope.bindings):
            raise scope.unsupported("iteration over something other than range()",
                                    node.iter)
        if not isinstance(node.target, ast.Name):
            raise scope.unsupported("loop target that is not a name", node.target)
        self.arity(node.iter, "range", 1, 3)
        args = self.ordered(node.iter.args)
        span = scope.span(node)
        if len(args) == 1:
            args = [E.Const(0, span=span)] + args
        if len(args) == 2:
            args.append(E.Const(1, span=span))
        start, stop, step = (self.captured(a, "range") for a in args)
        var = scope.rename.get(node.target.id, node.target.id)
        starts = ()
        if stores_to(node.body, node.target.id):
            # the body rebinds the variable: the loop counts in a hidden one,
            # copied into it as each iteration starts, as Python's range goes on
            counter = self.names.fresh(f"{node.target.id}_idx")
            starts = (S.Assign(var, E.Name(counter, span=span), span=span),)
            var = counter
        scope.loops.append("seq")
        try:
            body = starts + self.block(node.body)
        finally:
            scope.loops.pop()
        return [S.SeqFor(var, start, stop, step, body, span=span)]

    def stmt_Break(self, node):
        return [S.Break(span=self.scope.span(node))]

    def stmt_Continue(self, node):
        outermost = self.scope.loops[-1] == "parallel"
        return [S.Continue(outermost, span=self.scope.span(node))]

    def stmt_Return(self, node: ast.Return):
        scope = self.scope
        slots = scope.results or ()
        if node.value is None:
            if slots:
                raise scope.unsupported("return without a value in a function that "
                                        "returns one", node)
            return []
        nodes = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
        values = self.ordered(nodes, vectors=True)
        out = []
        for slot, value in zip(slots, values):
            out.extend(self.assign_local(slot, value, node))
        return out
