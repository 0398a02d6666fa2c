"""Tack kernels that move elements on the device: the GPU-aware transport's
gathers into and scatters out of message buffers."""

from __future__ import annotations

from ..runtime.kernel import library_kernel


@library_kernel
def gather(values, index, out):
    for i in range(len(index)):
        out[i] = values[index[i]]


@library_kernel
def scatter(values, index, data):
    for i in range(len(index)):
        values[index[i]] = data[i]
