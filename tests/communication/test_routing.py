"""Routing in one process: destinations, send, reply, holds and errors."""

import re
import secrets

import numpy as np
import pytest

import tack

BOUNDS = {0: ((0.0, 0.0), (1.0, 1.0)), 1: ((1.0, 0.0), (2.0, 1.0)),
          2: ((0.5, 0.5), (1.5, 1.5))}                       # 2 overlaps 0 and 1


@pytest.fixture
def rng():
    seed = secrets.randbits(63)
    print(f"seed {seed}")
    return np.random.default_rng(seed)


def test_destinations_send_and_reply(rng):
    blocks = tack.Blocks(["cpu"] * 3)
    points = {0: np.array([[0.2, 0.2], [1.0, 0.3], [1.2, 1.2], [5.0, 5.0]]),
              1: np.zeros((0, 2)),
              2: np.array([[1.9, 0.1], [1.0 + 1e-7, 0.5], [0.7, 0.7], [-1e-9, 0.5]])}
    routing = tack.Routing(blocks, BOUNDS, {g: tack.array(p) for g, p in points.items()})
    # (1 + 1e-7, 0.5) is inside boxes 1 and 2; (-1e-9, 0.5) inside none, but
    # inside box 0 grown by 1e-6 of its extent
    want = {0: [0, 0, 2, -1], 1: [], 2: [1, 1, 0, 0]}
    for g in blocks.local:
        assert routing.destination[g].dtype == tack.i64
        np.testing.assert_array_equal(routing.destination[g].numpy(), want[g])
    ids = {g: tack.array(10 * g + np.arange(len(p), dtype=np.int64))
           for g, p in points.items()}
    got = routing.send({g: {"id": ids[g], "x": tack.array(points[g])} for g in ids})
    np.testing.assert_array_equal(got[0]["id"].numpy(), [0, 1, 22, 23])
    np.testing.assert_array_equal(got[1]["id"].numpy(), [20, 21])
    np.testing.assert_array_equal(got[2]["id"].numpy(), [2])
    assert got[1]["x"].numpy().tobytes() == points[2][:2].tobytes()
    back = routing.reply({g: {"twice": tack.array(got[g]["id"].numpy() * 2)} for g in got})
    np.testing.assert_array_equal(back[0]["twice"].numpy(), [0, 2, 4, 0])
    np.testing.assert_array_equal(back[2]["twice"].numpy(), [40, 42, 44, 46])
    assert back[1]["twice"].shape == (0,)


@pytest.mark.parametrize("far", [np.inf, 1e300])
def test_open_and_very_wide_outer_boxes_keep_their_faces(far):
    # the slack grew such boxes past every face: every point went to block 0
    blocks = tack.Blocks(["cpu"] * 2)
    bounds = {0: ((-far,), (0.5,)), 1: ((0.5,), (far,))}
    points = {0: np.array([[0.1], [0.9], [5.0], [-3.0], [0.5]]), 1: np.zeros((0, 1))}
    routing = tack.Routing(blocks, bounds, {g: tack.array(p) for g, p in points.items()})
    assert routing.destination[0].numpy().tolist() == [0, 1, 1, 0, 0]


