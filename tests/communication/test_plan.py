"""Plan in one process: a periodic 2-D grid's ghost layers, self sends, errors."""

import re
import secrets
import subprocess
import sys

import numpy as np
import pytest

import tack


@pytest.fixture
def rng():
    seed = secrets.randbits(63)
    print(f"seed {seed}")
    return np.random.default_rng(seed)


def grid_plan(bx, nx, ny):
    """bx blocks in a periodic row; each (ny, nx + 2) with one ghost column a side."""
    width = nx + 2
    left = [r * width + 1 for r in range(ny)]
    right = [r * width + nx for r in range(ny)]
    ghost_left = [r * width for r in range(ny)]
    ghost_right = [r * width + nx + 1 for r in range(ny)]
    sends, receives = {}, {}
    for g in range(bx):
        west, east = (g - 1) % bx, (g + 1) % bx
        sends[g], receives[g] = {}, {}
        sends[g].setdefault(west, []).extend(left)
        sends[g].setdefault(east, []).extend(right)
        receives[g].setdefault(east, []).extend(ghost_right)   # east's left column
        receives[g].setdefault(west, []).extend(ghost_left)
    if bx == 1:       # one block: it is its own east and west, in the sender's order
        receives = {0: {0: ghost_right + ghost_left}}
    return sends, receives


