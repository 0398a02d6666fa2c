"""Spec 003, Exceptions: Tack's exception classes and how Kernel.__call__
translates what the stages below it raise."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tack


@tack.kernel
def asserts(out):
    for i in range(len(out)):
        assert i >= 0
        out[i] = 1


@tack.kernel
def free_name(out):
    for i in range(len(out)):
        out[i] = not_defined_anywhere


@tack.kernel
def split_range(out, parts):
    for i in range(len(out) // parts):
        out[i] = 1


@tack.kernel
def store(out, value):
    for i in range(len(out)):
        out[i] = value


@tack.func
def plus_one(x):
    return x + 1


def test_the_exception_classes():
    assert issubclass(tack.UnsupportedSyntaxError, NotImplementedError)
    assert issubclass(tack.UnsupportedSyntaxError, RuntimeError)
    assert issubclass(tack.IRVerificationError, RuntimeError)
    assert not issubclass(tack.IRVerificationError, NotImplementedError)


def test_unsupported_syntax_passes_through_unchanged_at_every_call():
    out = tack.full(3, 7, tack.i32)
    for _ in range(2):
        with pytest.raises(tack.UnsupportedSyntaxError, match=re.escape(
                "Kernel 'asserts': unsupported Assert at line 4, column 9")) as info:
            asserts(out)
        assert type(info.value) is tack.UnsupportedSyntaxError
        assert "failed on" not in str(info.value)
    assert out.numpy().tolist() == [7, 7, 7]


def test_name_error_passes_through_unchanged():
    out = tack.zeros(3, tack.i32)
    with pytest.raises(NameError, match=re.escape(
            "Kernel 'free_name': name 'not_defined_anywhere' is not defined")) as info:
        free_name(out)
    assert type(info.value) is NameError


def test_value_error_passes_through_unchanged():
    out = tack.full(4, 7, tack.i32)
    with pytest.raises(ValueError, match=re.escape(
            "Kernel 'split_range': the parallel loop's range divides by zero")) as info:
        split_range(out, 0)
    assert type(info.value) is ValueError
    split_range(out, 2)
    with pytest.raises(ValueError, match=re.escape(
            "Kernel 'split_range': the parallel loop's range divides by zero")):
        split_range(out, 0)  # the warm path too
    assert out.numpy().tolist() == [1, 1, 7, 7]
    ro = tack.array_from_ptr(np.zeros(2, np.int32), 2, tack.i32)
    with pytest.raises(ValueError, match=re.escape(
            "Kernel 'store': parameter 'out' may be written, but its array is read-only.")):
        store(ro, 1)


def test_type_error_is_prefixed_with_the_kernel_name_once():
    with pytest.raises(TypeError) as info:
        store(tack.zeros(2), "x")
    message = str(info.value)
    assert message == "Kernel 'store': Unsupported argument type for parameter 'value': str"
    with pytest.raises(TypeError) as info:
        store(tack.zeros(2), 2 ** 64)
    assert str(info.value) == \
        "Kernel 'store': integer 18446744073709551616 is outside the 64-bit range"
    assert isinstance(info.value.__cause__, TypeError)
    assert str(info.value.__cause__) == "integer 18446744073709551616 is outside the 64-bit range"


def test_runtime_error_is_wrapped_with_the_backend_and_keeps_its_cause():
    with pytest.raises(RuntimeError) as info:
        store(tack.zeros(2), value=1)
    assert type(info.value) is RuntimeError
    assert str(info.value) == ("Kernel 'store' failed on CPUBackend: Keyword arguments not "
                               "supported in kernels")
    assert type(info.value.__cause__) is NotImplementedError


def test_device_only_functions_called_from_python_raise_runtime_error():
    with pytest.raises(RuntimeError, match=re.escape(
            "@tack.func 'plus_one' cannot be called from Python.")):
        plus_one(1)
    with pytest.raises(RuntimeError, match=re.escape(
            "tack.atomic_add() can only be called inside a @tack.kernel or @tack.func")):
        tack.atomic_add(tack.zeros(1), 0, 1.0)


def test_host_errors_use_builtin_types():
    """A sample of the table's host-call rows (the rest live with their sections)."""
    with pytest.raises(TypeError):
        tack.device(0)
    with pytest.raises(ValueError):
        tack.device("vulkan")
    with pytest.raises(RuntimeError):
        tack.array_from_ptr(np.zeros(1), 1, tack.f64).fill(0)
    with pytest.raises(BufferError):
        tack.zeros(1).__dlpack__(copy=True)
    with pytest.raises(IndexError):
        tack.zeros(1)[1]
    with pytest.raises(ValueError):
        tack.zeros(0).min()
