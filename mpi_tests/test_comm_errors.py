"""Every error row of the communication contract, raised on every rank.

In each test one rank (the last) makes the mistake and every rank must raise
the same exception type with the same message; then a further collective must
work, which shows that no rank was left waiting and nothing stayed queued.
"""

import numpy as np
import tack
from commtest import blocks_for, main, raises


def setup(comm, per_rank=2, **options):
    blocks, world = blocks_for(comm, [per_rank] * comm.Get_size(),
                               tack.World(comm, **options))
    return blocks, world, comm.Get_rank() == comm.Get_size() - 1


def everywhere(comm, blocks, exc_type, message, fn, *args):
    exc = raises(exc_type, message, fn, *args)
    texts = comm.allgather((type(exc).__name__, str(exc)))
    assert len(set(texts)) == 1, texts
    total = blocks.all_reduce({g: 1 for g in blocks.local})
    assert total == blocks.count


def test_global_id_out_of_range(comm, rng):
    blocks, world, bad = setup(comm)
    count = blocks.count
    values = {g: 1.0 for g in blocks.local}
    if bad:
        values[count + 5] = 1.0
    everywhere(comm, blocks, ValueError, f"block {count + 5} is out of range: the world "
               f"has {count} blocks", blocks.all_reduce, values)
    messages = {blocks.local.start: {count: {"a": tack.zeros(2)}}} if bad else {}
    everywhere(comm, blocks, ValueError, f"block {count} is out of range",
               blocks.exchange, messages)
    world.free()


def test_another_ranks_block(comm, rng):
    blocks, world, bad = setup(comm)
    if comm.Get_size() == 1:
        return
    other = 0
    messages = {other: {other: {"a": tack.zeros(2)}}} if bad else {}
    everywhere(comm, blocks, ValueError, "block 0 belongs to rank 0, not to this rank",
               blocks.exchange, messages)
    raises(ValueError, "belongs to rank", blocks.device, (blocks.local.start + 2)
           % blocks.count)
    world.free()


def test_missing_entry(comm, rng):
    blocks, world, bad = setup(comm)
    values = {g: 1 for g in blocks.local}
    missing = blocks.local.stop - 1
    if bad:
        del values[missing]
    message = f"Blocks.exclusive_scan(): no entry in the values for block {blocks.count - 1}"
    everywhere(comm, blocks, ValueError, message, blocks.exclusive_scan, values)
    bounds = {g: ((g, 0), (g + 1, 1)) for g in blocks.local}
    points = {g: tack.zeros((3, 2), tack.f64) for g in blocks.local}
    if bad:
        del points[missing]
    everywhere(comm, blocks, ValueError, f"Routing(): no entry in the points for block "
               f"{blocks.count - 1}", tack.Routing, blocks, bounds, points)
    world.free()


def test_not_a_dict_of_arrays(comm, rng):
    blocks, world, bad = setup(comm)
    first = blocks.local.start
    message = {"a": np.zeros(3) if bad else tack.zeros(3)}
    everywhere(comm, blocks, TypeError, "must be a tack.Array, not ndarray",
               blocks.exchange, {first: {first: message}})
    everywhere(comm, blocks, TypeError, "must be a dict of names to tack.Arrays, not list",
               blocks.exchange, {first: {first: [1, 2] if bad else {}}})
    values = {g: ("text" if bad else 1.0) for g in blocks.local}
    everywhere(comm, blocks, TypeError, "must be a Python or NumPy scalar or a tack.Array, "
               "not str", blocks.all_gather, values)
    world.free()


