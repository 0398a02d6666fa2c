"""Unbound names, and the errors a call raises for its arguments.

Free names are NameErrors naming the kernel (or the inlined device function)
and the position; kernels capture no Python scalars. Keyword arguments and a
wrong argument count are checked at call time, with the messages the runtime
API fixes.
"""

import re

import numpy as np
import pytest

import tack

GLOBAL_SCALE = 2.0


@tack.kernel
def k_unbound_scalar(a):
    for i in range(len(a)):
        a[i] = a[i] * undefined_scale  # noqa: F821


@tack.kernel
def k_global_scalar(a):
    for i in range(len(a)):
        a[i] = a[i] * GLOBAL_SCALE


@tack.kernel
def k_unbound_array(a):
    for i in range(len(a)):
        a[i] = other[i]  # noqa: F821


@tack.kernel
def k_unbound_before_loop(a):
    n = missing_extent + 1  # noqa: F821
    for i in range(len(a)):
        a[i] = n


@tack.kernel
def k_unbound_function(a):
    for i in range(len(a)):
        a[i] = undefined_function(a[i])  # noqa: F821


@tack.kernel
def k_unbound_module(a):
    for i in range(len(a)):
        a[i] = undefined_module.sqrt(a[i])  # noqa: F821


@tack.kernel
def k_unbound_call_statement(a):
    for i in range(len(a)):
        a[i] = 1.0
        undefined_function(a[i])  # noqa: F821


@tack.func
def uses_unbound(x):
    return x + missing_offset  # noqa: F821


@tack.kernel
def k_unbound_in_device_function(a):
    for i in range(len(a)):
        a[i] = uses_unbound(a[i])


@tack.func
def calls_unbound(x):
    return x * 2.0 + uses_unbound(x)


@tack.kernel
def k_unbound_two_levels_down(a):
    for i in range(len(a)):
        a[i] = calls_unbound(a[i])


_UNBOUND = {
    k_unbound_scalar: "Kernel 'k_unbound_scalar': name 'undefined_scale' is not "
                      "defined at line 4, column 23",
    k_global_scalar: "Kernel 'k_global_scalar': name 'GLOBAL_SCALE' is not defined "
                     "in the kernel: it is a Python value here, and kernels capture "
                     "none; pass it as an argument at line 4, column 23",
    k_unbound_array: "Kernel 'k_unbound_array': name 'other' is not defined at "
                     "line 4, column 16",
    k_unbound_before_loop: "Kernel 'k_unbound_before_loop': name 'missing_extent' is "
                           "not defined at line 3, column 9",
    k_unbound_function: "Kernel 'k_unbound_function': name 'undefined_function' is "
                        "not defined at line 4, column 16",
    k_unbound_module: "Kernel 'k_unbound_module': name 'undefined_module' is not "
                      "defined at line 4, column 16",
    k_unbound_call_statement: "Kernel 'k_unbound_call_statement': name "
                              "'undefined_function' is not defined at line 5, "
                              "column 9",
    k_unbound_in_device_function: "Device function 'uses_unbound' (inlined into "
                                  "kernel 'k_unbound_in_device_function'): name "
                                  "'missing_offset' is not defined at line 3, "
                                  "column 16",
    k_unbound_two_levels_down: "Device function 'uses_unbound' (inlined into kernel "
                               "'k_unbound_two_levels_down'): name 'missing_offset' "
                               "is not defined at line 3, column 16",
}


@pytest.mark.parametrize("kernel", list(_UNBOUND), ids=lambda k: k.name)
def test_unbound_name(kernel, rng):
    data = rng.floats(3)
    a = tack.array(data)
    message = _UNBOUND[kernel]
    with pytest.raises(NameError, match=f"^{re.escape(message)}") as info:
        kernel(a)
    assert str(info.value) == message
    np.testing.assert_array_equal(a.numpy(), data, err_msg=f"seed={rng.seed}")


@tack.kernel
def k_unbound_after_wide_text(a):
    for i in range(len(a)):
        print("ééé 日本"); a[i] = nope  # noqa: F821


@tack.kernel
def k_unsupported_after_wide_text(a):
    for i in range(len(a)):
        print("ééé 日本", [1])


def test_columns_count_characters_on_a_line_with_non_ascii_text():
    # ast counts UTF-8 bytes: the column was 7 too far right
    with pytest.raises(NameError, match=re.escape("'nope' is not defined at line 4, "
                                                  "column 33")):
        k_unbound_after_wide_text(tack.zeros(2))
    with pytest.raises(tack.UnsupportedSyntaxError) as info:
        k_unsupported_after_wide_text(tack.zeros(2))
    assert str(info.value).endswith("unsupported List at line 4, column 25")
    source_line, caret = info.value.__notes__[0].splitlines()[-2:]
    assert source_line[caret.index("^")] == "["


