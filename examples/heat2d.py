"""2-D heat diffusion on a grid of blocks, ghost layers kept up to date by a Plan.

    python examples/heat2d.py                           # one process, every block
    mpiexec -n 4 python -m mpi4py examples/heat2d.py    # the same blocks, 4 ranks
    mpiexec -n 3 python -m mpi4py examples/heat2d.py --save-at 120 --checkpoint c.h5
    python examples/heat2d.py --checkpoint c.h5         # restart: steps 120 to 200

The domain is BX x BY blocks of NX x NY cells (the same blocks whatever the
number of ranks), zero temperature outside. Every step runs the plan (each
block's edge cells go to its neighbours' ghost cells) and then a Tack kernel
for the 5-point stencil. The checksum is an all_reduce over blocks, which
combines in order of block id, so both launches print the same bits.

With ``--checkpoint FILE`` the run starts from FILE where it exists (``tack.io``,
needs h5py), on any number of ranks; with ``--save-at STEP`` too, it writes its
blocks and step number to FILE at that step and stops. A chain of jobs, each
starting where the last stopped, ends with the same checksum bits as a run
without a stop.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

import tack

BX, BY, NX, NY = 4, 2, 48, 40        # blocks and cells per block
STEPS, ALPHA = 200, 0.2


@tack.kernel
def diffuse(u, out, alpha):
    for i, j in tack.ndindex(u.shape[0] - 2, u.shape[1] - 2):
        c = u[i + 1, j + 1]
        out[i + 1, j + 1] = c + alpha * (u[i, j + 1] + u[i + 2, j + 1] + u[i + 1, j]
                                         + u[i + 1, j + 2] - 4.0 * c)


@tack.kernel
def row_sums(u, sums):
    for i in range(sums.shape[0]):
        s = 0.0
        for j in range(u.shape[1] - 2):
            s += u[i + 1, j + 1]
        sums[i] = s


LAUNCHERS = ("PMI_SIZE", "PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE")


def world_from_launch():
    """World(MPI.COMM_WORLD) under mpiexec or srun, else World() with no MPI at all."""
    if any(k in os.environ for k in LAUNCHERS):
        from mpi4py import MPI
        return tack.World(MPI.COMM_WORLD)
    return tack.World()


def my_blocks(world):
    """Block ids are fixed; rank r takes a contiguous share of them."""
    total = BX * BY
    share = [total // world.size + (r < total % world.size) for r in range(world.size)]
    return tack.Blocks(["cpu"] * share[world.rank], world)


def halo_plan(blocks):
    """Faces only (the stencil has no diagonal terms); flat indices into the
    (NY + 2) x (NX + 2) arrays, ghost ring included."""
    width = NX + 2

    def cells(rows, cols):
        return np.array([r * width + c for r in rows for c in cols], np.int64)
    edge = {(-1, 0): cells(range(1, NY + 1), [1]), (1, 0): cells(range(1, NY + 1), [NX]),
            (0, -1): cells([1], range(1, NX + 1)), (0, 1): cells([NY], range(1, NX + 1))}
    ghost = {(-1, 0): cells(range(1, NY + 1), [0]),
             (1, 0): cells(range(1, NY + 1), [NX + 1]),
             (0, -1): cells([0], range(1, NX + 1)), (0, 1): cells([NY + 1], range(1, NX + 1))}
    sends, receives = {}, {}
    for g in blocks.local:
        i, j = g % BX, g // BX
        sends[g], receives[g] = {}, {}
        for (dx, dy) in edge:
            if 0 <= i + dx < BX and 0 <= j + dy < BY:
                other = (i + dx) + (j + dy) * BX
                sends[g][other] = edge[dx, dy]
                receives[g][other] = ghost[dx, dy]
    return tack.Plan(blocks, sends, receives)


def initial(g):
    """A warm spot off the centre, from global coordinates."""
    i, j = g % BX, g // BX
    y = (np.arange(-1, NY + 1) + j * NY + 0.5) / (BY * NY)
    x = (np.arange(-1, NX + 1) + i * NX + 0.5) / (BX * NX)
    field = np.exp(-60 * ((x[None, :] - 0.4) ** 2 + (y[:, None] - 0.55) ** 2))
    field[[0, -1], :] = 0.0
    field[:, [0, -1]] = 0.0
    return field


def check_against_numpy(u):
    """One process holds every block: compare with the whole grid in NumPy."""
    whole = np.zeros((BY * NY + 2, BX * NX + 2))
    for g in range(BX * BY):
        i, j = g % BX, g // BX
        whole[1 + j * NY:1 + (j + 1) * NY, 1 + i * NX:1 + (i + 1) * NX] = \
            initial(g)[1:-1, 1:-1]
    for _ in range(STEPS):
        c = whole[1:-1, 1:-1]
        lap = whole[:-2, 1:-1] + whole[2:, 1:-1] + whole[1:-1, :-2] + whole[1:-1, 2:] - 4 * c
        whole[1:-1, 1:-1] = c + ALPHA * lap
    for g in range(BX * BY):
        i, j = g % BX, g // BX
        mine = u[g].numpy()[1:-1, 1:-1]
        theirs = whole[1 + j * NY:1 + (j + 1) * NY, 1 + i * NX:1 + (i + 1) * NX]
        assert np.allclose(mine, theirs, rtol=1e-12, atol=1e-14), f"block {g} differs"
    print("heat2d: matches NumPy on the whole grid")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", help="start from this file where it exists; "
                        "with --save-at, save to it")
    parser.add_argument("--save-at", type=int, help="save the checkpoint at this step "
                        "and stop")
    options = parser.parse_args()
    if options.save_at is not None and not options.checkpoint:
        parser.error("--save-at needs --checkpoint FILE to save to")
    if options.save_at is not None and not 0 <= options.save_at < STEPS:
        parser.error(f"--save-at takes a step from 0 to {STEPS - 1}")
    world = world_from_launch()
    blocks = my_blocks(world)
    plan = halo_plan(blocks)
    step = 0
    # rank 0's file system decides (the ranks of a job share one)
    if options.checkpoint and world.allgather(os.path.exists(options.checkpoint))[0]:
        fields, attrs = tack.io.load(options.checkpoint, blocks)
        u, step = {g: fields[g]["u"] for g in blocks.local}, attrs["step"]
        if world.rank == 0:
            print(f"heat2d: starting from step {step} of {options.checkpoint}")
        if options.save_at is not None and options.save_at < step:
            parser.error(f"{options.checkpoint} holds step {step}, past --save-at "
                         f"{options.save_at}: nothing to save (remove the file to start "
                         f"again)")
    else:
        u = {g: tack.array(initial(g)) for g in blocks.local}
    v = {g: tack.zeros((NY + 2, NX + 2), tack.f64) for g in blocks.local}
    for step in range(step, STEPS):
        if step == options.save_at:
            tack.io.save(options.checkpoint, blocks, {g: {"u": u[g]} for g in blocks.local},
                         {"step": step})
            if world.rank == 0:
                print(f"heat2d: saved step {step} to {options.checkpoint}")
            break
        plan.run(u)
        for g in blocks.local:
            diffuse(u[g], v[g], ALPHA)
        u, v = v, u
    else:
        report(world, blocks, u)
    plan.free()
    world.free()


def report(world, blocks, u):
    sums = {g: tack.zeros(NY, tack.f64) for g in blocks.local}
    for g in blocks.local:
        row_sums(u[g], sums[g])
    rows = blocks.all_reduce(sums).numpy()          # in order of block id
    heat = float(np.add.reduce(rows))
    hottest = blocks.all_reduce({g: float(u[g].max()) for g in blocks.local}, "max")
    if world.size == 1:
        check_against_numpy(u)
    if world.rank == 0:
        print(f"heat2d: {blocks.count} blocks on {world.size} rank(s), {STEPS} steps")
        print(f"total heat {heat:.12f}  hottest {hottest:.12f}")
        print(f"checksum {heat.hex()} {hottest.hex()}")


if __name__ == "__main__":
    main()