def test_array_not_on_its_blocks_device(comm, rng):
    if not tack.device_count("opencl"):
        return   # another memory than the host's is needed (CPU devices share it)
    other = tack.device("opencl")
    size = comm.Get_size()
    world = tack.World(comm)
    blocks = tack.Blocks([other] * 2, world)
    bad = comm.Get_rank() == size - 1
    first = blocks.local.start
    array = tack.zeros(3) if bad else tack.zeros(3, device=other)
    everywhere(comm, blocks, ValueError, f"not on block {blocks.count - 2}'s device",
               blocks.exchange, {first: {first: {"a": array}}})
    keys = {g: tack.zeros(3, tack.i64, device=other) for g in blocks.local}
    if bad:
        keys[first] = tack.zeros(3, tack.i64)
    everywhere(comm, blocks, ValueError, "the keys of block", blocks.sort_by_key, keys)
    world.free()


def test_plan_lengths_disagree(comm, rng):
    blocks, world, bad = setup(comm)
    total = blocks.count
    sends = {g: {(g + 1) % total: np.arange(3)} for g in blocks.local}
    receives = {g: {(g - 1) % total: np.arange(3)} for g in blocks.local}
    last = total - 1                    # the last rank's last block
    if bad:
        receives[last] = {last - 1: np.arange(2)}
    everywhere(comm, blocks, ValueError, f"Plan(): block {last - 1} sends 3 elements to "
               f"block {last}, which receives 2 from it", tack.Plan, blocks, sends,
               receives)
    receives = {g: {(g - 1) % total: np.arange(3)} for g in blocks.local}
    if bad:
        del receives[last]
    everywhere(comm, blocks, ValueError, f"sends 3 elements to block {last}, which "
               f"receives nothing from it", tack.Plan, blocks, sends, receives)
    sends = {g: {(g + 1) % total: np.arange(3)} for g in blocks.local}
    receives = {g: {(g - 1) % total: np.arange(3)} for g in blocks.local}
    if bad:
        receives[last][last] = np.arange(4)     # the block does not send to itself
    everywhere(comm, blocks, ValueError, f"block {last} receives 4 elements from block "
               f"{last}, which sends it nothing", tack.Plan, blocks, sends, receives)
    world.free()


def test_plan_element_types(comm, rng):
    blocks, world, bad = setup(comm)
    total = blocks.count
    plan = tack.Plan(blocks, {g: {(g + 1) % total: [0]} for g in blocks.local},
                     {g: {(g - 1) % total: [1]} for g in blocks.local})
    values = {g: tack.zeros(2, tack.f32) for g in blocks.local}
    plan.run(values)
    if bad:
        values[blocks.local.start] = tack.zeros(2, tack.f64)
    message = ("the values have different element types on different blocks"
               if bad or comm.Get_size() == 1 else None)
    exc = raises(TypeError, "", plan.run, values)
    texts = comm.allgather(str(exc))
    assert len(set(texts)) == 1 and "element type" in texts[0], texts
    if message:
        assert message in str(exc)
    if comm.Get_size() > 1:     # each rank's blocks agree, the ranks do not
        others = {g: tack.zeros(2, tack.f64 if bad else tack.f32) for g in blocks.local}
        everywhere(comm, blocks, TypeError, "Plan.run(): the element type differs "
                   "between ranks: 'f32', 'f64'", plan.run, others)
    plan.run({g: tack.zeros(2, tack.i32) for g in blocks.local})    # a new type: fine
    world.free()


def test_sort_key_types(comm, rng):
    blocks, world, bad = setup(comm)
    keys = {g: tack.zeros(3, tack.f32 if bad else tack.i64) for g in blocks.local}
    everywhere(comm, blocks, TypeError, f"takes i32, u32, i64 or u64 keys; the keys of "
               f"block {blocks.local.start} are f32" if bad or comm.Get_size() == 1 else
               "takes i32, u32, i64 or u64 keys", blocks.sort_by_key, keys)
    if comm.Get_size() > 1:
        keys = {g: tack.zeros(3, tack.i32 if bad else tack.i64) for g in blocks.local}
        everywhere(comm, blocks, TypeError, "Blocks.sort_by_key(): the keys' type "
                   "differs between ranks: 'i32', 'i64'", blocks.sort_by_key, keys)
    keys = {g: tack.zeros(3, tack.u32 if g == blocks.local.start and bad else tack.i64)
            for g in blocks.local}
    everywhere(comm, blocks, TypeError, "keys" if not bad else
               "the keys have different types on different blocks (i64, u32)",
               blocks.sort_by_key, keys)
    world.free()


