"""tack.io: checkpoints written by save and read back by load, in one process
and on thread-ranks laid out differently at the restart; mistakes raise on
every rank before the file or any array changes."""

import os
import re
import sys

import numpy as np
import pytest

import tack

h5py = pytest.importorskip("h5py")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "communication"))
from fakempi import run_ranks  # noqa: E402

DTYPES = [np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32,
          np.uint32, np.int64, np.uint64]
SHAPES = [(0,), (1,), (7,), (3, 5), (), (0, 4), (2, 3, 4)]


def fields(rng, count: int) -> dict:
    """Per block, 0-3 named host arrays of random types and shapes (any rank
    drawing from the same seed gets the same)."""
    out = {}
    for gid in range(count):
        named = {}
        for k in range(rng.integers(0, 4)):
            shape = SHAPES[rng.integers(len(SHAPES))]
            dtype = DTYPES[rng.integers(len(DTYPES))]
            named[f"f{k}_{gid}"] = (rng.standard_normal(shape) * 100).astype(dtype)
        out[gid] = named
    return out


def given(blocks, host: dict) -> dict:
    return {gid: {n: tack.array(v, device=blocks.device(gid)) for n, v in host[gid].items()}
            for gid in blocks.local}


def check(blocks, host: dict, got: dict) -> None:
    assert list(got) == list(blocks.local)
    for gid in blocks.local:
        assert list(got[gid]) == list(host[gid]), gid     # the order save had
        for name, want in host[gid].items():
            a = got[gid][name]
            assert isinstance(a, tack.Array) and a.device is blocks.device(gid)
            assert a.shape == want.shape and a.dtype.numpy == want.dtype, (gid, name)
            np.testing.assert_array_equal(a.numpy(), want)


def test_round_trip_in_one_process(tmp_path):
    rng = np.random.default_rng()
    blocks = tack.Blocks(["cpu"] * 5)
    host = fields(rng, 5)
    path = tmp_path / "step.h5"
    tack.io.save(path, blocks, given(blocks, host))
    got, attrs = tack.io.load(str(path), blocks)
    check(blocks, host, got)
    assert attrs == {}
    assert os.listdir(tmp_path) == ["step.h5"]     # no partial file left


def test_vector_and_matrix_arrays_keep_their_element_types(tmp_path):
    blocks = tack.Blocks(["cpu"])
    rng = np.random.default_rng()
    p = rng.standard_normal((9, 3))
    m = rng.standard_normal((2, 3, 3)).astype(np.float32)
    tack.io.save(tmp_path / "v.h5", blocks, {0: {
        "p": tack.array(p, dtype=tack.vec3(dtype=tack.f64)),
        "m": tack.array(m, dtype=tack.mat33()),
        "e": tack.zeros(0, dtype=tack.vec4())}})
    got, _ = tack.io.load(tmp_path / "v.h5", blocks)
    assert got[0]["p"].dtype == tack.vec3(dtype=tack.f64) and got[0]["p"].shape == (9,)
    assert got[0]["m"].dtype == tack.mat33() and got[0]["m"].shape == (2,)
    assert got[0]["e"].dtype == tack.vec4() and got[0]["e"].shape == (0,)
    np.testing.assert_array_equal(got[0]["p"].numpy(), p)
    np.testing.assert_array_equal(got[0]["m"].numpy(), m)


def test_attrs_come_back_as_python_values(tmp_path):
    blocks = tack.Blocks([])
    attrs = {"step": 120, "time": 0.375, "name": "run 7", "restarted": False,
             "big": 2**62, "box": np.array([1.0, 2.0, 4.0]), "seed": np.uint32(7)}
    tack.io.save(tmp_path / "a.h5", blocks, {}, attrs)
    got, back = tack.io.load(tmp_path / "a.h5", blocks)
    assert got == {}
    assert list(back) == list(attrs)
    assert back["step"] == 120 and type(back["step"]) is int
    assert back["time"] == 0.375 and back["name"] == "run 7"
    assert back["restarted"] is False and back["big"] == 2**62 and back["seed"] == 7
    np.testing.assert_array_equal(back["box"], attrs["box"])


