"""Lowering a whole kernel: the parallel loop, the statements before it, the result.

``lower_kernel`` turns a kernel's validated source into a :class:`Lowered`
pair of IR functions: the kernel itself and, for a kernel that ends in an
annotated ``return``, a one-iteration epilogue kernel that stores the value
in a hidden one-element array (``__tack_result__``).
"""

from __future__ import annotations

import ast
import copy

from ... import elements
from ... import types as T
from ...ir import expressions as E
from ...ir import statements as S
from ...ir.passes.common import EPILOGUE_SUFFIX
from ...ir.traversal import rewrite, walk
from ..bindings import Intrinsic
from ..names import NameAllocator, names_in, stores_to
from ..validate import find_parallel_loop, is_none_annotation, validate_source
from .arrays import array_uses, ndim_of
from .bounds import ERRORS, EXTENTS, SLOTS, BoundsLowering
from .calls import CallLowering
from .expressions import ExpressionLowering
from .inline import InlineLowering
from .lowered import Lowered
from .scope import Scope
from .statements import StatementLowering, _is_range
from .vectors import Vec, VectorLocal, VectorLowering

RESULT_PARAM = "__tack_result__"
_HOST_NODES = (E.Const, E.Name, E.DimSize, E.Add, E.Sub, E.Mul, E.FloorDiv,
               E.Min, E.Max, E.Neg, E.Cast)
_RESULT_TYPES = {"builtins.int": T.i64, "builtins.float": T.f64,
                 "builtins.bool": T.i32}


