"""Regression: a float constant in the parallel loop's range (``range(2.5)``,
``range(1.0 * n)``, ``range(math.pi)``) was truncated on the host with
``int()`` and the loop ran; Python raises ``TypeError``, and a float scalar
parameter in a range already did. It is now a ``TypeError`` too."""

import math
import re

import pytest

import tack


@tack.kernel
def k_literal(b):
    for i in range(2.5):
        b[i] = 1


@tack.kernel
def k_product(b, n):
    for i in range(1.0 * n):
        b[i] = 1


@tack.kernel
def k_pi(b):
    for i in range(math.pi):
        b[i] = 1


@tack.kernel
def k_local(b):
    h = 2.0
    for i, j in tack.ndindex(len(b), h):
        b[i] = 1


@pytest.mark.parametrize("kernel, args, value, line, column", [
    (k_literal, (), "2.5", 3, 14), (k_product, (3,), "1.0", 3, 14),
    (k_pi, (), repr(math.pi), 3, 14), (k_local, (), "2.0", 4, 17)])
def test_float_constant_in_range_is_a_type_error(kernel, args, value, line, column):
    b = tack.zeros(4, dtype=tack.i32)
    message = (f"Kernel '{kernel.__name__}': the parallel loop's range uses the float "
               f"{value}; ranges take integers at line {line}, column {column}")
    with pytest.raises(TypeError, match=re.escape(message)):
        kernel(b, *args)
    assert (b.numpy() == 0).all()
