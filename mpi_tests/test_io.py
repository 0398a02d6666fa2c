"""tack.io under mpiexec: a checkpoint saved by every rank is read back on other
layouts and on fewer ranks (a sub-communicator), and one rank's mistake raises
on every rank."""

import os
import shutil
import tempfile

import numpy as np
import tack
from commtest import blocks_for, layouts, main, raises

DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint8, np.int16]
SHAPES = [(0,), (1,), (7,), (3, 5), (), (0, 4), (1000,), (40, 300)]
TOTAL = 6


def global_fields(rng) -> dict:
    """Per block, 0-3 named host arrays (the same on every rank)."""
    out = {}
    for gid in range(TOTAL):
        out[gid] = {f"f{k}": np.asarray(rng.standard_normal(SHAPES[rng.integers(len(SHAPES))])
                                        * 100).astype(DTYPES[rng.integers(len(DTYPES))])
                    for k in range(rng.integers(0, 4))}
    out[0]["pos"] = rng.standard_normal((11, 3)).astype(np.float32)
    return out


def given(blocks, host):
    out = {}
    for gid in blocks.local:
        out[gid] = {n: tack.array(v, device=blocks.device(gid)) for n, v in host[gid].items()}
        if "pos" in out[gid]:
            out[gid]["pos"] = tack.array(host[gid]["pos"], dtype=tack.vec3(),
                                         device=blocks.device(gid))
    return out


def check(blocks, host, got):
    assert list(got) == list(blocks.local), (list(got), blocks.local)
    for gid in blocks.local:
        assert list(got[gid]) == list(host[gid]), gid
        for name, want in host[gid].items():
            a = got[gid][name]
            np.testing.assert_array_equal(a.numpy(), want, f"block {gid} {name}")
            assert a.dtype == (tack.vec3() if name == "pos" else tack.types.from_numpy(
                want.dtype)), (gid, name, a.dtype)


def shared_dir(comm) -> str:
    return comm.bcast(tempfile.mkdtemp(prefix="tack_io_") if comm.Get_rank() == 0 else None)


def done(comm, path: str) -> None:
    comm.Barrier()
    if comm.Get_rank() == 0:
        shutil.rmtree(path)


def test_every_pair_of_layouts(comm, rng):
    folder = shared_dir(comm)
    world = tack.World(comm)
    for k, saved in enumerate(layouts(comm.Get_size(), TOTAL)):
        host = global_fields(rng)
        path = os.path.join(folder, f"c{k}.h5")
        blocks, _ = blocks_for(comm, saved, world)
        tack.io.save(path, blocks, given(blocks, host), {"layout": k, "step": 10 * k})
        for loaded in layouts(comm.Get_size(), TOTAL):
            other, _ = blocks_for(comm, loaded, world)
            got, attrs = tack.io.load(path, other)
            check(other, host, got)
            assert attrs == {"layout": k, "step": 10 * k}, attrs
    world.free()
    done(comm, folder)


def test_restart_on_fewer_ranks(comm, rng):
    """Saved by every rank; each prefix of the ranks loads it alone."""
    folder = shared_dir(comm)
    host = global_fields(rng)
    path = os.path.join(folder, "all.h5")
    size = comm.Get_size()
    world = tack.World(comm)
    per = [TOTAL // size + (r < TOTAL % size) for r in range(size)]
    blocks, _ = blocks_for(comm, per, world)
    tack.io.save(path, blocks, given(blocks, host))
    world.free()
    for ranks in range(1, size + 1):
        sub = comm.Split(0 if comm.Get_rank() < ranks else 1, comm.Get_rank())
        if comm.Get_rank() < ranks:
            sub_world = tack.World(sub)
            counts = [TOTAL // ranks + (r < TOTAL % ranks) for r in range(ranks)]
            some, _ = blocks_for(sub, counts, sub_world)
            got, _ = tack.io.load(path, some)
            check(some, host, got)
            sub_world.free()
        sub.Free()
    done(comm, folder)


class _NoName:
    """An os.PathLike whose ``__fspath__`` gives no str or bytes."""

    def __fspath__(self):
        return 42


def test_one_rank_mistake_raises_everywhere(comm, rng):
    folder = shared_dir(comm)
    path = os.path.join(folder, "bad.h5")
    world = tack.World(comm)
    blocks, _ = blocks_for(comm, [1] * comm.Get_size(), world)
    last = comm.Get_size() - 1
    values = {blocks.local.start: {"u": np.zeros(3) if comm.Get_rank() == last
                                   else tack.zeros(3)}}
    raises(TypeError, "must be a tack.Array, not ndarray", tack.io.save, path, blocks,
           values)
    assert not os.path.exists(path)
    tack.io.save(path, blocks, {blocks.local.start: {"u": tack.zeros(3)}})
    fewer, _ = blocks_for(comm, [2] + [1] * (comm.Get_size() - 1), world)
    raises(ValueError, f"the checkpoint holds {comm.Get_size()} blocks and the Blocks "
           f"{comm.Get_size() + 1}", tack.io.load, path, fewer)
    # a path object that gives no file name, on the last rank only
    odd = _NoName() if comm.Get_rank() == last else path
    raises(TypeError, "takes a file path (str or os.PathLike), not _NoName", tack.io.save,
           odd, blocks, {blocks.local.start: {"u": tack.zeros(3)}})
    if last:     # rank 0 reads the file: its error is the one every rank raises
        raises(TypeError, "takes a file path (str or os.PathLike), not _NoName",
               tack.io.load, odd, blocks)
    world.free()
    done(comm, folder)


if __name__ == "__main__":
    main(globals())