def test_unknown_operation(comm, rng):
    blocks, world, bad = setup(comm)
    everywhere(comm, blocks, ValueError, "Blocks.all_reduce() takes op 'sum', 'min' or "
               "'max', not 'prod'", blocks.all_reduce, {g: 1.0 for g in blocks.local},
               "prod" if bad else "sum")
    world.free()


def test_gpu_aware_without_communicator(comm, rng):
    raises(ValueError, "World(gpu_aware=True) needs a communicator", tack.World,
           gpu_aware=True)


def test_values_differ_between_ranks(comm, rng):
    blocks, world, bad = setup(comm)
    if comm.Get_size() == 1:
        return
    values = {g: tack.zeros(4 if bad else 3) for g in blocks.local}
    everywhere(comm, blocks, TypeError, "Blocks.all_reduce(): the values' type or shape "
               "differs between ranks", blocks.all_reduce, values)
    world.free()



def test_shapes_whose_old_20_bit_codes_collided_differ(comm, rng):
    # Regression: (450,) and (501,) f64 had one agreement code, so the call went
    # on: a wrong sum on one rank, an MPI error or a hang on another.
    blocks, world, bad = setup(comm, per_rank=1)
    if comm.Get_size() == 1:
        return
    values = {g: tack.ones(501 if bad else 450, tack.f64) for g in blocks.local}
    everywhere(comm, blocks, TypeError, "the values' type or shape differs between "
               "ranks: array of f64 with shape (450,), array of f64 with shape (501,)",
               blocks.all_reduce, values)
    # all_gather takes arrays of different lengths (each block's own); the
    # last rank's one block has 501
    gathered = blocks.all_gather(values)
    assert {g: v.size for g, v in gathered.items()} == {
        g: 501 if g == blocks.count - 1 else 450 for g in range(blocks.count)}
    world.free()


def test_equal_margins_agree_whatever_the_sign_of_zero(comm, rng):
    blocks, world, bad = setup(comm, per_rank=1)
    bounds = {g: ((float(g),), (g + 1.0,)) for g in blocks.local}
    for margin in (-0.0 if bad else 0.0, 0.0, -0.0 if bad else 0.0):
        blocks.link_by_bounds(bounds, margin)
    world.free()

def test_calls_through_another_blocks_or_routing(comm, rng):
    """One rank calls through a second Blocks of the world (a rebalanced layout
    that one code path kept), or sends through another Routing: each call raises
    on every rank (it hung, dropped a block, or mixed two routings' deliveries)."""
    blocks, world, bad = setup(comm, per_rank=1)
    if comm.Get_size() == 1:
        return
    size, rank = comm.Get_size(), comm.Get_rank()
    other = tack.Blocks(["cpu"] * (2 if rank == 0 else 1), world)   # on every rank
    mine = other if bad else blocks
    values = {g: float(g) for g in mine.local}
    keys = {g: tack.array(np.array([g, 1], np.int64)) for g in mine.local}
    bounds = {g: ((float(g),), (g + 1.0,)) for g in mine.local}
    points = {g: tack.array(np.array([[g + 0.5]])) for g in mine.local}
    for call, args in [("all_reduce", (values,)), ("all_gather", (values,)),
                       ("exclusive_scan", (values,)), ("exchange", ({},)),
                       ("sort_by_key", (keys,)), ("link_by_bounds", (bounds,))]:
        everywhere(comm, blocks, ValueError, f"Blocks.{call}(): the Blocks differs "
                   f"between ranks", getattr(mine, call), *args)
    everywhere(comm, blocks, ValueError, "Routing(): the Blocks differs between ranks",
               tack.Routing, mine, bounds, points)
    everywhere(comm, blocks, ValueError, "Plan(): the Blocks differs between ranks",
               tack.Plan, mine, {}, {})
    bounds = {g: ((float(g),), (g + 1.0,)) for g in blocks.local}
    first, second = (tack.Routing(blocks, bounds, {g: tack.array(np.array([[x]]))
                                                   for g in blocks.local})
                     for x in (0.5, size - 0.5))
    payloads = {g: {"id": tack.array(np.array([g]))} for g in blocks.local}
    everywhere(comm, blocks, ValueError, "Routing.send(): the Routing differs between "
               "ranks", (second if bad else first).send, payloads)
    assert {g: p["id"].numpy().tolist() for g, p in first.send(payloads).items()} == \
        ({0: list(range(size))} if rank == 0 else {g: [] for g in blocks.local})
    world.free()


