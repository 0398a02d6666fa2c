"""``per_function``: an analysis of an IR function is worked out once per function
object, and only for the last ``SIZE`` functions asked about."""

from __future__ import annotations

from tack.ir import memo
from tack.ir.statements import Function, Param


def function(name: str) -> Function:
    return Function(name=name, params=(Param("x"),), body=())


def counting():
    calls = []

    @memo.per_function
    def analysis(fn):
        calls.append(fn)
        return (fn.name,)
    return analysis, calls


def test_a_function_is_analysed_once_and_its_result_shared():
    analysis, calls = counting()
    fn = function("k")
    first = analysis(fn)
    assert analysis(fn) is first and calls == [fn]


def test_equal_functions_are_told_apart_by_identity():
    analysis, calls = counting()
    one, other = function("k"), function("k")
    assert one == other and one is not other
    analysis(one), analysis(other)
    assert len(calls) == 2


def test_only_the_last_functions_are_kept():
    analysis, calls = counting()
    fns = [function(f"k{j}") for j in range(memo.SIZE + 1)]
    for fn in fns:
        assert analysis(fn) == (fn.name,)
    assert analysis(fns[-1]) == (fns[-1].name,) and len(calls) == memo.SIZE + 1
    assert analysis(fns[0]) == ("k0",) and len(calls) == memo.SIZE + 2   # forgotten
