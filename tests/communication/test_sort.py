"""sort_by_key in one process, against NumPy's stable sort."""

import re
import secrets

import numpy as np
import pytest

import tack


@pytest.fixture
def rng():
    seed = secrets.randbits(63)
    print(f"seed {seed}")
    return np.random.default_rng(seed)


def cuts(keys, blocks):
    n, out = len(keys), [0]
    for b in range(1, blocks):
        t = b * n // blocks
        if n == 0:
            out.append(0)
            continue
        lo = int(np.searchsorted(keys, keys[t], "left"))
        hi = int(np.searchsorted(keys, keys[t], "right"))
        out.append(lo if t - lo <= hi - t else hi)
    return out + [n]


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
@pytest.mark.parametrize("sizes", [(0,), (1,), (5, 0, 3), (0, 0), (17, 1, 0, 9)])
def test_matches_numpy(rng, dtype, sizes):
    info = np.iinfo(dtype)
    keys = [rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
            if n % 2 else rng.integers(0, 3, n).astype(dtype) for n in sizes]
    rows = [rng.standard_normal((n, 2)).astype(np.float32) for n in sizes]
    blocks = tack.Blocks(["cpu"] * len(sizes))
    got_keys, got_rows = blocks.sort_by_key(
        {g: tack.array(k) for g, k in enumerate(keys)},
        {g: {"r": tack.array(r)} for g, r in enumerate(rows)})
    flat = np.concatenate(keys)
    order = np.argsort(flat, kind="stable")
    c = cuts(flat[order], len(sizes))
    for g in range(len(sizes)):
        np.testing.assert_array_equal(got_keys[g].numpy(), flat[order][c[g]:c[g + 1]])
        np.testing.assert_array_equal(got_rows[g]["r"].numpy(),
                                      np.concatenate(rows)[order][c[g]:c[g + 1]])
        assert got_keys[g].dtype.numpy == np.dtype(dtype)
    alone = blocks.sort_by_key({g: tack.array(k) for g, k in enumerate(keys)})
    for g in range(len(sizes)):
        np.testing.assert_array_equal(alone[g].numpy(), flat[order][c[g]:c[g + 1]])


def test_errors():
    blocks = tack.Blocks(["cpu"] * 2)
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.sort_by_key() takes i32, u32, i64 or u64 keys; the keys of block 1 "
            "are f64")):
        blocks.sort_by_key({0: tack.zeros(2, tack.i64), 1: tack.zeros(2, tack.f64)})
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.sort_by_key(): the keys have different types on different blocks "
            "(i32, i64)")):
        blocks.sort_by_key({0: tack.zeros(2, tack.i32), 1: tack.zeros(2, tack.i64)})
    with pytest.raises(ValueError, match=re.escape(
            "Blocks.sort_by_key(): the keys of block 0 must be one-dimensional, not of "
            "shape (2, 2)")):
        blocks.sort_by_key({0: tack.zeros((2, 2), tack.i32), 1: tack.zeros(2, tack.i32)})
    keys = {0: tack.zeros(2, tack.i32), 1: tack.zeros(3, tack.i32)}
    with pytest.raises(ValueError, match=re.escape(
            "Blocks.sort_by_key(): values[1]['v'] has shape (2,); its first extent must "
            "be the block's key count (3)")):
        blocks.sort_by_key(keys, {0: {"v": tack.zeros(2)}, 1: {"v": tack.zeros(2)}})
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.sort_by_key(): the values have different names, types or trailing "
            "shapes on different blocks")):
        blocks.sort_by_key(keys, {0: {"v": tack.zeros(2)}, 1: {"v": tack.zeros(3, tack.i32)}})
