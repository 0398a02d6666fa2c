"""Blocks.redistribute in one process and on three thread-ranks: arrays follow
their blocks to a new layout, in the form given, and mistakes raise first."""

import re

import numpy as np
import pytest

import tack
from fakempi import run_ranks

CALL = "Blocks.redistribute()"


def test_one_process_keeps_the_arrays_and_the_forms():
    world = tack.World()
    old, new = tack.Blocks(["cpu"] * 3, world), tack.Blocks(["cpu"] * 3, world)
    a, b = tack.zeros(4), tack.ones((2, 3), dtype=tack.i32)
    got = old.redistribute(new, {0: a, 1: {"b": b, "a": a}, 2: {}})
    assert list(got) == [0, 1, 2]
    assert got[0] is a and list(got[1]) == ["b", "a"] and got[1]["b"] is b
    assert got[2] == {}


def test_vector_arrays_and_empty_arrays_travel():
    world = tack.World()
    old, new = tack.Blocks(["cpu"] * 2, world), tack.Blocks(["cpu"] * 2, world)
    v = tack.array(np.arange(12.0).reshape(4, 3), dtype=tack.vec3())
    got = old.redistribute(new, {0: {"v": v}, 1: tack.zeros(0)})
    assert got[0]["v"].dtype == tack.vec3() and got[1].shape == (0,)


@pytest.mark.parametrize("counts", [([6, 0, 0], [0, 0, 6]), ([2, 2, 2], [1, 3, 2]),
                                    ([0, 6, 0], [3, 0, 3]), ([1, 1, 4], [4, 1, 1])])
def test_three_ranks_move_every_block(counts):
    rng = np.random.default_rng()
    data = {g: rng.standard_normal((g + 1, 2)) for g in range(6)}
    flags = {g: np.arange(g, dtype=np.int16) for g in range(6)}

    def on_rank(comm):
        world = tack.World(comm)
        rank = comm.Get_rank()
        old = tack.Blocks(["cpu"] * counts[0][rank], world)
        new = tack.Blocks(["cpu"] * counts[1][rank], world)
        values = {g: ({"x": tack.array(data[g]), "f": tack.array(flags[g])} if g % 2
                      else tack.array(data[g])) for g in old.local}
        got = old.redistribute(new, values)
        out = {g: ({n: a.numpy() for n, a in v.items()} if isinstance(v, dict)
                   else v.numpy()) for g, v in got.items()}
        world.free()
        return list(new.local), out

    for local, out in run_ranks(3, on_rank):
        assert list(out) == local
        for g in local:
            if g % 2:
                assert list(out[g]) == ["x", "f"]
                np.testing.assert_array_equal(out[g]["x"], data[g])
                np.testing.assert_array_equal(out[g]["f"], flags[g])
            else:
                np.testing.assert_array_equal(out[g], data[g])


def test_mistakes():
    world = tack.World()
    old = tack.Blocks(["cpu"] * 2, world)
    values = {0: tack.zeros(2), 1: tack.zeros(3)}
    cases = [
        (TypeError, f"{CALL} takes the new layout as a tack.Blocks, not list", ([], values)),
        (ValueError, f"{CALL}: the new Blocks has 3 blocks and this one 2; a "
                     f"redistribution moves the same blocks between ranks, so the counts "
                     f"must be equal", (tack.Blocks(["cpu"] * 3, world), values)),
        (ValueError, f"{CALL}: the new Blocks belongs to another World; both layouts "
                     f"must be made on the same World", (tack.Blocks(["cpu"] * 2), values)),
        (ValueError, f"{CALL}: no entry in the values for block 1 of this rank",
         (old, {0: values[0]})),
        (ValueError, f"{CALL}: block 2 is out of range", (old, {**values, 2: values[0]})),
        (TypeError, f"{CALL} takes a dict for the values, not list", (old, [values[0]])),
        (TypeError, f"{CALL}: the value of block 1 must be a tack.Array or a dict of names "
                    f"to tack.Arrays, not ndarray", (old, {0: values[0], 1: np.zeros(3)})),
        (TypeError, f"{CALL}: the value of block 0 must be a dict of names to "
                    f"tack.Arrays; it has the key 3", (old, {0: {3: values[0]}, 1: {}})),
    ]
    for exc_type, message, args in cases:
        with pytest.raises(exc_type, match=re.escape(message)):
            old.redistribute(*args)
    assert old.redistribute(old, values)[1] is values[1]      # still usable


def test_a_block_on_another_memory_domain_arrives_as_a_copy():
    if not tack.device_count("opencl"):
        pytest.skip("needs an OpenCL device for a second memory domain")
    world = tack.World()
    old = tack.Blocks(["cpu", "cpu"], world)
    new = tack.Blocks(["cpu", "opencl"], world)
    a, b = tack.array(np.arange(5.0)), tack.array(np.arange(3, dtype=np.int32))
    got = old.redistribute(new, {0: a, 1: {"b": b}})
    assert got[0] is a and got[1]["b"].device == new.device(1)
    np.testing.assert_array_equal(got[1]["b"].numpy(), np.arange(3))
    with pytest.raises(ValueError, match=re.escape(
            f"{CALL}: the value of block 1: the array is on")):
        new.redistribute(old, {0: a, 1: b})
