"""Tack's block communication against the same messages in hand-written mpi4py.

    mpiexec -n 4 python benchmarks/comm_peers.py [--quick]

Three comparisons, each on one block per rank and run side by side in one
process (Tack and the hand-written code take turns, so drift hits both):

* ``exchange``: every block sends one f64 array to each of its two ring
  neighbours. The hand-written peer posts ``Irecv`` into new NumPy arrays and
  ``Isend`` of the arrays themselves (exchange also returns new arrays).
* ``Plan.run``: the same two messages, as a halo update: each rank gathers the
  elements of an index array into a preallocated buffer, sends it, and
  scatters what arrives. The peer does the same with ``np.take``/``np.put`` on
  preallocated buffers.
* ``sort_by_key``: 2M random i64 keys per rank against a NumPy + mpi4py
  sample sort (local sort, regular samples, splitters, ``Alltoallv``, merge).

Times are the slowest rank's, medians over the repeats, each repeat one call
after a barrier (a call's latency). The ``back to back`` rows time 200
exchanges in a row instead, as a time stepper makes them: the ranks do not
wait for each other between calls, so the per-call overheads add up. Ratios are printed
last: time ratios (Tack / peer; targets <= 1.2 at 1 MiB and above, <= 2 at
1 KiB) and the sort's throughput ratio (target >= 1).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from mpi4py import MPI

import tack

SIZES = [1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 22, 1 << 24]
SORT_KEYS = 2_000_000


def timed(comm, fn) -> float:
    comm.Barrier()
    start = time.perf_counter()
    fn()
    elapsed = time.perf_counter() - start
    return comm.allreduce(elapsed, op=MPI.MAX)


def side_by_side(comm, tack_fn, peer_fn, repeats) -> tuple:
    for _ in range(2):                        # warm both up
        tack_fn(), peer_fn()
    ours, theirs = [], []
    for _ in range(repeats):
        ours.append(timed(comm, tack_fn))
        theirs.append(timed(comm, peer_fn))
    return statistics.median(ours), statistics.median(theirs)


def back_to_back(comm, tack_fn, peer_fn, rounds, calls=200) -> tuple:
    """Median per-call times of ``calls`` calls in a row, the two taking turns."""
    def per_call(fn):
        comm.Barrier()
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return comm.allreduce((time.perf_counter() - start) / calls, op=MPI.MAX)
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(per_call(tack_fn))
        theirs.append(per_call(peer_fn))
    return statistics.median(ours), statistics.median(theirs)


def ring(comm):
    rank, size = comm.Get_rank(), comm.Get_size()
    return (rank - 1) % size, (rank + 1) % size


# -- exchange ---------------------------------------------------------------------------

def bench_exchange(comm, blocks, nbytes, repeats):
    n = nbytes // 8
    left, right = ring(comm)
    mine = blocks.local.start
    data = {d: np.random.default_rng(d).standard_normal(n) for d in (left, right)}
    arrays = {d: tack.array(v) for d, v in data.items()}
    messages = {mine: {left: {"x": arrays[left]}, right: {"x": arrays[right]}}}
    peer = comm.Dup()

    def with_tack():
        return blocks.exchange(messages)

    def by_hand():
        got = {s: np.empty(n) for s in {left, right}}
        requests = [peer.Irecv(got[s], s, 7) for s in got]
        requests += [peer.Isend(data[d], d, 7) for d in {left, right}]
        MPI.Request.Waitall(requests)
        return got

    check = with_tack()
    for s, message in check[mine].items():
        want = np.random.default_rng(mine).standard_normal(n)
        assert np.array_equal(message["x"].numpy(), want)
    result = side_by_side(comm, with_tack, by_hand, repeats)
    if nbytes <= 1 << 14:
        result += back_to_back(comm, with_tack, by_hand, max(3, repeats // 20))
    peer.Free()
    return result


# -- Plan.run ---------------------------------------------------------------------------

def bench_plan(comm, blocks, nbytes, repeats):
    n = nbytes // 8
    left, right = ring(comm)
    mine = blocks.local.start
    # a field of 4n elements: the first n go left, the next n right; the last two
    # quarters are the ghosts (from the right neighbour, then from the left)
    send = {left: np.arange(0, n), right: np.arange(n, 2 * n)}
    recv = {right: np.arange(2 * n, 3 * n), left: np.arange(3 * n, 4 * n)}
    if left == right:                       # two ranks: one message each way
        send = {left: np.arange(0, 2 * n)}
        recv = {left: np.arange(2 * n, 4 * n)}
    plan = tack.Plan(blocks, {mine: send}, {mine: recv})
    field = tack.array(np.random.default_rng(mine).standard_normal(4 * n))
    values = {mine: field}
    host = np.random.default_rng(mine).standard_normal(4 * n)
    peer = comm.Dup()
    out = {d: np.empty(len(i)) for d, i in send.items()}
    into = {s: np.empty(len(i)) for s, i in recv.items()}

    def with_tack():
        plan.run(values)

    def by_hand():
        requests = [peer.Irecv(into[s], s, 9) for s in recv]
        for d, index in send.items():
            np.take(host, index, out=out[d], mode="clip")
        requests += [peer.Isend(out[d], d, 9) for d in send]
        MPI.Request.Waitall(requests)
        for s, index in recv.items():
            np.put(host, index, into[s], mode="clip")

    result = side_by_side(comm, with_tack, by_hand, repeats)
    assert np.array_equal(field.numpy(), host)     # the same halo update happened
    plan.free()
    peer.Free()
    return result


# -- sort -------------------------------------------------------------------------------

def sample_sort(comm, keys: np.ndarray) -> np.ndarray:
    """The peer: a regular-sampling sample sort in NumPy and mpi4py."""
    size = comm.Get_size()
    local = np.sort(keys)
    if size == 1:
        return local
    picks = local[np.linspace(0, len(local) - 1, size * 4).astype(np.int64)]
    samples = np.sort(np.concatenate(comm.allgather(picks)))
    splitters = samples[np.arange(1, size) * len(samples) // size]
    cuts = np.searchsorted(local, splitters, "right")
    counts = np.diff(np.concatenate([[0], cuts, [len(local)]])).astype(np.int64)
    incoming = np.empty(size, np.int64)
    comm.Alltoall(counts, incoming)
    out = np.empty(int(incoming.sum()), local.dtype)
    send_offsets = np.concatenate([[0], np.cumsum(counts)[:-1]])
    recv_offsets = np.concatenate([[0], np.cumsum(incoming)[:-1]])
    comm.Alltoallv([local, counts, send_offsets, MPI.INT64_T],
                   [out, incoming, recv_offsets, MPI.INT64_T])
    out.sort()
    return out


def bench_sort(comm, blocks, repeats):
    rank = comm.Get_rank()
    keys = np.random.default_rng(rank).integers(-2**62, 2**62, SORT_KEYS)
    mine = blocks.local.start
    given = {mine: tack.array(keys)}
    peer = comm.Dup()
    got = blocks.sort_by_key(given)[mine].numpy()
    everything = np.concatenate(comm.allgather(got))
    assert np.all(everything[:-1] <= everything[1:])
    assert everything.size == SORT_KEYS * comm.Get_size()
    result = side_by_side(comm, lambda: blocks.sort_by_key(given),
                          lambda: sample_sort(peer, keys), repeats)
    peer.Free()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    quick = parser.parse_args().quick
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    world = tack.World(comm)
    blocks = tack.Blocks(["cpu"], world)
    rows = []

    def report(label, ours, theirs):
        rows.append((label, ours, theirs))
        if rank == 0:
            print(f"{label:<28} tack {ours * 1e6:11.1f} us   mpi4py {theirs * 1e6:11.1f} us",
                  flush=True)

    if rank == 0:
        print(f"{size} ranks, MPI: {MPI.Get_library_version().splitlines()[0]}")
    sizes = SIZES[:4] if quick else SIZES
    for nbytes in sizes:
        repeats = 200 if nbytes <= 1 << 17 else 30 if nbytes <= 1 << 20 else 10
        if quick:
            repeats = max(5, repeats // 10)
        times = bench_exchange(comm, blocks, nbytes, repeats)
        report(f"exchange {label_of(nbytes)}", *times[:2])
        if len(times) > 2:
            report(f"  back to back {label_of(nbytes)}", *times[2:])
    for nbytes in sizes:
        repeats = 200 if nbytes <= 1 << 17 else 30 if nbytes <= 1 << 20 else 10
        if quick:
            repeats = max(5, repeats // 10)
        report(f"Plan.run {label_of(nbytes)}", *bench_plan(comm, blocks, nbytes, repeats))
    ours, theirs = bench_sort(comm, blocks, 2 if quick else 5)
    report(f"sort_by_key {size} x {SORT_KEYS // 10**6}M i64", ours, theirs)
    if rank == 0:
        print("\nratios (tack / mpi4py time; for the sort, tack / sample sort throughput)")
        for label, ours, theirs in rows:
            if label.startswith("sort"):
                print(f"{label:<28} throughput x{theirs / ours:5.2f}   (target >= 1.0)")
            else:
                target = 2.0 if "KiB" in label and label.split()[-1] == "1KiB" else \
                    1.2 if "MiB" in label else None
                note = f"(target <= {target})" if target else ""
                print(f"{label:<28} time x{ours / theirs:5.2f}   {note}")
    world.free()


def label_of(nbytes: int) -> str:
    return f"{nbytes >> 20}MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10}KiB"


if __name__ == "__main__":
    main()
