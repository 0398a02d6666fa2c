"""Plan: ghost layers of a periodic 2-D grid of blocks, across ranks and layouts."""

import numpy as np
import tack
import tack.communication.plan as plan_module
from commtest import blocks_for, layouts, main

OFFSETS = [(dx, dy) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dx, dy) != (0, 0)]


class Grid:
    """``bx x by`` blocks of ``nx x ny`` cells each, ``w`` ghost layers, periodic."""

    def __init__(self, bx, by, nx, ny, w):
        self.bx, self.by, self.nx, self.ny, self.w = bx, by, nx, ny, w
        self.shape = (ny + 2 * w, nx + 2 * w)

    def neighbour(self, g, dx, dy):
        i, j = g % self.bx, g // self.bx
        return (i + dx) % self.bx + ((j + dy) % self.by) * self.bx

    def strip(self, dx, dy, ghost):
        """Flat indices of the interior cells next to side (dx, dy), or of the ghost
        cells beyond it, row-major."""
        w, nx, ny = self.w, self.nx, self.ny
        cols = {-1: range(w, 2 * w), 0: range(w, w + nx), 1: range(nx, nx + w)}[dx]
        rows = {-1: range(w, 2 * w), 0: range(w, w + ny), 1: range(ny, ny + w)}[dy]
        if ghost:
            cols = {-1: range(0, w), 0: cols, 1: range(nx + w, nx + 2 * w)}[dx]
            rows = {-1: range(0, w), 0: rows, 1: range(ny + w, ny + 2 * w)}[dy]
        return [r * self.shape[1] + c for r in rows for c in cols]

    def plan_of(self, g):
        """This block's sends and receives; several offsets to one block are joined."""
        sends, receives = {}, {}
        for dx, dy in OFFSETS:
            sends.setdefault(self.neighbour(g, dx, dy), []).extend(
                self.strip(dx, dy, ghost=False))
        for src in sorted({self.neighbour(g, dx, dy) for dx, dy in OFFSETS}):
            for dx, dy in OFFSETS:        # in the sender's order of offsets
                if self.neighbour(src, dx, dy) == g:
                    receives.setdefault(src, []).extend(self.strip(-dx, -dy, ghost=True))
        return sends, receives

    def field(self, rng, dtype):
        return rng.standard_normal((self.by * self.ny, self.bx * self.nx)).astype(dtype)

    def local(self, field, g, with_ghosts):
        """Block g's array; ghosts from the periodic field, or -1."""
        i, j, w = g % self.bx, g // self.bx, self.w
        ys = np.arange(j * self.ny - w, (j + 1) * self.ny + w) % field.shape[0]
        xs = np.arange(i * self.nx - w, (i + 1) * self.nx + w) % field.shape[1]
        out = field[np.ix_(ys, xs)].copy()
        if not with_ghosts:
            inner = np.full(self.shape, -1, field.dtype)
            inner[w:w + self.ny, w:w + self.nx] = out[w:w + self.ny, w:w + self.nx]
            out = inner
        return out


def check_grid(comm, rng, bx, by, nx, ny, w, counts, gpu_aware=False, dtypes=(np.float64,),
               device="cpu"):
    grid = Grid(bx, by, nx, ny, w)
    blocks, world = blocks_for(comm, counts, tack.World(comm, gpu_aware=gpu_aware), device)
    plans = {g: grid.plan_of(g) for g in blocks.local}
    plan = tack.Plan(blocks, {g: {d: np.array(i) for d, i in p[0].items()}
                              for g, p in plans.items()},
                     {g: {s: tack.array(np.array(i, np.int64)) for s, i in p[1].items()}
                      for g, p in plans.items()})
    for dtype in dtypes:
        for _ in range(2):        # the second run reuses buffers and views
            field = grid.field(rng, dtype)
            values = {g: tack.array(grid.local(field, g, False), device=blocks.device(g))
                      for g in blocks.local}
            plan.run(values)
            for g in blocks.local:
                np.testing.assert_array_equal(values[g].numpy(),
                                              grid.local(field, g, True),
                                              f"block {g} of {bx}x{by}, {counts}")
        # the same arrays again, after writing their interiors in place
        field = grid.field(rng, dtype)
        for g in blocks.local:
            tack.copyto(values[g], grid.local(field, g, False))
        plan.run(values)
        for g in blocks.local:
            np.testing.assert_array_equal(values[g].numpy(), grid.local(field, g, True))
    plan.free()
    world.free()


