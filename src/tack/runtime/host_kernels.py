"""Kernels the host API runs on an array's device: copies, conversions, fills.

They work on flat one-dimensional views, so one variant serves every shape.
"""

from __future__ import annotations

from .kernel import kernel


@kernel
def copy_convert(src, dst):
    """dst[i] = src[i], converting with the kernel language's rules."""
    for i in range(len(dst)):
        dst[i] = src[i]


@kernel
def fill_value(dst, value):
    """dst[i] = value (the value is already representable in dst's dtype)."""
    for i in range(len(dst)):
        dst[i] = value


@kernel
def copy_into(src, dst, offset):
    """dst[offset + i] = src[i], for concatenation."""
    for i in range(len(src)):
        dst[offset + i] = src[i]
