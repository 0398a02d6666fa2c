"""The allow-list validator: one rejected construct per kernel, exact messages.

Positions count in the dedented captured source: line 1 is the decorator,
columns are 1-based. Every kernel here would write its array if it ran, so
an unchanged array shows the rejection came before anything was launched.
"""

import linecache
import re

import numpy  # noqa: F401  (bound, so numpy.sqrt is "not an intrinsic", not unbound)
import numpy as np
import pytest

import tack


@tack.kernel
def k_assert(a):
    for i in range(len(a)):
        assert a[i] > 0.0
        a[i] = 1.0


@tack.kernel
def k_with(a):
    for i in range(len(a)):
        with open("x"):
            a[i] = 1.0


@tack.kernel
def k_try(a):
    for i in range(len(a)):
        try:
            a[i] = 1.0
        except ValueError:
            pass


@tack.kernel
def k_raise(a):
    for i in range(len(a)):
        a[i] = 1.0
        raise ValueError


@tack.kernel
def k_import(a):
    for i in range(len(a)):
        import os  # noqa: F401
        a[i] = 1.0


@tack.kernel
def k_import_from(a):
    for i in range(len(a)):
        from os import path  # noqa: F401
        a[i] = 1.0


@tack.kernel
def k_global(a):
    global GLOBAL_SCALAR
    for i in range(len(a)):
        a[i] = 1.0


def _make_nonlocal():
    x = 1

    @tack.kernel
    def k_nonlocal(a):
        nonlocal x
        for i in range(len(a)):
            a[i] = 1.0
    return k_nonlocal


k_nonlocal = _make_nonlocal()


@tack.kernel
def k_del(a):
    for i in range(len(a)):
        x = 1.0
        del x
        a[i] = 1.0


@tack.kernel
def k_lambda(a):
    for i in range(len(a)):
        f = lambda y: y  # noqa: E731
        a[i] = 1.0


@tack.kernel
def k_list(a):
    for i in range(len(a)):
        x = [1, 2]
        a[i] = 1.0


@tack.kernel
def k_dict(a):
    for i in range(len(a)):
        x = {1: 2}
        a[i] = 1.0


@tack.kernel
def k_set(a):
    for i in range(len(a)):
        x = {1, 2}
        a[i] = 1.0


@tack.kernel
def k_list_comp(a):
    for i in range(len(a)):
        x = [j for j in range(3)]
        a[i] = 1.0


@tack.kernel
def k_dict_comp(a):
    for i in range(len(a)):
        x = {j: j for j in range(3)}
        a[i] = 1.0


@tack.kernel
def k_set_comp(a):
    for i in range(len(a)):
        x = {j for j in range(3)}
        a[i] = 1.0


@tack.kernel
def k_genexp(a):
    for i in range(len(a)):
        a[i] = max(j for j in range(3))


@tack.kernel
def k_fstring(a):
    for i in range(len(a)):
        print(f"{i}")
        a[i] = 1.0


@tack.kernel
def k_starred(a):
    for i in range(len(a)):
        a[i] = max(*a)


@tack.kernel
def k_walrus(a):
    for i in range(len(a)):
        a[i] = (x := 1.0)


@tack.kernel
def k_slice(a):
    for i in range(len(a)):
        a[i] = a[0:1]


@tack.kernel
def k_in(a):
    for i in range(len(a)):
        a[i] = i in a


@tack.kernel
def k_not_in(a):
    for i in range(len(a)):
        a[i] = i not in a


@tack.kernel
def k_is(a):
    for i in range(len(a)):
        a[i] = a[i] is a[0]


@tack.kernel
def k_is_not(a):
    for i in range(len(a)):
        a[i] = a[i] is not a[0]


@tack.kernel
def k_annotated(a):
    for i in range(len(a)):
        x: float = 1.0
        a[i] = x


@tack.kernel
def k_nested_def(a):
    for i in range(len(a)):
        def g():
            pass
        a[i] = 1.0


@tack.kernel
def k_class(a):
    for i in range(len(a)):
        class C:
            pass
        a[i] = 1.0


@tack.kernel
def k_yield(a):
    for i in range(len(a)):
        a[i] = 1.0
        yield i


@tack.kernel
def k_yield_value(a):
    for i in range(len(a)):
        a[i] = yield i