def test_unbound_name_through_inspect():
    """Inspection reports the same NameError, untranslated."""
    message = _UNBOUND[k_unbound_scalar]
    with pytest.raises(NameError, match=f"^{re.escape(message)}"):
        tack.inspect(k_unbound_scalar, tack.zeros(2, tack.f32), mode="ir")


# -- call-time argument errors ---------------------------------------------------------

@tack.kernel
def k_copy(a, b):
    for i in range(len(a)):
        a[i] = b[i]


@pytest.mark.parametrize("count", [0, 1, 3])
def test_wrong_argument_count(count, rng):
    data = [rng.floats(4) for _ in range(count)]
    args = [tack.array(d) for d in data]
    message = f"Kernel 'k_copy' expects 2 arguments, got {count}"
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        k_copy(*args)
    for arg, d in zip(args, data):
        np.testing.assert_array_equal(arg.numpy(), d, err_msg=f"seed={rng.seed}")


def test_keyword_arguments(rng):
    data = rng.floats(4)
    a = tack.array(data)
    b = tack.array(rng.floats(4))
    backend = tack.get_default_device().backend.class_name
    message = f"Kernel 'k_copy' failed on {backend}: Keyword arguments not supported " \
              "in kernels"
    for args, kwargs in [((a,), {"b": b}), ((), {"a": a, "b": b}), ((a, b), {"c": b})]:
        with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$") as info:
            k_copy(*args, **kwargs)
        assert type(info.value) is RuntimeError
        assert isinstance(info.value.__cause__, NotImplementedError)
    np.testing.assert_array_equal(a.numpy(), data, err_msg=f"seed={rng.seed}")


def test_call_after_errors_still_works(rng):
    """Argument errors leave the kernel usable (warm and cold paths alike)."""
    for count in (1, 3):
        with pytest.raises(TypeError):
            k_copy(*[tack.zeros(2, tack.f32)] * count)
    for n in (0, 1, 7):
        src = rng.floats(n)
        a = tack.zeros(n, tack.f32)
        k_copy(a, tack.array(src))
        np.testing.assert_array_equal(a.numpy(), src, err_msg=f"seed={rng.seed}")


def test_unsupported_argument_type():
    message = "Kernel 'k_copy': Unsupported argument type for parameter 'b': str"
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        k_copy(tack.zeros(2, tack.f32), "text")


# -- device-function argument errors at the call site ----------------------------------

@tack.func
def two_args(x, y):
    return x + y


@tack.func
def reads(v, i):
    return v[i]


@tack.kernel
def k_too_few(a):
    for i in range(len(a)):
        a[i] = two_args(a[i])


@tack.kernel
def k_too_many(a):
    for i in range(len(a)):
        a[i] = two_args(a[i], 1.0, 2.0)


@tack.kernel
def k_array_to_scalar(a, b):
    for i in range(len(a)):
        a[i] = two_args(b, 1.0) + b[i]


@tack.kernel
def k_scalar_to_array(a):
    for i in range(len(a)):
        a[i] = reads(a[i], i)


@pytest.mark.parametrize("kernel, message", [
    (k_too_few, "Kernel 'k_too_few': device function 'two_args' expects 2 arguments, "
                "got 1 at line 4, column 16"),
    (k_too_many, "Kernel 'k_too_many': device function 'two_args' expects 2 "
                 "arguments, got 3 at line 4, column 16"),
], ids=["too_few", "too_many"])
def test_device_function_arity(kernel, message, rng):
    data = rng.floats(3)
    a = tack.array(data)
    with pytest.raises(TypeError, match=f"^{re.escape(message)}") as info:
        kernel(a)
    assert str(info.value) == message
    np.testing.assert_array_equal(a.numpy(), data, err_msg=f"seed={rng.seed}")


def test_array_passed_to_scalar_parameter():
    message = ("Kernel 'k_array_to_scalar': array 'b' passed to scalar parameter 'x' "
               "of device function 'two_args' at line 4, column 25")
    with pytest.raises(TypeError, match=f"^{re.escape(message)}") as info:
        k_array_to_scalar(tack.zeros(2, tack.f32), tack.zeros(2, tack.f32))
    assert str(info.value) == message


def test_scalar_passed_to_array_parameter():
    message = ("Kernel 'k_scalar_to_array': unsupported scalar argument for parameter "
               "'v' of device function 'reads', which subscripts it (pass an array "
               "name, or a vector or matrix) at line 4, column 22")
    with pytest.raises(tack.UnsupportedSyntaxError, match=f"^{re.escape(message)}"):
        k_scalar_to_array(tack.zeros(2, tack.f32))


