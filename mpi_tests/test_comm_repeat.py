"""Repeated calls: the speculative fast paths of exchange and Plan.run.

A call that repeats the previous one's pattern sends its data while the
agreement travels. These tests repeat patterns many times and then change
them: on one rank only, in shapes, in element types, in array objects, in
array contents (written in place between calls), and with an error or a
different call on one rank. Every call must give the right answer or raise
the same exception on every rank, and the world must keep working after.
"""

import numpy as np
import tack
from commtest import blocks_for, main, raises

LARGE = 9000        # f64 elements: over 64 KiB, a message of its own


def description(src, total, step, changed):
    """``{dst: {name: (shape, numpy dtype, base)}}`` that block ``src`` sends at
    ``step``; ``changed``: whether this block's pattern is the other one."""
    out = {(src + 1) % total: {"big": ((LARGE,), np.float64, 1.0),
                               "a": ((3,), np.int32, 2), "b": ((2, 2), np.float32, 3.0)},
           (src + 2) % total: {"a": ((3,), np.int32, 4), "z": ((0,), np.float32, 7.0)},
           src: {"self": ((5,), np.int64, 5)}}
    if changed:
        out[(src + 1) % total]["b"] = ((7,), np.float32, 6.0)    # another shape
        out[(src + 3) % total] = {}                              # an empty message
    return out


def contents(shape, dtype, base, src, step):
    return (np.arange(int(np.prod(shape))).reshape(shape) + base + 100 * src
            + 10000 * step).astype(dtype)


def build(blocks, step, changed):
    """This rank's Tack arrays of ``description``."""
    total = blocks.count
    return {s: {d: {n: tack.array(contents(*spec, s, step)) for n, spec in m.items()}
                for d, m in description(s, total, step, changed(s)).items()}
            for s in blocks.local}


def refresh(messages, step):
    """Write ``step``'s contents into the arrays in place."""
    for s, per_dst in messages.items():
        for d, named in per_dst.items():
            for n, array in named.items():
                want = contents(array.shape, array.dtype.numpy, 0, s, step)
                tack.copyto(array, tack.array(want + _base(s, d, n, messages, array)))


def _base(s, d, n, messages, array):
    return {"big": 1, "a": 2 if d == next(iter(messages[s])) else 4,
            "b": 6 if array.shape == (7,) else 3, "self": 5, "z": 7}[n]


def check(blocks, got, step, changed):
    total = blocks.count
    assert sorted(got) == list(blocks.local)
    for dst in blocks.local:
        want = {s: description(s, total, step, changed(s)).get(dst) for s in range(total)}
        want = {s: m for s, m in want.items() if m is not None}
        assert list(got[dst]) == sorted(want), (step, dst, list(got[dst]), sorted(want))
        for s, m in want.items():
            assert list(got[dst][s]) == list(m), (step, s, dst)
            for n, spec in m.items():
                np.testing.assert_array_equal(got[dst][s][n].numpy(),
                                              contents(*spec, s, step),
                                              f"step {step}: {s}->{dst} {n}")


class Hiding:
    """A communicator without some of mpi4py's optional methods (an MPI 3
    library has no ``Allreduce_init``; a bare one no persistent requests)."""

    def __init__(self, comm, hidden):
        self._comm, self._hidden = comm, hidden

    def __getattr__(self, name):
        if name in self._hidden:
            raise AttributeError(name)
        return getattr(self._comm, name)

    def Dup(self):
        return Hiding(self._comm.Dup(), self._hidden)


def test_exchange_repeats_then_changes(comm, rng):
    for gpu_aware in (False, True):
        repeats_then_changes(comm, tack.World(comm, gpu_aware=gpu_aware))


def test_exchange_repeats_without_persistent_collectives(comm, rng):
    """The express path starts its persistent messages itself, apart from the
    agreement (an Iallreduce), or posts every message (no persistent requests)."""
    for hidden in ({"Allreduce_init"}, {"Allreduce_init", "Send_init", "Recv_init"}):
        world = tack.World(Hiding(comm, hidden))
        assert world.agreement_request is None
        assert world.persistent == ("Send_init" not in hidden)
        repeats_then_changes(comm, world)