@tack.kernel
def k_for_else(a):
    for i in range(len(a)):
        for j in range(3):
            a[i] = 1.0
        else:
            a[i] = 2.0


@tack.kernel
def k_while_else(a):
    for i in range(len(a)):
        while a[i] < 1.0:
            a[i] = 1.0
        else:
            a[i] = 2.0


@tack.kernel
def k_keyword(a):
    for i in range(len(a)):
        a[i] = max(a[i], 1.0, key=abs)


@tack.kernel
def k_default(a, b=1.0):
    for i in range(len(a)):
        a[i] = 1.0


@tack.kernel
def k_varargs(a, *rest):
    for i in range(len(a)):
        a[i] = 1.0


@tack.kernel
def k_kwargs(a, **options):
    for i in range(len(a)):
        a[i] = 1.0


@tack.kernel
def k_print_keyword(a):
    for i in range(len(a)):
        print(i, dtype=tack.f64)


@tack.kernel
def k_barrier_keyword(a):
    for i in range(len(a)):
        tack.barrier(dtype=tack.f64)


@tack.kernel
def k_keyword_only(a, *, b):
    for i in range(len(a)):
        a[i] = 1.0


@tack.kernel
def k_positional_only(a, /):
    for i in range(len(a)):
        a[i] = 1.0


@tack.kernel
def k_string(a):
    for i in range(len(a)):
        x = "label"
        a[i] = 1.0


@tack.kernel
def k_none(a):
    for i in range(len(a)):
        x = None
        a[i] = 1.0


@tack.kernel
def k_bytes(a):
    for i in range(len(a)):
        x = b"x"
        a[i] = 1.0


@tack.kernel
def k_complex(a):
    for i in range(len(a)):
        a[i] = 2j


@tack.kernel
def k_bare_constant(a):
    for i in range(len(a)):
        a[i] = 1.0
        1.0


@tack.kernel
def k_break_parallel(a):
    for i in range(len(a)):
        a[i] = 1.0
        if i > 2:
            break


@tack.kernel
def k_return_bare(a):
    for i in range(len(a)):
        a[i] = 1.0
    return


@tack.kernel
def k_return_unannotated(a):
    for i in range(len(a)):
        a[i] = 1.0
    return a[0]


@tack.kernel
def k_return_not_final(a) -> float:
    for i in range(len(a)):
        a[i] = 1.0
        if i > 2:
            return 1.0
    return 2.0


@tack.kernel
def k_return_bad_annotation(a) -> str:
    for i in range(len(a)):
        a[i] = 1.0
    return a[0]


@tack.kernel
def k_parameter_annotation(a, seed: tack.u32):
    for i in range(len(a)):
        a[i] = seed


@tack.kernel
def k_none_returns_value(a) -> None:
    for i in range(len(a)):
        a[i] = 1.0
    return a[0]


@tack.kernel
def k_bad_annotation_no_return(a) -> str:
    for i in range(len(a)):
        a[i] = 1.0


@tack.kernel
def k_unreachable_break(a):
    for i in range(len(a)):
        for j in range(3):
            break
            a[i] = 1.0


@tack.kernel
def k_unreachable_continue(a):
    for i in range(len(a)):
        a[i] = 1.0
        continue
        a[i] = 2.0


@tack.kernel
def k_zero_step(a):
    for i in range(len(a)):
        for j in range(0, 4, 0):
            a[i] = 1.0


@tack.kernel
def k_negative_zero_step(a):
    for i in range(len(a)):
        for j in range(4, 0, -0):
            a[i] = 1.0


@tack.kernel
def k_zero_step_parallel(a):
    for i in range(0, len(a), 0):
        a[i] = 1.0


@tack.kernel
def k_no_loop(a):
    x = 1.0


@tack.kernel
def k_second_loop(a):
    for i in range(len(a)):
        a[i] = 1.0
    for i in range(len(a)):
        a[i] = 2.0


@tack.kernel
def k_after_loop(a):
    for i in range(len(a)):
        a[i] = 1.0
    x = 1.0


@tack.kernel
def k_iterate_array(a):
    for x in a:
        x = 1.0


@tack.kernel
def k_iterate_tuple(a):
    for i in range(len(a)):
        for x in (1.0, 2.0):
            a[i] = x