def test_calls_in_different_order(comm, rng):
    blocks, world, bad = setup(comm)
    if comm.Get_size() == 1:
        return
    values = {g: 1.0 for g in blocks.local}
    call = (lambda: blocks.exchange({})) if bad else (lambda: blocks.all_reduce(values))
    last = comm.Get_size() - 1
    everywhere(comm, blocks, ValueError, "collective calls differ between ranks: rank 0 "
               "is in Blocks.all_reduce()", call)
    raises(ValueError, f"rank {last} is in Blocks.exchange()", call)
    plan = tack.Plan(blocks, {}, {})
    call = (lambda: plan.run({g: tack.zeros(1) for g in blocks.local})) if bad else \
        (lambda: blocks.all_gather(values))
    everywhere(comm, blocks, ValueError, "Every rank must make the same communication "
               "calls in the same order", call)
    world.free()


def test_a_rank_that_skips_the_last_call_and_frees(comm, rng):
    """``if blocks.local: blocks.all_reduce(...)`` then ``world.free()``: the rank
    with no blocks frees while the others wait in the call. free() agrees first,
    so every rank raises instead of the others hanging (mpiport audit)."""
    if comm.Get_size() == 1:
        return
    world = tack.World(comm)
    skips = comm.Get_rank() == comm.Get_size() - 1
    blocks = tack.Blocks([] if skips else ["cpu"], world)
    if skips:
        raises(ValueError, "is in World.free()", world.free)
    else:
        raises(ValueError, "collective calls differ between ranks", blocks.all_reduce,
               {g: 1.0 for g in blocks.local})
        world.free()        # out of step: released without agreeing
    assert world.comm is None


def test_errors_in_holds_reach_every_rank(comm, rng):
    blocks, world, bad = setup(comm)
    bounds = {g: ((float(g), 0.0), (g + 1.0, 1.0)) for g in blocks.local}
    points = {g: tack.array(np.array([[g + 0.5, 0.5], [g + 0.25, 0.5]])) for g in blocks.local}

    def holds(gid, pts):
        if bad and gid == blocks.local.start:
            raise RuntimeError(f"cannot answer for block {gid}")
        return np.ones(len(pts), np.int64)
    everywhere(comm, blocks, RuntimeError, f"cannot answer for block "
               f"{blocks.count - 2}", tack.Routing, blocks, bounds, points, holds)
    world.free()


class HoldsFailed(Exception):
    """A program's own exception class: every rank of the program has it."""


class HoldsStopped(BaseException):
    """Not an Exception: it left the agreement on its own rank, and the others hung."""


def unit_boxes(blocks):
    """Routing's inputs: block g owns [g, g + 1) x [0, 1) and asks one point of it."""
    bounds = {g: ((float(g), 0.0), (g + 1.0, 1.0)) for g in blocks.local}
    points = {g: tack.array(np.array([[g + 0.5, 0.5]])) for g in blocks.local}
    return bounds, points


