"""sort_by_key: duplicates, all-equal keys, empty blocks, skewed distributions, every
key type, payloads; the result is the stable global sort cut at balanced places."""

import numpy as np
import tack
from commtest import blocks_for, layouts, main

KEY_TYPES = [np.int32, np.uint32, np.int64, np.uint64]


def distributions(rng, dtype, total):
    """Per block key arrays (NumPy), the same on every rank."""
    info = np.iinfo(dtype)
    sizes = [int(s) for s in rng.integers(0, 40, total)]
    sizes[0] = 0                                      # an empty block
    yield "uniform", [rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
                      for n in sizes]
    yield "duplicates", [rng.integers(0, 5, n).astype(dtype) for n in sizes]
    yield "all equal", [np.full(n, 7, dtype) for n in sizes]
    yield "skewed", [np.where(rng.random(n) < 0.8, 3, rng.integers(0, 1000, n)).astype(dtype)
                     for n in sizes]
    yield "extremes", [rng.choice(np.array([info.min, info.max, 0], dtype), n)
                       for n in sizes]
    yield "one block has all", [rng.integers(0, 50, 60).astype(dtype) if g == total - 1
                                else np.zeros(0, dtype) for g in range(total)]
    yield "nothing", [np.zeros(0, dtype) for _ in range(total)]


def expected_cuts(keys_sorted, total):
    n = len(keys_sorted)
    cuts = [0]
    for b in range(1, total):
        t = b * n // total
        if n == 0:
            cuts.append(0)
            continue
        k = keys_sorted[t]
        start = int(np.searchsorted(keys_sorted, k, "left"))
        end = int(np.searchsorted(keys_sorted, k, "right"))
        cuts.append(start if t - start <= end - t else end)
    cuts.append(n)
    return cuts


def check(comm, blocks, keys, rows, got_keys, got_rows, what):
    total = blocks.count
    everything = np.concatenate(keys)
    order = np.argsort(everything, kind="stable")
    want = everything[order]
    gathered = comm.allgather({g: (got_keys[g].numpy(),
                                   None if got_rows is None else
                                   {n: a.numpy() for n, a in got_rows[g].items()})
                               for g in blocks.local})
    out = {g: v for part in gathered for g, v in part.items()}
    assert sorted(out) == list(range(total))
    cuts = expected_cuts(want, total)
    for g in range(total):
        k, r = out[g]
        assert k.dtype == want.dtype, what
        np.testing.assert_array_equal(k, want[cuts[g]:cuts[g + 1]], f"{what}: block {g}")
        if rows is not None:
            for name, values in rows.items():
                whole = np.concatenate(values)[order]
                np.testing.assert_array_equal(r[name], whole[cuts[g]:cuts[g + 1]],
                                              f"{what}: {name} of block {g}")
    # the properties themselves, independently of the reference cuts
    seen_last = None
    for g in range(total):
        k = out[g][0]
        assert np.all(k[:-1] <= k[1:]), what
        if k.size and seen_last is not None:
            assert seen_last < k[0], f"{what}: a key is split between blocks"
        if k.size:
            seen_last = k[-1]


def test_keys_only(comm, rng):
    for counts in layouts(comm.Get_size()):
        blocks, world = blocks_for(comm, counts)
        for dtype in KEY_TYPES:
            for what, keys in distributions(rng, dtype, blocks.count):
                got = blocks.sort_by_key({g: tack.array(keys[g]) for g in blocks.local})
                assert sorted(got) == list(blocks.local)
                check(comm, blocks, keys, None, got, None, f"{what} {dtype} {counts}")
        world.free()


def test_with_payloads_stable(comm, rng):
    for counts in layouts(comm.Get_size())[:2]:
        blocks, world = blocks_for(comm, counts)
        for dtype in (np.int64, np.uint32):
            for what, keys in distributions(rng, dtype, blocks.count):
                rows = {"where": [np.stack([np.full(len(k), g), np.arange(len(k))], 1)
                                  .astype(np.int32) for g, k in enumerate(keys)],
                        "x": [rng.standard_normal(len(k)) for k in keys]}
                values = {g: {n: tack.array(v[g]) for n, v in rows.items()}
                          for g in blocks.local}
                got_keys, got_rows = blocks.sort_by_key(
                    {g: tack.array(keys[g]) for g in blocks.local}, values)
                check(comm, blocks, keys, rows, got_keys, got_rows,
                      f"{what} {dtype} {counts}")
                for g in blocks.local:
                    assert got_rows[g]["where"].shape == (got_keys[g].size, 2)
        world.free()


