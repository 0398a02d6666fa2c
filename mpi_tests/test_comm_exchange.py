"""Blocks.exchange across ranks: empty, self, many-to-one and mixed messages."""

import numpy as np
import tack
from commtest import blocks_for, layouts, main

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.uint64, np.int16]
SHAPES = [(0,), (1,), (7,), (3, 5), (), (0, 4), (1000,)]


def global_messages(rng, total):
    """``{src: {dst: {name: ndarray}}}`` for the whole world, the same on every rank."""
    out = {}
    for src in range(total):
        out[src] = {}
        for dst in rng.choice(total, size=rng.integers(0, total + 1), replace=False):
            names = {}
            for k in range(rng.integers(0, 4)):      # 0 names: an empty message
                shape = SHAPES[rng.integers(len(SHAPES))]
                dtype = DTYPES[rng.integers(len(DTYPES))]
                names[f"n{k}_{rng.integers(100)}"] = (rng.standard_normal(shape) * 100
                                                      ).astype(dtype)
            out[src][int(dst)] = names
    return out


def check_received(blocks, sent, got):
    assert sorted(got) == list(blocks.local), (sorted(got), blocks.local)
    for dst in blocks.local:
        want_sources = [s for s in sorted(sent) if dst in sent[s]]
        assert list(got[dst]) == want_sources, (dst, list(got[dst]), want_sources)
        for src in want_sources:
            names = sent[src][dst]
            assert list(got[dst][src]) == list(names), (src, dst)
            for name, values in names.items():
                array = got[dst][src][name]
                assert isinstance(array, tack.Array)
                assert array.shape == values.shape and array.dtype.numpy == values.dtype
                assert array.device == blocks.device(dst)
                np.testing.assert_array_equal(array.numpy(), values, f"{src}->{dst} {name}")


def local_part(blocks, sent):
    return {s: {d: {n: tack.array(v) for n, v in m.items()} for d, m in sent[s].items()}
            for s in blocks.local}


def run_patterns(comm, rng, gpu_aware):
    size = comm.Get_size()
    for counts in layouts(size):
        total = sum(counts)
        blocks, world = blocks_for(comm, counts, tack.World(comm, gpu_aware=gpu_aware))
        for _ in range(3):
            sent = global_messages(rng, total)
            check_received(blocks, sent, blocks.exchange(local_part(blocks, sent)))
        world.free()


def test_random_patterns(comm, rng):
    run_patterns(comm, rng, False)


def test_random_patterns_gpu_aware(comm, rng):
    run_patterns(comm, rng, True)


def test_many_to_one_and_empty(comm, rng):
    size = comm.Get_size()
    for counts in layouts(size):
        total = sum(counts)
        blocks, world = blocks_for(comm, counts)
        sent = {s: {0: {"v": np.full(s + 1, s, np.int64),
                        "w": rng.standard_normal((2, s)).astype(np.float32)}}
                for s in range(total)}
        check_received(blocks, sent, blocks.exchange(local_part(blocks, sent)))
        nothing = blocks.exchange({})                       # nobody sends anything
        assert nothing == {g: {} for g in blocks.local}
        zero = {s: {(s + 1) % total: {"z": np.zeros(0, np.float64)}} for s in range(total)}
        check_received(blocks, zero, blocks.exchange(local_part(blocks, zero)))
        world.free()


def test_same_rank_delivers_the_array_itself(comm, rng):
    counts = [2] * comm.Get_size()
    blocks, world = blocks_for(comm, counts)
    mine = {g: tack.array(rng.standard_normal(4)) for g in blocks.local}
    first, second = blocks.local.start, blocks.local.start + 1
    got = blocks.exchange({first: {first: {"a": mine[first]}, second: {"b": mine[first]}}})
    assert got[first][first]["a"] is mine[first]
    assert got[second][first]["b"] is mine[first]
    world.free()


def test_pattern_changes_between_calls(comm, rng):
    """The header cache: same pattern twice, then new shapes, then the first again."""
    size = comm.Get_size()
    blocks, world = blocks_for(comm, [1 + r % 2 for r in range(size)])
    total = blocks.count
    for n in (5, 5, 9, 5, 0, 5):
        sent = {s: {(s + 1) % total: {"x": rng.standard_normal(n)}} for s in range(total)}
        check_received(blocks, sent, blocks.exchange(local_part(blocks, sent)))
    world.free()


def test_large_arrays_several_per_pair(comm, rng):
    size = comm.Get_size()
    blocks, world = blocks_for(comm, [2] * size)
    total = blocks.count
    sent = {s: {(s + 3) % total: {"big": rng.standard_normal(300_000),
                                  "small": rng.integers(0, 9, 3).astype(np.int32)},
                (s + 1) % total: {"one": rng.standard_normal(200_000).astype(np.float32)}}
            for s in range(total)}
    check_received(blocks, sent, blocks.exchange(local_part(blocks, sent)))
    world.free()


def test_gpu_aware_staging_when_mpi_may_not_take_the_buffers(comm, rng):
    # A backend whose buffers MPI may not be handed (CUDA's stream-ordered pool)
    # stages each message through Backend.allocate_mpi_array memory; the CPU
    # backend stands in for it here, counting the staging allocations.
    backend = tack.device("cpu").backend
    made = []
    original = type(backend).allocate_mpi_array

    def counting(self, device, shape, dtype):
        made.append(shape)
        return original(self, device, shape, dtype)
    type(backend).mpi_direct = False
    type(backend).allocate_mpi_array = counting
    try:
        run_patterns(comm, rng, True)
    finally:
        type(backend).mpi_direct = True
        type(backend).allocate_mpi_array = original
    if comm.Get_size() > 1:
        assert made, "no message was staged"


def test_device_arrays_are_made_after_their_messages_arrive(comm, rng):
    # Arrays received on a device the host cannot address are device copies of
    # the receive buffers: made before the wait, they copied unfilled buffers
    # (found with CUDA arrays on an H200; OpenCL, where there is one, takes the
    # same path). Large messages travel by rendezvous, after the copy would be.
    if not tack.device_count("opencl"):
        return
    size = comm.Get_size()
    world = tack.World(comm)
    blocks = tack.Blocks(["opencl"], world)
    data = np.random.default_rng(99).standard_normal((size, 300_000))  # same on every rank
    rank = comm.Get_rank()
    sent = {rank: {(rank + 1) % size: {"x": tack.array(data[rank], device="opencl")}}}
    got = blocks.exchange(sent)
    source = (rank - 1) % size
    x = got[rank][source]["x"]
    assert x.device == tack.device("opencl")
    np.testing.assert_array_equal(x.numpy(), data[source])
    world.free()


if __name__ == "__main__":
    main(globals())
