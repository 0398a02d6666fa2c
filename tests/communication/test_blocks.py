"""Blocks in one process: layout, the reproducible collectives, link_by_bounds."""

import re
import secrets

import numpy as np
import pytest

import tack

OPS = {"sum": np.add, "min": np.minimum, "max": np.maximum}


def tree(values, op):
    """Reference: node (k, j) = (k-1, 2j) op (k-1, 2j+1) over block ids."""
    f = OPS[op]

    def node(k, j):
        if k == 0:
            return values[j]
        right = (2 * j + 1) << (k - 1)
        left = node(k - 1, 2 * j)
        return left if right >= len(values) else f(left, node(k - 1, 2 * j + 1))
    return node(max(0, (len(values) - 1).bit_length()), 0)


def prefix(values, op, g):
    f, acc, start = OPS[op], None, 0
    for k in range(max(0, (len(values) - 1).bit_length()), -1, -1):
        if g & (1 << k):
            part = tree(values[start:start + (1 << k)], op)
            acc = part if acc is None else f(acc, part)
            start += 1 << k
    return acc


@pytest.fixture
def rng():
    seed = secrets.randbits(63)
    print(f"seed {seed}")
    return np.random.default_rng(seed)


def test_layout():
    blocks = tack.Blocks(["cpu", tack.device("cpu"), "cpu"])
    assert blocks.local == range(0, 3) and blocks.count == 3 and blocks.counts == (3,)
    assert blocks.rank_of(2) == 0 and blocks.first_of(0) == 0
    assert blocks.device(1) == tack.device("cpu")
    assert repr(blocks) == "tack.Blocks(local=0..2, count=3, rank=0 of 1)"
    with pytest.raises(ValueError, match=re.escape(
            "Blocks.device(): block 3 is out of range: the world has 3 blocks "
            "(ids 0 to 2)")):
        blocks.device(3)
    with pytest.raises(ValueError, match=re.escape(
            "Blocks.rank_of(): block -1 is out of range")):
        blocks.rank_of(-1)
    with pytest.raises(ValueError, match=re.escape(
            "Blocks.rank_of(): block 3 is out of range")):
        blocks.rank_of(3)
    assert blocks.rank_of(np.int64(2)) == 0 and blocks.device(np.int32(0)) == blocks.device(0)


def test_first_of_checks_its_rank():
    blocks = tack.Blocks(["cpu", "cpu"])
    assert blocks.first_of(np.int64(1)) == 2 == blocks.count
    with pytest.raises(ValueError, match=re.escape(
            "Blocks.first_of(): rank 2 is out of range: the world has 1 ranks")):
        blocks.first_of(2)
    with pytest.raises(ValueError, match=re.escape("rank -1 is out of range")):
        blocks.first_of(-1)
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.first_of(): ranks are integers, not float")):
        blocks.first_of(1.0)


@pytest.mark.parametrize("gid", ["a", None, 1.5, True])
def test_an_id_that_is_not_an_integer_is_a_type_error(gid):
    blocks = tack.Blocks(["cpu", "cpu"])
    for call, method in (("rank_of", blocks.rank_of), ("device", blocks.device)):
        with pytest.raises(TypeError, match=re.escape(
                f"Blocks.{call}(): block ids are integers, not {type(gid).__name__}")):
            method(gid)


@pytest.mark.parametrize("count", [1, 2, 5, 8, 11])
@pytest.mark.parametrize("op", list(OPS))
def test_all_reduce_and_scan_follow_the_tree(rng, count, op):
    values = [np.float32(rng.standard_normal() * 10.0 ** rng.uniform(-5, 5))
              for _ in range(count)]
    blocks = tack.Blocks(["cpu"] * count)
    got = blocks.all_reduce(dict(enumerate(values)), op)
    assert type(got) is np.float32
    assert got.tobytes() == tree(values, op).tobytes(), (count, op)
    scan = blocks.exclusive_scan(dict(enumerate(values)), op)
    identity = {"sum": 0.0, "min": np.inf, "max": -np.inf}[op]
    assert scan[0] == np.float32(identity)
    for g in range(1, count):
        assert scan[g].tobytes() == prefix(values, op, g).tobytes(), (g, op)


