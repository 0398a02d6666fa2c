"""A 1-D diffusion step with a shared-memory tile, and a tiled reduction, on OpenCL.

Each workgroup of 256 threads loads its slice of the field into shared
memory (one barrier), then every thread reads its neighbours from the tile;
the two halo values come from global memory. The block reduction sums the new
field per workgroup. Both are checked against NumPy.

Run: python examples/workgroup_stencil.py   (needs pyopencl and an OpenCL
driver, e.g. Debian's pocl-opencl-icd, which runs it on the CPU)
"""

import numpy as np

import tack


@tack.kernel
def diffuse_tiled(u, out, alpha):
    for i in range(len(u)):
        tile = tack.shared(256, tack.f32)
        lane = tack.thread_id()
        tile[lane] = u[i]
        tack.barrier()
        left = u[i - 1] if i > 0 else u[i]
        right = u[i + 1] if i < len(u) - 1 else u[i]
        if lane > 0:
            left = tile[lane - 1]
        if lane < 255:
            right = tile[lane + 1]
        out[i] = tile[lane] + alpha * (left - 2.0 * tile[lane] + right)


@tack.kernel
def tile_totals(values, totals):
    for i in range(len(values)):
        total = tack.block_sum(values[i])
        if tack.thread_id() == 0:
            totals[i // 256] = total


def main():
    if not tack.device_count("opencl"):
        print("no OpenCL device: pip install pyopencl, and an OpenCL driver such as "
              "pocl-opencl-icd")
        return
    gpu = tack.device("opencl")
    n = 64 * 256
    u_host = np.random.default_rng().random(n, dtype=np.float32)
    u, out = tack.array(u_host, device=gpu), tack.zeros(n, device=gpu)
    diffuse_tiled(u, out, 0.25)
    padded = np.concatenate([u_host[:1], u_host, u_host[-1:]])
    expected = u_host + 0.25 * (padded[:-2] - 2.0 * u_host + padded[2:])
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, atol=1e-6)
    print(f"tiled stencil ok on {gpu}: {n} points, {n // 256} workgroups")

    totals = tack.zeros(n // 256, device=gpu)
    tile_totals(out, totals)
    np.testing.assert_allclose(totals.numpy(), out.numpy().reshape(-1, 256).sum(1),
                               rtol=1e-4)
    print(f"block reduction ok: total {totals.numpy().sum():.4f}")


if __name__ == "__main__":
    main()
