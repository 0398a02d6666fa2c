"""Regression: an integer literal outside 64 bits (``2**64 + 1``) was kept as
a weak u64 and silently wrapped to ``1``; like a Python ``int`` argument
outside 64 bits it is now a ``TypeError``. Literals up to ``2**64 - 1`` and
down to ``-2**63`` still work, and ``2 ** 200`` is an integer power, which
wraps as documented."""

import re

import numpy as np
import pytest

import tack


@tack.kernel
def k_big(b):
    for i in range(len(b)):
        b[i] = 18446744073709551617


@tack.kernel
def k_limits(b):
    for i in range(len(b)):
        b[i] = 18446744073709551615 - i - (-9223372036854775808 + 9223372036854775807) + 2 ** 200


def test_literal_outside_64_bits_is_a_type_error():
    b = tack.zeros(3, dtype=tack.u64)
    message = ("Kernel 'k_big': integer literal 18446744073709551617 is outside the "
               "64-bit range at line 4, column 16")
    with pytest.raises(TypeError, match=re.escape(message)):
        k_big(b)
    assert (b.numpy() == 0).all()


@pytest.mark.parametrize("n", [0, 1, 5])
def test_literals_at_the_64_bit_limits(n):
    b = tack.zeros(n, dtype=tack.u64)
    k_limits(b)
    expected = np.array([(2 ** 64 - 1 - i + 1) % 2 ** 64 for i in range(n)], dtype=np.uint64)
    np.testing.assert_array_equal(b.numpy(), expected)