def test_ghost_layers_2d(comm, rng):
    size = comm.Get_size()
    for counts in layouts(size):
        total = sum(counts)
        for bx, by in ((total, 1), (1, total)) + (((2, total // 2),) if total % 2 == 0 else ()):
            check_grid(comm, rng, bx, by, 5, 4, 1, counts)
    counts = [1 + r % 3 for r in range(size)]
    total = sum(counts)
    check_grid(comm, rng, total, 1, 6, 7, 2, counts, dtypes=(np.float32, np.int64))


def test_ghost_layers_gpu_aware(comm, rng):
    size = comm.Get_size()
    counts = [2] * size
    check_grid(comm, rng, size, 2, 4, 3, 1, counts, gpu_aware=True,
               dtypes=(np.float64, np.int32))


def test_ghost_layers_of_opencl_blocks(comm, rng):
    """Arrays the host cannot read: kernels gather and scatter the elements
    that move, through host copies of the messages."""
    if not tack.device_count("opencl"):
        return
    size = comm.Get_size()
    check_grid(comm, rng, size, 2, 5, 4, 1, [2] * size, dtypes=(np.float64, np.int32),
               device="opencl")


def test_alternating_arrays_each_get_their_ghosts(comm, rng):
    """A time stepper's ``u, v = v, u``: each run fills the ghosts of the
    arrays it is given (the plan keeps the last few sets' checks)."""
    grid = Grid(comm.Get_size(), 1, 6, 5, 1)
    blocks, world = blocks_for(comm, [1] * comm.Get_size())
    g = blocks.local.start
    sends, receives = grid.plan_of(g)
    plan = tack.Plan(blocks, {g: sends}, {g: receives})
    u = {g: tack.zeros(grid.shape, tack.f64)}
    v = {g: tack.zeros(grid.shape, tack.f64)}
    for step in range(6):
        field = grid.field(rng, np.float64)
        tack.copyto(u[g], grid.local(field, g, False))
        plan.run(u)
        np.testing.assert_array_equal(u[g].numpy(), grid.local(field, g, True),
                                      f"step {step}")
        u, v = v, u
    plan.free()
    world.free()


def test_a_sending_opencl_block_sends_its_values_of_each_run(comm, rng):
    # Regression: a rank whose OpenCL blocks only send cached the first run's host
    # copy of them, and every later run sent those values again.
    if not tack.device_count("opencl"):
        return
    world = tack.World(comm)
    blocks = tack.Blocks(["opencl", "cpu"], world)     # each rank: opencl -> next cpu
    total = blocks.count
    sends = {g: {(g + 1) % total: np.arange(4)} for g in blocks.local if g % 2 == 0}
    receives = {g: {(g - 1) % total: np.arange(4)} for g in blocks.local if g % 2 == 1}
    plan = tack.Plan(blocks, sends, receives)
    values = {g: tack.zeros(4, device=blocks.device(g)) for g in blocks.local}
    for step in range(1, 4):
        for g in sends:
            tack.copyto(values[g], np.full(4, 10.0 * g + step))
        plan.run(values)
        for g in receives:
            np.testing.assert_array_equal(values[g].numpy(),
                                          np.full(4, 10.0 * ((g - 1) % total) + step))
    plan.free()
    world.free()


def test_opencl_arrays_crossing_the_whole_copy_size_between_runs(comm, rng):
    # Regression: a repeated run kept the first run's way of moving elements
    # (whole host copies below 256 KiB, kernels above): arrays that shrank got no
    # ghosts, and arrays that grew raised AttributeError on their rank while the
    # others received garbage and then hung.
    if not tack.device_count("opencl"):
        return
    world = tack.World(comm)
    blocks = tack.Blocks(["opencl"], world)
    n, last = blocks.count, comm.Get_rank() == comm.Get_size() - 1
    plan = tack.Plan(blocks, {g: {(g + 1) % n: [0, 1]} for g in blocks.local},
                     {g: {(g - 1) % n: [2, 3]} for g in blocks.local})
    small, big = 16, 70000            # 64 bytes and 280 KB of f32
    for sizes in ([small] * 2 + [big] * 2 + [small] * 2,
                  [big] * 2 + [small] * 2 + [big] * 2,
                  [small] * 2 + [big if last else small] * 2 + [small] * 2):
        for m in sizes:
            g = blocks.local.start
            values = {g: tack.array(np.arange(m, dtype=np.float32) + 1000 * g,
                                    device="opencl")}
            plan.run(values)
            s = (g - 1) % n
            assert values[g].numpy()[:5].tolist() == [1000 * g, 1000 * g + 1, 1000 * s,
                                                     1000 * s + 1, 1000 * g + 4], m
    plan.free()
    world.free()


def test_gpu_aware_copies_between_blocks_of_one_rank_on_two_devices(comm, rng):
    # Regression: the block-to-block copy gathered on one device and scattered
    # with that buffer into an array on the other.
    world = tack.World(comm, gpu_aware=True)
    other = tack.device("cpu", num_threads=1)
    blocks = tack.Blocks(["cpu", other], world)
    first = blocks.local.start
    plan = tack.Plan(blocks, {first: {first + 1: np.array([0, 2])}},
                     {first + 1: {first: np.array([1, 3])}})
    values = {first: tack.array(np.arange(4.0)),
              first + 1: tack.zeros(4, tack.f64, device=other)}
    plan.run(values)
    np.testing.assert_array_equal(values[first + 1].numpy(), [0.0, 0.0, 0.0, 2.0])
    plan.free()
    world.free()


def check_vector_ring(comm, rng, gpu_aware):
    """Each block sends elements 0 and 2 of a vec3 array to elements 1 and 3 of
    the next block's (a ring over every block of the world)."""
    size = comm.Get_size()
    counts = [1 + r % 2 for r in range(size)]
    blocks, world = blocks_for(comm, counts, tack.World(comm, gpu_aware=gpu_aware))
    total = blocks.count
    plan = tack.Plan(blocks, {g: {(g + 1) % total: np.array([0, 2])} for g in blocks.local},
                     {g: {(g - 1) % total: np.array([1, 3])} for g in blocks.local})
    field = rng.standard_normal((total, 4, 3)).astype(np.float32)
    field = world_bcast(comm, field)
    values = {g: tack.array(field[g], dtype=tack.vec3()) for g in blocks.local}
    plan.run(values)
    for g in blocks.local:
        want = field[g].copy()
        want[[1, 3]] = field[(g - 1) % total][[0, 2]]
        assert values[g].dtype == tack.vec3()
        np.testing.assert_array_equal(values[g].numpy(), want, f"block {g}, {counts}")
    plan.free()
    world.free()


def world_bcast(comm, value):
    return comm.bcast(value, root=0)


def test_vector_elements(comm, rng):
    check_vector_ring(comm, rng, False)


def test_vector_elements_gpu_aware(comm, rng):
    check_vector_ring(comm, rng, True)


def test_one_block_per_rank_wide_grid(comm, rng):
    size = comm.Get_size()
    check_grid(comm, rng, size, 1, 64, 48, 3, [1] * size)


def test_self_send_reads_before_writing(comm, rng):
    """A block that sends to itself sees the old values: a rotation by one."""
    size = comm.Get_size()
    blocks, world = blocks_for(comm, [2] * size)
    n = 9
    sends = {g: {g: np.arange(n)} for g in blocks.local}
    receives = {g: {g: (np.arange(n) + 1) % n} for g in blocks.local}
    plan = tack.Plan(blocks, sends, receives)
    start = rng.standard_normal(n)
    values = {g: tack.array(start + g) for g in blocks.local}
    plan.run(values)
    for g in blocks.local:
        np.testing.assert_array_equal(values[g].numpy(), np.roll(start + g, 1))
    world.free()



def check_sum(comm, rng, device="cpu", gpu_aware=False, op="sum"):
    """op="sum" over a random plan (every block to every block, repeated
    indices), against NumPy adding in order of source block; op="copy" with
    distinct indices per message, an element received from several source
    blocks ending with the highest one's value."""
    size = comm.Get_size()
    counts = [1 + r % 2 for r in range(size)]
    if device == "mixed":   # odd ranks' arrays on OpenCL, even ranks' in host memory
        device = "opencl" if comm.Get_rank() % 2 else "cpu"
    blocks, world = blocks_for(comm, counts, tack.World(comm, gpu_aware=gpu_aware), device)
    total, m = blocks.count, 7
    sends = {g: {} for g in range(total)}
    receives = {g: {} for g in range(total)}
    for s in range(total):      # the same plan on every rank: the seed is shared
        for d in range(total):
            k = int(rng.integers(1, 2 * m)) if op == "sum" else int(rng.integers(1, m))
            sends[s][d] = rng.integers(0, m, k)
            receives[d][s] = rng.integers(0, m, k) if op == "sum" else \
                rng.permutation(m)[:k]
    host = {g: rng.standard_normal(m) for g in range(total)}
    plan = tack.Plan(blocks, {g: sends[g] for g in blocks.local},
                     {g: receives[g] for g in blocks.local})
    values = {g: tack.array(host[g], device=blocks.device(g)) for g in blocks.local}
    for step in range(3):
        want = {g: host[g].copy() for g in range(total)}
        for d in range(total):
            for s in range(total):
                if op == "sum":
                    np.add.at(want[d], receives[d][s], host[s][sends[s][d]])
                else:
                    want[d][receives[d][s]] = host[s][sends[s][d]]
        plan.run(values, op=op)
        for g in blocks.local:    # bit for bit: the same order on any layout
            np.testing.assert_array_equal(values[g].numpy(), want[g],
                                          f"block {g} step {step} {counts}")
        host = want
    plan.free()
    world.free()


def test_sum_adds_received_elements_in_order_of_source(comm, rng):
    check_sum(comm, rng)
    check_sum(comm, rng, gpu_aware=True)
    if tack.device_count("opencl"):
        for whole in (plan_module.WHOLE, 0):   # whole copies; kernels per message
            plan_module.WHOLE = whole
            check_sum(comm, rng, device="opencl")
            check_sum(comm, rng, device="mixed")
        plan_module.WHOLE = 1 << 18


def test_copy_of_an_element_from_two_sources_keeps_the_highest_source(comm, rng):
    # the local copies were written before the received ones: the result
    # depended on which sources shared the destination's rank
    check_sum(comm, rng, op="copy")
    check_sum(comm, rng, gpu_aware=True, op="copy")
    if tack.device_count("opencl"):
        for whole in (plan_module.WHOLE, 0):
            plan_module.WHOLE = whole
            check_sum(comm, rng, device="opencl", op="copy")
            check_sum(comm, rng, device="mixed", op="copy")
        plan_module.WHOLE = 1 << 18


def test_ranks_with_host_and_opencl_arrays_exchange_ghosts(comm, rng):
    """A rank whose arrays the host reads sends one message per peer rank; a
    rank whose arrays it cannot read must send and expect the same."""
    if not tack.device_count("opencl"):
        return
    size = comm.Get_size()
    device = "opencl" if comm.Get_rank() % 2 else "cpu"
    for whole in (plan_module.WHOLE, 0):   # whole copies; kernels per message
        plan_module.WHOLE = whole
        check_grid(comm, rng, 2 * size, 1, 4, 3, 1, [2] * size, device=device)
        check_grid(comm, rng, size, 2, 5, 4, 1, [2] * size, device="opencl")
    plan_module.WHOLE = 1 << 18


def test_world_free_releases_the_communicator_of_plans_left_unfreed(comm, rng):
    """MPI frees a communicator only once its persistent requests are freed:
    world.free() frees those of the plans made on it (kept alive here, never
    freed), else MPI runs out of communicators (MPICH: about 2046 worlds)."""
    index = np.arange(4)
    plans = []
    for _ in range(2100):
        world = tack.World(comm)
        blocks = tack.Blocks(["cpu"], world)
        plan = tack.Plan(blocks, {g: {(g + 1) % blocks.count: index} for g in blocks.local},
                         {g: {(g - 1) % blocks.count: index + 8} for g in blocks.local})
        field = {g: tack.ones(16) for g in blocks.local}
        plan.run(field)
        plan.run(field)   # the second run uses the persistent requests
        plans.append(plan)
        world.free()

if __name__ == "__main__":
    main(globals())