def test_value_kinds(rng):
    blocks = tack.Blocks(["cpu"] * 3)
    assert blocks.all_reduce({0: 1, 1: 2, 2: 3}) == 6
    assert type(blocks.all_reduce({0: 1, 1: 2, 2: 3})) is int
    assert blocks.all_reduce({0: 0.5, 1: 0.25, 2: 1.0}, "max") == 1.0
    arrays = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(3)]
    got = blocks.all_reduce({g: tack.array(a) for g, a in enumerate(arrays)})
    assert isinstance(got, tack.Array) and got.dtype == tack.f32 and got.shape == (2, 3)
    assert got.numpy().tobytes() == ((arrays[0] + arrays[1]) + arrays[2]).tobytes()
    scan = blocks.exclusive_scan({g: tack.array(a) for g, a in enumerate(arrays)})
    np.testing.assert_array_equal(scan[0].numpy(), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(scan[2].numpy(), arrays[0] + arrays[1])
    ints = blocks.exclusive_scan({0: np.int32(5), 1: np.int32(-2), 2: np.int32(9)}, "max")
    assert ints == {0: np.iinfo(np.int32).min, 1: 5, 2: 5}
    gathered = blocks.all_gather({g: tack.array(a) for g, a in enumerate(arrays)})
    assert list(gathered) == [0, 1, 2]


@pytest.mark.parametrize("count", [1, 2, 4, 7])
def test_python_ints_combine_exactly_past_i64(rng, count):
    """Each value is within i64; sums past it are exact (they wrapped)."""
    top, bottom = 2**63 - 1, -2**63
    values = [int(v) for v in rng.choice([top, bottom, 2**62, -1, 0], count)]
    blocks = tack.Blocks(["cpu"] * count)
    given = dict(enumerate(values))
    assert blocks.all_reduce(given) == sum(values)
    assert blocks.exclusive_scan(given) == {g: sum(values[:g]) for g in range(count)}
    assert blocks.all_reduce(given, "min") == min(values)
    assert blocks.exclusive_scan(given, "max") == {
        g: max(values[:g], default=bottom) for g in range(count)}
    assert blocks.all_gather(given) == given
    everything = tack.Blocks(["cpu"] * 4).all_reduce({g: top for g in range(4)})
    assert everything == 4 * top and type(everything) is int


def test_numpy_float64_values_stay_numpy_scalars():
    """np.float64 is also a Python float: it is a NumPy value all the same."""
    blocks = tack.Blocks(["cpu"] * 3)
    values = {g: np.float64(g + 0.5) for g in range(3)}
    assert type(blocks.all_reduce(values)) is np.float64
    assert all(type(v) is np.float64 for v in blocks.exclusive_scan(values).values())
    assert all(type(v) is np.float64 for v in blocks.all_gather(values).values())
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.all_reduce(): the values differ in type or shape between blocks: "
            "NumPy f64, Python float")):
        blocks.all_reduce({0: np.float64(1.0), 1: 1.0, 2: 1.0})


def test_zero_blocks():
    blocks = tack.Blocks([])
    assert blocks.count == 0 and blocks.local == range(0, 0)
    assert blocks.all_reduce({}) is None
    assert blocks.exclusive_scan({}) == {} and blocks.all_gather({}) == {}
    assert blocks.exchange({}) == {} and blocks.link_by_bounds({}) == {}
    assert blocks.sort_by_key({}) == {}


def test_link_by_bounds():
    blocks = tack.Blocks(["cpu"] * 4)
    bounds = {0: ((0, 0), (1, 1)), 1: ((1, 0), (2, 1)), 2: ((0, 1.5), (1, 2)),
              3: ((5, 5), (6, 6))}
    assert blocks.link_by_bounds(bounds) == {0: [1], 1: [0], 2: [], 3: []}
    assert blocks.link_by_bounds(bounds, margin=0.5) == {0: [1, 2], 1: [0, 2],
                                                          2: [0, 1], 3: []}
    with pytest.raises(ValueError, match=re.escape(
            "Blocks.link_by_bounds(): margin must be zero or positive, not -1")):
        blocks.link_by_bounds(bounds, -1)
    with pytest.raises(ValueError, match=re.escape(
            "Blocks.link_by_bounds(): the box of block 1 has lo (3.0, 0.0) above hi "
            "(2.0, 1.0)")):
        blocks.link_by_bounds({**bounds, 1: ((3, 0), (2, 1))})
    with pytest.raises(ValueError, match=re.escape(
            "Blocks.link_by_bounds(): the box of block 1 has a coordinate that is not a "
            "number: lo (nan, 0.0), hi (2.0, 1.0)")):
        blocks.link_by_bounds({**bounds, 1: ((float("nan"), 0), (2, 1))})
    with pytest.raises(ValueError, match=re.escape(
            "Blocks.link_by_bounds(): no entry in the bounds for block 3 of this rank")):
        blocks.link_by_bounds({g: bounds[g] for g in range(3)})