def test_slack_takes_only_points_no_box_holds():
    # a point inside block 1 near block 0's face stays with block 1; one just
    # past the outer faces of a grid of a thousand blocks finds its block
    blocks = tack.Blocks(["cpu"] * 1000)
    bounds = {g: ((g % 40, g // 40), (g % 40 + 1, g // 40 + 1)) for g in range(1000)}
    points = {g: np.zeros((0, 2)) for g in range(1000)}
    points[0] = np.array([[1.0 + 1e-7, 0.5], [-1e-7, 0.5], [40 + 1e-6, 24.5],
                          [39.5, 25 + 1e-5], [7.5, 7.5], [7.0, 7.0], [np.nan, 0.5]])
    routing = tack.Routing(blocks, bounds, {g: tack.array(p) for g, p in points.items()})
    assert routing.destination[0].numpy().tolist() == [1, 0, 999, -1, 7 * 40 + 7,
                                                        6 * 40 + 6, -1]   # a corner: the lowest


def brute_force(bounds, x):
    """The lowest block whose box holds x, else the lowest whose box grown by
    1e-6 of its finite extent does, else -1 (docs/communication.md)."""
    for grow in (0.0, 1e-6):
        for g in sorted(bounds):
            lo, hi = (np.array(v, float) for v in bounds[g])
            with np.errstate(invalid="ignore"):   # 0 * inf
                s = np.where(np.isfinite(hi - lo), grow * (hi - lo), 0.0)
            if np.all((x >= lo - s) & (x <= hi + s)):
                return g
    return -1


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_destinations_match_brute_force_on_random_boxes(rng, dims):
    for _ in range(4):
        count = int(rng.integers(1, 40))
        corner = rng.integers(-5, 5, (count, dims)).astype(float)
        size = rng.choice([0.0, 0.5, 1.0, 3.0, 1e6], (count, dims))
        lo, hi = corner, corner + size
        lo[rng.random((count, dims)) < 0.1] = -np.inf
        hi[rng.random((count, dims)) < 0.1] = np.inf
        bounds = {g: (tuple(lo[g]), tuple(hi[g])) for g in range(count)}
        faces = np.concatenate([lo, hi])
        faces = faces[np.isfinite(faces).all(axis=1)]
        x = np.concatenate([rng.uniform(-8, 8, (60, dims)), faces,
                            faces + rng.choice([-1e-7, 1e-7, 1e-5], faces.shape),
                            np.full((1, dims), np.nan)])
        blocks = tack.Blocks(["cpu"] * count)
        # every block submits every point: those its own box holds take the
        # home block's shortcut (a lower box sharing a face or more may win)
        routing = tack.Routing(blocks, bounds, {g: tack.array(x) for g in range(count)})
        want = [brute_force(bounds, p) for p in x]
        for g in range(count):
            assert routing.destination[g].numpy().tolist() == want, f"block {g}"


def test_holds_decides(rng):
    blocks = tack.Blocks(["cpu"] * 3)
    points = {g: tack.array(np.array([[0.75, 0.75], [0.25, 0.25], [1.25, 0.75]]))
              for g in range(3)}
    asked = []

    def holds(gid, pts):
        asked.append((gid, len(pts)))
        x = pts.numpy()
        if gid == 2:
            return np.full(len(x), 5)
        return np.where(x[:, 0] < 0.5, 1, 0)      # 0 and 1 hold only x < 0.5
    routing = tack.Routing(blocks, BOUNDS, points, holds)
    for g in range(3):
        np.testing.assert_array_equal(routing.destination[g].numpy(), [2, 0, 2])
    assert sorted(asked) == [(0, 6), (1, 3), (2, 6)]
    nobody = tack.Routing(blocks, BOUNDS, points, lambda gid, pts: np.zeros(len(pts), int))
    np.testing.assert_array_equal(nobody.destination[0].numpy(), [-1, -1, -1])


def test_identical_boxes_and_a_world_without_blocks():
    # every point meets every box (the test against all boxes at once); no blocks
    blocks = tack.Blocks(["cpu"] * 6)
    bounds = {g: ((0.0, 0.0), (1.0, 1.0)) for g in range(6)}
    x = np.array([[0.5, 0.5], [1.0 + 1e-7, 0.5], [2.0, 0.5], [0.0, 1.0]])
    points = {g: np.zeros((0, 2)) for g in range(6)}
    points[3] = x
    plain = tack.Routing(blocks, bounds, {g: tack.array(p) for g, p in points.items()})
    assert plain.destination[3].numpy().tolist() == [0, 0, -1, 0]
    asked = tack.Routing(blocks, bounds, {g: tack.array(p) for g, p in points.items()},
                         lambda g, pts: np.full(len(pts), 1 + g % 4, np.int64))
    assert asked.destination[3].numpy().tolist() == [3, 3, -1, 3]   # 1 + 3 % 4 = 4
    nothing = tack.Routing(tack.Blocks([]), {}, {})
    assert nothing.destination == {}


def test_vector_points_route_as_their_components():
    blocks = tack.Blocks(["cpu"] * 3)
    xy = np.array([[0.2, 0.2], [1.5, 0.25], [7.0, 7.0]], np.float32)
    points = {0: tack.array(xy, dtype=tack.vec2()), 1: tack.zeros(0, tack.vec2()),
              2: tack.zeros(0, tack.vec2())}
    routing = tack.Routing(blocks, BOUNDS, points)
    assert routing.destination[0].numpy().tolist() == [0, 1, -1]


def test_errors():
    blocks = tack.Blocks(["cpu"] * 3)
    points = {g: tack.zeros((2, 2), tack.f64) for g in range(3)}
    with pytest.raises(ValueError, match=re.escape(
            "Routing(): the points of block 1 are f64 of shape (2,); they must be (n, 2) "
            "(or n vectors of 2), the boxes' dimensions")):
        tack.Routing(blocks, BOUNDS, {**points, 1: tack.zeros(2, tack.f64)})
    with pytest.raises(ValueError, match=re.escape(
            "are vec3(f32) of shape (4,); they must be (n, 2)")):
        tack.Routing(blocks, BOUNDS, {**points, 1: tack.zeros(4, tack.vec3())})
    with pytest.raises(TypeError, match=re.escape(
            "Routing(): holds must be callable, not int")):
        tack.Routing(blocks, BOUNDS, points, 3)
    with pytest.raises(ValueError, match=re.escape(
            "Routing(): holds(0, points) returned a negative rank (-1)")):
        tack.Routing(blocks, BOUNDS, points, lambda g, p: np.full(len(p), -1))
    with pytest.raises(ValueError, match=re.escape(
            "Routing(): holds(0, points) returned a rank past 2**63 - 1 "
            "(18446744073709551615)")):
        tack.Routing(blocks, BOUNDS, points,
                     lambda g, p: np.full(len(p), 2**64 - 1, np.uint64))
    with pytest.raises(ValueError, match=re.escape(
            "Routing(): holds(0, points) must return 6 integers, one per point; it "
            "returned int64 of shape (1,)")):
        tack.Routing(blocks, BOUNDS, points, lambda g, p: [1])
    routing = tack.Routing(blocks, BOUNDS, points)
    with pytest.raises(ValueError, match=re.escape(
            "Routing.send(): the payload 'v' of block 0 has shape (3,); it needs 2 rows")):
        routing.send({0: {"v": tack.zeros(3)}, 1: {"v": tack.zeros(2)},
                      2: {"v": tack.zeros(2)}})
    with pytest.raises(TypeError, match=re.escape(
            "Routing.send(): the payloads have different names, types or trailing "
            "shapes on different blocks")):
        routing.send({0: {"v": tack.zeros(2)}, 1: {"w": tack.zeros(2)},
                      2: {"v": tack.zeros(2)}})
    with pytest.raises(ValueError, match=re.escape(
            "Routing.reply(): no entry in the payloads for block 2 of this rank")):
        routing.reply({0: {}, 1: {}})
