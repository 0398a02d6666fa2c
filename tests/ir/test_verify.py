"""The IR verifier on hand-built bad IR; node immutability; rewrite; registries."""

from __future__ import annotations

import dataclasses
import re

import pytest

import tack
from tack import types as T
from tack.ir import expressions as E
from tack.ir import format_function, rewrite, walk
from tack.ir import statements as S
from tack.ir.node import Node, Span, attr, node, operand
from tack.ir.passes import pipeline
from tack.ir.passes.annotate import annotate_types
from tack.ir.passes.common import ArgSpec
from tack.ir.registry import Registry
from tack.ir.traversal import children
from tack.ir.verify import STAGES, verify


def out_param():
    return S.Param("out", is_array=True, ndim=1)


def store(value, index=None):
    return S.Store("out", index or E.Name("i"), value)


def loop(*body, var="i"):
    return S.ParallelFor((var,), (E.DimSize("out", 0),), tuple(body))


def function(*body, params=None):
    return S.Function("k", params or (out_param(),), tuple(body))


def failure(stage, kind, path, problem):
    return re.escape(f"Kernel 'k': IR verification failed after stage '{stage}': "
                     f"{kind} at {path}: {problem}")


GOOD = function(loop(store(E.Const(1.0))))


@pytest.mark.parametrize("stage", ["lowered", "resolved"])
def test_good_ir_passes(stage):
    assert verify(GOOD, stage) is GOOD


def test_two_parallel_loops():
    fn = function(loop(store(E.Const(1))), loop(store(E.Const(2))))
    with pytest.raises(tack.IRVerificationError,
                       match=failure("lowered", "Function", "function.body",
                                     "2 top-level parallel loops, not 1")):
        verify(fn, "lowered")


def test_no_parallel_loop():
    fn = function(S.Assign("x", E.Const(1)))
    with pytest.raises(tack.IRVerificationError,
                       match=failure("resolved", "Function", "function.body",
                                     "0 top-level parallel loops, not 1")):
        verify(fn, "resolved")


def test_store_outside_the_loop():
    fn = function(S.Store("out", E.Const(0), E.Const(1)), loop(store(E.Const(1))))
    with pytest.raises(tack.IRVerificationError,
                       match=failure("lowered", "Store", "function.body[0]",
                                     "only allowed inside the parallel loop")):
        verify(fn, "lowered")


def test_atomic_nested_in_an_expression_outside_the_loop():
    atomic = E.AtomicAdd("out", E.Const(0), E.Const(1))
    fn = function(S.Assign("x", E.Add(E.Const(1), atomic)), loop(store(E.Name("x"))))
    with pytest.raises(tack.IRVerificationError,
                       match=failure("lowered", "AtomicAdd", "function.body[0].value.rhs",
                                     "only allowed inside the parallel loop")):
        verify(fn, "lowered")


def test_unbound_name():
    fn = function(loop(store(E.Add(E.Name("i"), E.Name("z")))))
    with pytest.raises(tack.IRVerificationError,
                       match=failure("lowered", "Name", "function.body[0].body[0].value.rhs",
                                     "name 'z' is never bound")):
        verify(fn, "lowered")


def test_names_bound_by_assignments_and_sequential_loops():
    inner = S.SeqFor("j", E.Const(0), E.Const(3), E.Const(1),
                     (S.Assign("x", E.Name("j")),))
    fn = function(loop(inner, store(E.Name("x"))))
    assert verify(fn, "lowered") is fn


def test_break_in_the_parallel_loop():
    fn = function(loop(S.If(E.Name("i"), (S.Break(),), ()), store(E.Const(1))))
    with pytest.raises(tack.IRVerificationError,
                       match=failure("lowered", "Break", "function.body[0].body[0].body[0]",
                                     "break out of the parallel loop")):
        verify(fn, "lowered")


def test_break_in_a_sequential_loop_is_fine():
    inner = S.While(E.Const(1), (S.Break(),))
    assert verify(function(loop(inner, store(E.Const(1)))), "lowered")


@pytest.mark.parametrize("outermost, wrapped", [(False, False), (True, True)])
def test_continue_flag_must_match_its_loop(outermost, wrapped):
    stmt = S.Continue(outermost)
    if wrapped:
        stmt = S.SeqFor("j", E.Const(0), E.Const(3), E.Const(1), (stmt,))
    fn = function(loop(stmt, store(E.Const(1))))
    path = "function.body[0].body[0]" + (".body[0]" if wrapped else "")
    with pytest.raises(tack.IRVerificationError,
                       match=failure("lowered", "Continue", path,
                                     "continue's outermost flag does not match its loop")):
        verify(fn, "lowered")


