"""The CPU backend's O3 output vectorizes the loops the performance issue names:
saxpy, a 2-D 5-point stencil and a dot-product style reduction (eight
independent accumulators, which LLVM combines into vector lanes without
reassociating any sum). Arrays are on the CPU explicitly."""

import re

import tack


@tack.kernel
def saxpy(x, y, a):
    for i in range(len(x)):
        y[i] = a * x[i] + y[i]


@tack.kernel
def stencil(u, out):
    for i, j in tack.ndindex(u.shape[0] - 2, u.shape[1] - 2):
        out[i + 1, j + 1] = 0.25 * (u[i, j + 1] + u[i + 2, j + 1] + u[i + 1, j]
                                    + u[i + 1, j + 2])


@tack.kernel
def dot(x, y, partial, chunk):
    for c in range(len(partial)):
        lo = c * chunk
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        s4 = 0.0
        s5 = 0.0
        s6 = 0.0
        s7 = 0.0
        for k in range(chunk // 8):
            i = lo + 8 * k
            s0 += x[i] * y[i]
            s1 += x[i + 1] * y[i + 1]
            s2 += x[i + 2] * y[i + 2]
            s3 += x[i + 3] * y[i + 3]
            s4 += x[i + 4] * y[i + 4]
            s5 += x[i + 5] * y[i + 5]
            s6 += x[i + 6] * y[i + 6]
            s7 += x[i + 7] * y[i + 7]
        partial[c] = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


def _widest_float_vector(text: str) -> int:
    widths = [int(w) for w in re.findall(r"<(\d+) x float>", text)]
    return max(widths, default=0)


def _cpu(*shapes):
    return [tack.zeros(s, device="cpu") for s in shapes]


def test_saxpy_vectorizes():
    x, y = _cpu(4096, 4096)
    assert _widest_float_vector(tack.inspect(saxpy, x, y, 2.0, mode="optimized")) >= 8


def test_stencil_vectorizes():
    u, out = _cpu((64, 64), (64, 64))
    assert _widest_float_vector(tack.inspect(stencil, u, out, mode="optimized")) >= 8


def test_dot_product_reduction_vectorizes():
    x, y, partial = _cpu(4096, 4096, 4)
    text = tack.inspect(dot, x, y, partial, 1024, mode="optimized")
    assert _widest_float_vector(text) >= 8
    assert "reassoc" not in text and " fast " not in text  # no fast-math anywhere