def test_the_file_is_plain_hdf5(tmp_path):
    blocks = tack.Blocks(["cpu", "cpu"])
    u = np.arange(6.0).reshape(2, 3)
    tack.io.save(tmp_path / "f.h5", blocks, {0: {"u": tack.array(u)}, 1: {}},
                 {"step": 3})
    with h5py.File(tmp_path / "f.h5", "r") as f:
        assert f.attrs["tack_checkpoint"] == 1 and f.attrs["block_count"] == 2
        np.testing.assert_array_equal(f["blocks/0/u"][()], u)
        assert f["blocks/0/u"].attrs["tack_dtype"] == "f64"
        assert f["attrs"].attrs["step"] == 3


def test_a_new_checkpoint_replaces_the_old(tmp_path):
    blocks = tack.Blocks(["cpu"])
    path = tmp_path / "c.h5"
    tack.io.save(path, blocks, {0: {"u": tack.zeros(3)}})
    tack.io.save(path, blocks, {0: {"v": tack.ones(2, dtype=tack.i64)}})
    got, _ = tack.io.load(path, blocks)
    assert list(got[0]) == ["v"] and got[0]["v"].numpy().tolist() == [1, 1]


@pytest.mark.parametrize("layouts", [([2, 2, 2], [1, 3, 2]), ([6, 0, 0], [0, 0, 6]),
                                     ([0, 6, 0], [3, 0, 3]), ([1, 1, 4], [6]),
                                     ([6], [2, 0, 4]), ([3, 3], [1, 1, 1, 3])])
def test_restart_on_another_layout(tmp_path, layouts):
    """Saved from one assignment of six blocks to ranks, loaded on another, with
    another number of ranks."""
    saved_on, loaded_on = layouts
    rng = np.random.default_rng()
    host = fields(rng, 6)
    path = str(tmp_path / "r.h5")
    attrs = {"step": int(rng.integers(1000))}

    def saving(comm):
        world = tack.World(comm)
        blocks = tack.Blocks(["cpu"] * saved_on[world.rank], world)
        tack.io.save(path, blocks, given(blocks, host), attrs)
        world.free()

    def loading(comm):
        world = tack.World(comm)
        blocks = tack.Blocks(["cpu"] * loaded_on[world.rank], world)
        got, back = tack.io.load(path, blocks)
        check(blocks, host, got)
        world.free()
        return back

    run_ranks(len(saved_on), saving) if len(saved_on) > 1 else saving(None)
    backs = run_ranks(len(loaded_on), loading) if len(loaded_on) > 1 else [loading(None)]
    assert all(b == attrs for b in backs)


def test_arrays_on_opencl_blocks(tmp_path):
    try:
        gpu = tack.device("opencl")
    except Exception as exc:   # noqa: BLE001
        if os.environ.get("TACK_REQUIRE_OPENCL"):
            raise
        pytest.skip(f"no OpenCL device: {exc}")
    blocks = tack.Blocks([gpu, "cpu"])
    u = np.random.default_rng().standard_normal((4, 5)).astype(np.float32)
    tack.io.save(tmp_path / "o.h5", blocks, {0: {"u": tack.array(u, device=gpu)}, 1: {}})
    got, _ = tack.io.load(tmp_path / "o.h5", tack.Blocks(["cpu", gpu]))
    assert got[0]["u"].device.backend.memory_domain == tack.device("cpu").backend.memory_domain
    np.testing.assert_array_equal(got[0]["u"].numpy(), u)


# -- mistakes -------------------------------------------------------------------------