def test_dim_size_left_after_resolve():
    """Regression: paths inside the loop lacked the loop's ``.body[k]`` here and at
    'typed' (``function.body[0].value`` for ``function.body[0].body[0].value``)."""
    fn = function(loop(store(E.DimSize("out", 0))))
    assert verify(fn, "lowered") is fn  # symbolic extents are fine before resolve
    with pytest.raises(tack.IRVerificationError,
                       match=failure("resolved", "DimSize", "function.body[0].body[0].value",
                                     "array extent left outside the loop's extents")):
        verify(fn, "resolved")


def _typed_function():
    fn = function(loop(store(E.Const(1.0))))
    fn = fn.replace(params=(S.Param("out", T.f32, True, 1),), default_float=T.f32)
    return annotate_types(fn)


def test_untyped_expression_at_typed():
    fn = _typed_function()
    assert verify(fn, "typed") is fn
    body = (store(E.Const(1.0), index=E.Name("i", dtype=T.i64)),)  # value untyped
    bad = fn.replace(body=(fn.body[0].replace(body=body),))
    with pytest.raises(tack.IRVerificationError,
                       match=failure("typed", "Const", "function.body[0].body[0].value",
                                     "expression without a type")):
        verify(bad, "typed")


def test_comparison_that_is_not_i32_at_typed():
    fn = _typed_function()
    compare = E.Lt(E.Name("i", dtype=T.i64), E.Const(3, dtype=T.i64), dtype=T.i64)
    body = (S.If(compare, (), ()), *fn.body[0].body)
    bad = fn.replace(body=(fn.body[0].replace(body=body),))
    with pytest.raises(tack.IRVerificationError,
                       match=failure("typed", "Lt", "function.body[0].body[0].cond",
                                     "truth value that is not i32")):
        verify(bad, "typed")


def test_assignment_of_the_wrong_type_at_typed():
    fn = _typed_function().replace(locals=(("x", T.i32),))
    body = (S.Assign("x", E.Const(1.5, dtype=T.f32)), *fn.body[0].body)
    bad = fn.replace(body=(fn.body[0].replace(body=body),))
    with pytest.raises(tack.IRVerificationError,
                       match=failure("typed", "Assign", "function.body[0].body[0]",
                                     "value of type f32 assigned to 'x' of type i32")):
        verify(bad, "typed")


def test_untyped_parameter_at_inferred():
    with pytest.raises(tack.IRVerificationError,
                       match=failure("inferred", "Param", "function.params[out]",
                                     "parameter without a type")):
        verify(GOOD, "inferred")


def test_load_of_a_scalar_at_inferred():
    params = (S.Param("out", T.f32, True, 1), S.Param("s", T.f32, False, 0))
    fn = function(loop(store(E.Load("s", E.Name("i")))), params=params)
    with pytest.raises(tack.IRVerificationError,
                       match=failure("optimized", "Load", "function.body[0].body[0].value",
                                     "'s' is neither an array parameter nor an "
                                     "allocation")):
        verify(fn, "optimized")


def test_duplicate_parameters_and_bad_constants():
    fn = function(loop(store(E.Const(1))), params=(out_param(), out_param()))
    with pytest.raises(tack.IRVerificationError,
                       match=failure("lowered", "Function", "function.params",
                                     "parameter names are not unique")):
        verify(fn, "lowered")
    fn = function(loop(store(E.Const("1"))))
    with pytest.raises(tack.IRVerificationError,
                       match=failure("lowered", "Const", "function.body[0].body[0].value",
                                     "non-numeric constant '1'")):
        verify(fn, "lowered")
    fn = function(loop(S.Assign("", E.Const(1)), store(E.Const(1))))
    with pytest.raises(tack.IRVerificationError,
                       match=failure("lowered", "Assign", "function.body[0].body[0]",
                                     "empty name in field 'target'")):
        verify(fn, "lowered")


def test_unknown_node_in_an_operand():
    fn = function(loop(store(3)))
    with pytest.raises(tack.IRVerificationError, match=re.escape(
            "Kernel 'k': IR verification failed after stage 'lowered': Unknown IR node "
            "int in Store")):
        verify(fn, "lowered")


def test_every_stage_is_known():
    assert STAGES == ("lowered", "resolved", "inferred", "localized", "optimized",
                      "packed", "typed")
    with pytest.raises(KeyError):
        verify(GOOD, "vectorized")


def test_packed_stage_refuses_scalar_parameters():
    params = (S.Param("out", T.f32, True, 1), S.Param("s", T.f32, False, 0))
    fn = function(loop(store(E.Name("s"))), params=params)
    with pytest.raises(tack.IRVerificationError,
                       match=failure("packed", "Param", "function.params[s]",
                                     "a scalar parameter left after packing")):
        verify(fn, "packed")


