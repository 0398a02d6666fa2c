"""Routing: overlapping boxes, points on faces, points outside everything;
send delivers in order of origin and point, reply answers back."""

import numpy as np
import tack
from commtest import blocks_for, layouts, main

SLACK = 1e-6


def boxes_for(total, overlap):
    """A row-major grid of unit boxes, grown by ``overlap`` on every side."""
    nx = max(1, int(np.ceil(np.sqrt(total))))
    out = {}
    for g in range(total):
        i, j = g % nx, g // nx
        out[g] = ((i - overlap, j - overlap), (i + 1 + overlap, j + 1 + overlap))
    return out, nx


def points_for(rng, total, nx):
    """Per block: random points, points on faces and corners, points far outside."""
    ny = -(-total // nx)
    out = {}
    for g in range(total):
        n = int(rng.integers(0, 12))
        inside = rng.uniform(0, [nx, ny], (n, 2))
        faces = np.array([[1.0, 0.5], [1.0, 1.0], [0.0, 0.0], [nx, 0.25], [0.5, 1.0]])
        outside = np.array([[-5.0, 0.5], [0.5, ny + 3.0], [np.nan, 0.5]])
        pts = np.concatenate([inside, faces[: g % 6], outside[: g % 4]])
        out[g] = pts[rng.permutation(len(pts))]
    return out


def reference(boxes, points, holds):
    """Destination of every point of every block, by brute force."""
    total = len(boxes)
    out = {}
    for g, pts in points.items():
        dest = np.full(len(pts), -1, np.int64)
        for p, x in enumerate(pts):
            best, best_rank = -1, 0
            for c in candidates(boxes, x):
                rank = 1 if holds is None else holds_rank(c, x)
                if rank > best_rank:
                    best, best_rank = c, rank
            dest[p] = best
        out[g] = dest
    return out


def candidates(boxes, x):
    """The blocks whose box holds x; if none, those whose box grown by SLACK of
    its finite extent does."""
    def held(grow):
        found = []
        for c in range(len(boxes)):
            lo, hi = np.array(boxes[c][0], float), np.array(boxes[c][1], float)
            s = np.where(np.isfinite(hi - lo), grow * (hi - lo), 0.0)
            if np.all((x >= lo - s) & (x <= hi + s)):
                found.append(c)
        return found
    return held(0.0) or held(SLACK)


def holds_rank(gid, x):
    """A deterministic answer, zero for some points, ties between blocks."""
    return int((gid * 3 + int(np.floor(x[0] * 4)) + int(np.floor(x[1] * 2))) % 3)


def holds(gid, points):
    assert isinstance(points, tack.Array) and points.dtype == tack.f64
    xs = points.numpy()
    return tack.array(np.array([holds_rank(gid, x) for x in xs], np.int64))


def check(comm, rng, counts, overlap, use_holds):
    total = sum(counts)
    boxes, nx = boxes_for(total, overlap)
    points = points_for(rng, total, nx)
    blocks, world = blocks_for(comm, counts)
    routing = tack.Routing(blocks, {g: boxes[g] for g in blocks.local},
                           {g: tack.array(points[g]) for g in blocks.local},
                           holds if use_holds else None)
    want = reference(boxes, points, holds if use_holds else None)
    for g in blocks.local:
        np.testing.assert_array_equal(routing.destination[g].numpy(), want[g],
                                      f"block {g}, {counts}, overlap {overlap}")
    ids = {g: g * 1000 + np.arange(len(points[g]), dtype=np.int64) for g in range(total)}
    got = routing.send({g: {"id": tack.array(ids[g]), "x": tack.array(points[g])}
                        for g in blocks.local})
    for d in blocks.local:
        expect = np.concatenate([ids[o][want[o] == d] for o in range(total)]) \
            if total else np.zeros(0, np.int64)
        np.testing.assert_array_equal(got[d]["id"].numpy(), expect, f"to block {d}")
        assert got[d]["x"].shape == (len(expect), 2)
        xs = np.concatenate([points[o][want[o] == d] for o in range(total)])
        assert got[d]["x"].numpy().tobytes() == xs.tobytes()   # f64 bits travel
    back = routing.reply({d: {"twice": tack.array(got[d]["id"].numpy() * 2),
                              "by": tack.full(got[d]["id"].size, d, tack.i32)}
                          for d in blocks.local})
    for g in blocks.local:
        went = want[g] >= 0
        np.testing.assert_array_equal(back[g]["twice"].numpy(), np.where(went, ids[g] * 2, 0))
        np.testing.assert_array_equal(back[g]["by"].numpy(), np.where(went, want[g], 0))
        assert back[g]["by"].dtype == tack.i32
    world.free()


def test_default_holds(comm, rng):
    for counts in layouts(comm.Get_size()):
        for overlap in (0.0, 0.3):
            check(comm, rng, counts, overlap, False)


def test_holds_ranks(comm, rng):
    for counts in layouts(comm.Get_size())[:2]:
        check(comm, rng, counts, 0.3, True)


def test_points_on_shared_face_go_to_lowest_block(comm, rng):
    size = comm.Get_size()
    blocks, world = blocks_for(comm, [2] * size)
    total = blocks.count
    bounds = {g: ((float(g), 0.0), (g + 1.0, 1.0)) for g in blocks.local}
    faces = np.array([[float(g), 0.5] for g in range(total + 1)])
    routing = tack.Routing(blocks, bounds, {g: tack.array(faces) for g in blocks.local})
    for g in blocks.local:
        np.testing.assert_array_equal(routing.destination[g].numpy(),
                                      [max(0, x - 1) if x else 0 for x in range(total + 1)])
    world.free()


if __name__ == "__main__":
    main(globals())
