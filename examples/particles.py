"""Particles advected through a periodic box of blocks, migrated with Routing.

    python examples/particles.py                           # one process, every block
    mpiexec -n 4 python -m mpi4py examples/particles.py    # the same blocks, 4 ranks

The unit square is cut into BX x BY boxes, one block each. Every step a Tack
kernel moves each block's particles in a swirling flow (wrapping around the
edges); a Routing then finds each particle's new block and sends its position
and id there, in order of origin block and then of particle, so the state and
the printed checksum have the same bits for any number of ranks. At the end
the particle count is checked against the start, and sort_by_key shows that
every id is present exactly once.
"""

from __future__ import annotations

import math
import os

import numpy as np

import tack

BX, BY = 4, 2
PER_BLOCK, STEPS, DT = 500, 40, 0.01
LAUNCHERS = ("PMI_SIZE", "PMI_RANK", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE")


@tack.kernel
def advect(pos, dt):
    for i in range(pos.shape[0]):
        x = pos[i, 0]
        y = pos[i, 1]
        u = 0.3 - 6.283185307179586 * (y - 0.5) + 0.1 * math.sin(6.283185307179586 * x)
        v = 6.283185307179586 * (x - 0.5)
        x = x + dt * u
        y = y + dt * v
        pos[i, 0] = x - math.floor(x)
        pos[i, 1] = y - math.floor(y)


def world_from_launch():
    if any(k in os.environ for k in LAUNCHERS):
        from mpi4py import MPI
        return tack.World(MPI.COMM_WORLD)
    return tack.World()


def box(g):
    i, j = g % BX, g // BX
    return (i / BX, j / BY), ((i + 1) / BX, (j + 1) / BY)


def start(g):
    """PER_BLOCK particles in block g's box, from a seed of the block id."""
    (x0, y0), (x1, y1) = box(g)
    rng = np.random.default_rng(g)
    pos = np.column_stack([rng.uniform(x0, x1, PER_BLOCK), rng.uniform(y0, y1, PER_BLOCK)])
    return pos, g * PER_BLOCK + np.arange(PER_BLOCK, dtype=np.int64)


def main():
    world = world_from_launch()
    total = BX * BY
    share = [total // world.size + (r < total % world.size) for r in range(world.size)]
    blocks = tack.Blocks(["cpu"] * share[world.rank], world)
    bounds = {g: box(g) for g in blocks.local}
    pos, ids = {}, {}
    for g in blocks.local:
        p, i = start(g)
        pos[g], ids[g] = tack.array(p), tack.array(i)
    count = blocks.all_reduce({g: len(ids[g]) for g in blocks.local})
    moved = 0
    for _ in range(STEPS):
        for g in blocks.local:
            advect(pos[g], DT)
        routing = tack.Routing(blocks, bounds, pos)
        moved += blocks.all_reduce({g: int(np.count_nonzero(
            routing.destination[g].numpy() != g)) for g in blocks.local})
        arrived = routing.send({g: {"pos": pos[g], "id": ids[g]} for g in blocks.local})
        pos = {g: arrived[g]["pos"] for g in blocks.local}
        ids = {g: arrived[g]["id"] for g in blocks.local}
    final = blocks.all_reduce({g: len(ids[g]) for g in blocks.local})
    assert final == count, f"particles lost: {count} at the start, {final} at the end"
    # every id is present once: sorted across blocks, they must count 0, 1, 2, ...
    ordered = blocks.sort_by_key(ids)
    first = blocks.exclusive_scan({g: ordered[g].size for g in blocks.local})
    for g in blocks.local:
        assert np.array_equal(ordered[g].numpy(), first[g] + np.arange(ordered[g].size))
    for g in blocks.local:      # every particle sits in its block's box
        (x0, y0), (x1, y1) = box(g)
        p = pos[g].numpy()
        assert np.all((p >= (x0, y0)) & (p <= (x1, y1))), f"block {g}"
    checksum = blocks.all_reduce({g: float(np.add.reduce(pos[g].numpy(), axis=None))
                                  for g in blocks.local})
    spread = blocks.all_gather({g: len(ids[g]) for g in blocks.local})
    if world.rank == 0:
        print(f"particles: {count} particles, {blocks.count} blocks on {world.size} "
              f"rank(s), {STEPS} steps, {moved} moves between blocks")
        print(f"per block at the end: {[spread[g] for g in range(blocks.count)]}")
        print(f"count conserved: {final} == {count}")
        print(f"checksum {checksum.hex()}")
    world.free()


if __name__ == "__main__":
    main()
