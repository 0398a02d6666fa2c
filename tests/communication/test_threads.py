"""The calls on a minimal communicator: three ranks as threads (fakempi.FakeComm),
which has no Allreduce and no persistent requests, so the fallbacks run."""

import re
import secrets

import numpy as np
import pytest

import tack
from fakempi import run_ranks
from test_blocks import prefix, tree

SIZE = 3


@pytest.fixture
def seed():
    value = secrets.randbits(63)
    print(f"seed {value}")
    return value


def test_all_reduce_bits_do_not_depend_on_the_layout(seed):
    rng = np.random.default_rng(seed)
    values = [np.float64(rng.standard_normal() * 10.0 ** rng.uniform(-8, 8))
              for _ in range(6)]

    def on_rank(comm):
        sums, last_prefix = [], []
        for counts in ([6, 0, 0], [2, 2, 2], [1, 3, 2], [0, 6, 0]):
            world = tack.World(comm)
            blocks = tack.Blocks(["cpu"] * counts[comm.Get_rank()], world)
            sums.append(blocks.all_reduce({g: values[g] for g in blocks.local}))
            scan = blocks.exclusive_scan({g: values[g] for g in blocks.local})
            last_prefix += [scan[5]] if 5 in scan else []
            world.free()
        return sums, last_prefix
    results = run_ranks(SIZE, on_rank)
    sums = {np.float64(x).tobytes() for r in results for x in r[0]}
    assert sums == {tree(values, "sum").tobytes()}, seed
    prefixes = {np.float64(x).tobytes() for r in results for x in r[1]}
    assert prefixes == {prefix(values, "sum", 5).tobytes()}, seed


def test_exchange_plan_sort_routing(seed):
    def on_rank(comm):
        rng = np.random.default_rng(seed)
        world = tack.World(comm)
        rank = comm.Get_rank()
        blocks = tack.Blocks(["cpu"] * (rank + 1), world)      # 1, 2 and 3 blocks
        total = blocks.count
        data = [rng.standard_normal(g + 1) for g in range(total)]
        messages = {}
        for g in blocks.local:
            messages[g] = {0: {"big": tack.array(np.arange(20000.0) + g)}}
            messages[g].setdefault((g + 1) % total, {})["x"] = tack.array(data[g])
        got = blocks.exchange(messages)
        for d in blocks.local:
            src = (d - 1) % total
            np.testing.assert_array_equal(got[d][src]["x"].numpy(), data[src])
        if 0 in blocks.local:
            assert list(got[0]) == list(range(total))
            np.testing.assert_array_equal(got[0][4]["big"].numpy(), np.arange(20000.0) + 4)
        plan = tack.Plan(blocks, {g: {(g + 1) % total: [0, 1]} for g in blocks.local},
                         {g: {(g - 1) % total: [2, 3]} for g in blocks.local})
        values = {g: tack.array(np.array([g, g + 0.5, -1, -1])) for g in blocks.local}
        plan.run(values)
        plan.run(values)
        for g in blocks.local:
            p = (g - 1) % total
            np.testing.assert_array_equal(values[g].numpy(), [g, g + 0.5, p, p + 0.5])
        keys = [rng.integers(0, 10, 7).astype(np.int64) for _ in range(total)]
        ordered = blocks.sort_by_key({g: tack.array(keys[g]) for g in blocks.local})
        mine = np.concatenate([ordered[g].numpy() for g in blocks.local])
        bounds = {g: ((float(g), 0.0), (g + 1.0, 1.0)) for g in blocks.local}
        pts = {g: tack.array(np.array([[g + 0.5, 0.5], [total + 1.0, 0.5]]))
               for g in blocks.local}
        routing = tack.Routing(blocks, bounds, pts)
        for g in blocks.local:
            np.testing.assert_array_equal(routing.destination[g].numpy(), [g, -1])
        world.free()
        return mine, np.sort(np.concatenate(keys))
    results = run_ranks(SIZE, on_rank)
    np.testing.assert_array_equal(np.concatenate([r[0] for r in results]), results[0][1])


def test_an_error_on_one_rank_raises_on_every_rank():
    def on_rank(comm):
        world = tack.World(comm)
        blocks = tack.Blocks(["cpu"] * 2, world)
        values = {g: 1.0 for g in blocks.local}
        if comm.Get_rank() == 2:
            del values[5]
        raised = []
        try:
            blocks.all_reduce(values)
        except ValueError as exc:
            raised.append(str(exc))
        try:                                      # calls in a different order
            if comm.Get_rank() == 1:
                blocks.exchange({})
            else:
                blocks.all_gather(values if comm.Get_rank() != 2 else {4: 1.0, 5: 1.0})
        except ValueError as exc:
            raised.append(str(exc))
        raised.append(blocks.all_reduce({g: 1 for g in blocks.local}))
        world.free()
        return raised
    results = run_ranks(SIZE, on_rank)
    assert all(r == results[0] for r in results), results
    missing, order, after = results[0]
    assert missing == ("Blocks.all_reduce(): no entry in the values for block 5 of this "
                       "rank; every block of the rank needs one")
    assert order.startswith("collective calls differ between ranks: rank 0 is in "
                            "Blocks.all_gather() (call 3); rank 1 is in "
                            "Blocks.exchange() (call 3)")
    assert after == 6


def test_field_mismatch_between_ranks():
    def on_rank(comm):
        world = tack.World(comm)
        blocks = tack.Blocks(["cpu"], world)
        dtype = tack.i32 if comm.Get_rank() == 0 else tack.i64
        with pytest.raises(TypeError, match=re.escape(
                "Blocks.sort_by_key(): the keys' type differs between ranks: 'i32', "
                "'i64'")):
            blocks.sort_by_key({comm.Get_rank(): tack.zeros(2, dtype)})
        world.free()
    run_ranks(SIZE, on_rank)
