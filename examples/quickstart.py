"""Tack in one page: a parallel saxpy, a 2-D stencil, a reduction, a device function.

Run: python examples/quickstart.py   (checks every result against NumPy)
"""

import math

import numpy as np

import tack


@tack.kernel
def saxpy(x, y, a):
    for i in range(len(x)):
        y[i] = a * x[i] + y[i]


@tack.func
def laplacian(u, i, j):
    return u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1] - 4.0 * u[i, j]


@tack.kernel
def diffuse(u, out, alpha):
    for i, j in tack.ndindex(u.shape[0] - 2, u.shape[1] - 2):
        out[i + 1, j + 1] = u[i + 1, j + 1] + alpha * laplacian(u, i + 1, j + 1)


@tack.kernel
def norm(x, partial) -> float:
    for i in range(len(x)):
        tack.atomic_add(partial, 0, x[i] * x[i])
    return math.sqrt(partial[0])


def main():
    rng = np.random.default_rng()
    x_host = rng.random(1_000_003, dtype=np.float32)
    y_host = rng.random(1_000_003, dtype=np.float32)
    x, y = tack.array(x_host), tack.array(y_host)
    saxpy(x, y, 2.5)
    assert np.allclose(y.numpy(), 2.5 * x_host + y_host, rtol=1e-6)
    print("saxpy       ok:", y.shape[0], "elements")

    u_host = rng.random((257, 129), dtype=np.float32)
    u, out = tack.array(u_host), tack.zeros(u_host.shape)
    diffuse(u, out, 0.1)
    lap = (u_host[:-2, 1:-1] + u_host[2:, 1:-1] + u_host[1:-1, :-2] + u_host[1:-1, 2:]
           - 4.0 * u_host[1:-1, 1:-1])
    assert np.allclose(out.numpy()[1:-1, 1:-1], u_host[1:-1, 1:-1] + 0.1 * lap, atol=1e-6)
    print("stencil     ok:", u.shape)

    value = norm(x, tack.zeros(1, tack.f64))
    expected = float(np.sqrt(np.sum(x_host.astype(np.float64) ** 2)))
    assert abs(value - expected) <= 1e-4 * expected
    print(f"norm        ok: {value:.6f}")
    print("vectorized saxpy:", "<8 x float>" in tack.inspect(saxpy, x, y, 2.5,
                                                             mode="optimized"))


if __name__ == "__main__":
    main()