@tack.func
def inverse(x):
    y = x + 1
    return x ** -1


@tack.kernel
def k_inverse(a):
    for i in range(len(a)):
        a[i] = inverse(i)


@tack.kernel
def k_return_inverse(a, n) -> int:
    for i in range(len(a)):
        a[i] = 1
    return n ** -1


@pytest.mark.parametrize("kernel, where", [
    (k_inverse, "in device function 'inverse' at line 4, column 12"),   # its own lines
    (k_return_inverse, "at line 5, column 12"),
], ids=["device_function", "return"])
def test_type_errors_found_after_lowering_name_where_they_are(kernel, where):
    message = (f"Kernel '{kernel.__name__}': integer power with the negative literal "
               f"exponent -1 (write a float base, such as 2.0 ** -1) {where}")
    with pytest.raises(TypeError) as info:
        kernel(tack.zeros(3, tack.i32), 2) if kernel is k_return_inverse else \
            kernel(tack.zeros(3, tack.i32))
    assert str(info.value) == message


@tack.kernel
def k_fill_ones(a):
    for i in range(len(a)):
        a[i] = 1


@tack.kernel
def k_fill_first(a, out):
    for i in range(len(out)):
        a[i] = 1


@pytest.mark.parametrize("kernel, args", [(k_fill_ones, (3,)),   # its extent is the range
                                          (k_fill_first, (3, tack.zeros(4)))])   # written
def test_a_number_for_an_array_parameter_is_a_type_error(kernel, args):
    message = (f"Kernel '{kernel.__name__}': parameter 'a' is used as an array, but the "
               f"argument is a i32 scalar")
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        kernel(*args)
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        tack.inspect(kernel, *args)


@tack.kernel
def k_two_index_counts(a, out):
    for i in range(len(out)):
        out[i] = a[i] + a[i, 0]


@tack.func
def two_index_counts(a, i):
    return a[i] + a[i, 0]     # a matrix value may be indexed both ways, an array not


@tack.kernel
def k_array_to_two_index_counts(a, out):
    for i in range(len(out)):
        out[i] = two_index_counts(a, i)


@pytest.mark.parametrize("kernel, owner, line", [
    (k_two_index_counts, "Kernel 'k_two_index_counts'", "line 4, column 25"),
    (k_array_to_two_index_counts, "Device function 'two_index_counts'", "line 3, column 19"),
])
def test_an_array_indexed_with_two_index_counts_is_refused(kernel, owner, line):
    message = f"{owner}: unsupported indexing of array 'a' with both 1 and 2 indices at {line}"
    with pytest.raises(tack.UnsupportedSyntaxError, match=f"^{re.escape(message)}"):
        kernel(tack.zeros((3, 3), tack.f32), tack.zeros(3, tack.f32))


@tack.kernel
def k_numpy_sin(a):
    for i in range(len(a)):
        a[i] = np.sin(a[i])


@tack.kernel
def k_fstring(a):
    for i in range(len(a)):
        print(f"{i}")


@tack.kernel
def k_list(a):
    for i in range(len(a)):
        a[i] = [1, 2][0]


@tack.kernel
def k_warp_tid(a):
    for i in range(len(a)):
        a[tack.tid()] = 1.0


@pytest.mark.parametrize("kernel, message, hint", [
    (k_numpy_sin, "unsupported call to 'np.sin'", "the math module's do (math.sin(x)"),
    (k_fstring, "unsupported JoinedStr", 'print takes its values as arguments'),
    (k_list, "unsupported List", "tack.local_array(n, dtype)"),
    (k_warp_tid, "unsupported call to 'tack.tid'", "for i in range(n):"),
])
def test_what_users_of_numpy_and_warp_write_gets_a_hint(kernel, message, hint):
    """The message stays the documented one; a note says what to write (new-user
    audit: these gave no hint)."""
    with pytest.raises(tack.UnsupportedSyntaxError, match=re.escape(message)) as info:
        kernel(tack.zeros(2))
    assert any(hint in note for note in info.value.__notes__[1:]), info.value.__notes__


@tack.kernel
def k_drift(pos):
    for i in range(len(pos)):
        pos[i] = tack.vec3(1.0, 2.0, 3.0)


def test_vectors_stored_into_a_scalar_array_hint_at_the_element_type():
    """An (n, 3) array made without dtype=tack.vec3() holds scalars (new-user audit)."""
    with pytest.raises(TypeError, match="a vec3 stored into an element of the scalar "
                                        "array 'pos'") as info:
        k_drift(tack.zeros((4, 3)))
    assert any("tack.array(x, dtype=tack.vec3())" in note for note in info.value.__notes__)