def repeats_then_changes(comm, world):
    """Repeats, then changes on one rank; every call's result is checked."""
    size = comm.Get_size()
    blocks, world = blocks_for(comm, [1 + r % 2 for r in range(size)], world)
    last = blocks.rank_of(blocks.count - 1)
    messages = build(blocks, 0, lambda s: False)
    for step in range(14):
        # steps 5-7: the last rank alone changes its pattern (new arrays at 5
        # and 6, the same ones at 7, while the other ranks repeat theirs, so
        # what they receive changes under a repeated call); 9-10: new array
        # objects with the same headers; else the same arrays, new contents
        odd = 5 <= step <= 7

        def changed(s):
            return odd and blocks.rank_of(s) == last
        if step in (8, 9, 10) or (step in (5, 6) and comm.Get_rank() == last):
            messages = build(blocks, step, changed)
        else:
            refresh(messages, step)
        check(blocks, blocks.exchange(messages), step, changed)
    world.free()


def test_exchange_error_on_one_rank_after_repeats(comm, rng):
    size = comm.Get_size()
    blocks, world = blocks_for(comm, [2] * size)
    bad = comm.Get_rank() == size - 1
    messages = build(blocks, 0, lambda s: False)
    for step in range(6):
        refresh(messages, step)
        check(blocks, blocks.exchange(messages), step, lambda s: False)
    wrong = {s: dict(m) for s, m in messages.items()}
    if bad:
        wrong[blocks.local.start] = {blocks.count: {}}       # out of range
    exc = raises(ValueError, f"block {blocks.count} is out of range", blocks.exchange,
                 wrong)
    assert len(set(comm.allgather(str(exc)))) == 1
    if bad:     # a message that is not a dict of arrays, the arrays themselves sent
        wrong[blocks.local.start] = {blocks.local.start: {"x": np.zeros(3)}}
    if size > 1 or bad:
        exc = raises(TypeError, "must be a tack.Array, not ndarray", blocks.exchange,
                     wrong)
        assert len(set(comm.allgather(str(exc)))) == 1
    for step in range(6, 10):        # the same pattern again: still right
        refresh(messages, step)
        check(blocks, blocks.exchange(messages), step, lambda s: False)
    world.free()


def test_exchange_repeated_through_a_rebalanced_blocks(comm, rng):
    """The same message dicts, repeated, then passed to a new Blocks of the same
    world that gives block 2 to rank 0: delivered there, on every rank alike."""
    _repeated_then_rebalanced(comm, rng, gpu_aware=False)


def test_exchange_repeated_through_a_rebalanced_blocks_gpu_aware(comm, rng):
    """As above in a GPU-aware world, whose speculative receives are arrays on
    the destination blocks' devices: posted through the old Blocks, they named
    a block that had moved, and one rank raised while the others waited."""
    _repeated_then_rebalanced(comm, rng, gpu_aware=True)


def _repeated_then_rebalanced(comm, rng, gpu_aware):
    size = comm.Get_size()
    if size == 1:
        return
    world = tack.World(comm, gpu_aware=gpu_aware)
    before = tack.Blocks(["cpu"] * 2, world)                    # block 2 on rank 1
    counts = [3] + [2] * (size - 2) + [1]
    after = tack.Blocks(["cpu"] * counts[comm.Get_rank()], world)   # block 2 on rank 0
    x = tack.array(rng.standard_normal(5))
    messages = {0: {2: {"x": x}}} if comm.Get_rank() == 0 else {}
    for _ in range(4):
        got = before.exchange(messages)
        assert (2 in got) == (comm.Get_rank() == 1)
    got = after.exchange(messages)
    assert (2 in got) == (comm.Get_rank() == 0)
    if comm.Get_rank() == 0:
        assert got[2][0]["x"] is x
    world.free()


