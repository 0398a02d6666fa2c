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

    math = types.SimpleNamespace(
        sqrt=lambda x: np.sqrt(fl(x)), exp=lambda x: np.exp(fl(x)),
        sin=lambda x: np.sin(fl(x)), floor=floor, pi=_math.pi)
    tack = types.SimpleNamespace(
        i32=np.int32, i64=np.int64, f32=np.float32, f64=np.float64, ndindex=ndindex,
        func=None, kernel=None)
    return {
        "math": math, "tack": tack, "float": lambda x: fnp(x), "int": to_int, "range": seq_range,
        "len": lambda a: np.int64(len(a)),
        "_prange": lambda *a: (np.int64(v) for v in range(*(int(x) for x in a))),
        "_i32": lambda v: np.int32(1 if v else 0),
    }


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
