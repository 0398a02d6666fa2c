"""The reference: a generated kernel's own source run as plain Python on NumPy scalars.

The module text is parsed and changed only where Python and the kernel
language differ by design (see docs/language.md): the decorators are dropped,
comparisons, ``and``/``or`` and ``not`` give an ``i32`` 0/1, and the parallel
``range`` yields ``i64`` indices. Everything else (weak literals, NumPy
scalar promotion, floor division and modulo) is NumPy's and Python's own
behaviour, which the kernel language follows for the programs the generator
makes. Names the kernel calls (``math.*``, ``float``, ``int``, ``tack.i64``,
``range``, ``len``) are bound to versions computing in the kernel's types.
"""

from __future__ import annotations

import ast
import math as _math
import types

import numpy as np

_I64_MAX = 2 ** 63 - 1


class _Transform(ast.NodeTransformer):
    def visit_FunctionDef(self, node):
        node.decorator_list = []
        node.returns = None
        if node.name == "k":
            loop = next(s for s in node.body if isinstance(s, ast.For))
            if isinstance(loop.iter, ast.Call) and getattr(loop.iter.func, "id", "") == "range":
                loop.iter.func = ast.Name("_prange", ast.Load())
        self.generic_visit(node)
        return node

    def _wrap(self, node):
        self.generic_visit(node)
        return ast.Call(ast.Name("_i32", ast.Load()), [node], [])

    visit_Compare = visit_BoolOp = _wrap

    def visit_UnaryOp(self, node):
        if isinstance(node.op, ast.Not):
            return self._wrap(node)
        self.generic_visit(node)
        return node


def _namespace(ftype):
    fnp = {"f32": np.float32, "f64": np.float64}[ftype]

    def fl(x):
        return x if isinstance(x, np.floating) else fnp(x)

    def to_int(x):
        if isinstance(x, (float, np.floating)):
            if x != x:
                return np.int64(0)
            if x >= 2.0 ** 63:
                return np.int64(_I64_MAX)
            if x <= -2.0 ** 63:
                return np.int64(-2 ** 63)
            return np.int64(_math.trunc(float(x)))
        return np.int64(x)

    def floor(x):
        if isinstance(x, (float, np.floating)):
            return to_int(np.floor(fl(x)))
        return np.int64(x)

    def seq_range(*args):
        strong = [x for x in args if isinstance(x, np.integer)]
        if not strong:
            return range(*args)
        t = np.result_type(*strong).type
        return (t(v) for v in range(*(int(x) for x in args)))

    def ndindex(*extents):
        for idx in np.ndindex(*(max(int(e), 0) for e in extents)):
            yield tuple(np.int64(v) for v in idx)

    def erf(x):
        x = fl(x)
        return type(x)(_math.erf(float(x)))

    math = types.SimpleNamespace(
        sqrt=lambda x: np.sqrt(fl(x)), exp=lambda x: np.exp(fl(x)),
        sin=lambda x: np.sin(fl(x)), floor=floor, pi=_math.pi, erf=erf,
        expm1=lambda x: np.expm1(fl(x)), log1p=lambda x: np.log1p(fl(x)),
        cbrt=lambda x: np.cbrt(fl(x)), tanh=lambda x: np.tanh(fl(x)),
        fmod=lambda x, y: np.fmod(fl(x), fl(y)))
    tack = types.SimpleNamespace(
        i32=np.int32, i64=np.int64, f32=np.float32, f64=np.float64, ndindex=ndindex,
        func=None, kernel=None, vec3=_vec3, dot=_dot, cross=_cross,
        length=lambda v: np.sqrt(_dot(v, v)))
    return {
        "math": math, "tack": tack, "float": lambda x: fnp(x), "int": to_int, "range": seq_range,
        "len": lambda a: np.int64(len(a)),
        "_prange": lambda *a: (np.int64(v) for v in range(*(int(x) for x in a))),
        "_i32": lambda v: np.int32(1 if v else 0),
        "min": lambda *v: _elementwise(min, v), "max": lambda *v: _elementwise(max, v),
    }


def _elementwise(fn, values):
    if any(isinstance(v, _V) for v in values):
        comps = [v.c if isinstance(v, _V) else (v,) * 3 for v in values]
        return _V(fn(*column) for column in zip(*comps))
    return fn(*values)


class _V:
    """A vec3 as the kernel language scalarizes it: three NumPy scalars, each
    operation applied per component with the scalar rules."""

    def __init__(self, comps):
        self.c = tuple(comps)

    x = property(lambda self: self.c[0])
    y = property(lambda self: self.c[1])
    z = property(lambda self: self.c[2])

    def __getitem__(self, k):
        return self.c[k]

    def _map(self, other, fn):
        if isinstance(other, _V):
            return _V(fn(a, b) for a, b in zip(self.c, other.c))
        return _V(fn(a, other) for a in self.c)

    def __add__(self, o): return self._map(o, lambda a, b: a + b)        # noqa: E704
    def __sub__(self, o): return self._map(o, lambda a, b: a - b)        # noqa: E704
    def __mul__(self, o): return self._map(o, lambda a, b: a * b)        # noqa: E704
    def __truediv__(self, o): return self._map(o, lambda a, b: a / b)    # noqa: E704
    def __rmul__(self, o): return _V(o * a for a in self.c)              # noqa: E704
    def __neg__(self): return _V(-a for a in self.c)                     # noqa: E704
    def __abs__(self): return _V(abs(a) for a in self.c)                 # noqa: E704
    def __matmul__(self, o): return _dot(self, o)                        # noqa: E704
    def __lt__(self, o): return NotImplemented                           # noqa: E704

    def __iter__(self):
        raise TypeError("a vec3 is not iterable")


def _vec3(*comps, dtype=np.float32):
    if len(comps) == 1:
        comps = comps * 3
    return _V(dtype(c) for c in comps)


def _dot(a, b):
    return a.c[0] * b.c[0] + a.c[1] * b.c[1] + a.c[2] * b.c[2]


def _cross(a, b):
    (ax, ay, az), (bx, by, bz) = a.c, b.c
    return _V((ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx))


def run_reference(source: str, ftype: str, args):
    """Run kernel ``k`` of ``source`` on NumPy arrays ``args`` (changed in place)."""
    tree = _Transform().visit(ast.parse(source))
    tree.body = [s for s in tree.body  # the functions only (a regression file has more)
                 if isinstance(s, ast.FunctionDef) and not s.name.startswith("test_")]
    ast.fix_missing_locations(tree)
    ns = _namespace(ftype)
    with np.errstate(all="ignore"):
        exec(compile(tree, "<reference>", "exec"), ns)
        return ns["k"](*args)
