"""Regression: ``a[()]`` (an empty index tuple) crashed lowering with an
internal ``IndexError: list index out of range``; it is now rejected as
unsupported syntax, in loads, stores, augmented stores and atomics (also in
debug mode, where the access goes through the bounds check)."""

import re

import pytest

import tack


@tack.kernel
def k_load(a, b):
    for i in range(len(a)):
        b[i] = a[()]


@tack.kernel
def k_store(a, b):
    for i in range(len(a)):
        a[()] = b[i]


@tack.kernel
def k_aug(a, b):
    for i in range(len(a)):
        a[()] += b[i]


@tack.kernel
def k_atomic(a, b):
    for i in range(len(a)):
        tack.atomic_add(a, (), b[i])


@pytest.mark.parametrize("kernel, column",
                         [(k_load, 16), (k_store, 9), (k_aug, 9), (k_atomic, 9)])
@pytest.mark.parametrize("debug", [False, True])
def test_empty_index_is_rejected(kernel, column, debug):
    a = tack.zeros(3, dtype=tack.f32)
    b = tack.ones(3, dtype=tack.f32)
    message = (f"Kernel '{kernel.__name__}': unsupported array access without an index "
               f"at line 4, column {column}")
    saved = tack.debug_enabled()
    tack.set_debug(debug)
    try:
        with pytest.raises(tack.UnsupportedSyntaxError, match=re.escape(message)) as info:
            kernel(a, b)
    finally:
        tack.set_debug(saved)
    assert str(info.value) == message
    assert (a.numpy() == 0).all() and (b.numpy() == 1).all()