@tack.kernel
def k_numpy_call(a):
    for i in range(len(a)):
        a[i] = numpy.sqrt(a[i])


@tack.kernel
def k_np_call(a):
    for i in range(len(a)):
        a[i] = np.sqrt(a[i])


@tack.kernel
def k_np_type_call(a):
    for i in range(len(a)):
        a[i] = np.float32(a[i])


@tack.kernel
def k_whole_shape(a):
    s = a.shape
    for i in range(len(a)):
        a[i] = 1.0


@tack.kernel
def k_rank(a):
    for i in range(len(a)):
        a[i] = len(a.shape)


@tack.kernel
def k_early_return(a):
    for i in range(len(a)):
        if i > 2:
            return
        a[i] = 1.0


@tack.kernel
def k_return_in_inner_loop(a):
    for i in range(len(a)):
        for j in range(3):
            return
        a[i] = 1.0


@tack.kernel
def k_array_size(a):
    for i in range(a.size):
        a[i] = 0.0


@tack.kernel
def k_python_function(a):
    for i in range(len(a)):
        a[i] = plain_python(a[i])


def plain_python(x):
    return x + 1.0


@tack.kernel
def k_chained_load(a):
    for i in range(len(a)):
        x = a[i][0]
        a[i] = x


@tack.kernel
def k_chained_store(a):
    for i in range(len(a)):
        a[i][0] = 1.0


@tack.kernel
def k_chained_and_whole(a):
    for i in range(len(a)):
        a[i, 0] = a[i][i + 1]


@tack.kernel
def k_chained_3(a):
    for i in range(len(a)):
        a[i] = a[i][0][1]


@tack.kernel
def k_chained_local(a):
    for i in range(len(a)):
        buf = tack.local_array(4, tack.f32)
        a[i] = buf[0][0]


@tack.kernel
def k_tuple_return(a) -> float:
    for i in range(len(a)):
        a[i] = 1.0
    return a[0], a[1]


@tack.kernel
def k_round_digits(a):
    for i in range(len(a)):
        a[i] = round(a[i], 2)


@tack.kernel
def k_ndindex_inner(a):
    for i in range(len(a)):
        for j, k in tack.ndindex(2, 2):
            a[i] = 1.0


@tack.kernel
def k_ndindex_unpack(a):
    for i, j in tack.ndindex(len(a), 2, 2):
        a[i] = 1.0


@tack.kernel
def k_reserved_parameter(__tack_print__):
    for i in range(len(__tack_print__)):
        __tack_print__[i] = 0.0


@tack.kernel
def k_reserved_local(a):
    for i in range(len(a)):
        __tack_errors__ = 2.0
        a[i] = __tack_errors__


@tack.kernel
def k_print_nul(a):
    for i in range(len(a)):
        print("a\x00b", i)


@tack.kernel
def k_print_surrogate(a):
    for i in range(len(a)):
        print("x\ud800y", i)