def test_any_exception_in_holds_reaches_every_rank_as_its_type(comm, rng):
    blocks, world, bad = setup(comm)
    bounds, points = unit_boxes(blocks)

    def failing(raised):
        def holds(gid, pts):
            if bad:
                raise raised
            return np.ones(len(pts), np.int64)
        return holds
    for raised in (HoldsFailed("no answer"), HoldsStopped("stop"),
                   AttributeError("no attribute 'x'"),
                   KeyError("k"), UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad byte")):
        everywhere(comm, blocks, type(raised), str(raised), tack.Routing, blocks, bounds,
                   points, failing(raised))

    class Local(Exception):   # no other rank can name it: a RuntimeError there
        pass
    exc = raises(Local if bad else RuntimeError, "local trouble" if bad else
                 f"rank {comm.Get_size() - 1} raised test_any_exception_in_holds_reaches_"
                 f"every_rank_as_its_type.<locals>.Local: local trouble", tack.Routing,
                 blocks, bounds, points, failing(Local("local trouble")))
    assert exc is not None and blocks.all_reduce({g: 1 for g in blocks.local}) == blocks.count
    world.free()


def test_the_failing_rank_raises_its_own_exception_even_with_nan_arguments(comm, rng):
    # the failing rank was found by comparing records, and NaN != NaN: it got a
    # rebuilt copy with the note meant for the other ranks
    blocks, world, bad = setup(comm)
    bounds, points = unit_boxes(blocks)
    raised = HoldsFailed("no rank for", float("nan"))

    def holds(gid, pts):
        if bad:
            raise raised
        return np.ones(len(pts), np.int64)
    exc = raises(HoldsFailed, "no rank for", tack.Routing, blocks, bounds, points, holds)
    assert (exc is raised) == bad
    assert bool(getattr(exc, "__notes__", [])) == (not bad)
    world.free()


def test_numpy_strings_are_the_same_op(comm, rng):
    # repr(np.str_("copy")) is not repr("copy"): the agreement saw different ops,
    # and a Plan kept refusing every later run
    blocks, world, bad = setup(comm)
    mine = list(blocks.local)
    plan = tack.Plan(blocks, {g: {g: [0]} for g in mine}, {g: {g: [1]} for g in mine})
    values = {g: tack.array(np.arange(3.0)) for g in mine}
    plan.run(values, np.str_("copy") if bad else "copy")
    plan.run(values, "copy")
    assert all(v.numpy().tolist() == [0.0, 0.0, 2.0] for v in values.values())
    total = blocks.all_reduce({g: 1 for g in mine}, np.str_("sum") if bad else "sum")
    assert total == blocks.count
    world.free()


def test_sort_values_given_on_some_ranks_only(comm, rng):
    blocks, world, bad = setup(comm)
    if comm.Get_size() == 1:
        return
    keys = {g: tack.array(np.arange(4, dtype=np.int64)) for g in blocks.local}
    values = None if bad else {g: {"v": tack.zeros(4)} for g in blocks.local}
    everywhere(comm, blocks, ValueError, "Blocks.sort_by_key(): whether values are given "
               "differs between ranks", blocks.sort_by_key, keys, values)
    got = blocks.sort_by_key(keys)            # the next sort is not disturbed
    every = np.concatenate(comm.allgather(np.concatenate(
        [got[g].numpy() for g in blocks.local])))
    assert every.tolist() == sorted(every.tolist())
    world.free()


def test_an_op_that_is_no_string_on_one_rank(comm, rng):
    # a NumPy array's == is no bool: Plan.run compared it outside the agreement,
    # raised there, and left the other ranks waiting (a hang at the next call)
    blocks, world, bad = setup(comm)
    mine = list(blocks.local)
    plan = tack.Plan(blocks, {g: {g: [0]} for g in mine}, {g: {g: [1]} for g in mine})
    values = {g: tack.array(np.arange(3.0)) for g in mine}
    op = np.array(["copy", "sum"]) if bad else "copy"
    everywhere(comm, blocks, ValueError, "Plan.run(): op must be one of 'copy', 'sum', "
               "not array(['copy', 'sum']", plan.run, values, op)
    assert all(v.numpy().tolist() == [0.0, 1.0, 2.0] for v in values.values())
    plan.run(values)
    assert all(v.numpy().tolist() == [0.0, 0.0, 2.0] for v in values.values())
    world.free()


def test_op_and_margin_differ_between_ranks(comm, rng):
    blocks, world, bad = setup(comm)
    if comm.Get_size() == 1:
        return
    values = {g: float(g) for g in blocks.local}
    everywhere(comm, blocks, ValueError, "Blocks.all_reduce(): op differs between ranks",
               blocks.all_reduce, values, "max" if bad else "sum")
    everywhere(comm, blocks, ValueError, "Blocks.exclusive_scan(): op differs between "
               "ranks", blocks.exclusive_scan, values, "min" if bad else "sum")
    bounds = {g: ((float(g),), (g + 1.0,)) for g in blocks.local}
    everywhere(comm, blocks, ValueError, "Blocks.link_by_bounds(): margin differs between "
               "ranks", blocks.link_by_bounds, bounds, 1.0 if bad else 0.0)
    world.free()


def test_gpu_aware_blocks_on_a_device_without_dlpack_export(comm, rng):
    # Regression: the OpenCL rank failed inside the transfer, leaving the other
    # ranks waiting for its messages; now Blocks() refuses it on every rank.
    if not tack.device_count("opencl"):
        return
    world = tack.World(comm, gpu_aware=True)
    bad = comm.Get_rank() == comm.Get_size() - 1
    exc = raises(ValueError, "Blocks(): World(comm, gpu_aware=True) hands MPI the arrays "
                 "themselves through DLPack, and arrays on opencl:0 cannot be exported "
                 "that way; use World(comm), whose transport stages through host memory",
                 tack.Blocks, ["opencl" if bad else "cpu"], world)
    assert len(set(comm.allgather(str(exc)))) == 1
    blocks = tack.Blocks(["cpu"], world)          # the world still works
    assert blocks.all_reduce({g: 1 for g in blocks.local}) == blocks.count
    world.free()


class Watched:
    """A communicator that notes whether its duplicate was freed."""

    def __init__(self, comm):
        self._comm, self.dups = comm, []

    def __getattr__(self, name):
        return getattr(self._comm, name)

    def Dup(self):
        dup = Watched(self._comm.Dup())
        self.dups.append(dup)
        return dup

    def Free(self):
        self._comm.Free()
        self.freed = True


def test_gpu_aware_differs_between_ranks(comm, rng):
    if comm.Get_size() == 1:
        return
    bad = comm.Get_rank() == comm.Get_size() - 1
    watched = Watched(comm)
    exc = raises(ValueError, "tack.World(): gpu_aware differs between ranks: False, True",
                 tack.World, watched, gpu_aware=bad)
    assert len(set(comm.allgather(str(exc)))) == 1
    # the failed World freed the duplicate it made (thousands of failed worlds ran
    # MPICH out of communicators)
    assert [getattr(dup, "freed", False) for dup in watched.dups] == [True]


def test_gpu_aware_is_a_flag(comm, rng):
    bad = comm.Get_rank() == comm.Get_size() - 1
    everywhere_world = raises(TypeError, "tack.World(): gpu_aware must be True or False, "
                              "not '0'", tack.World, comm, gpu_aware="0" if bad else False)
    assert len(set(comm.allgather(str(everywhere_world)))) == 1
    with tack.World(comm, gpu_aware=np.bool_(False)) as world:
        assert world.gpu_aware is False


def test_other_ranks_are_told_which_rank_failed(comm, rng):
    blocks, world, bad = setup(comm)
    values = {g: 1.0 for g in blocks.local}
    if bad:
        del values[blocks.local.stop - 1]
    exc = raises(ValueError, "no entry in the values", blocks.all_reduce, values)
    notes = getattr(exc, "__notes__", [])
    last = comm.Get_size() - 1
    if bad:
        assert notes == []
    else:
        assert notes == [f"Raised on rank {last}, the lowest rank that found an error; "
                         f"this rank's own arguments were fine."]
    world.free()


if __name__ == "__main__":
    main(globals())