def raises_everywhere(size: int, fn, exc_type, pattern: str) -> None:
    """``fn(comm, rank)`` on ``size`` thread-ranks raises ``exc_type`` matching
    ``pattern`` on every rank."""
    def on_rank(comm):
        world = tack.World(comm)
        try:
            with pytest.raises(exc_type, match=pattern):
                fn(world, comm.Get_rank())
        finally:
            world.free()
        return True
    assert run_ranks(size, on_rank) == [True] * size


@pytest.mark.parametrize("values, exc_type, pattern", [
    (lambda: [1], TypeError, "takes a dict for the values, not list"),
    (lambda: {}, ValueError, "no entry in the values for block 0"),
    (lambda: {0: {"u": np.zeros(3)}}, TypeError,
     r"\['u'\] must be a tack.Array, not ndarray"),
    (lambda: {0: {"a/b": tack.zeros(2)}}, ValueError, "cannot name an HDF5 object"),
    (lambda: {0: {"": tack.zeros(2)}}, ValueError, "cannot name an HDF5 object"),
    (lambda: {0: {1: tack.zeros(2)}}, TypeError,
     "must be a dict of names to tack.Arrays; it has the key 1"),
    (lambda: {0: {}, 5: {}}, ValueError, "block 5 is out of range"),
])
def test_bad_values(tmp_path, values, exc_type, pattern):
    with pytest.raises(exc_type, match=pattern):
        tack.io.save(tmp_path / "x.h5", tack.Blocks(["cpu"]), values())
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("attrs, exc_type, pattern", [
    ({"f": lambda: 0}, TypeError, r"attrs\['f'\] is a function; attrs hold bools"),
    ({"s": np.array(["a"])}, TypeError, r"attrs\['s'\] is a ndarray"),
    ({2: 1}, TypeError, "attrs names are strings, not int"),
    ({"a/b": 1}, ValueError, "cannot name an HDF5 object"),
    ([1], TypeError, "takes a dict for attrs, not list"),
])
def test_bad_attrs(tmp_path, attrs, exc_type, pattern):
    with pytest.raises(exc_type, match=pattern):
        tack.io.save(tmp_path / "x.h5", tack.Blocks([]), {}, attrs)
    assert not os.listdir(tmp_path)


def test_a_bad_path_raises_and_keeps_nothing(tmp_path):
    with pytest.raises(TypeError, match=r"takes a file path \(str or os.PathLike\), not int"):
        tack.io.save(3, tack.Blocks([]), {})
    with pytest.raises(TypeError, match="takes a file path"):
        tack.io.load(None, tack.Blocks([]))

    class NoName:                   # an os.PathLike that gives no file name
        def __fspath__(self):
            return 42
    for call, args in [(tack.io.save, ({},)), (tack.io.load, ())]:
        with pytest.raises(TypeError, match=r"takes a file path \(str or os.PathLike\), "
                                            r"not NoName"):
            call(NoName(), tack.Blocks([]), *args)
    with pytest.raises(FileNotFoundError):
        tack.io.save(tmp_path / "missing" / "x.h5", tack.Blocks([]), {})
    with pytest.raises(FileNotFoundError):
        tack.io.load(tmp_path / "nothing.h5", tack.Blocks([]))
    assert os.listdir(tmp_path) == []


def test_load_refuses_other_files_and_block_counts(tmp_path):
    with h5py.File(tmp_path / "other.h5", "w") as f:
        f["x"] = np.arange(3)
    with pytest.raises(ValueError, match="is not a Tack checkpoint"):
        tack.io.load(tmp_path / "other.h5", tack.Blocks(["cpu"]))
    tack.io.save(tmp_path / "c.h5", tack.Blocks(["cpu"] * 3), {g: {} for g in range(3)})
    with pytest.raises(ValueError, match=re.escape(
            "tack.io.load(): the checkpoint holds 3 blocks and the Blocks 2; restart "
            "with as many blocks as were saved")):
        tack.io.load(tmp_path / "c.h5", tack.Blocks(["cpu"] * 2))