class Lowerer(ExpressionLowering, StatementLowering, CallLowering, InlineLowering,
              BoundsLowering, VectorLowering):
    def __init__(self, source, fn, debug=False, elements=None, extra=None):
        self.source = source
        self.fn = fn
        self.extra = extra or {}      # rewritten device-class methods, by name
        self.debug = debug
        # Vector and matrix array parameters: name -> (array ndim, element type).
        self.element_params = dict(elements or {})
        self.elements: dict = {}       # IR array name -> element type
        self.array_ndims: dict = {}    # IR array name -> array ndim (no components)
        self.vector_locals: dict = {}
        self.value_params: set = set()    # vector and matrix values passed in
        self.scalar_locals: set = set()
        self.sites: list = []
        self.extent_slots: dict = {}
        self.allocation_sizes: dict = {}   # IR name of a shared/local array -> size
        self.names = NameAllocator(names_in(source.tree))
        self.pre: list = []
        self.active: set = set()
        self.scope: Scope = None
        self.array_params: set = set()
        self.loop_sources: dict = {}   # IR name of a parallel loop variable -> source

    # -- entry --------------------------------------------------------------------
    def lower(self) -> Lowered:
        tree, returned = validate_kernel(self.source)
        scope = Scope.for_function(self.source, tree, self.fn, extra=self.extra)
        self.scope = scope
        # arrays the return alone uses are arrays too
        uses = array_uses(self.source, self.source.tree, scope.bindings)
        params = tuple(p for a in tree.args.args for p in self.param(a, uses))
        self.array_params = {p.name for p in params if p.is_array}
        self.scalar_params = {p.name for p in params if not p.is_array}
        scope.arrays = {name: name for name in self.array_params}
        if self.debug:
            params = self.hidden_params(params)
        preamble, loop_node = self.split_body(tree)
        if returned is not None:
            _check_loop_copies(scope, tree, preamble, loop_node, returned)
        pre_ir = self.rebound_params(preamble, tree) + self.block(preamble)
        scope.check_outside_loop(pre_ir)
        loop = self.parallel_loop(loop_node, pre_ir)
        scope.check_preamble_reads(pre_ir, loop)
        kernel = S.Function(self.source.name, params, pre_ir + (loop,),
                            span=self.source.span(tree))
        if returned is None:
            if tree.returns is not None and not is_none_annotation(tree.returns):
                self.result_type(tree.returns)   # checked, though nothing is returned
            return Lowered(kernel, None, None, None, tuple(self.sites))
        return self.epilogue(tree, returned, kernel, pre_ir)

    def rebound_params(self, preamble, tree) -> tuple:
        """A scalar parameter that the statements before the loop assign is a
        local of its own from the start, copied from the argument, so that its
        type is the join of everything assigned to it (``n = tack.i64(n) * 4``
        must not wrap back to the argument's i32). Inside the loop, localize
        does the same for parameters assigned there."""
        out = []
        for name in [a.arg for a in tree.args.args]:
            if name in self.scalar_params and stores_to(preamble, name):
                local = self.scope.rename[name] = self.names.fresh(name)
                out += self.assign_local(local, E.Name(name, span=self.source.span(tree)),
                                         tree)
        return tuple(out)

    def loop_variable(self, name: str) -> str:
        """The IR name of a parallel loop variable. Where the name already holds
        a scalar parameter or a local of the statements before the loop, the
        loop's variable is a new one (the loop's bounds read the old value;
        Python rebinds the name only when the loop starts)."""
        ir_name = self.scope.rename.get(name, name)
        if (ir_name in self.scalar_params or ir_name in self.scalar_locals
                or ir_name in self.vector_locals):
            ir_name = self.scope.rename[name] = self.names.fresh(name)
        self.loop_sources[ir_name] = name
        return ir_name

    def counted(self, vars_, prefix, node: ast.For, span) -> tuple:
        """``(vars_, prefix)`` where the body assigns a loop variable: the loop
        counts in a hidden variable, copied into it as each iteration starts
        (Python's next iteration takes the next value whatever the body did)."""
        out, starts = [], []
        for var in vars_:
            source = self.loop_sources.get(var)
            if source is not None and stores_to(node.body, source):
                counter = self.names.fresh(f"{source}_idx")
                starts.append(S.Assign(var, E.Name(counter, span=span), span=span))
                var = counter
            out.append(var)
        return tuple(out), tuple(starts) + tuple(prefix)

    def hidden_params(self, params) -> tuple:
        """Debug mode: slots in the extents array, and the two hidden arrays."""
        arrays = [p.name for p in params if p.is_array]
        self.extent_slots = {name: k * SLOTS for k, name in enumerate(arrays)}
        span = self.source.span(self.source.tree)
        return params + (S.Param(ERRORS, is_array=True, ndim=1, span=span),
                         S.Param(EXTENTS, is_array=True, ndim=1, span=span))

    def param(self, arg: ast.arg, uses) -> tuple:
        """The IR parameters of one argument: an array or a scalar, or a
        vector or matrix value's components (a vector local's, typed)."""
        span = self.source.span(arg)
        name = arg.arg
        if name in self.element_params:
            ndim, element = self.element_params[name]
            if ndim == "value":
                return self.value_param(name, element, arg)
            self.elements[name] = element   # accesses check their index count
            self.array_ndims[name] = ndim
            return (S.Param(name, is_array=True, ndim=ndim + len(element.shape),
                            span=span),)
        if name in uses:
            return (S.Param(name, is_array=True, ndim=ndim_of(uses, name), span=span),)
        return (S.Param(name, span=span),)

    def value_param(self, name: str, element, arg: ast.arg) -> tuple:
        names = tuple(self.names.fresh(f"{name}_{k}") for k in range(element.count))
        self.vector_locals[name] = VectorLocal(element.kind, element.shape, names)
        self.value_params.add(name)
        span = self.source.span(arg)
        return tuple(S.Param(n, dtype=element.scalar, is_array=False, span=span)
                     for n in names)

    def split_body(self, tree):
        loop = find_parallel_loop(tree)
        if loop is None:
            raise self.scope.unsupported(
                "kernel without a parallel loop (write one `for ... in range(...)` "
                "directly in the kernel body)", tree)
        k = tree.body.index(loop)
        for stmt in tree.body[k + 1:]:
            if isinstance(stmt, ast.For):
                raise self.scope.unsupported("second parallel loop (a kernel has one: "
                                             "write a kernel for each, called in turn)",
                                             stmt)
            raise self.scope.unsupported("statement after the parallel loop", stmt)
        return tree.body[:k], loop

    # -- the parallel loop ------------------------------------------------------------
    def parallel_loop(self, node: ast.For, pre_ir) -> S.ParallelFor:
        scope = self.scope
        span = scope.span(node)
        at_loop = _values_at_loop(pre_ir)
        if _is_range(node.iter, scope.bindings, "tack.ndindex"):
            vars_, extents, prefix = self.ndindex_space(node, at_loop)
        elif _is_range(node.iter, scope.bindings):
            vars_, extents, prefix = self.range_space(node, at_loop)
        else:
            raise scope.unsupported("parallel loop over something other than range() "
                                    "or tack.ndindex()", node.iter)
        vars_, prefix = self.counted(vars_, prefix, node, span)
        extents = tuple(self.host_extent(e, at_loop, node) for e in extents)
        scope.loops.append("parallel")
        try:
            body = prefix + self.block(node.body)
        finally:
            scope.loops.pop()
        return S.ParallelFor(vars_, extents, body, span=span)

    def range_space(self, node: ast.For, at_loop):
        scope = self.scope
        if not isinstance(node.target, ast.Name):
            raise scope.unsupported("parallel loop target that is not a name "
                                    "(use tack.ndindex for several)", node.target)
        self.arity(node.iter, "range", 1, 3)
        args = node.iter.args
        saved, self.pre = self.pre, []
        self.host_context = True
        try:
            values = self.ordered(args)
        finally:
            self.host_context = False
        if self.pre:
            raise scope.unsupported("device function call in the parallel loop's "
                                    "range", node.iter)
        self.pre = saved
        span = scope.span(node)
        var = self.loop_variable(node.target.id)
        if len(values) == 1:
            return (var,), (values[0],), ()
        # The start is counted from (on the host) and added to every index (in
        # the kernel): see shared_bound.
        host_start, start = self.shared_bound(values[0], at_loop, node)
        stop = values[1]
        step = values[2] if len(values) == 3 else E.Const(1, span=span)
        if not (isinstance(step, E.Const) and type(step.value) is int):
            raise scope.unsupported("parallel loop step that is not an integer "
                                    "literal", node.iter)
        idx = self.names.fresh("step_idx")
        s = step.value
        c = lambda v: E.Const(v, span=span)  # noqa: E731
        if s > 0:
            count = E.FloorDiv(E.Add(E.Sub(stop, host_start, span=span), c(s - 1),
                                     span=span), c(s), span=span)
        else:
            count = E.FloorDiv(E.Add(E.Sub(host_start, stop, span=span), c(-s - 1),
                                     span=span), c(-s), span=span)
        position = E.Add(start, E.Mul(E.Name(idx, span=span), step, span=span),
                         span=span)
        return (idx,), (count,), (S.Assign(var, position, span=span),)

    def ndindex_space(self, node: ast.For, at_loop):
        scope = self.scope
        args = node.iter.args
        targets = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
        if not all(isinstance(t, ast.Name) for t in targets):
            raise scope.unsupported("loop target that is not a name", node.target)
        if len(targets) != len(args) or not args:
            raise scope.unsupported(f"tack.ndindex() with {len(args)} extents unpacked "
                                    f"into {len(targets)} names", node)
        saved, self.pre = self.pre, []
        self.host_context = True
        try:
            extents = self.ordered(args)
        finally:
            self.host_context = False
        if self.pre:
            raise scope.unsupported("device function call in tack.ndindex()", node.iter)
        self.pre = saved
        names = tuple(self.loop_variable(t.id) for t in targets)
        if len(args) <= 3:
            return names, tuple(extents), ()
        # the leading extents are counted (on the host) and divided by (in the
        # kernel): see shared_bound
        shared = [self.shared_bound(e, at_loop, node) for e in extents[:-2]]
        return self.flattened_space(names, [h for h, _ in shared], [k for _, k in shared],
                                    tuple(extents[-2:]), scope.span(node))

    def flattened_space(self, names, host_leading, leading_extents, last_two, span):
        """Four or more dimensions: the leading ones become one loop over the
        product of their extents, each index recovered with ``//`` and ``%``;
        the last two stay loops of their own, so the innermost one vectorizes
        and the divisions run once per row, not per element. An extent below
        zero counts as zero, as in Python (two negative ones must not multiply
        to a positive count)."""
        idx = self.names.fresh("flat_idx")
        leading = names[:-2]
        zero = E.Const(0, span=span)
        total = E.Max(host_leading[0], zero, span=span)
        for e in host_leading[1:]:
            total = E.Mul(total, E.Max(e, zero, span=span), span=span)
        prefix = []
        rest = E.Name(idx, span=span)
        for name, extent in zip(reversed(leading[1:]), reversed(leading_extents[1:])):
            prefix.append(S.Assign(name, E.Mod(rest, extent, span=span), span=span))
            quotient = self.names.fresh("flat_rest")
            prefix.append(S.Assign(quotient, E.FloorDiv(rest, extent, span=span),
                                   span=span))
            rest = E.Name(quotient, span=span)
        prefix.append(S.Assign(leading[0], rest, span=span))
        return (idx,) + tuple(names[-2:]), (total,) + last_two, tuple(prefix)

    def at_loop_value(self, expr, at_loop, node) -> E.Expr:
        """``expr`` over the values the names hold when the loop starts, written
        in the parameters (``at_loop``: see ``_values_at_loop``)."""
        try:
            return _substitute(expr, *at_loop)
        except _Unknown as unknown:
            raise self.scope.unsupported(
                f"parallel loop range that uses '{unknown.args[0]}', whose value when "
                "the loop starts depends on a branch taken before it (an if, also one "
                "inside a device function)", node.iter) from None

    def shared_bound(self, expr, at_loop, node) -> tuple:
        """``(host, kernel)`` forms of a bound that the kernel uses as well as the
        host (a range's start, the leading extents of a flattened ndindex).

        The kernel computes it with every name and every conversion's result
        converted to i64, so all its arithmetic is in i64 (in the kernel's own
        types an i32 product or a weak literal would wrap where the host does
        not). The host computes it
        with Python's integers and requires the result, and every operand of a
        ``//``, ``min`` or ``max``, to lie in i64's range (``host_eval``: an i64
        conversion there is a check). Then the two agree: ``+ - *`` agree
        modulo 2**64, so on a result in range they agree exactly, and the
        other operations see equal operands."""
        value = self.at_loop_value(expr, at_loop, node)
        if isinstance(value, E.Const) and type(value.value) is int:
            if not -2**63 <= value.value < 2**63:
                raise self.scope.error(ValueError, f"the parallel loop's range uses "
                                       f"{value.value}, outside the i64 range", node.iter)
            return value, value

        def to_i64(e):
            return E.Cast(e, T.i64, span=e.span)

        def kernel(e):   # a name, or a conversion written in the bound (tack.u8(n))
            return to_i64(e) if isinstance(e, (E.Name, E.Cast)) else e

        def host(e):
            if isinstance(e, (E.FloorDiv, E.Min, E.Max)):
                return e.replace(lhs=to_i64(e.lhs), rhs=to_i64(e.rhs))
            return e
        return to_i64(rewrite(value, host)), rewrite(value, kernel)

    def host_extent(self, expr, at_loop, node) -> E.Expr:
        """The loop extent over parameters only, for evaluation on the host."""
        expr = self.host_extents(self.at_loop_value(expr, at_loop, node))
        for sub in walk(expr):
            if not isinstance(sub, _HOST_NODES) or (
                    isinstance(sub, E.Name) and sub.id not in self.scalar_params) or (
                    isinstance(sub, E.Cast) and not sub.to.is_int):
                raise self.scope.unsupported(
                    "parallel loop range that is not computed from constants, scalar "
                    "parameters and array extents with + - * // min max and integer "
                    "conversions", node.iter)
            if isinstance(sub, E.Const) and isinstance(sub.value, float):
                raise self.scope.error(
                    TypeError, f"the parallel loop's range uses the float {sub.value!r}; "
                    "ranges take integers", node.iter)
        return expr

    def host_extents(self, expr) -> E.Expr:
        """``expr`` with debug mode's reads of the hidden extents array (what
        ``len``/``.shape`` become in the kernel, see ``bounds.py``) turned back
        into the extents they read, which the host knows."""
        slots = {base + dim: (array, dim) for array, base in self.extent_slots.items()
                 for dim in range(SLOTS)}

        def back(e):
            if (isinstance(e, E.Load) and e.array == EXTENTS and isinstance(e.index, E.Const)
                    and e.index.value in slots):
                array, dim = slots[e.index.value]
                return E.DimSize(array, dim, span=e.span)
            return e
        return rewrite(expr, back) if slots else expr

    # -- the annotated return ---------------------------------------------------------
    def epilogue(self, tree, returned: ast.Return, kernel, pre_ir) -> Lowered:
        if is_none_annotation(tree.returns):
            raise self.scope.unsupported("return of a value from a kernel annotated "
                                         "-> None", returned)
        result_type, kind = self.result_type(tree.returns)
        self.scope.loops.append("parallel")
        saved, self.pre = self.pre, []
        if isinstance(returned.value, ast.Tuple):
            raise self.scope.unsupported(
                "tuple returned from a kernel (a kernel returns one value: return a "
                "vector, such as tack.vec2(a, b) under -> tack.vec2, or store the values "
                "into an array)", returned.value)
        try:
            value = self.value(returned.value)
            # the stores may capture the value first (a scalar that fills a
            # vector): that assignment belongs to the epilogue's statements
            stores = self.result_stores(result_type, value, returned, kind == "bool")
            body = tuple(self.pre)
        finally:
            self.pre = saved
            self.scope.loops.pop()
        rspan = self.source.span(returned)
        parts = value.comps if isinstance(value, Vec) else (value,)
        self.scope.check_returned(body + parts)
        for part in parts:
            _check_returned_names(self.scope, kernel, pre_ir, body, part, returned)
        idx = self.names.fresh("result_idx")
        loop = S.ParallelFor((idx,), (E.Const(1, span=rspan),), body + stores,
                             span=rspan)
        result = S.Param(RESULT_PARAM, is_array=True, ndim=1, span=rspan)
        epilogue = S.Function(self.source.name + EPILOGUE_SUFFIX, kernel.params + (result,),
                              pre_ir + (loop,), span=kernel.span)
        return Lowered(kernel, epilogue, result_type, kind, tuple(self.sites))

    def result_stores(self, result_type, value, node, truth: bool) -> tuple:
        """Stores of the returned value into the hidden result array (``truth``:
        ``-> bool`` stores ``value != 0``, Python's ``bool()``)."""
        span = self.source.span(node)
        scalar = T.scalar_of(result_type)
        if isinstance(result_type, T.CompositeType):
            value = self.broadcast(value, result_type.kind, result_type.shape, node)
        elif isinstance(value, Vec):
            raise self.scope.error(TypeError, f"the kernel returns a {value.describe()} "
                                   f"but its annotation is a scalar type", node)
        parts = value.comps if isinstance(value, Vec) else (value,)
        if truth:
            parts = tuple(E.Ne(part, E.Const(0, span=span), span=span) for part in parts)
        return tuple(S.Store(RESULT_PARAM, E.Const(k, span=span),
                             E.Cast(part, scalar, span=span), span=span)
                     for k, part in enumerate(parts))

    def result_type(self, annotation):
        if isinstance(annotation, ast.Call):  # -> tack.vec3(dtype=tack.f64)
            target = self.scope.bindings.resolve(annotation.func)
            name = target.name[5:] if isinstance(target, Intrinsic) else ""
            if name in elements.CONSTRUCTORS and not annotation.args:
                kind, shape = elements.CONSTRUCTORS[name]._tack_element
                return T.composite(kind, shape, self.constructor_dtype(annotation)), "array"
            raise self.scope.unsupported("return annotation (use int, float, bool, a "
                                         "tack scalar type or a vector type)", annotation)
        target = self.scope.bindings.resolve(annotation)
        name = target.name if isinstance(target, Intrinsic) else None
        if name and name[5:] in elements.CONSTRUCTORS:
            kind, shape = elements.CONSTRUCTORS[name[5:]]._tack_element
            return T.composite(kind, shape, T.f32), "array"
        name = target.name if isinstance(target, Intrinsic) else None
        if name in _RESULT_TYPES:
            return _RESULT_TYPES[name], name.split(".")[1]
        scalar = {f"tack.{t.name}": t for t in T.SCALAR_TYPES}.get(name)
        if scalar is not None:  # ``-> tack.f32`` resolves to the cast intrinsic
            target = scalar
        if isinstance(target, T.ScalarType):
            return target, "float" if target.is_float else "int"
        raise self.scope.unsupported("return annotation (use int, float, bool, a tack "
                                     "scalar type or a vector type)", annotation)


