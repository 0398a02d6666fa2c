"""Tack kernels that move elements on the device: the gathers into and
scatters out of message buffers of ``Plan`` and the GPU-aware transport."""

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


@library_kernel
def scatter_add(values, index, data):
    for i in range(len(index)):   # no index twice: no two iterations meet
        values[index[i]] += data[i]


@library_kernel
def scatter_add_in_order(values, index, data):
    for _ in range(1):   # an index may come twice: one iteration, in order
        for i in range(len(index)):
            values[index[i]] += data[i]