def test_without_h5py(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "h5py", None)
    with pytest.raises(ImportError, match=re.escape("pip install 'tack-hpc[io]'")):
        tack.io.save(tmp_path / "x.h5", tack.Blocks([]), {})
    with pytest.raises(ImportError, match="tack.io needs h5py"):
        tack.io.load(tmp_path / "x.h5", tack.Blocks([]))


def test_one_rank_mistake_raises_on_every_rank_and_writes_nothing(tmp_path):
    path = str(tmp_path / "m.h5")

    def save(world, rank):
        blocks = tack.Blocks(["cpu"], world)
        value = np.zeros(2) if rank == 2 else tack.zeros(2)
        tack.io.save(path, blocks, {blocks.local.start: {"u": value}})
    raises_everywhere(3, save, TypeError, "must be a tack.Array, not ndarray")
    assert not os.listdir(tmp_path)


def test_attrs_that_differ_between_ranks(tmp_path):
    def save(world, rank):
        tack.io.save(str(tmp_path / "d.h5"), tack.Blocks([], world), {},
                     {"step": 5 if rank else 4})
    raises_everywhere(2, save, ValueError, r"tack.io.save\(\): attrs differs between ranks")
    assert not os.listdir(tmp_path)


def test_a_failed_save_keeps_the_last_checkpoint(tmp_path):
    path = str(tmp_path / "keep.h5")
    tack.io.save(path, tack.Blocks(["cpu"]), {0: {"u": tack.full(3, 2.0)}})

    def save(world, rank):
        blocks = tack.Blocks(["cpu"], world)
        tack.io.save(path, blocks, {blocks.local.start: {"u": tack.zeros(1)}}
                     if rank == 0 else {})
    raises_everywhere(2, save, ValueError, "no entry in the values for block 1")
    got, _ = tack.io.load(path, tack.Blocks(["cpu"]))
    assert got[0]["u"].numpy().tolist() == [2.0, 2.0, 2.0]
    assert os.listdir(tmp_path) == ["keep.h5"]


def test_load_errors_reach_every_rank(tmp_path):
    tack.io.save(tmp_path / "c.h5", tack.Blocks(["cpu"] * 4), {g: {} for g in range(4)})

    def load(world, rank):
        tack.io.load(str(tmp_path / "c.h5"), tack.Blocks(["cpu"] * (rank + 1), world))
    raises_everywhere(2, load, ValueError, "the checkpoint holds 4 blocks and the Blocks 3")

    def load_missing(world, rank):
        tack.io.load(str(tmp_path / "none.h5"), tack.Blocks(["cpu"], world))
    raises_everywhere(3, load_missing, FileNotFoundError, "Unable to")


def test_an_array_that_cannot_be_read_fails_the_save_on_every_rank(tmp_path, monkeypatch):
    """After the agreement, a rank whose array cannot be read (a device error)
    sends empty messages for the rest; every rank raises its error and the last
    checkpoint stays."""
    path = str(tmp_path / "keep.h5")
    tack.io.save(path, tack.Blocks(["cpu"]), {0: {"u": tack.full(2, 5.0)}})
    broken = []
    numpy = tack.Array.numpy

    def failing(self):
        if any(self is b for b in broken):
            raise RuntimeError("the device was lost")
        return numpy(self)
    monkeypatch.setattr(tack.Array, "numpy", failing)

    def save(world, rank):
        blocks = tack.Blocks(["cpu"] * 2, world)
        values = {g: {"a": tack.zeros(3), "b": tack.ones(4)} for g in blocks.local}
        if rank == 1:
            broken.append(values[2]["a"])
        tack.io.save(path, blocks, values)
    raises_everywhere(2, save, RuntimeError, "the device was lost")
    monkeypatch.undo()
    got, _ = tack.io.load(path, tack.Blocks(["cpu"]))
    assert got[0]["u"].numpy().tolist() == [5.0, 5.0]
    assert os.listdir(tmp_path) == ["keep.h5"]