def test_different_calls_after_repeats(comm, rng):
    """One rank makes another call while the others repeat an exchange (or run a
    plan): every rank raises, nothing stays queued, and the calls work after."""
    size = comm.Get_size()
    if size == 1:
        return
    blocks, world = blocks_for(comm, [1 + r % 2 for r in range(size)])
    bad = comm.Get_rank() == size - 1
    total = blocks.count
    messages = build(blocks, 0, lambda s: False)
    plan = tack.Plan(blocks, {g: {(g + 1) % total: [0, 1]} for g in blocks.local},
                     {g: {(g - 1) % total: [2, 3]} for g in blocks.local})
    field = {g: tack.array(np.array([g, g, -1, -1], np.float64)) for g in blocks.local}
    for step in range(4):
        refresh(messages, step)
        check(blocks, blocks.exchange(messages), step, lambda s: False)
        plan.run(field)
    others = [lambda: blocks.all_reduce({g: 1.0 for g in blocks.local}),
              lambda: plan.run(field),
              lambda: blocks.sort_by_key({g: tack.zeros(3, tack.i64)
                                          for g in blocks.local})]
    for other in others:
        call = other if bad else (lambda: blocks.exchange(messages))
        raises(ValueError, "collective calls differ between ranks", call)
        refresh(messages, 9)
        check(blocks, blocks.exchange(messages), 9, lambda s: False)
        plan.run(field)
        for g in blocks.local:
            want = [g, g, (g - 1) % total, (g - 1) % total]
            np.testing.assert_array_equal(field[g].numpy(), want)
    world.free()


def halo_plan(blocks, n):
    """A ring: each block sends its first n elements right and its next n left,
    and receives into the last 2n."""
    total = blocks.count
    sends = {g: {(g + 1) % total: np.arange(n), (g - 1) % total: np.arange(n, 2 * n)}
             for g in blocks.local}
    receives = {g: {(g - 1) % total: np.arange(2 * n, 3 * n),
                    (g + 1) % total: np.arange(3 * n, 4 * n)} for g in blocks.local}
    if total <= 2:                  # one neighbour both ways (or itself)
        sends = {g: {(g + 1) % total: np.arange(2 * n)} for g in blocks.local}
        receives = {g: {(g - 1) % total: np.arange(2 * n, 4 * n)} for g in blocks.local}
    return tack.Plan(blocks, sends, receives)


def halo_want(g, total, n, step, dtype):
    base = lambda b: (np.arange(2 * n) + 1000 * b + step).astype(dtype)  # noqa: E731
    out = np.concatenate([base(g), np.zeros(2 * n, dtype)])
    if total <= 2:
        out[2 * n:] = base((g - 1) % total)
    else:
        out[2 * n:3 * n] = base((g - 1) % total)[:n]
        out[3 * n:] = base((g + 1) % total)[n:]
    return out


def test_plan_repeats_types_and_errors(comm, rng):
    size = comm.Get_size()
    for gpu_aware in (False, True):
        blocks, world = blocks_for(comm, [1 + r % 2 for r in range(size)],
                                   tack.World(comm, gpu_aware=gpu_aware))
        total, n = blocks.count, 5
        bad = comm.Get_rank() == size - 1
        plan = halo_plan(blocks, n)
        other = halo_plan(blocks, n + 1)
        for step, dtype in enumerate([np.float64] * 5 + [np.float32] * 4 + [np.int64] * 3):
            field = {g: tack.array(np.concatenate([
                (np.arange(2 * n) + 1000 * g + step).astype(dtype),
                np.zeros(2 * n, dtype)])) for g in blocks.local}
            plan.run(field)
            for g in blocks.local:
                np.testing.assert_array_equal(field[g].numpy(),
                                              halo_want(g, total, n, step, dtype),
                                              f"step {step} block {g}")
            if step == 7 and size > 1:      # one rank runs another plan
                raises(ValueError, "Plan.run(): the plan differs between ranks",
                       (other if bad else plan).run,
                       {g: tack.zeros(4 * n + 4, tack.f32) for g in blocks.local})
            if step == 10:                  # one rank's values are too short
                short = {g: tack.zeros(4 * n if not bad else 3, tack.i64)
                         for g in blocks.local}
                exc = raises(ValueError, "", plan.run, short)
                assert len(set(comm.allgather(str(exc)))) == 1
                assert "elements, but the plan uses element" in str(exc), str(exc)
        world.free()