_UNSUPPORTED = {
    k_print_nul: "unsupported print label with a NUL character at line 4, column 15",
    k_print_surrogate: "unsupported print label that is not valid Unicode text (a lone "
                       "surrogate) at line 4, column 15",
    k_reserved_parameter: "unsupported name '__tack_print__' (names starting with "
                          "__tack_ are Tack's own) at line 2, column 26",
    k_reserved_local: "unsupported name '__tack_errors__' (names starting with __tack_ "
                      "are Tack's own) at line 4, column 9",
    k_assert: "unsupported Assert at line 4, column 9",
    k_with: "unsupported With at line 4, column 9",
    k_try: "unsupported Try at line 4, column 9",
    k_raise: "unsupported Raise at line 5, column 9",
    k_import: "unsupported Import at line 4, column 9",
    k_import_from: "unsupported ImportFrom at line 4, column 9",
    k_global: "unsupported Global at line 3, column 5",
    k_nonlocal: "unsupported Nonlocal at line 3, column 5",
    k_del: "unsupported Delete at line 5, column 9",
    k_lambda: "unsupported Lambda at line 4, column 13",
    k_list: "unsupported List at line 4, column 13",
    k_dict: "unsupported Dict at line 4, column 13",
    k_set: "unsupported Set at line 4, column 13",
    k_list_comp: "unsupported ListComp at line 4, column 13",
    k_dict_comp: "unsupported DictComp at line 4, column 13",
    k_set_comp: "unsupported SetComp at line 4, column 13",
    k_genexp: "unsupported GeneratorExp at line 4, column 19",
    k_fstring: "unsupported JoinedStr at line 4, column 15",
    k_starred: "unsupported Starred at line 4, column 20",
    k_walrus: "unsupported NamedExpr at line 4, column 17",
    k_slice: "unsupported Slice at line 4, column 18",
    k_in: "unsupported In at line 4, column 16",
    k_not_in: "unsupported NotIn at line 4, column 16",
    k_is: "unsupported Is at line 4, column 16",
    k_is_not: "unsupported IsNot at line 4, column 16",
    k_annotated: "unsupported AnnAssign at line 4, column 9",
    k_nested_def: "unsupported nested function definition (FunctionDef) at line 4, "
                  "column 9",
    k_class: "unsupported ClassDef at line 4, column 9",
    k_yield: "unsupported expression statement (Yield) at line 5, column 9",
    k_yield_value: "unsupported Yield at line 4, column 16",
    k_for_else: "unsupported for-else at line 4, column 9",
    k_while_else: "unsupported while-else at line 4, column 9",
    k_keyword: "unsupported keyword argument at line 4, column 35",
    k_print_keyword: "unsupported keyword argument at line 4, column 24",
    k_barrier_keyword: "unsupported keyword argument at line 4, column 28",
    k_default: "unsupported default parameter value at line 2, column 1",
    k_varargs: "unsupported parameter kind (only plain positional parameters) at "
               "line 2, column 1",
    k_kwargs: "unsupported parameter kind (only plain positional parameters) at "
              "line 2, column 1",
    k_keyword_only: "unsupported parameter kind (only plain positional parameters) "
                    "at line 2, column 1",
    k_positional_only: "unsupported parameter kind (only plain positional "
                       "parameters) at line 2, column 1",
    k_string: "unsupported constant 'label' at line 4, column 13",
    k_none: "unsupported constant None at line 4, column 13",
    k_bytes: "unsupported constant b'x' at line 4, column 13",
    k_complex: "unsupported constant 2j at line 4, column 16",
    k_bare_constant: "unsupported expression statement (Constant) at line 5, "
                     "column 9",
    k_break_parallel: "unsupported break out of the parallel loop at line 6, "
                      "column 13",
    k_return_bare: "unsupported Return (a kernel returns a value only from an "
                   "annotated final return statement) at line 5, column 5",
    k_return_unannotated: "unsupported Return (a kernel returns a value only from "
                          "an annotated final return statement) at line 5, column 5",
    k_return_not_final: "unsupported Return (a kernel returns a value only from an "
                        "annotated final return statement) at line 6, column 13",
    k_return_bad_annotation: "unsupported return annotation (use int, float, bool, "
                             "a tack scalar type or a vector type) at line 2, column 35",
    k_parameter_annotation: "unsupported parameter annotation (a parameter takes its "
                            "argument's type; to convert it, write a cast in the body, "
                            "such as tack.u32(seed)) at line 2, column 37",
    k_none_returns_value: "unsupported return of a value from a kernel annotated -> None "
                          "at line 5, column 5",
    k_bad_annotation_no_return: "unsupported return annotation (use int, float, bool, "
                                "a tack scalar type or a vector type) at line 2, column 38",
    k_unreachable_break: "unsupported unreachable statement after break at line 6, "
                         "column 13",
    k_unreachable_continue: "unsupported unreachable statement after continue at "
                            "line 6, column 9",
    k_zero_step: "unsupported range() step of zero at line 4, column 30",
    k_negative_zero_step: "unsupported range() step of zero at line 4, column 30",
    k_zero_step_parallel: "unsupported range() step of zero at line 3, column 31",
    k_no_loop: "unsupported kernel without a parallel loop (write one `for ... in "
               "range(...)` directly in the kernel body) at line 2, column 1",
    k_second_loop: "unsupported second parallel loop (a kernel has one: write a kernel "
                   "for each, called in turn) at line 5, column 5",
    k_after_loop: "unsupported statement after the parallel loop at line 5, column 5",
    k_iterate_array: "unsupported parallel loop over something other than range() "
                     "or tack.ndindex() at line 3, column 14",
    k_iterate_tuple: "unsupported iteration over something other than range() at "
                     "line 4, column 18",
    k_numpy_call: "unsupported call to 'numpy.sqrt' (not a statically bound "
                  "@tack.func or a supported kernel intrinsic) at line 4, column 16",
    k_np_call: "unsupported call to 'np.sqrt' (not a statically bound @tack.func or "
               "a supported kernel intrinsic) at line 4, column 16",
    k_np_type_call: "unsupported call to 'np.float32' (not a statically bound "
                    "@tack.func or a supported kernel intrinsic; for a conversion, call "
                    "tack.f32()) at line 4, column 16",
    k_array_size: "unsupported attribute 'size' here (a kernel reads an array's len(a) "
                  "and a.shape[k]) at line 3, column 20",
    k_whole_shape: "unsupported attribute 'shape' here (a kernel reads a.shape[k], or "
                   "unpacks all of it: n, m = a.shape) at line 3, column 9",
    k_rank: "unsupported use of a whole shape (an array's rank is the number of "
            "indices the kernel uses; its extents are a.shape[k], or n, m = a.shape) "
            "at line 4, column 20",
    k_early_return: "unsupported Return (a kernel returns a value only from an "
                    "annotated final return statement; to end one iteration early, "
                    "use continue) at line 5, column 13",
    k_return_in_inner_loop: "unsupported Return (a kernel returns a value only from "
                            "an annotated final return statement) at line 5, column 13",
    k_python_function: "unsupported call to 'plain_python' (not a statically bound "
                       "@tack.func or a supported kernel intrinsic) at line 4, "
                       "column 16",
    k_chained_load: "unsupported chained indexing a[i][0] (an array is indexed with all "
                    "its indices at once: a[i, 0]; for components, make it an array of "
                    "vectors, with dtype=tack.vec3()) at line 4, column 13",
    k_chained_store: "unsupported chained indexing a[i][0] (an array is indexed with all "
                     "its indices at once: a[i, 0]; for components, make it an array of "
                     "vectors, with dtype=tack.vec3()) at line 4, column 9",
    k_chained_and_whole: "unsupported chained indexing a[i][i + 1] (an array is indexed "
                         "with all its indices at once: a[i, i + 1]; for components, make "
                         "it an array of vectors, with dtype=tack.vec3()) at line 4, "
                         "column 19",
    k_chained_3: "unsupported chained indexing a[i][0][1] (an array is indexed with all "
                 "its indices at once: a[i, 0, 1]; for components, make it an array of "
                 "vectors, with dtype=tack.vec3()) at line 4, column 16",
    k_chained_local: "unsupported chained indexing buf[0][0] (a local or shared array has "
                     "one index: buf[0]) at line 5, column 16",
    k_tuple_return: "unsupported tuple returned from a kernel (a kernel returns one "
                    "value: return a vector, such as tack.vec2(a, b) under -> tack.vec2, "
                    "or store the values into an array) at line 5, column 12",
    k_round_digits: "unsupported round() with a number of digits (round(x) rounds to "
                    "an integer) at line 4, column 16",
    k_ndindex_inner: "unsupported tack.ndindex() outside the kernel's parallel loop "
                     "at line 4, column 9",
    k_ndindex_unpack: "unsupported tack.ndindex() with 3 extents unpacked into 2 "
                      "names at line 3, column 5",
}