def _check_returned_names(scope, kernel, pre_ir, body, value, node) -> None:
    """The epilogue runs after the loop: it sees parameters and names bound
    before the loop, not the loop's own names."""
    bound = {p.name for p in kernel.params}
    for stmt in pre_ir + body:
        for sub in walk(stmt):
            if isinstance(sub, S.Assign):
                bound.add(sub.target)
            elif isinstance(sub, S.SeqFor):
                bound.add(sub.var)
    source_names = {ir: name for name, ir in scope.rename.items()}
    for root in body + (value,):
        for sub in walk(root):
            if isinstance(sub, E.Name) and sub.id not in bound:
                name = source_names.get(sub.id, sub.id)   # a renamed loop variable
                raise scope.error(
                    NameError, f"the returned value uses '{name}', which is bound "
                    f"only inside the parallel loop (a return can use parameters, "
                    f"arrays and names bound before the loop)", node)


def _check_loop_copies(scope, tree, preamble, loop: ast.For, returned) -> None:
    """Refuse a return that reads a name bound before the loop and assigned in
    it: each iteration assigns its own copy, so the return would read the value
    from before the loop (``s = 0.0`` then ``s += a[i]`` returned 0.0)."""
    def stored(nodes):
        return {n.id for node in nodes for n in ast.walk(node)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    before = stored(preamble) | {a.arg for a in tree.args.args}
    # the loop's own variables are new names: _check_returned_names refuses them
    copied = (stored([loop]) - stored([loop.target])) & before
    for n in ast.walk(returned.value):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in copied:
            raise scope.unsupported(
                f"return of '{n.id}', which the parallel loop assigns: each iteration "
                f"assigns its own copy, so the return would see the value from before "
                f"the loop (to sum, count or find a maximum, use an atomic on an array, "
                f"or tack.algorithms)", n)


def _split_result(tree: ast.FunctionDef):
    """Split off a final annotated ``return``; the rest is the kernel."""
    if tree.body and isinstance(tree.body[-1], ast.Return) and tree.returns is not None:
        returned = tree.body[-1]
        if returned.value is None:
            return tree, None
        trimmed = copy.copy(tree)
        trimmed.body = tree.body[:-1]
        return trimmed, returned
    return tree, None


def validate_kernel(source) -> tuple:
    """Check the kernel's source against the language (the allow-list of
    constructs, ``validate.py``); ``(tree without the final return, the
    return or None)``."""
    tree, returned = _split_result(source.tree)
    validate_source(source, tree)
    if returned is not None:
        validate_source(source, _as_function(tree, returned))
    return tree, returned


def _as_function(tree, returned):
    """A stand-in function that holds the returned expression, for validation."""
    probe = copy.copy(tree)
    probe.body = [ast.copy_location(ast.Expr(
        ast.copy_location(ast.Call(ast.Name("abs", ast.Load()), [returned.value], []),
                          returned)), returned)]
    return probe


class _Unknown(Exception):
    """A name whose value at the parallel loop depends on a branch taken."""


def _substitute(expr, values: dict, unknown: set) -> E.Expr:
    """``expr`` with each local replaced by its value (see ``_values_at_loop``);
    parameters that no statement before the loop assigns stay as they are."""
    def replace(e):
        if isinstance(e, E.Name):
            if e.id in unknown:
                raise _Unknown(e.id)
            return values.get(e.id, e)
        return e
    return rewrite(expr, replace)


def _values_at_loop(pre_ir) -> tuple:
    """``(values, unknown)``: what each name assigned before the parallel loop
    holds when the loop starts, as the host can compute it from the arguments.
    The top-level assignments are followed in order, each value written in
    terms of the parameters as they were passed (so ``n = n - 1`` and ``m = n;
    n = 3`` mean what Python means); a name assigned inside an ``if`` is
    ``unknown``, since its value depends on the branch taken."""
    values, unknown = {}, set()
    for stmt in pre_ir:
        if isinstance(stmt, S.Assign):
            try:
                values[stmt.target] = _substitute(stmt.value, values, unknown)
                unknown.discard(stmt.target)
            except _Unknown:
                values.pop(stmt.target, None)
                unknown.add(stmt.target)
            continue
        for node in walk(stmt):
            if isinstance(node, S.Assign):
                values.pop(node.target, None)
                unknown.add(node.target)
    return values, unknown


def lower_kernel(source, fn, debug: bool = False, elements=None, extra=None) -> Lowered:
    """Validate and lower a kernel's source (spec stage 3b-3d); ``debug`` makes
    the bounds-checked template (see ``bounds.py``); ``elements`` maps vector and
    matrix array parameters to ``(array ndim, element type)``; ``extra`` binds the
    names of rewritten device-class methods (see ``device_class.py``)."""
    return Lowerer(source, fn, debug, elements, extra).lower()