def test_plan_large_and_small_messages(comm, rng):
    """Messages over and under 64 KiB, several between one pair of ranks (the
    GPU-aware transport sends one message per pair of blocks), repeated."""
    size = comm.Get_size()
    for gpu_aware in (False, True):
        blocks, world = blocks_for(comm, [2] * size,
                                   tack.World(comm, gpu_aware=gpu_aware))
        total, big, small = blocks.count, 9000, 7
        length = 2 * (big + small)
        # block g sends elements [0, big) to g+1 and [big, big+small) to g+2; it
        # receives from g-1 into [L/2, L/2+big) and from g-2 into the rest
        sends = {g: {(g + 1) % total: np.arange(big),
                     (g + 2) % total: np.arange(big, big + small)} for g in blocks.local}
        receives = {g: {(g - 1) % total: np.arange(big + small, 2 * big + small),
                        (g - 2) % total: np.arange(2 * big + small, length)}
                    for g in blocks.local}
        if total == 2:                    # g+1 and g+2 are g+1 and g: join them
            sends = {g: {(g + 1) % total: np.arange(big), g: np.arange(big, big + small)}
                     for g in blocks.local}
            receives = {g: {(g - 1) % total: np.arange(big + small, 2 * big + small),
                            g: np.arange(2 * big + small, length)} for g in blocks.local}
        plan = tack.Plan(blocks, sends, receives)
        for step in range(5):
            def mine(g):
                return (np.arange(big + small) * 3 + 100000 * g + step).astype(np.float64)
            field = {g: tack.array(np.concatenate([mine(g), np.zeros(big + small)]))
                     for g in blocks.local}
            plan.run(field)
            for g in blocks.local:
                got = field[g].numpy()
                one = (g - 1) % total
                two = (g - 2) % total if total != 2 else g
                np.testing.assert_array_equal(got[:big + small], mine(g))
                np.testing.assert_array_equal(got[big + small:2 * big + small],
                                              mine(one)[:big], f"step {step} block {g}")
                np.testing.assert_array_equal(got[2 * big + small:],
                                              mine(two)[big:], f"step {step} block {g}")
        world.free()


def test_exchange_repeats_vector_elements(comm, rng):
    """Repeated exchanges of vec3 and mat22 arrays (the express path's received
    arrays are made from templates of those element types), contents written
    in place between calls."""
    size = comm.Get_size()
    blocks, world = blocks_for(comm, [1 + r % 2 for r in range(size)])
    total = blocks.count
    messages = {g: {(g + 1) % total: {"v": tack.zeros(5, tack.vec3()),
                                      "m": tack.zeros(2, tack.mat22(dtype=tack.f64))}}
                for g in blocks.local}

    def contents(g, step):
        return (np.arange(15, dtype=np.float32).reshape(5, 3) + 100 * g + step,
                np.arange(8, dtype=np.float64).reshape(2, 2, 2) - 100 * g - step)
    for step in range(6):
        for g, per_dst in messages.items():
            v, m = contents(g, step)
            named = per_dst[(g + 1) % total]
            tack.copyto(named["v"], tack.array(v, dtype=tack.vec3()))
            tack.copyto(named["m"], tack.array(m, dtype=tack.mat22(dtype=tack.f64)))
        got = blocks.exchange(messages)
        for g in blocks.local:
            src = (g - 1) % total
            v, m = contents(src, step)
            arrived = got[g][src]
            assert arrived["v"].dtype == tack.vec3()
            assert arrived["m"].dtype == tack.mat22(dtype=tack.f64)
            np.testing.assert_array_equal(arrived["v"].numpy(), v, f"step {step}")
            np.testing.assert_array_equal(arrived["m"].numpy(), m, f"step {step}")
    world.free()


if __name__ == "__main__":
    main(globals())