def _assert_rejected(kernel, message, *args):
    full = f"Kernel '{kernel.name}': {message}"
    with pytest.raises(tack.UnsupportedSyntaxError,
                       match=f"^{re.escape(full)}") as info:
        kernel(*args)
    assert str(info.value) == full
    assert isinstance(info.value, NotImplementedError)
    assert isinstance(info.value, RuntimeError)
    return info.value


@pytest.mark.parametrize("kernel", list(_UNSUPPORTED), ids=lambda k: k.name)
def test_rejected_construct(kernel, rng):
    data = rng.floats(5)
    a = tack.array(data)
    _assert_rejected(kernel, _UNSUPPORTED[kernel], a)
    np.testing.assert_array_equal(a.numpy(), data, err_msg=f"seed={rng.seed}")


def test_a_slice_says_to_pass_a_range_view(rng):
    a = tack.array(rng.floats(5))
    error = _assert_rejected(k_slice, _UNSUPPORTED[k_slice], a)
    assert ("A kernel does not slice arrays; to run it over part of one, pass a range "
            "view made on the host: kernel(a[start:stop]).") in error.__notes__


def test_rejection_repeats_on_every_call(rng):
    """A failed lowering is not cached as a success: the second call fails too."""
    data = rng.floats(3)
    a = tack.array(data)
    for _ in range(2):
        _assert_rejected(k_assert, _UNSUPPORTED[k_assert], a)
    np.testing.assert_array_equal(a.numpy(), data, err_msg=f"seed={rng.seed}")


