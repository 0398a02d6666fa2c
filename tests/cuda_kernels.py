"""Kernels the CUDA backend's tests share: test_cuda_backend.py (the fake
driver, real NVRTC) and test_cuda_gpu.py (an NVIDIA GPU)."""

import tack


@tack.kernel
def saxpy(x, y, a):
    for i in range(len(x)):
        y[i] = a * x[i] + y[i]


@tack.kernel
def grid_fill(out, scale, shift):
    for i, j in tack.ndindex(out.shape[0], out.shape[1]):
        out[i, j] = (i * 1000 + j) * scale + shift


@tack.kernel
def mixed(x, y, a, k, b, m):
    for i in range(len(x)):
        y[i] = a * x[i] + b + k * m


@tack.kernel
def int_sum(a, out):
    for i in range(len(a)):
        tack.atomic_add(out, 0, a[i])


@tack.kernel
def extremes(a, out):
    for i in range(len(a)):
        tack.atomic_min(out, 0, a[i])
        tack.atomic_max(out, 1, a[i])


@tack.kernel
def doubled_plus(a) -> float:
    for i in range(len(a)):
        a[i] = a[i] * 2.0
    return a[0] + 0.25


@tack.kernel
def block_sums(x, sums):
    for i in range(len(x)):
        s = tack.block_sum(x[i])
        if tack.thread_id() == 0:
            sums[i // 256] = s


@tack.kernel
def printing(a):
    for i in range(len(a)):
        print(a[i])


@tack.kernel
def read_next(a, out):
    for i in range(len(out)):
        out[i] = a[i + 1]


@tack.kernel
def add_scalar(a, v):
    for i in range(len(a)):
        a[i] = a[i] + v
