"""Arrays of vector and matrix elements through the communication layer (one process).

exchange, the collectives, Routing, sort_by_key and Plan carry the element
type through (a vec3 array arrives as a vec3 array).
"""

import secrets

import numpy as np
import pytest

import tack

SEED = secrets.randbits(32)


def vec3s(rng, n):
    return tack.array(rng.standard_normal((n, 3)).astype(np.float32), dtype=tack.vec3())


@pytest.mark.parametrize("n", [0, 1, 5])
def test_exchange_keeps_the_element_type(n):
    rng = np.random.default_rng(SEED)
    blocks = tack.Blocks(["cpu"] * 2)
    v, m = vec3s(rng, n), tack.array(rng.standard_normal((n, 2, 2)), dtype=tack.mat22(
        dtype=tack.f64))
    got = blocks.exchange({0: {1: {"v": v, "m": m}}, 1: {}})
    assert got[1][0]["v"].dtype == tack.vec3() and got[1][0]["v"].shape == (n,)
    assert got[1][0]["m"].dtype == tack.mat22(dtype=tack.f64)
    np.testing.assert_array_equal(got[1][0]["v"].numpy(), v.numpy(), err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(got[1][0]["m"].numpy(), m.numpy(), err_msg=f"seed {SEED}")


def test_collectives_combine_per_component():
    rng = np.random.default_rng(SEED)
    blocks = tack.Blocks(["cpu"] * 3)
    values = {g: vec3s(rng, 4) for g in range(3)}
    host = [values[g].numpy() for g in range(3)]
    total = blocks.all_reduce(values)
    assert total.dtype == tack.vec3()
    np.testing.assert_array_equal(total.numpy(), (host[0] + host[1]) + host[2],
                                  err_msg=f"seed {SEED}")
    top = blocks.all_reduce(values, op="max")
    np.testing.assert_array_equal(top.numpy(), np.maximum(np.maximum(host[0], host[1]),
                                                          host[2]))
    prefix = blocks.exclusive_scan(values)
    np.testing.assert_array_equal(prefix[2].numpy(), host[0] + host[1])
    gathered = blocks.all_gather(values)
    np.testing.assert_array_equal(gathered[1].numpy(), host[1])


def test_routing_carries_vector_rows():
    rng = np.random.default_rng(SEED)
    blocks = tack.Blocks(["cpu"] * 2)
    bounds = {0: ((0.0,), (1.0,)), 1: ((1.0,), (2.0,))}
    points = {0: np.array([[0.5], [1.5], [1.7]]), 1: np.array([[0.1]])}
    routing = tack.Routing(blocks, bounds, {g: tack.array(p) for g, p in points.items()})
    velocity = {0: vec3s(rng, 3), 1: vec3s(rng, 1)}
    got = routing.send({g: {"v": velocity[g]} for g in blocks.local})
    assert got[1]["v"].dtype == tack.vec3() and got[1]["v"].shape == (2,)
    np.testing.assert_array_equal(got[1]["v"].numpy(), velocity[0].numpy()[1:])
    np.testing.assert_array_equal(got[0]["v"].numpy(),
                                  np.concatenate([velocity[0].numpy()[:1],
                                                  velocity[1].numpy()]))
    back = routing.reply({g: {"v": got[g]["v"]} for g in blocks.local})
    assert back[0]["v"].dtype == tack.vec3()
    np.testing.assert_array_equal(back[0]["v"].numpy(), velocity[0].numpy())


def test_sort_by_key_carries_vector_payloads():
    rng = np.random.default_rng(SEED)
    blocks = tack.Blocks(["cpu"] * 2)
    keys = {0: rng.integers(0, 20, 7).astype(np.int64), 1: rng.integers(0, 20, 4).astype(
        np.int64)}
    payload = {g: vec3s(rng, len(keys[g])) for g in keys}
    out_keys, out_values = blocks.sort_by_key(
        {g: tack.array(k) for g, k in keys.items()}, {g: {"p": payload[g]} for g in keys})
    all_keys = np.concatenate([keys[0], keys[1]])
    all_rows = np.concatenate([payload[0].numpy(), payload[1].numpy()])
    order = np.argsort(all_keys, kind="stable")
    got_rows = np.concatenate([out_values[g]["p"].numpy() for g in (0, 1)])
    assert out_values[0]["p"].dtype == tack.vec3()
    np.testing.assert_array_equal(got_rows, all_rows[order], err_msg=f"seed {SEED}")


@pytest.mark.parametrize("element", [tack.vec3(), tack.mat22(dtype=tack.f64)])
def test_plan_moves_vector_elements(element):
    rng = np.random.default_rng(SEED)
    blocks = tack.Blocks(["cpu"] * 2)
    plan = tack.Plan(blocks, {0: {1: np.array([0, 2]), 0: np.array([1])}},
                     {1: {0: np.array([1, 3])}, 0: {0: np.array([3])}})
    shape = (4,) + element.shape
    host = {g: rng.standard_normal(shape).astype(element.scalar.numpy) for g in (0, 1)}
    values = {g: tack.array(host[g], dtype=element) for g in (0, 1)}
    plan.run(values)
    want0, want1 = host[0].copy(), host[1].copy()
    want1[[1, 3]] = host[0][[0, 2]]
    want0[3] = host[0][1]
    assert values[1].dtype == element
    np.testing.assert_array_equal(values[1].numpy(), want1, err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(values[0].numpy(), want0, err_msg=f"seed {SEED}")