def test_inspect_raises_the_same_rejection():
    a = tack.zeros(4, tack.f32)
    full = f"Kernel 'k_with': {_UNSUPPORTED[k_with]}"
    for mode in ("ir", "source"):
        with pytest.raises(tack.UnsupportedSyntaxError,
                           match=f"^{re.escape(full)}") as info:
            tack.inspect(k_with, a, mode=mode)
        assert str(info.value) == full


def test_decoration_does_not_validate():
    """Nothing is validated at decoration; the error comes at the first call."""
    def body(a):
        for i in range(len(a)):
            assert a[i]
    kernel = tack.kernel(body)
    assert isinstance(kernel, tack.Kernel)
    with pytest.raises(tack.UnsupportedSyntaxError,
                       match=re.escape("Kernel 'body': unsupported Assert at line 3, "
                                       "column 9")):
        kernel(tack.zeros(2, tack.f32))


def test_rejection_carries_a_source_note():
    """The note names this file's own line and puts a caret under the column."""
    exc = _assert_rejected(k_assert, _UNSUPPORTED[k_assert], tack.zeros(2, tack.f32))
    notes = getattr(exc, "__notes__", None)
    if notes is None:  # Python < 3.11 has no notes
        pytest.skip("exception notes need Python 3.11")
    first = k_assert.fn.__code__.co_firstlineno - 1  # the decorator line
    assert notes == [f'  File "{__file__}", line {first + 4}\n'
                     f"    assert a[i] > 0.0\n"
                     f"    ^"]


# -- break and continue outside any loop -----------------------------------------------
# Python refuses to compile these, so a real file can never hold them; the
# validator still checks, because it reads the source text, not the code. A
# function whose text comes from linecache (as IPython registers its cells)
# lets the text differ from the compiled code.

_COMPILED = """@tack.kernel
def shown(a):
    for i in range(len(a)):
        a[i] = 1.0
"""


def _kernel_from_text(shown_text, tag, monkeypatch):
    filename = f"<tack-lang-test-{tag}>"
    monkeypatch.setitem(linecache.cache, filename,
                        (len(shown_text), None, shown_text.splitlines(True), filename))
    namespace = {"tack": tack}
    exec(compile(_COMPILED, filename, "exec"), namespace)
    return namespace["shown"]


@pytest.mark.parametrize("statement", ["continue", "break"])
def test_loop_exit_outside_any_loop(statement, rng, monkeypatch):
    text = _COMPILED.replace("    for i", f"    if a[0] > 0.0:\n        {statement}\n"
                                          f"    for i")
    kernel = _kernel_from_text(text, statement, monkeypatch)
    data = rng.floats(3)
    a = tack.array(data)
    _assert_rejected(kernel, f"unsupported {statement} outside a loop at line 4, "
                             f"column 9", a)
    np.testing.assert_array_equal(a.numpy(), data, err_msg=f"seed={rng.seed}")


def test_a_cell_of_ipython_keeps_its_name_and_its_source_lines(rng, monkeypatch):
    """A pseudo file name ("<ipython-input-...>") is not a path: the error's
    note shows the line from linecache, as Python's own tracebacks do."""
    text = _COMPILED.replace("a[i] = 1.0", "a[i] = undefined_name")
    kernel = _kernel_from_text(text, "cell", monkeypatch)
    assert kernel.source.file == "<tack-lang-test-cell>"
    with pytest.raises(NameError) as info:
        kernel(tack.zeros(3))
    assert info.value.__notes__ == ['  File "<tack-lang-test-cell>", line 4\n'
                                    '    a[i] = undefined_name\n'
                                    '           ^']
