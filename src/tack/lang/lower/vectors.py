"""Scalarizing vectors and matrices during lowering (spec stage 3c).

No IR node has a vector type. A vector or matrix value exists only while
lowering, as a :class:`Vec`: its kind, its component shape and one scalar IR
expression per component (row-major). A vector local ``v`` becomes one IR
local per component; a load of a vector array element becomes one load per
component of the array's scalar storage (element index times component
count plus component), and a store becomes one store per component. Every
operation on vectors is written out per component here, so the passes and
the code generators only ever see scalars.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass

from ... import types as T
from ...ir import expressions as E
from ...ir import statements as S
from ...ir.traversal import walk
from .arrays import chained_index

COMPONENTS = {"x": 0, "y": 1, "z": 2, "w": 3}


@dataclass(frozen=True)
class Vec:
    """A vector (``kind="vec"``, shape ``(n,)``) or matrix (``"mat"``, ``(r, c)``)."""

    kind: str
    shape: tuple
    comps: tuple

    def describe(self) -> str:
        return f"{self.kind}{''.join(map(str, self.shape))}"

    def like(self, comps) -> "Vec":
        return Vec(self.kind, self.shape, tuple(comps))

    def rows(self) -> list:
        r, c = self.shape
        return [Vec("vec", (c,), self.comps[k * c:(k + 1) * c]) for k in range(r)]


@dataclass(frozen=True)
class VectorLocal:
    """A vector or matrix local: its shape and the IR names of its components."""

    kind: str
    shape: tuple
    names: tuple


def _count(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


class VectorLowering:
    """Mixin of the Lowerer. ``self.elements`` maps IR array names of vector and
    matrix arrays to their element type; ``self.vector_locals`` maps IR local
    names to :class:`VectorLocal`."""

    # -- values and names ------------------------------------------------------------
    def vector_error(self, message: str, node):
        return self.scope.error(TypeError, message, node)

    def local_value(self, name: str, span):
        """The value of IR local ``name``: a Vec for a vector local."""
        local = self.vector_locals.get(name)
        if local is None:
            return E.Name(name, span=span)
        return Vec(local.kind, local.shape, tuple(E.Name(n, span=span) for n in local.names))

    def assign_local(self, name: str, value, node) -> list:
        """``name = value`` for a scalar or a Vec, with the shape rules."""
        span = self.scope.span(node)
        local = self.vector_locals.get(name)
        if isinstance(value, Vec):
            if local is None:
                if name in self.scalar_locals:
                    raise self.vector_error(f"'{name}' holds a scalar and "
                                            f"cannot also hold a {value.describe()}", node)
                names = tuple(self.names.fresh(f"{name.strip('_')}_{k}")
                              for k in range(len(value.comps)))
                local = self.vector_locals[name] = VectorLocal(value.kind, value.shape, names)
            elif (local.kind, local.shape) != (value.kind, value.shape):
                raise self.vector_error(
                    f"'{name}' holds a {Vec(local.kind, local.shape, ()).describe()} "
                    f"and cannot be assigned a {value.describe()}", node)
            written = set(local.names)
            staged, comps = self.staged(
                value.comps, lambda e: isinstance(e, E.Name) and e.id in written)
            return staged + [S.Assign(n, c, span=span) for n, c in zip(local.names, comps)]
        if local is not None:
            raise self.vector_error(f"'{name}' holds a "
                                    f"{Vec(local.kind, local.shape, ()).describe()} and "
                                    f"cannot be assigned a scalar", node)
        self.scalar_locals.add(name)
        return [S.Assign(name, value, span=span)]

    def captured_vec(self, value: Vec, base: str = "eval") -> Vec:
        """``value`` with each non-trivial component held in a temporary."""
        return value.like(self.captured(c, base) for c in value.comps)

    # -- arrays of vectors -----------------------------------------------------------
    def element_of(self, array: str):
        return self.elements.get(array)

    def load_element(self, array: str, flat: E.Expr, span) -> Vec:
        element = self.elements[array]
        flat = self.captured(flat, "index")
        n = element.count
        comps = tuple(E.Load(array, component_index(flat, n, k, span), self.debug, span=span)
                      for k in range(n))
        return Vec(element.kind, element.shape, comps)

    def store_element(self, array: str, flat: E.Expr, value, node) -> list:
        element = self.elements[array]
        span = self.scope.span(node)
        value = self.broadcast(value, element.kind, element.shape, node)
        flat = self.captured(flat, "index")
        staged, comps = self.staged(
            value.comps, lambda e: isinstance(e, E.Load) and e.array == array)
        return staged + [S.Store(array, component_index(flat, element.count, k, span), c,
                                 self.debug, span=span)
                         for k, c in enumerate(comps)]

    def staged(self, comps, reads_target) -> tuple:
        """``(assigns, comps)`` for writing ``comps`` one by one into a target:
        when any of them reads the target (``reads_target`` of a node: ``v =
        rot @ v``, ``m[i] = m[i].T``), a write would change what a later
        component reads, so every component goes to a temporary first."""
        if not any(reads_target(node) for c in comps for node in walk(c)):
            return [], comps
        pairs = [self.capture(c, "part") for c in comps]
        return [assign for _, assign in pairs], tuple(name for name, _ in pairs)

    def broadcast(self, value, kind: str, shape: tuple, node) -> Vec:
        if isinstance(value, Vec):
            if value.shape != shape:
                raise self.vector_error(f"a {value.describe()} where a "
                                        f"{kind}{''.join(map(str, shape))} is needed", node)
            return value
        value = self.captured(value, "value")
        return Vec(kind, shape, (value,) * _count(shape))

    # -- components --------------------------------------------------------------------
    def attribute_of(self, value: Vec, node: ast.Attribute):
        if value.kind == "vec" and node.attr in COMPONENTS:
            k = COMPONENTS[node.attr]
            if k >= value.shape[0]:
                raise self.vector_error(f"a {value.describe()} has no component "
                                        f"'.{node.attr}'", node)
            return value.comps[k]
        if value.kind == "mat" and node.attr == "T":
            return transposed(value)
        raise self.vector_error(f"a {value.describe()} has no attribute "
                                f"'.{node.attr}'", node)

    def subscript_of(self, value: Vec, index: ast.expr, node):
        parts = index.elts if isinstance(index, ast.Tuple) else [index]
        if len(parts) > len(value.shape):
            raise self.vector_error(f"{len(parts)} indices into a {value.describe()}", node)
        span = self.scope.span(node)
        # a float index truncates, as an array's does (language.md: v[k])
        indices = [_whole(i) if isinstance(i, E.Const) else E.IndexCast(i, T.i64, span=span)
                   for i in self.ordered(parts)]
        candidates = value.rows() if value.kind == "mat" and len(parts) == 1 else None
        if candidates is None:
            if len(parts) == 2:
                candidates = list(value.comps)
                c = value.shape[1]
                flat = E.Add(E.Mul(indices[0], E.Const(c, span=span), span=span),
                             indices[1], span=span)
                return self.pick(candidates, flat, self.literal_entry(value, indices, node),
                                 node)
            candidates = list(value.comps)
        literal = indices[0].value if isinstance(indices[0], E.Const) else None
        return self.pick(candidates, indices[0], literal, node)

    def pick(self, candidates: list, index: E.Expr, literal, node):
        """``candidates[index]``: direct for a literal, else a chain of selects."""
        if literal is not None:
            if not (isinstance(literal, int) and 0 <= literal < len(candidates)):
                raise self.scope.error(IndexError, f"component index {literal} out of range "
                                       f"0..{len(candidates) - 1}", node)
            return candidates[literal]
        span = self.scope.span(node)
        index = self.captured(index, "component")
        if isinstance(candidates[0], Vec):
            comps = [self.pick([v.comps[k] for v in candidates], index, None, node)
                     for k in range(len(candidates[0].comps))]
            return candidates[0].like(comps)
        result = candidates[-1]
        for k in range(len(candidates) - 2, -1, -1):
            test = E.Eq(index, E.Const(k, span=span), span=span)
            result = E.Select(test, candidates[k], result, span=span)
        return result

    def literal_entry(self, value: Vec, indices, node):
        """The flat position of ``m[r, c]`` with literal ``r`` and ``c``, else None."""
        if not all(isinstance(i, E.Const) for i in indices):
            return None
        (r, c), (rows, cols) = (i.value for i in indices), value.shape
        if not (isinstance(r, int) and isinstance(c, int) and 0 <= r < rows
                and 0 <= c < cols):
            raise self.scope.error(IndexError, f"entry [{r}, {c}] out of range for a "
                                   f"{value.describe()}", node)
        return r * cols + c

    def assign_component(self, target: ast.expr, value, node) -> list:
        """``v.x = s``, ``v[k] = s``, ``m[r, c] = s`` for a vector local ``v``, and
        ``a[i].x = s`` for a vector array ``a``."""
        scope = self.scope
        base = target.value
        if isinstance(value, Vec):
            raise self.vector_error(f"a {value.describe()} assigned to one component", node)
        if isinstance(base, ast.Subscript) and isinstance(base.value, ast.Name) \
                and base.value.id in scope.arrays:
            array = self.array_name(base.value)
            element = self.elements.get(array)
            if element is None:
                raise scope.unsupported(chained_index(target, array in self.array_params)
                                        if isinstance(target, ast.Subscript) else
                                        "component assignment into a scalar array", node)
            flat = self.flat_index(array, base.slice, base)
            k = self.component_number(target, element.kind, element.shape, node)
            span = scope.span(node)
            return [S.Store(array, component_index(flat, element.count, k, span), value,
                            self.debug, span=span)]
        if not isinstance(base, ast.Name):
            raise scope.unsupported(
                f"assignment to a component of {ast.unparse(base)} (assign v.x, v[k] or "
                f"m[r, c] of a local, or a[i].x of an array element)", node)
        name = scope.rename.get(base.id, base.id)
        local = self.vector_locals.get(name)
        if local is None:
            raise scope.unsupported(f"assignment to {type(target).__name__} of "
                                    f"'{base.id}', which is not a vector", node)
        if name in self.value_params:
            raise self.vector_error(
                f"assignment to a component of parameter '{base.id}', a "
                f"{Vec(local.kind, local.shape, ()).describe()} value: the kernel has a "
                f"copy, and the caller's array would not change. Assign a copy and "
                f"change that (v = {base.id}), or pass a tack.Array to write to", node)
        k = self.component_number(target, local.kind, local.shape, node)
        return [S.Assign(local.names[k], value, span=scope.span(node))]

    def component_number(self, target, kind, shape, node) -> int:
        if isinstance(target, ast.Attribute):
            k = COMPONENTS.get(target.attr) if kind == "vec" else None
            if k is None or k >= shape[0]:
                raise self.vector_error(f"no component '.{target.attr}' to assign", node)
            return k
        parts = target.slice.elts if isinstance(target.slice, ast.Tuple) else [target.slice]
        if not all(isinstance(p, ast.Constant) and type(p.value) is int for p in parts):
            raise self.scope.unsupported("component assignment with an index that is "
                                         "not an integer literal", node)
        if len(parts) != len(shape):   # a matrix row: m[1] = ... is not an entry
            raise self.scope.unsupported(
                f"component assignment with {len(parts)} "
                f"ind{'ex' if len(parts) == 1 else 'ices'} into a "
                f"{Vec(kind, shape, ()).describe()} (an entry takes {len(shape)}: "
                f"{'v[k]' if len(shape) == 1 else 'm[r, c]'})", node)
        flat = 0
        for p, d in zip(parts, shape):
            if not 0 <= p.value < d:
                raise self.scope.error(IndexError, f"component index {p.value} out of "
                                       f"range 0..{d - 1}", node)
            flat = flat * d + p.value
        return flat

    # -- arithmetic --------------------------------------------------------------------
    def combine(self, kind, lhs, rhs, span, node):
        """``lhs <op> rhs`` element-wise when either side is a Vec."""
        if not isinstance(lhs, Vec) and not isinstance(rhs, Vec):
            return kind(lhs, rhs, span=span)
        if kind not in _ELEMENTWISE:
            raise self.vector_error(f"operator {_SYMBOLS.get(kind, kind.__name__)} on a "
                                    f"vector or matrix", node)
        if isinstance(lhs, Vec) and isinstance(rhs, Vec):
            if lhs.shape != rhs.shape:
                raise self.vector_error(f"the operands of {_SYMBOLS[kind]} have different "
                                        f"shapes: a {lhs.describe()} and a {rhs.describe()}",
                                        node)
            return lhs.like(kind(a, b, span=span) for a, b in zip(lhs.comps, rhs.comps))
        if isinstance(lhs, Vec):
            b = self.captured(rhs, "scalar")
            return lhs.like(kind(a, b, span=span) for a in lhs.comps)
        a = self.captured(lhs, "scalar")
        return rhs.like(kind(a, b, span=span) for b in rhs.comps)

    def map_unary(self, make, value, span):
        if isinstance(value, Vec):
            return value.like(make(c, span=span) for c in value.comps)
        return make(value, span=span)

    def matmul(self, lhs, rhs, span, node):
        if not isinstance(lhs, Vec) or not isinstance(rhs, Vec):
            raise self.vector_error("operator @ needs a matrix or vector on both sides", node)
        lhs, rhs = self.captured_vec(lhs), self.captured_vec(rhs)
        left = [lhs] if lhs.kind == "vec" else lhs.rows()
        right_cols = [rhs] if rhs.kind == "vec" else transposed(rhs).rows()
        if left[0].shape[0] != right_cols[0].shape[0]:
            raise self.vector_error(f"@ of a {lhs.describe()} and a {rhs.describe()}", node)
        entries = [_dot(row.comps, col.comps, span) for row in left for col in right_cols]
        if lhs.kind == "vec" and rhs.kind == "vec":
            return entries[0]
        if lhs.kind == "vec" or rhs.kind == "vec":
            return Vec("vec", (len(entries),), tuple(entries))
        return Vec("mat", (len(left), len(right_cols)), tuple(entries))

    # -- intrinsics --------------------------------------------------------------------
    def construct(self, kind: str, shape: tuple, node: ast.Call) -> Vec:
        """``tack.vec3(x, y, z)``, ``tack.vec3(s)``, ``tack.mat22(a, b, c, d)``,
        ``tack.mat22(row0, row1)``; ``dtype=`` chooses the component type."""
        dtype = self.constructor_dtype(node)
        span = self.scope.span(node)
        values = self.ordered(node.args, vectors=True)
        comps = []
        for v in values:
            comps.extend(v.comps if isinstance(v, Vec) else (v,))
        count = _count(shape)
        if len(comps) == 1 and not isinstance(values[0], Vec):
            comps = [self.captured(comps[0], "scalar")] * count
        if len(comps) != count:
            name = f"{kind}{''.join(map(str, shape))}"
            raise self.scope.error(TypeError, f"tack.{name}() takes {count} components "
                                   f"(or one scalar), got {len(comps)}", node)
        return Vec(kind, shape, tuple(E.Cast(c, dtype, span=span) for c in comps))

    def constructor_dtype(self, node: ast.Call) -> T.ScalarType:
        dtype = T.f32
        for keyword in node.keywords:
            if keyword.arg != "dtype":
                raise self.scope.unsupported("keyword argument", keyword.value)
            dtype = self.static_scalar_type(keyword.value)
        return dtype

    def static_scalar_type(self, node) -> T.ScalarType:
        from ..bindings import Intrinsic
        target = self.scope.bindings.resolve(node)
        if isinstance(target, T.ScalarType):
            return target
        name = target.name.split(".")[-1] if isinstance(target, Intrinsic) else ""
        if name in {t.name for t in T.SCALAR_TYPES}:
            return T.scalar_type(name)
        raise self.scope.unsupported("dtype that is not a tack scalar type", node)

    def vector_args(self, node: ast.Call, name: str, count: int) -> list:
        self.arity(node, name, count)
        values = self.ordered(node.args, vectors=True)
        for v, arg in zip(values, node.args):
            if not isinstance(v, Vec) or v.kind != "vec":
                hint = ""
                if isinstance(v, E.Load):
                    hint = (f" ({ast.unparse(arg)} is one scalar of array "
                            f"'{v.array}': for an array of vectors, make it with "
                            f"dtype=tack.vec3() or another vector type)")
                raise self.vector_error(f"{name}() takes vectors{hint}", arg)
        return values

    def intrinsic_dot(self, node):
        a, b = self.vector_args(node, "dot", 2)
        if a.shape != b.shape:
            raise self.vector_error(f"dot() of a {a.describe()} and a {b.describe()}", node)
        return _dot(a.comps, b.comps, self.scope.span(node))

    def intrinsic_cross(self, node):
        a, b = self.vector_args(node, "cross", 2)
        if a.shape != (3,) or b.shape != (3,):
            raise self.vector_error("cross() takes two vec3 values", node)
        a, b = self.captured_vec(a), self.captured_vec(b)
        span = self.scope.span(node)
        (ax, ay, az), (bx, by, bz) = a.comps, b.comps

        def minus(p, q, r, s):
            return E.Sub(E.Mul(p, q, span=span), E.Mul(r, s, span=span), span=span)
        return Vec("vec", (3,), (minus(ay, bz, az, by), minus(az, bx, ax, bz),
                                 minus(ax, by, ay, bx)))

    def intrinsic_length(self, node):
        (a,) = self.vector_args(node, "length", 1)
        a = self.captured_vec(a)
        span = self.scope.span(node)
        return E.Sqrt(_dot(a.comps, a.comps, span), span=span)

    def intrinsic_normalize(self, node):
        (a,) = self.vector_args(node, "normalize", 1)
        a = self.captured_vec(a)
        span = self.scope.span(node)
        norm = self.captured(E.Sqrt(_dot(a.comps, a.comps, span), span=span), "length")
        return a.like(E.TrueDiv(c, norm, span=span) for c in a.comps)

    def intrinsic_transpose(self, node):
        self.arity(node, "transpose", 1)
        (m,) = self.ordered(node.args, vectors=True)
        if not isinstance(m, Vec) or m.kind != "mat":
            raise self.vector_error("transpose() takes a matrix", node)
        return transposed(m)


_ELEMENTWISE = (E.Add, E.Sub, E.Mul, E.TrueDiv, E.FloorDiv, E.Mod, E.Pow, E.Min, E.Max)
_SYMBOLS = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.TrueDiv: "/", E.FloorDiv: "//",
            E.Mod: "%", E.Pow: "**", E.Min: "min()", E.Max: "max()", E.LShift: "<<",
            E.RShift: ">>", E.BitAnd: "&", E.BitOr: "|", E.BitXor: "^"}


def transposed(m: Vec) -> Vec:
    r, c = m.shape
    return Vec("mat", (c, r), tuple(m.comps[i * c + j] for j in range(c) for i in range(r)))


def _dot(a, b, span) -> E.Expr:
    total = E.Mul(a[0], b[0], span=span)
    for x, y in zip(a[1:], b[1:]):
        total = E.Add(total, E.Mul(x, y, span=span), span=span)
    return total


def component_index(flat: E.Expr, count: int, k: int, span) -> E.Expr:
    """The storage index of component ``k`` of the element at ``flat``, which is
    an i64 first: a float truncates, a narrow integer (u8, i16, ...) does not
    wrap when scaled by ``count``."""
    scaled = E.Mul(E.IndexCast(flat, T.i64, span=span), E.Const(count, span=span),
                   span=span)
    return scaled if k == 0 else E.Add(scaled, E.Const(k, span=span), span=span)


def _whole(index: E.Const) -> E.Const:
    """A literal component index; a float one truncated (``v[1.0]`` is ``v[1]``)."""
    value = index.value
    if isinstance(value, float) and math.isfinite(value):
        return index.replace(value=int(value))
    return index
