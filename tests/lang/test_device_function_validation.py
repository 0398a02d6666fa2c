"""The allow-list validator in device functions: the same checks as in kernels,
the messages naming the device function (positions in its own source).

Each kernel here calls one rejected device function and would write its array
if it ran, so an unchanged array shows the rejection came before any launch.
"""

import re

import numpy as np
import pytest

import tack


@tack.func
def f_return_in_loop(x):
    for j in range(3):
        return x
    return x


@tack.func
def f_return_in_while(x):
    while x > 0.0:
        return x
    return x


@tack.func
def f_assert(x):
    assert x > 0.0
    return x


@tack.func
def f_unreachable(x):
    return x
    x = 2.0


@tack.func
def f_default(x, y=1.0):
    return x + y


@tack.func
def f_break(x):
    y = x
    while y > 0.0:
        y = y - 1.0
        break
        y = 0.0
    return y


@tack.func
def f_annotated_parameter(x: float):
    return x


@tack.func
def f_return_annotation(x) -> tack.i32:    # would look like a conversion
    return x / 2


@tack.func
def f_none_returns_value(x) -> None:
    return x * 2.0


@tack.func
def f_string_none(x) -> "None":    # returns nothing: fine
    x = x + 1.0


@tack.kernel
def k_uses_none_returns_value(a):
    for i in range(len(a)):
        a[i] = f_none_returns_value(a[i])


@tack.kernel
def k_uses_string_none(a):
    for i in range(len(a)):
        f_string_none(a[i])
        a[i] = 5.0


def test_a_device_function_annotated_none_returns_nothing():
    a = tack.zeros(3)
    k_uses_string_none(a)
    assert a.numpy().tolist() == [5.0] * 3


@tack.kernel
def k_uses_annotated_parameter(a):
    for i in range(len(a)):
        a[i] = f_annotated_parameter(a[i])


@tack.kernel
def k_uses_return_annotation(a):
    for i in range(len(a)):
        a[i] = f_return_annotation(a[i])


@tack.kernel
def k_uses_return_in_loop(a):
    for i in range(len(a)):
        a[i] = f_return_in_loop(a[i])


@tack.kernel
def k_uses_return_in_while(a):
    for i in range(len(a)):
        a[i] = f_return_in_while(a[i])


@tack.kernel
def k_uses_assert(a):
    for i in range(len(a)):
        a[i] = f_assert(a[i])


@tack.kernel
def k_uses_unreachable(a):
    for i in range(len(a)):
        a[i] = f_unreachable(a[i])


@tack.kernel
def k_uses_default(a):
    for i in range(len(a)):
        a[i] = f_default(a[i], 2.0)


@tack.kernel
def k_uses_break(a):
    for i in range(len(a)):
        a[i] = f_break(a[i])


_DEVICE_UNSUPPORTED = {
    k_uses_return_in_loop: "Device function 'f_return_in_loop': unsupported return "
                           "inside a loop at line 4, column 9",
    k_uses_return_in_while: "Device function 'f_return_in_while': unsupported return "
                            "inside a loop at line 4, column 9",
    k_uses_assert: "Device function 'f_assert': unsupported Assert at line 3, "
                   "column 5",
    k_uses_unreachable: "Device function 'f_unreachable': unsupported unreachable "
                        "statement after return at line 4, column 5",
    k_uses_default: "Device function 'f_default': unsupported default parameter "
                    "value at line 2, column 1",
    k_uses_break: "Device function 'f_break': unsupported unreachable statement "
                  "after break at line 7, column 9",
    k_uses_annotated_parameter: "Device function 'f_annotated_parameter': unsupported "
                                "parameter annotation (a parameter takes its argument's "
                                "type; to convert it, write a cast in the body, such as "
                                "float(x)) at line 2, column 30",
    k_uses_none_returns_value: "Device function 'f_none_returns_value': unsupported return "
                               "of a value from a device function annotated -> None at "
                               "line 3, column 5",
    k_uses_return_annotation: "Device function 'f_return_annotation': unsupported return "
                              "annotation on a device function (its result type follows "
                              "its return values; to convert, cast the returned value, "
                              "such as return tack.i32(x)) at line 2, column 31",
}


@pytest.mark.parametrize("kernel", list(_DEVICE_UNSUPPORTED), ids=lambda k: k.name)
def test_rejected_construct_in_device_function(kernel, rng):
    data = rng.floats(4)
    a = tack.array(data)
    message = _DEVICE_UNSUPPORTED[kernel]
    with pytest.raises(tack.UnsupportedSyntaxError,
                       match=f"^{re.escape(message)}") as info:
        kernel(a)
    assert str(info.value) == message
    np.testing.assert_array_equal(a.numpy(), data, err_msg=f"seed={rng.seed}")
