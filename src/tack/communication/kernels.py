"""Tack kernels that move elements on the device: the GPU-aware transport's
gathers into and scatters out of message buffers."""

from __future__ import annotations

from ..runtime.kernel import kernel


@kernel
def gather(values, index, out):
    for i in range(len(index)):
        out[i] = values[index[i]]


@kernel
def scatter(values, index, data):
    for i in range(len(index)):
        values[index[i]] = data[i]