def test_a_path_that_cannot_be_replaced(tmp_path):
    (tmp_path / "dir.h5").mkdir()

    def save(world, rank):
        blocks = tack.Blocks(["cpu"], world)
        tack.io.save(str(tmp_path / "dir.h5"), blocks, {blocks.local.start: {}})
    # rank 0's error; the other ranks cannot rebuild an OSError naming two files,
    # and raise a RuntimeError that names it (communication.md, Guarantees)
    raises_everywhere(2, save, (IsADirectoryError, RuntimeError), "Is a directory")
    assert os.listdir(tmp_path) == ["dir.h5"]


def test_load_refuses_a_damaged_checkpoint(tmp_path):
    path = tmp_path / "d.h5"
    blocks = tack.Blocks(["cpu"] * 2)
    tack.io.save(path, blocks, {0: {"u": tack.zeros(3), "p": tack.zeros(2, tack.vec3())},
                                1: {}})
    with h5py.File(path, "a") as f:
        f["blocks/0/u"].attrs["tack_dtype"] = "i32"
    with pytest.raises(ValueError, match=r"blocks/0/u holds float32 of the shape \(3,\), "
                                         "which is no array of i32"):
        tack.io.load(path, blocks)
    with h5py.File(path, "a") as f:
        f["blocks/0/u"].attrs["tack_dtype"] = "vec3(f32)"
        f["blocks/0/p"].attrs["tack_dtype"] = "f33"
    with pytest.raises(ValueError, match="blocks/0/p has no tack_dtype attribute naming"):
        tack.io.load(path, blocks)
    with h5py.File(path, "a") as f:
        f["blocks/0/p"].attrs["tack_dtype"] = "vec3(f32)"
        f["blocks/7/x"] = np.zeros(1)
    with pytest.raises(ValueError, match="has a group blocks/7, not a block id below its "
                                         "block_count 2"):
        tack.io.load(path, blocks)


def test_a_dataset_claiming_more_than_it_stores_is_refused_before_anything_moves(tmp_path):
    """A damaged file whose dataset claims 2**42 elements in a few bytes: rank 0
    raised MemoryError alone and the others waited forever (ioaudit)."""
    path = str(tmp_path / "huge.h5")
    tack.io.save(path, tack.Blocks(["cpu"] * 2), {0: {"u": tack.zeros(3)}, 1: {}})
    with h5py.File(path, "a") as f:
        del f["blocks/0/u"]
        f["blocks/0"].create_dataset("u", shape=(2**42,), dtype=np.float32)
        f["blocks/0/u"].attrs["tack_dtype"] = "f32"

    with pytest.raises(ValueError, match=r"the dataset /blocks/0/u of the shape "
                                         r"\(4398046511104,\) stores 0 bytes, not its"):
        tack.io.load(path, tack.Blocks(["cpu"] * 2))


def test_ranks_naming_different_files(tmp_path):
    """Only rank 0's path was used: rank 1 believed it wrote its own (ioaudit)."""
    def save(world, rank):
        blocks = tack.Blocks(["cpu"], world)
        tack.io.save(str(tmp_path / f"rank{rank}.h5"), blocks, {blocks.local.start: {}})
    raises_everywhere(2, save, ValueError, r"tack.io.save\(\): the path differs between "
                                           "ranks")
    assert not os.listdir(tmp_path)


# -- hardening (ioaudit): races, links, values HDF5 would not give back, damage --------

