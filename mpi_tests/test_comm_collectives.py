"""all_reduce, exclusive_scan, all_gather and link_by_bounds across block layouts.

The same six (or more) global values are reduced under every layout that fits
the rank count, (1 x 6), (2 x 3), (3 x 2), (6 x 1) and an uneven one; each
result must have the bits of a reference that combines over the fixed binary
tree of global ids, so it cannot depend on the layout.
"""

import numpy as np
import tack
from commtest import blocks_for, layouts, main, raises

OPS = {"sum": np.add, "min": np.minimum, "max": np.maximum}


def tree(values, op):
    """The reference: node (k, j) = (k-1, 2j) op (k-1, 2j+1), root over all ids."""
    f = OPS[op]

    def node(k, j):
        if k == 0:
            return values[j]
        left, right = node(k - 1, 2 * j), (2 * j + 1) << (k - 1)
        return left if right >= len(values) else f(left, node(k - 1, 2 * j + 1))
    return node(max(0, (len(values) - 1).bit_length()), 0)


def prefix(values, op, g):
    """The reference prefix of block g: the tree nodes covering [0, g), in order."""
    f, acc, start = OPS[op], None, 0
    levels = max(0, (len(values) - 1).bit_length())
    for k in range(levels, -1, -1):
        if g & (1 << k):
            node = tree(values[start:start + (1 << k)], op)
            acc = node if acc is None else f(acc, node)
            start += 1 << k
    return acc


def spread(rng, shape, dtype, count):
    """Values over many magnitudes, so that the association shows in the bits."""
    out = []
    for _ in range(count):
        v = rng.standard_normal(shape) * 10.0 ** rng.uniform(-6, 6, shape)
        out.append(np.asarray(v, dtype))
    return out


def same_bits(a, b, what):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (what, a.dtype, b.dtype)
    assert a.tobytes() == b.tobytes(), f"{what}: {a!r} != {b!r}"


def kinds(rng, total):
    """(name, per-block values as given, the same as NumPy arrays)."""
    floats = spread(rng, (), np.float64, total)
    f32 = spread(rng, (), np.float32, total)
    arr32 = spread(rng, (5,), np.float32, total)
    arr64 = spread(rng, (2, 3), np.float64, total)
    ints = [int(x) for x in rng.integers(-10**12, 10**12, total)]
    return [
        ("float", [float(x) for x in floats], floats),
        ("numpy f32", [np.float32(x) for x in f32], f32),
        ("f32 array", arr32, arr32),
        ("f64 array", arr64, arr64),
        ("int", ints, [np.int64(x) for x in ints]),
    ]


def as_given(name, value):
    return tack.array(value) if "array" in name else value


def test_all_reduce_same_bits_in_every_layout(comm, rng):
    for total in (6, 7):
        for name, given, host in kinds(rng, total):
            for op in OPS:
                expected = tree(host, op)
                for counts in layouts(comm.Get_size(), total):
                    blocks, world = blocks_for(comm, counts)
                    got = blocks.all_reduce({g: as_given(name, given[g])
                                             for g in blocks.local}, op)
                    if "array" in name:
                        assert isinstance(got, tack.Array)
                        got = got.numpy()
                    elif name == "float":
                        assert type(got) is float
                    elif name == "int":
                        assert type(got) is int
                    same_bits(got, expected, f"{name} {op} {counts}")
                    world.free()


def test_exclusive_scan_same_bits_in_every_layout(comm, rng):
    for total in (6, 5):
        for name, given, host in kinds(rng, total):
            for op in OPS:
                for counts in layouts(comm.Get_size(), total):
                    blocks, world = blocks_for(comm, counts)
                    got = blocks.exclusive_scan({g: as_given(name, given[g])
                                                 for g in blocks.local}, op)
                    assert sorted(got) == list(blocks.local)
                    for g, value in got.items():
                        value = value.numpy() if "array" in name else value
                        expected = prefix(host, op, g)
                        if expected is None:    # block 0: the identity
                            dtype = np.asarray(host[0]).dtype
                            fill = {"sum": 0, "min": np.inf if dtype.kind == "f" else
                                    np.iinfo(dtype).max,
                                    "max": -np.inf if dtype.kind == "f" else
                                    np.iinfo(dtype).min}[op]
                            expected = np.full(np.shape(host[0]), fill, dtype)
                        same_bits(value, expected, f"{name} {op} {counts} block {g}")
                    world.free()


def test_inf_minus_inf_is_nan_on_every_rank_even_under_seterr_raise(comm, rng):
    # Only the rank that combines a pair would see NumPy's overflow or invalid
    # value; under np.seterr(all="raise") it raised there while the others waited.
    saved = np.seterr(all="raise")
    try:
        for counts in layouts(comm.Get_size(), 4):
            blocks, world = blocks_for(comm, counts)
            values = {g: [np.inf, -np.inf, 1e308, 1e308][g] for g in blocks.local}
            assert np.isnan(blocks.all_reduce(values, "sum")), counts
            scanned = blocks.exclusive_scan(values, "sum")
            world.free()
            expected = {0: 0.0, 1: np.inf, 2: np.nan, 3: np.nan}
            for g, value in scanned.items():   # the NaN's sign is the hardware's
                assert value == expected[g] or np.isnan(value) and np.isnan(expected[g])
    finally:
        np.seterr(**saved)


