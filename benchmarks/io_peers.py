"""tack.io's checkpoints against the same file written and read by hand with
h5py and mpi4py.

    mpiexec -n 4 python benchmarks/io_peers.py [--quick] [--dir DIR]

Every rank holds two blocks, each with two f64 fields. The hand-written peer
does what ``tack.io`` does: every other rank sends each array to rank 0
(``Send``/``Recv``, one array at a time), which writes one dataset per array
into one HDF5 file (``save``); rank 0 reads each dataset and sends it to its
rank (``load``). Tack's calls add the agreements that make a mistake raise
on every rank, the element-type attributes and the partial file's rename.
The two take turns, the files go to one directory (``--dir``, default a
temporary one: put it on the file system a job would use), and times are the
slowest rank's medians. Ratios are time ratios (Tack / by hand).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

import h5py
import numpy as np
from mpi4py import MPI

import tack

BLOCKS_PER_RANK, FIELDS = 2, ("u", "v")


def by_hand_save(comm, path, blocks, host):
    rank = comm.Get_rank()
    if rank != 0:
        for gid in blocks.local:
            for name in FIELDS:
                comm.Send(host[gid][name], 0, 5)
        return
    with h5py.File(path, "w") as f:
        for gid in range(blocks.count):
            owner = blocks.rank_of(gid)
            for name in FIELDS:
                if owner == 0:
                    data = host[gid][name]
                else:
                    data = np.empty_like(host[blocks.local.start][name]) if len(
                        blocks.local) else None
                    comm.Recv(data, owner, 5)
                f.create_dataset(f"blocks/{gid}/{name}", data=data)


def by_hand_load(comm, path, blocks, like):
    rank, out = comm.Get_rank(), {}
    if rank != 0:
        for gid in blocks.local:
            out[gid] = {}
            for name in FIELDS:
                out[gid][name] = np.empty_like(like)
                comm.Recv(out[gid][name], 0, 6)
        return out
    with h5py.File(path, "r") as f:
        for gid in range(blocks.count):
            owner = blocks.rank_of(gid)
            for name in FIELDS:
                data = f[f"blocks/{gid}/{name}"][()]
                if owner == 0:
                    out.setdefault(gid, {})[name] = data
                else:
                    comm.Send(data, owner, 6)
    return out


def slowest(comm, fn) -> float:
    comm.Barrier()
    start = time.perf_counter()
    fn()
    return comm.allreduce(time.perf_counter() - start, op=MPI.MAX)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="one size, fewer repeats")
    parser.add_argument("--dir", help="where the files go (default: a temporary directory)")
    options = parser.parse_args()
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    folder = comm.bcast((options.dir or tempfile.mkdtemp(prefix="tack_io_bench_"))
                        if rank == 0 else None)
    world = tack.World(comm)
    blocks = tack.Blocks(["cpu"] * BLOCKS_PER_RANK, world)
    sizes = [1 << 20] if options.quick else [1 << 16, 1 << 20, 1 << 23]
    repeats = 3 if options.quick else 7
    rows = []
    for nbytes in sizes:
        n = nbytes // 8
        rng = np.random.default_rng(rank)
        host = {g: {f: rng.standard_normal(n) for f in FIELDS} for g in blocks.local}
        arrays = {g: {f: tack.array(a) for f, a in named.items()} for g, named in host.items()}
        ours, theirs = os.path.join(folder, "tack.h5"), os.path.join(folder, "hand.h5")
        times = {"tack save": [], "hand save": [], "tack load": [], "hand load": []}
        for _ in range(repeats):
            times["tack save"].append(slowest(comm, lambda: tack.io.save(ours, blocks, arrays)))
            times["hand save"].append(slowest(comm, lambda: by_hand_save(comm, theirs, blocks,
                                                                         host)))
            times["tack load"].append(slowest(comm, lambda: tack.io.load(ours, blocks)))
            times["hand load"].append(slowest(comm, lambda: by_hand_load(
                comm, theirs, blocks, host[blocks.local.start]["u"])))
        got, _ = tack.io.load(ours, blocks)
        assert all(np.array_equal(got[g][f].numpy(), host[g][f]) for g in blocks.local
                   for f in FIELDS)
        med = {k: statistics.median(v) for k, v in times.items()}
        total = nbytes * len(FIELDS) * blocks.count
        rows.append((nbytes, total, med))
        if rank == 0:
            print(f"{nbytes >> 10:>6} KiB arrays, {total / 2**20:8.1f} MiB in all: "
                  + "  ".join(f"{k} {v * 1e3:8.2f} ms" for k, v in med.items()), flush=True)
    if rank == 0:
        print(f"\n{comm.Get_size()} ranks; ratios (tack / by hand time)")
        for nbytes, total, med in rows:
            print(f"{nbytes >> 10:>6} KiB arrays: save x{med['tack save'] / med['hand save']:5.2f}"
                  f"   load x{med['tack load'] / med['hand load']:5.2f}"
                  f"   (save {total / med['tack save'] / 2**20:7.1f} MiB/s)")
        if not options.dir:
            shutil.rmtree(folder)
    world.free()


if __name__ == "__main__":
    main()