def test_a_broken_pass_is_caught_at_its_boundary(monkeypatch):
    """A pass that moves a store out of the loop fails verification after 'optimized'."""
    def hoist(fn, request):
        loop_ = fn.parallel_for
        return fn.replace(body=(S.Store("out", E.Const(0), E.Const(1)), loop_))
    steps = tuple((name, hoist if name == "optimize" else step, stage)
                  for name, step, stage in pipeline.PIPELINE)
    monkeypatch.setattr(pipeline, "PIPELINE", steps)
    request = pipeline.VariantRequest((ArgSpec(T.f32, (4,), "array"),),
                                      frozenset(T.SCALAR_TYPES), frozenset(), "CPUBackend")
    with pytest.raises(tack.IRVerificationError,
                       match=failure("optimized", "Store", "function.body[0]",
                                     "only allowed inside the parallel loop")):
        pipeline.run_pipeline(GOOD, request)


# -- immutability, structural equality, rewrite ----------------------------------------

def test_nodes_are_frozen():
    c = E.Const(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.value = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        GOOD.body = ()
    assert c.replace(value=2) == E.Const(2) and c == E.Const(1)


def test_equality_and_hash_ignore_spans():
    here, there = Span("a.py", 3, 5), Span("b.py", 9, 1)
    a = E.Add(E.Name("x", span=here), E.Const(1, span=here), span=here)
    b = E.Add(E.Name("x", span=there), E.Const(1, span=there), span=there)
    assert a == b and hash(a) == hash(b)
    assert a != E.Add(E.Name("x"), E.Const(2))
    assert a != E.Sub(E.Name("x"), E.Const(1))  # same fields, another kind
    assert E.Const(1, dtype=T.i32) != E.Const(1, dtype=T.i64)


def test_rewrite_shares_unchanged_subtrees():
    left = E.Mul(E.Name("a"), E.Name("b"))
    right = E.Add(E.Name("c"), E.Const(1))
    root = S.Store("out", E.Name("i"), E.Sub(left, right))
    same = rewrite(root, lambda n: n)
    assert same is root
    changed = rewrite(root, lambda n: E.Const(2) if n == E.Const(1) else n)
    assert changed is not root and changed.value.rhs.rhs == E.Const(2)
    assert changed.value.lhs is left  # untouched subtree, shared
    assert changed.index is root.index
    assert changed.value.rhs.lhs is right.lhs
    assert root.value.rhs.rhs == E.Const(1)  # the original is unchanged


def test_walk_and_children_order():
    root = E.Select(E.Name("c"), E.Add(E.Name("a"), E.Const(1)), E.Name("b"))
    assert [type(n).__name__ for n in walk(root)] == [
        "Select", "Name", "Add", "Name", "Const", "Name"]
    assert list(children(root)) == [root.cond, root.if_true, root.if_false]


def test_node_fields_must_declare_a_role():
    with pytest.raises(TypeError, match=re.escape("Broken.x declares no role")):
        @node
        class Broken(Node):
            x: int = 0


def test_new_node_kinds_work_with_generic_traversal():
    @node
    class Twice(E.Expr):
        inner: E.Expr = operand()
        label: str = attr(default="")
    t = Twice(E.Name("x"), "l")
    assert list(children(t)) == [E.Name("x")]
    assert rewrite(t, lambda n: E.Name("y") if n == E.Name("x") else n) == \
        Twice(E.Name("y"), "l")


# -- registries ------------------------------------------------------------------------

def test_registry_rejects_a_second_handler():
    registry = Registry("test registry")
    registry.register(E.Add)(lambda e: "add")
    with pytest.raises(RuntimeError, match=re.escape(
            "test registry: Add is already registered")):
        registry.register(E.Sub, E.Add)(lambda e: "again")


def test_registry_follows_the_mro():
    registry = Registry("test registry")
    registry.register(E.MathUnary)(lambda e: "math")
    registry.register(E.Floor)(lambda e: "floor")
    assert registry(E.Sin(E.Const(1.0))) == "math"
    assert registry(E.Floor(E.Const(1.0))) == "floor"
    with pytest.raises(NotImplementedError, match=re.escape(
            "test registry does not support Add")):
        registry(E.Add(E.Const(1), E.Const(2)))


def test_every_node_kind_prints():
    """The printer has a handler for every expression and statement kind."""
    from tack.ir.printer import expr_text, stmt_lines
    kinds = [obj for obj in vars(E).values()
             if isinstance(obj, type) and issubclass(obj, E.Expr) and obj is not E.Expr]
    for kind in kinds:
        expr_text.lookup(kind)
    for kind in (S.Assign, S.Store, S.ExprStmt, S.If, S.SeqFor, S.While, S.Break,
                 S.Continue, S.Print, S.ParallelFor):
        stmt_lines.lookup(kind)
    fn = function(loop(S.Print((E.Str("x ="), E.Name("i"))), S.Continue(True),
                       store(E.Const(1))))
    assert format_function(fn) == (
        "kernel k(out):\n"
        "  parallel for i in [0, out.shape[0]):\n"
        "    print('x =', i)\n"
        "    continue  # next parallel iteration\n"
        "    out[i] = 1\n")