@pytest.mark.parametrize("bx", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_periodic_row_of_blocks(rng, bx, dtype):
    nx, ny = 5, 3
    sends, receives = grid_plan(bx, nx, ny)
    blocks = tack.Blocks(["cpu"] * bx)
    plan = tack.Plan(blocks, sends, receives)
    whole = (rng.standard_normal((ny, bx * nx)) * 100).astype(dtype)
    values = {}
    for g in range(bx):
        block = np.full((ny, nx + 2), -1, dtype)
        block[:, 1:-1] = whole[:, g * nx:(g + 1) * nx]
        values[g] = tack.array(block)
    for _ in range(2):
        plan.run(values)
    for g in range(bx):
        cols = (np.arange(g * nx - 1, (g + 1) * nx + 1)) % (bx * nx)
        np.testing.assert_array_equal(values[g].numpy(), whole[:, cols])


def test_reads_before_writes():
    blocks = tack.Blocks(["cpu"] * 2)
    plan = tack.Plan(blocks, {0: {0: [0, 1, 2], 1: [0]}, 1: {0: [1]}},
                     {0: {0: [1, 2, 0], 1: [0]}, 1: {0: [1]}})
    a, b = tack.array(np.array([1.0, 2.0, 3.0])), tack.array(np.array([10.0, 20.0]))
    plan.run({0: a, 1: b})
    # block 0 rotates into itself; block 1's element 1 overwrites block 0's element 0
    np.testing.assert_array_equal(a.numpy(), [20.0, 1.0, 2.0])
    np.testing.assert_array_equal(b.numpy(), [10.0, 1.0])


def test_construction_errors():
    blocks = tack.Blocks(["cpu"] * 2)
    with pytest.raises(ValueError, match=re.escape(
            "Plan(): block 0 sends 2 elements to block 1, which receives 3 from it")):
        tack.Plan(blocks, {0: {1: [0, 1]}}, {1: {0: [0, 1, 2]}})
    with pytest.raises(ValueError, match=re.escape(
            "Plan(): block 0 sends 2 elements to block 1, which receives nothing from it")):
        tack.Plan(blocks, {0: {1: [0, 1]}}, {})
    with pytest.raises(ValueError, match=re.escape(
            "Plan(): block 1 receives 1 elements from block 0, which sends it nothing")):
        tack.Plan(blocks, {}, {1: {0: [4]}})
    with pytest.raises(TypeError, match=re.escape(
            "Plan(): the sends of block 0 (to block 1) must be integers, not float64")):
        tack.Plan(blocks, {0: {1: [0.5]}}, {1: {0: [0]}})
    with pytest.raises(ValueError, match=re.escape(
            "Plan(): the receives of block 1 (from block 0) has a negative index (-1)")):
        tack.Plan(blocks, {0: {1: [0]}}, {1: {0: [-1]}})
    with pytest.raises(ValueError, match=re.escape(
            "Plan(): the sends of block 0 (to block 1) has an index past any array "
            "(18446744073709551615)")):   # it wrapped to -1 and read element 0
        tack.Plan(blocks, {0: {1: np.array([2**64 - 1], np.uint64)}}, {1: {0: [0]}})
    with pytest.raises(ValueError, match=re.escape(
            "Plan(): block 5 is out of range: the world has 2 blocks")):
        tack.Plan(blocks, {0: {5: [0]}}, {})


def test_run_errors():
    blocks = tack.Blocks(["cpu"] * 2)
    plan = tack.Plan(blocks, {0: {1: [0, 3]}}, {1: {0: [0, 1]}})
    with pytest.raises(TypeError, match=re.escape(
            "Plan.run(): the values have different element types on different blocks "
            "(f32, f64)")):
        plan.run({0: tack.zeros(4, tack.f32), 1: tack.zeros(4, tack.f64)})
    with pytest.raises(ValueError, match=re.escape(
            "Plan.run(): the values of block 0 have 3 elements, but the plan uses "
            "element 3")):
        plan.run({0: tack.zeros(3), 1: tack.zeros(4)})
    with pytest.raises(ValueError, match=re.escape(
            "Plan.run(): no entry in the values for block 1 of this rank")):
        plan.run({0: tack.zeros(4)})
    with pytest.raises(TypeError, match=re.escape(
            "Plan.run(): the values of block 1 must be a tack.Array, not ndarray")):
        plan.run({0: tack.zeros(4), 1: np.zeros(4)})
    readonly = tack.array_from_ptr(np.zeros(4, np.float32), (4,), tack.f32)
    with pytest.raises(ValueError, match=re.escape(
            "Plan.run(): the values of block 1 are read-only, but the block receives "
            "elements")):
        plan.run({0: tack.zeros(4), 1: readonly})
    values = {0: tack.arange(4, dtype=tack.f32), 1: tack.zeros(2)}
    plan.run(values)
    np.testing.assert_array_equal(values[1].numpy(), [0.0, 3.0])


def test_a_dropped_plan_of_a_one_process_world_imports_no_mpi():
    # Its __del__ imported mpi4py.MPI to ask whether MPI had finalized, which
    # initialized MPI in a process that never meant to use it
    script = (
        "import gc, sys\n"
        "import tack\n"
        "blocks = tack.Blocks(['cpu', 'cpu'], tack.World())\n"
        "plan = tack.Plan(blocks, {0: {1: [0]}, 1: {0: [0]}}, {0: {1: [1]}, 1: {0: [1]}})\n"
        "plan.run({0: tack.zeros(2), 1: tack.zeros(2)})\n"
        "del plan\n"
        "gc.collect()\n"
        "print('mpi4py.MPI' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def _random_plan(rng, count, m):
    """Every block sends to every block (itself too) a random list of its
    elements, repeats allowed, into a random list of the receiver's."""
    sends = {g: {} for g in range(count)}
    receives = {g: {} for g in range(count)}
    for s in range(count):
        for d in range(count):
            k = int(rng.integers(1, 2 * m))
            sends[s][d] = rng.integers(0, m, k)
            receives[d][s] = rng.integers(0, m, k)
    return sends, receives


@pytest.mark.parametrize("device", ["cpu", "opencl", "opencl by kernels"])
@pytest.mark.parametrize("count", [1, 2, 3])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_sum_adds_every_received_element_in_order_of_source(rng, device, count, dtype,
                                                            monkeypatch):
    if device != "cpu" and not tack.device_count("opencl"):
        pytest.skip("no OpenCL device")
    if device == "opencl by kernels":   # not whole copies of these small arrays
        monkeypatch.setattr(tack.communication.plan, "WHOLE", 0)
        device = "opencl"
    m = 9
    sends, receives = _random_plan(rng, count, m)
    blocks = tack.Blocks([device] * count)
    plan = tack.Plan(blocks, sends, receives)
    host = {g: (rng.integers(-1000, 1000, m)).astype(dtype) for g in range(count)}
    values = {g: tack.array(host[g], device=device) for g in range(count)}
    for step in range(2):
        want = {g: host[g].copy() for g in range(count)}
        for d in range(count):
            for s in range(count):   # ascending source; every send read before
                np.add.at(want[d], receives[d][s], host[s][sends[s][d]])
        plan.run(values, op="sum")
        for g in range(count):
            np.testing.assert_array_equal(values[g].numpy(), want[g],
                                          f"block {g} step {step}")
        host = want


def test_sum_in_order_gives_the_same_bits_as_numpy(rng):
    """Floats whose sum depends on the order: the parts come in ascending
    source block, each message's in its order."""
    count, m = 3, 4
    sends = {s: {0: np.zeros(5, np.int64)} for s in range(count)}
    receives = {0: {s: np.zeros(5, np.int64) for s in range(count)}}
    host = {g: rng.standard_normal(m) * 10.0 ** rng.integers(-8, 8, m) for g in range(count)}
    blocks = tack.Blocks(["cpu"] * count)
    plan = tack.Plan(blocks, sends, receives)
    values = {g: tack.array(host[g]) for g in range(count)}
    plan.run(values, op="sum")
    want = host[0].copy()
    for s in range(count):
        for _ in range(5):
            want[0] += host[s][0]
    assert values[0].numpy()[0] == want[0]   # bit for bit


def test_an_unknown_op_is_a_value_error_before_anything_moves():
    blocks = tack.Blocks(["cpu"] * 2)
    plan = tack.Plan(blocks, {0: {1: [0]}}, {1: {0: [1]}})
    values = {g: tack.array(np.arange(3.0) + g) for g in range(2)}
    with pytest.raises(ValueError, match=re.escape(
            "Plan.run(): op must be one of 'copy', 'sum', not 'max'")):
        plan.run(values, op="max")
    assert values[1].numpy().tolist() == [1.0, 2.0, 3.0]


PROGRESSIONS = [np.arange(3, 9), np.arange(2, 40, 7), np.array([5]), np.arange(0),
                np.arange(30, 10, -4), np.array([4, 4, 4]), np.array([1, 2, 4]),
                np.array([0, 1, 2, 10, 11, 12, 20, 21, 22]),       # grids
                np.array([1, 3, 17, 19, 33, 35]), np.array([0, 1, 2, 3, 5, 6, 7, 8])]


@pytest.mark.parametrize("ranks", [1, 2])
@pytest.mark.parametrize("op", ["copy", "sum"])
def test_rows_columns_and_other_index_runs(rng, ranks, op):
    """Runs with a step (a grid's rows and columns) are copied as strided slices,
    other indices gathered and scattered: the same result as NumPy for every
    kind, between blocks of one rank and of two."""
    from fakempi import run_ranks
    m, count = 48, 4
    pairs = [(s, d) for s in range(count) for d in range(count)]
    picks = rng.integers(len(PROGRESSIONS), size=(len(pairs), 2))
    sends = {s: {} for s in range(count)}
    receives = {d: {} for d in range(count)}
    for (s, d), (a, b) in zip(pairs, picks):
        n = min(PROGRESSIONS[a].size, PROGRESSIONS[b].size)
        sends[s][d] = PROGRESSIONS[a][:n]
        receives[d][s] = np.sort(PROGRESSIONS[b][:n]) if op == "copy" else PROGRESSIONS[b][:n]
    if op == "copy":   # a copy receives each element once
        for d in range(count):
            taken = set()
            for s in range(count):
                keep = [k for k, j in enumerate(receives[d][s]) if j not in taken]
                taken.update(int(j) for j in receives[d][s][keep])
                receives[d][s], sends[s][d] = receives[d][s][keep], sends[s][d][keep]
    host = {g: rng.integers(-1000, 1000, m).astype(np.int64) for g in range(count)}
    want = {g: host[g].copy() for g in range(count)}
    for d in range(count):
        for s in range(count):
            data = host[s][sends[s][d]]
            if op == "sum":
                np.add.at(want[d], receives[d][s], data)
            else:
                want[d][receives[d][s]] = data

    def on_rank(comm):
        world = tack.World(comm)
        per = count // ranks
        blocks = tack.Blocks(["cpu"] * per, world)
        mine = blocks.local
        plan = tack.Plan(blocks, {g: sends[g] for g in mine}, {g: receives[g] for g in mine})
        values = {g: tack.array(host[g]) for g in mine}
        plan.run(values, op=op)
        for g in mine:
            np.testing.assert_array_equal(values[g].numpy(), want[g], f"block {g}")
        plan.free()
        world.free()
        return True
    assert (run_ranks(ranks, on_rank) if ranks > 1 else [on_rank(None)]) == [True] * ranks


@pytest.mark.parametrize("runs, length", [(64, 64), (8, 512), (20, 200), (3, 1000),
                                          (300, -1)])
def test_many_runs_of_a_face_reach_every_element(rng, runs, length):
    """A 3-D block's face: ``runs`` runs of ``length`` elements, or (length -1) a
    reversed index, each element a run of its own. Whether copied as slices or
    gathered, every element arrives (a cut-off run list once dropped the runs
    past its bound)."""
    gap = length + 37
    index = np.arange(runs - 1, -1, -1) if length < 0 else np.concatenate(
        [np.arange(k * gap, k * gap + length) for k in range(runs)])
    m = int(index.max()) + 1
    blocks = tack.Blocks(["cpu"] * 2)
    plan = tack.Plan(blocks, {0: {1: index}, 1: {}}, {0: {}, 1: {0: index}})
    host = rng.standard_normal(m)
    values = {0: tack.array(host), 1: tack.zeros(m, tack.f64)}
    plan.run(values)
    want = np.zeros(m)
    want[index] = host[index]
    np.testing.assert_array_equal(values[1].numpy(), want)


def faces(shape: tuple, inside: bool) -> list:
    """The flat indices of the six faces of a C-ordered 3-D array of ``shape``
    without its edges: the outermost layer, or (``inside``) the one within it."""
    coords = np.indices(shape)
    flat = np.arange(np.prod(shape)).reshape(shape)
    at = 1 if inside else 0
    out = []
    for axis, n in enumerate(shape):
        for layer in (at, n - 1 - at):
            where = coords[axis] == layer
            for other, m in enumerate(shape):
                if other != axis:
                    where &= (coords[other] > 0) & (coords[other] < m - 1)
            out.append(flat[where])
    return out


@pytest.mark.parametrize("op", ["copy", "sum"])
@pytest.mark.parametrize("dtype", [tack.f64, tack.vec3()])
def test_the_faces_of_3d_blocks(rng, op, dtype):
    """Each face of a 3-D block is one strided copy (a grid of rows): block 0's
    six inner faces go to the outer faces of blocks 1-6, the same as NumPy, on
    a second run and with new arrays too."""
    shape = (5, 6, 7)
    sends, receives = faces(shape, inside=True), faces(shape, inside=False)
    blocks = tack.Blocks(["cpu"] * 7)
    plan = tack.Plan(blocks, {0: {k + 1: i for k, i in enumerate(sends)}},
                     {k + 1: {0: j} for k, j in enumerate(receives)})
    vector = dtype == tack.vec3()
    for _ in range(3):
        host = {g: rng.standard_normal((np.prod(shape),) + ((3,) if vector else ())).astype(
            np.float32 if vector else np.float64) for g in range(7)}
        values = {g: tack.array(host[g], dtype=dtype) for g in range(7)}
        for _ in range(2):
            plan.run(values, op=op)
            for k, (i, j) in enumerate(zip(sends, receives)):
                want = host[k + 1]
                want[j] = want[j] + host[0][i] if op == "sum" else host[0][i]
                np.testing.assert_allclose(values[k + 1].numpy(), want, rtol=1e-6)