def test_with_payloads_on_blocks_of_two_devices(comm, rng):
    # Regression: a rank whose blocks were on two devices could not join its
    # keys for the payloads' order (concat of arrays on two devices).
    if not tack.device_count("opencl"):
        return
    devices = ["cpu", "opencl"]
    world = tack.World(comm)
    blocks = tack.Blocks(devices, world)
    for what, keys in distributions(rng, np.int64, blocks.count):
        rows = {"x": [rng.standard_normal(len(k)) for k in keys]}
        on = {g: devices[g - blocks.local.start] for g in blocks.local}
        values = {g: {"x": tack.array(rows["x"][g], device=on[g])} for g in blocks.local}
        got_keys, got_rows = blocks.sort_by_key(
            {g: tack.array(keys[g], device=on[g]) for g in blocks.local}, values)
        check(comm, blocks, keys, rows, got_keys, got_rows, f"{what}, cpu and opencl")
        for g in blocks.local:
            assert got_keys[g].device == tack.device(on[g])
    world.free()


def large_distributions(rng, dtype, total, low=1000, high=6000):
    """Blocks of ``low`` to ``high`` keys, so that the boundary search works from
    samples (one key in a few, or in many): long runs of equal keys, runs that
    end right at a balanced cut, few and many distinct keys."""
    info = np.iinfo(dtype)
    sizes = [int(s) for s in rng.integers(low, high, total)]
    n = sum(sizes)

    def spread(values):                      # the global keys, dealt out at random
        values = rng.permutation(np.asarray(values).astype(dtype))
        return np.split(values, np.cumsum(sizes)[:-1])
    yield "uniform", spread(rng.integers(info.min, info.max, n, dtype=dtype,
                                         endpoint=True))
    yield "few distinct", spread(rng.integers(0, 4, n))
    yield "skewed", spread(np.where(rng.random(n) < 0.8, 3, rng.integers(0, 10**6, n)))
    for shift in (-2, 0, 1, 3):                 # a run of 7s ending near a cut
        b = int(rng.integers(1, total)) if total > 1 else 1
        end = max(0, min(n, b * n // total + shift))
        yield f"run ends at cut {b} {shift:+d}", spread(
            np.concatenate([np.full(end, 7), rng.integers(8, 50, n - end)]))
    yield "long runs", spread(np.repeat(rng.integers(0, 100, 40), n // 40 + 1)[:n])


def test_large_blocks(comm, rng):
    """Exact cuts from sampled bounds: keys only, and with a payload (stable)."""
    size = comm.Get_size()
    for counts in layouts(size)[:2]:
        blocks, world = blocks_for(comm, counts)
        for dtype, low, high in ((np.int64, 1000, 6000), (np.uint32, 1000, 6000),
                                 (np.int64, 30, 300), (np.int32, 30, 300)):
            for what, keys in large_distributions(rng, dtype, blocks.count, low, high):
                got = blocks.sort_by_key({g: tack.array(keys[g]) for g in blocks.local})
                check(comm, blocks, keys, None, got, None,
                      f"{what} {dtype} {low}-{high} {counts}")
        keys = next(large_distributions(rng, np.int64, blocks.count))[1]
        keys = [k % 50 for k in keys]
        rows = {"at": [np.arange(len(k)) + 10**6 * g for g, k in enumerate(keys)]}
        got_keys, got_rows = blocks.sort_by_key(
            {g: tack.array(keys[g]) for g in blocks.local},
            {g: {"at": tack.array(rows["at"][g])} for g in blocks.local})
        check(comm, blocks, keys, rows, got_keys, got_rows, f"payload {counts}")
        world.free()


def test_balanced_sizes(comm, rng):
    """Distinct keys: every block gets N/B keys, rounded down or up."""
    blocks, world = blocks_for(comm, [1 + r % 3 for r in range(comm.Get_size())])
    total = blocks.count
    n = 10 * total + 3
    keys = np.array_split(rng.permutation(n).astype(np.int64), total)
    got = blocks.sort_by_key({g: tack.array(keys[g]) for g in blocks.local})
    for g in blocks.local:
        assert got[g].size in (n // total, -(-n // total)), (g, got[g].size)
    world.free()


if __name__ == "__main__":
    main(globals())
