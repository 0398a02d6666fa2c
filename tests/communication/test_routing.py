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
    want = {0: [0, 0, 2, -1], 1: [], 2: [1, 0, 0, 0]}   # slack: 1e-7 and -1e-9 hold
    for g in blocks.local:
        assert routing.destination[g].dtype == tack.i64
        np.testing.assert_array_equal(routing.destination[g].numpy(), want[g])
    ids = {g: tack.array(10 * g + np.arange(len(p), dtype=np.int64))
           for g, p in points.items()}
    got = routing.send({g: {"id": ids[g], "x": tack.array(points[g])} for g in ids})
    np.testing.assert_array_equal(got[0]["id"].numpy(), [0, 1, 21, 22, 23])
    np.testing.assert_array_equal(got[1]["id"].numpy(), [20])
    np.testing.assert_array_equal(got[2]["id"].numpy(), [2])
    assert got[1]["x"].numpy().tobytes() == points[2][:1].tobytes()
    back = routing.reply({g: {"twice": tack.array(got[g]["id"].numpy() * 2)} for g in got})
    np.testing.assert_array_equal(back[0]["twice"].numpy(), [0, 2, 4, 0])
    np.testing.assert_array_equal(back[2]["twice"].numpy(), [40, 42, 44, 46])
    assert back[1]["twice"].shape == (0,)


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


def test_errors():
    blocks = tack.Blocks(["cpu"] * 3)
    points = {g: tack.zeros((2, 2), tack.f64) for g in range(3)}
    with pytest.raises(ValueError, match=re.escape(
            "Routing(): the points of block 1 have shape (2,); they must be (n, 2), the "
            "boxes' dimensions")):
        tack.Routing(blocks, BOUNDS, {**points, 1: tack.zeros(2, tack.f64)})
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
            "Routing.reply(): the payloads has no entry for block 2 of this rank")):
        routing.reply({0: {}, 1: {}})