def test_collective_errors():
    blocks = tack.Blocks(["cpu"] * 2)
    with pytest.raises(ValueError, match=re.escape(
            "Blocks.all_reduce() takes op 'sum', 'min' or 'max', not 'prod'")):
        blocks.all_reduce({0: 1.0, 1: 2.0}, "prod")
    with pytest.raises(ValueError, match=re.escape(
            "Blocks.all_reduce(): no entry in the values for block 1 of this rank; "
            "every block of the rank needs one")):
        blocks.all_reduce({0: 1.0})
    with pytest.raises(ValueError, match=re.escape(
            "Blocks.all_gather(): block 2 is out of range: the world has 2 blocks")):
        blocks.all_gather({0: 1.0, 1: 1.0, 2: 1.0})
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.exclusive_scan(): the value of block 0 must be a Python or NumPy "
            "scalar or a tack.Array, not list")):
        blocks.exclusive_scan({0: [1.0], 1: [2.0]})
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.all_reduce(): the values differ in type or shape between blocks: "
            "Python float, Python int")):
        blocks.all_reduce({0: 1.0, 1: 2})
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.all_reduce(): the values differ in type or shape between blocks: "
            "array of f32 with shape (2,), array of f32 with shape (3,)")):
        blocks.all_reduce({0: tack.zeros(2), 1: tack.zeros(3)})
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.all_reduce(): the value of block 0 is a bool; use an int")):
        blocks.all_reduce({0: True, 1: False})
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.all_reduce(): the value of block 1 is a NumPy complex64 scalar, a "
            "type Tack has no element of")):
        blocks.all_reduce({0: 1.0, 1: np.complex64(1)})
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.all_reduce() takes a dict of block ids to values, not list")):
        blocks.all_reduce([1.0, 2.0])


def test_link_by_bounds_refuses_boxes_of_different_dimensions_on_one_rank():
    blocks = tack.Blocks(["cpu"] * 2)
    with pytest.raises(ValueError, match=re.escape(
            "Blocks.link_by_bounds(): the boxes of this rank's blocks have different "
            "numbers of dimensions")):
        blocks.link_by_bounds({0: ((0.0, 0.0), (1.0, 1.0)),
                               1: ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))})


def test_collectives_refuse_an_array_on_another_device():
    if not tack.device_count("opencl"):
        pytest.skip("needs a second memory: OpenCL (PoCL) is not installed")
    blocks = tack.Blocks(["cpu"] * 2)
    elsewhere = tack.zeros(2, device="opencl")
    for name in ("all_reduce", "all_gather", "exclusive_scan"):
        with pytest.raises(ValueError, match=re.escape(
                f"Blocks.{name}(): the value of block 0: the array is on "
                f"Device('opencl:0'), not on block 0's device (Device('cpu')); copy it "
                f"there first")):
            getattr(blocks, name)({0: elsewhere, 1: tack.zeros(2)})


def test_cuda_blocks_on_an_mpi_that_is_not_cuda_aware_are_refused_on_every_rank(
        monkeypatch):
    """Found by Blocks() on the rank that has CUDA blocks and agreed, rather than
    mid-transfer on that rank alone while the others waited."""
    pytest.importorskip("cuda.bindings")
    from fake_cuda import FakeDriver
    from fakempi import run_ranks
    from tack.communication import transport
    from tack.runtime.cuda import driver
    from tack.runtime.cuda.backend import CUDABackend
    from tack.runtime.device import Device
    from cuda.bindings import nvrtc
    fake = FakeDriver()
    monkeypatch.setattr(driver, "modules", lambda: (fake, nvrtc))
    monkeypatch.setattr(driver, "_initialized", False)
    monkeypatch.setattr(driver, "_held", set())
    monkeypatch.setattr(driver, "several", [False])
    monkeypatch.setattr(transport, "_CUDA_SUPPORT", [True])   # the MPI refuses CUDA
    backend = CUDABackend(0)
    backend.memory_domain = ("fake-cuda", 0)
    gpu = Device(backend, "cuda", 0)

    def on_rank(comm):
        world = tack.World(comm, gpu_aware=True)
        try:
            tack.Blocks([gpu] if comm.Get_rank() == 0 else ["cpu"], world)
        except RuntimeError as exc:
            return str(exc)
        finally:
            world.free()
    assert run_ranks(2, on_rank) == [transport.NOT_CUDA_AWARE] * 2