def test_python_ints_combine_exactly_in_every_layout(comm, rng):
    # each value is within i64, the sums are not: they wrapped to -2**63 and 0
    given = [int(v) for v in rng.choice([2**63 - 1, -2**63, 2**62, 3], 6)]
    exact = {"sum": lambda v: sum(v), "min": lambda v: min(v, default=2**63 - 1),
             "max": lambda v: max(v, default=-2**63)}
    for counts in layouts(comm.Get_size(), 6):
        blocks, world = blocks_for(comm, counts)
        mine = {g: given[g] for g in blocks.local}
        got = {op: (blocks.all_reduce(mine, op), blocks.exclusive_scan(mine, op))
               for op in OPS}
        world.free()
        for op, (total, scanned) in got.items():
            assert type(total) is int and total == exact[op](given), (op, counts)
            assert scanned == {g: exact[op](given[:g]) for g in blocks.local}, (op, counts)


def test_all_gather_every_block(comm, rng):
    total = 6
    for name, given, host in kinds(rng, total):
        for counts in layouts(comm.Get_size(), total):
            blocks, world = blocks_for(comm, counts)
            mine = {g: as_given(name, given[g]) for g in blocks.local}
            got = blocks.all_gather(mine)
            assert list(got) == list(range(total))
            for g, value in got.items():
                if g in blocks.local:
                    assert value is mine[g]
                value = value.numpy() if "array" in name else value
                same_bits(value, host[g], f"{name} {counts} block {g}")
            world.free()


def test_all_gather_of_arrays_of_different_lengths(comm, rng):
    """Each block's particles: arrays that differ in their first extent (none
    at all on some blocks), one dtype and row shape."""
    total = 5
    counts = [int(rng.integers(0, 7)) for _ in range(total)]   # the same on every rank
    host = {g: rng.standard_normal((counts[g], 3)) for g in range(total)}
    for layout in layouts(comm.Get_size(), total):
        blocks, world = blocks_for(comm, layout)
        mine = {g: tack.array(host[g]) for g in blocks.local}
        got = blocks.all_gather(mine)
        assert list(got) == list(range(total))
        for g, value in got.items():
            np.testing.assert_array_equal(value.numpy(), host[g], f"{layout} block {g}")
        vectors = {g: tack.array(host[g], dtype=tack.vec3(dtype=tack.f64))
                   for g in blocks.local}
        got = blocks.all_gather(vectors)
        for g, value in got.items():
            assert value.dtype == tack.vec3(dtype=tack.f64) and value.shape == (counts[g],)
            np.testing.assert_array_equal(value.numpy(), host[g])
        world.free()


def test_all_gather_refuses_rows_of_different_shapes(comm, rng):
    """The first extent is free; the rest of the shape is not."""
    blocks, world = blocks_for(comm, [2] * comm.Get_size())
    values = {g: tack.zeros((4, 3 if g == 0 else 2), tack.f64) for g in blocks.local}
    if comm.Get_rank() == 0:    # block 0's rows differ from block 1's, on this rank
        raises(TypeError, "Blocks.all_gather(): the values differ in type or shape "
               "between blocks", blocks.all_gather, values)
    else:
        raises(TypeError, "Blocks.all_gather()", blocks.all_gather, values)
    world.free()


def test_one_block_and_no_blocks(comm, rng):
    size = comm.Get_size()
    blocks, world = blocks_for(comm, [1] + [0] * (size - 1))
    v = float(rng.standard_normal())
    assert blocks.all_reduce({g: v for g in blocks.local}) == v
    scan = blocks.exclusive_scan({g: v for g in blocks.local})
    assert scan == ({0: 0.0} if comm.Get_rank() == 0 else {})
    blocks, _ = blocks_for(comm, [0] * size, world)
    assert blocks.count == 0 and blocks.all_reduce({}) is None
    assert blocks.exclusive_scan({}) == {} and blocks.all_gather({}) == {}
    world.free()


def test_link_by_bounds_grid(comm, rng):
    nx, ny = 3, 2
    total = nx * ny
    boxes = {}
    for g in range(total):
        i, j = g % nx, g // nx
        boxes[g] = ((float(i), float(j)), (i + 1.0, j + 1.0))
    boxes[5] = ((2.25, 1.25), (2.75, 1.75))     # shrunk: 4 units from its left side
    for margin in (0.0, 0.2, 0.3):
        for counts in layouts(comm.Get_size(), total):
            blocks, world = blocks_for(comm, counts)
            got = blocks.link_by_bounds({g: boxes[g] for g in blocks.local}, margin)
            for g in blocks.local:
                (lo, hi) = boxes[g]
                want = [o for o in range(total) if o != g and all(
                    boxes[o][0][d] - margin <= hi[d] and lo[d] <= boxes[o][1][d] + margin
                    for d in range(2))]
                assert got[g] == want, (margin, g, got[g], want)
            world.free()
    # margin 0: touching faces and corners count; 0.2 is too little for block 5.
    blocks, world = blocks_for(comm, [total] + [0] * (comm.Get_size() - 1))
    if comm.Get_rank() == 0:
        links = blocks.link_by_bounds(boxes)
        assert links[0] == [1, 3, 4] and links[4] == [0, 1, 2, 3] and links[5] == []
    else:
        blocks.link_by_bounds({})
    world.free()


if __name__ == "__main__":
    main(globals())
