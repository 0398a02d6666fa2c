"""Kernels the host API runs on an array's device: copies, conversions, fills.

They work on flat one-dimensional scalar views (``Array._scalars()``), so one
variant serves every shape and every vector or matrix element type.
"""

from __future__ import annotations

from .kernel import library_kernel


@library_kernel
def copy_convert(src, dst):
    """dst[i] = src[i], converting with the kernel language's rules."""
    for i in range(len(dst)):
        dst[i] = src[i]


@library_kernel
def fill_value(dst, value):
    """dst[i] = value (the value is already representable in dst's dtype)."""
    for i in range(len(dst)):
        dst[i] = value


@library_kernel
def copy_into(src, dst, offset):
    """dst[offset + i] = src[i], for concatenation."""
    for i in range(len(src)):
        dst[offset + i] = src[i]


@library_kernel
def fill_pattern(dst, pattern):
    """dst[i] = pattern[i % len(pattern)]: fills a vector or matrix array's scalar
    storage with one element's components."""
    for i in range(len(dst)):
        dst[i] = pattern[i % len(pattern)]
