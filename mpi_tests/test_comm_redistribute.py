"""Blocks.redistribute: every block's arrays follow it to its rank in a new layout."""

import numpy as np
import tack
from commtest import blocks_for, layouts, main, raises

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int16]
SHAPES = [(0,), (1,), (7,), (3, 5), (), (0, 4), (1000,), (40, 300)]
TOTAL = 6


def global_values(rng, total):
    """Per block: a bare array, or a dict of 0-3 named arrays (the same on every
    rank)."""
    out = {}
    for gid in range(total):
        named = {}
        for k in range(rng.integers(0, 4)):
            shape = SHAPES[rng.integers(len(SHAPES))]
            named[f"f{k}"] = np.asarray(rng.standard_normal(shape) * 100).astype(
                DTYPES[rng.integers(len(DTYPES))])
        out[gid] = named if rng.integers(3) else next(iter(named.values()), np.ones(3))
    return out


def given(blocks, values):
    def array(v):
        return tack.array(v, device=blocks.device(gid))
    out = {}
    for gid in blocks.local:
        v = values[gid]
        out[gid] = array(v) if isinstance(v, np.ndarray) else \
            {n: array(a) for n, a in v.items()}
    return out


def check(new, values, got):
    assert list(got) == list(new.local), (list(got), new.local)
    for gid in new.local:
        want = values[gid]
        pairs = [(None, want, got[gid])] if isinstance(want, np.ndarray) else None
        if pairs is None:
            assert isinstance(got[gid], dict) and list(got[gid]) == list(want), gid
            pairs = [(n, want[n], got[gid][n]) for n in want]
        for name, w, a in pairs:
            assert isinstance(a, tack.Array), (gid, name, type(a))
            assert a.shape == w.shape and a.dtype.numpy == w.dtype, (gid, name)
            assert a.device.backend.memory_domain == \
                new.device(gid).backend.memory_domain, (gid, name)
            np.testing.assert_array_equal(a.numpy(), w, f"block {gid} {name}")


def run_layouts(comm, rng, gpu_aware):
    size = comm.Get_size()
    world = tack.World(comm, gpu_aware=gpu_aware)
    for old_counts in layouts(size, TOTAL):
        for new_counts in layouts(size, TOTAL):
            old, _ = blocks_for(comm, old_counts, world)
            new, _ = blocks_for(comm, new_counts, world)
            values = global_values(rng, TOTAL)
            check(new, values, old.redistribute(new, given(old, values)))
    world.free()


def test_every_pair_of_layouts(comm, rng):
    run_layouts(comm, rng, False)


def test_every_pair_of_layouts_gpu_aware(comm, rng):
    run_layouts(comm, rng, True)


def test_a_block_that_stays_keeps_its_arrays(comm, rng):
    size = comm.Get_size()
    old, world = blocks_for(comm, [2] * size)
    new, _ = blocks_for(comm, [2] * size, world)
    sent = {g: {"u": tack.full(5, float(g)), "v": tack.zeros(0)} for g in old.local}
    got = old.redistribute(new, sent)
    assert all(got[g][n] is sent[g][n] for g in old.local for n in ("u", "v"))
    assert old.redistribute(new, {g: {} for g in old.local}) == {g: {} for g in new.local}
    world.free()


def test_onto_another_memory_domain(comm, rng):
    """Blocks moved from CPU devices to OpenCL ones (and back) arrive as copies
    on the new device."""
    if not tack.device_count("opencl"):
        return
    size = comm.Get_size()
    old, world = blocks_for(comm, [2] * size)
    for counts in layouts(size, 2 * size):
        new, _ = blocks_for(comm, counts, world, device="opencl")
        values = global_values(rng, 2 * size)
        moved = old.redistribute(new, given(old, values))
        check(new, values, moved)
        check(old, values, new.redistribute(old, moved))
    world.free()


def everywhere(comm, exc_type, message, fn, *args):
    exc = raises(exc_type, message, fn, *args)
    texts = comm.allgather((type(exc).__name__, str(exc)))
    assert len(set(texts)) == 1, texts


def test_mistakes_raise_on_every_rank_and_move_nothing(comm, rng):
    size, rank = comm.Get_size(), comm.Get_rank()
    bad = rank == size - 1
    old, world = blocks_for(comm, [2] * size)
    new, _ = blocks_for(comm, [1] * size, world)
    fewer, _ = blocks_for(comm, [1] * size, world)
    values = {g: tack.full(4, float(g)) for g in old.local}
    call = "Blocks.redistribute()"
    everywhere(comm, TypeError, f"{call} takes the new layout as a tack.Blocks, not list",
               old.redistribute, [] if bad else old, values)
    if size > 1:
        everywhere(comm, ValueError, f"{call}: the new Blocks has {size} blocks and "
                   f"this one {2 * size}; a redistribution moves the same blocks",
                   old.redistribute, new, values)
    other, _ = blocks_for(comm, [2] * size, tack.World(comm))
    everywhere(comm, ValueError, f"{call}: the new Blocks belongs to another World",
               old.redistribute, other if bad else old, values)
    other.world.free()
    missing = {g: a for g, a in values.items() if not (bad and g == old.local.start)}
    everywhere(comm, ValueError, f"{call}: no entry in the values for block "
               f"{2 * size - 2} of this rank", old.redistribute, old, missing)
    wrong = {**values, **({old.local.start: [1.0]} if bad else {})}
    everywhere(comm, TypeError, f"{call}: the value of block {2 * size - 2} must be a "
               f"tack.Array or a dict of names to tack.Arrays, not list",
               old.redistribute, old, wrong)
    again, _ = blocks_for(comm, [2] * size, world)
    if size > 1:
        everywhere(comm, ValueError, f"{call}: the new Blocks differs between ranks",
                   old.redistribute, again if bad else old, values)
    for g, a in values.items():     # nothing moved, nothing changed
        np.testing.assert_array_equal(a.numpy(), float(g))
    got = old.redistribute(old, values)         # and the world still works
    assert all(got[g] is values[g] for g in old.local)
    del fewer
    world.free()


if __name__ == "__main__":
    main(globals())