def test_load_reads_one_file_while_a_save_replaces_it(tmp_path, monkeypatch):
    """A load opened the file twice: a save replacing it in between gave the
    attrs of one checkpoint and the arrays of the other (ioaudit)."""
    path, newer = str(tmp_path / "c.h5"), str(tmp_path / "newer.h5")
    blocks = tack.Blocks(["cpu"])
    tack.io.save(path, blocks, {0: {"u": tack.full(3, 1.0)}}, {"step": 1})
    tack.io.save(newer, blocks, {0: {"u": tack.full(3, 2.0)}}, {"step": 2})
    File = h5py.File

    def opened_then_replaced(name, *args, **kwargs):
        f = File(name, *args, **kwargs)
        if os.path.exists(newer):
            os.replace(newer, path)     # another job's save lands now
        return f
    monkeypatch.setattr(h5py, "File", opened_then_replaced)
    got, attrs = tack.io.load(path, blocks)
    assert attrs["step"] == 1 and got[0]["u"].numpy().tolist() == [1.0] * 3


def test_each_save_writes_a_partial_file_of_its_own(tmp_path, monkeypatch):
    """Two jobs saving one path shared <path>.partial and removed each other's
    (ioaudit); a failed save removes only its own."""
    path = tmp_path / "c.h5"
    (tmp_path / "c.h5.partial").write_text("another job's")
    names, File = [], h5py.File

    def recorded(name, *args, **kwargs):
        names.append(os.fspath(name))
        return File(name, *args, **kwargs)
    monkeypatch.setattr(h5py, "File", recorded)
    blocks = tack.Blocks(["cpu"])
    for _ in range(2):
        tack.io.save(path, blocks, {0: {"u": tack.zeros(2)}})
    assert len(set(names)) == 2 and all(n.endswith(".partial") for n in names)
    monkeypatch.setattr(tack.Array, "numpy", lambda self: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        tack.io.save(path, blocks, {0: {"u": tack.zeros(2)}})
    assert sorted(os.listdir(tmp_path)) == ["c.h5", "c.h5.partial"]


def test_a_symbolic_link_stays_a_link(tmp_path):
    (tmp_path / "scratch").mkdir()
    target, link = tmp_path / "scratch" / "c.h5", tmp_path / "c.h5"
    blocks = tack.Blocks(["cpu"])
    tack.io.save(target, blocks, {0: {}}, {"step": 1})
    os.symlink(target, link)
    tack.io.save(link, blocks, {0: {}}, {"step": 2})
    assert os.path.islink(link)
    assert tack.io.load(target, blocks)[1]["step"] == 2


def test_a_path_like_of_bytes(tmp_path):
    class BytesPath:
        def __fspath__(self):
            return os.fsencode(str(tmp_path / "b.h5"))
    blocks = tack.Blocks(["cpu"])
    tack.io.save(BytesPath(), blocks, {0: {"u": tack.ones(2)}})
    assert tack.io.load(BytesPath(), blocks)[0][0]["u"].numpy().tolist() == [1.0, 1.0]


@pytest.mark.parametrize("name", ["a\x00b", "\ud800"])
def test_names_hdf5_cannot_store(tmp_path, name):
    """'a\\0b' came back as 'a' (ioaudit)."""
    with pytest.raises(ValueError, match="without '/' or NUL"):
        tack.io.save(tmp_path / "x.h5", tack.Blocks(["cpu"]), {0: {name: tack.zeros(1)}})
    with pytest.raises(ValueError, match="cannot name an HDF5 object"):
        tack.io.save(tmp_path / "x.h5", tack.Blocks([]), {}, {name: 1})
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("value, exc_type, pattern", [
    ("a\x00b", ValueError, r"attrs\['x'\] holds a NUL character or one UTF-8 cannot"),
    ("\udc80", ValueError, "UTF-8 cannot encode"),
    (2**64, ValueError, r"attrs\['x'\] = 18446744073709551616 does not fit in 64 bits"),
    (-2**63 - 1, ValueError, "does not fit in 64 bits"),
    (np.longdouble(1), TypeError, r"attrs\['x'\] is a longdouble; attrs hold bools"),
    (np.complex128(1j), TypeError, "is a complex128"),
    (1j, TypeError, "is a complex"),
    (np.bytes_(b"x"), TypeError, "is a bytes_"),
    (b"x", TypeError, "is a bytes"),
    (np.datetime64("2026-01-01"), TypeError, "is a datetime64"),
    (np.array([1j]), TypeError, "is a ndarray"),
])
def test_attrs_hdf5_would_not_give_back(tmp_path, value, exc_type, pattern):
    """They passed the check and failed in h5py after every array moved, with
    h5py's message (ioaudit)."""
    with pytest.raises(exc_type, match=pattern):
        tack.io.save(tmp_path / "x.h5", tack.Blocks([]), {}, {"x": value})
    assert not os.listdir(tmp_path)


def test_numpy_strings_and_zero_dimensional_arrays_in_attrs(tmp_path):
    blocks = tack.Blocks([])
    tack.io.save(tmp_path / "a.h5", blocks, {},
                 {"s": np.str_("abc"), "z": np.array(3.5), "top": 2**64 - 1})
    _, back = tack.io.load(tmp_path / "a.h5", blocks)
    assert back == {"s": "abc", "z": 3.5, "top": 2**64 - 1}
    assert type(back["s"]) is str and type(back["z"]) is float


def test_attrs_arrays_differing_between_ranks_are_named_briefly(tmp_path):
    """Arrays were compared without their dtype, and spelled in full in the
    message (2 MB for 200,000 elements; ioaudit)."""
    def by_dtype(world, rank):
        tack.io.save(str(tmp_path / "d.h5"), tack.Blocks([], world), {},
                     {"w": np.array([1, 2], np.int32 if rank else np.int64)})
    raises_everywhere(2, by_dtype, ValueError, r"attrs differs between ranks: "
                                               r"\{'w': int32\[2\] array, sha256 ")

    def by_one_element(world, rank):
        w = np.zeros(200_000)
        w[7] = rank
        try:
            tack.io.save(str(tmp_path / "d.h5"), tack.Blocks([], world), {}, {"w": w})
        except ValueError as e:
            assert len(str(e)) < 300
            raise
    raises_everywhere(2, by_one_element, ValueError, "float64\\[200000\\] array")
    assert not os.listdir(tmp_path)


def damaged(tmp_path, change):
    """A checkpoint of two blocks changed by ``change(f)`` in h5py."""
    path = tmp_path / "d.h5"
    tack.io.save(path, tack.Blocks(["cpu"] * 2), {0: {"u": tack.zeros(3)}, 1: {}},
                 {"step": 1})
    with h5py.File(path, "a") as f:
        change(f)
    return path


def chunked_but_unwritten(f):
    del f["blocks/0/u"]
    f.create_dataset("blocks/0/u", shape=(2**42,), dtype="f4", chunks=(1024,))
    f["blocks/0/u"].attrs["tack_dtype"] = "f32"


@pytest.mark.parametrize("change, pattern", [
    (lambda f: f.attrs.__delitem__("block_count"), "has no block_count attribute"),
    (lambda f: f.attrs.__setitem__("block_count", "two"), "has no block_count attribute"),
    (lambda f: f.attrs.__setitem__("tack_checkpoint", [1, 1]), "is not a Tack checkpoint"),
    (lambda f: f.__delitem__("blocks"), "lacks the groups /blocks and /attrs"),
    (lambda f: f.__delitem__("attrs"), "lacks the groups /blocks and /attrs"),
    (lambda f: f.move("blocks/0", "blocks/00"), "has a group blocks/00, not a block id"),
    (lambda f: f.move("blocks/0", "blocks/\u0661"), "not a block id"),
    (lambda f: f.create_dataset("blocks/1", data=[1]), "holds blocks/1, which is not a "
                                                       "group"),
    (lambda f: f["blocks/0"].create_dataset("n", data=h5py.Empty("f8")),
     "/blocks/0/n is not a dataset"),
    (lambda f: f["attrs"].attrs.__setitem__("q", np.zeros(2, np.longdouble)),
     "the attribute 'q' of /attrs holds a ndarray"),
    (lambda f: f["blocks/0"].create_group("g"), "/blocks/0/g is not a dataset"),
    (lambda f: f["blocks/0"].__setitem__("s", h5py.SoftLink("/nowhere")),
     "/blocks/0/s is not a dataset"),
    (lambda f: f["blocks/0/u"].attrs.__setitem__("tack_dtype", "vec5(f32)"),
     "has no tack_dtype attribute naming a Tack element type"),
    (lambda f: f["attrs"].attrs.__setitem__("r", f.ref),
     "the attribute 'r' of /attrs holds a Reference"),
    (chunked_but_unwritten, r"has 0 of its 4294967296 chunks written"),
])
def test_more_damaged_checkpoints(tmp_path, change, pattern):
    """KeyError, AttributeError, MemoryError or bogus element types before (ioaudit)."""
    path = damaged(tmp_path, change)
    with pytest.raises(ValueError, match=pattern):
        tack.io.load(path, tack.Blocks(["cpu"] * 2))


def test_a_damaged_attribute_fails_the_load_on_every_rank(tmp_path):
    """An object reference in /attrs could not be sent: rank 0 raised alone and
    the others waited forever (ioaudit)."""
    path = damaged(tmp_path, lambda f: f["attrs"].attrs.__setitem__("r", f.ref))

    def load(world, rank):
        tack.io.load(str(path), tack.Blocks(["cpu"], world))
    raises_everywhere(2, load, ValueError, "holds a Reference")


def test_a_save_failing_as_it_starts_the_file_leaves_nothing(tmp_path, monkeypatch):
    """The file made and then an error (a full disk) before it was handed on:
    the partial file stays removed."""
    path = tmp_path / "c.h5"
    tack.io.save(path, tack.Blocks([]), {}, {"step": 1})
    File = h5py.File

    def made_then_full(name, *args, **kwargs):
        File(name, *args, **kwargs).close()
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(h5py, "File", made_then_full)
    with pytest.raises(OSError, match="No space left"):
        tack.io.save(path, tack.Blocks([]), {}, {"step": 2})
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["c.h5"]
    assert tack.io.load(path, tack.Blocks([]))[1] == {"step": 1}


def test_a_path_holding_nul(tmp_path):
    """rank 0 alone raised making the partial file's name, and the others
    waited forever; a load read the file named up to the NUL (review)."""
    path = str(tmp_path / "c.h5")
    tack.io.save(path, tack.Blocks([]), {}, {"step": 1})

    def save(world, rank):
        tack.io.save(path + "\0x", tack.Blocks([], world), {})
    raises_everywhere(2, save, ValueError, "holds a NUL character")
    with pytest.raises(ValueError, match=r"tack.io.load\(\): the path .* holds a NUL"):
        tack.io.load(path + "\0x", tack.Blocks([]))
    assert os.listdir(tmp_path) == ["c.h5"]


def test_a_long_file_name(tmp_path):
    """The partial file's longer name passed the file system's limit (review)."""
    path = tmp_path / ("c" * 250 + ".h5")
    tack.io.save(path, tack.Blocks([]), {}, {"step": 3})
    assert tack.io.load(path, tack.Blocks([]))[1] == {"step": 3}
    assert os.listdir(tmp_path) == [path.name]


def test_a_save_keeps_the_permissions_of_the_file_it_replaces(tmp_path):
    path = tmp_path / "x.h5"
    blocks = tack.Blocks(["cpu"])
    tack.io.save(path, blocks, {0: {"u": tack.zeros(3)}})
    os.chmod(path, 0o600)
    tack.io.save(path, blocks, {0: {"u": tack.ones(3)}})
    assert os.stat(path).st_mode & 0o777 == 0o600
    np.testing.assert_array_equal(tack.io.load(path, blocks)[0][0]["u"].numpy(), np.ones(3))
    assert os.listdir(tmp_path) == ["x.h5"]
