"""Blocks.exchange in one process: delivery, order, the arrays themselves, errors."""

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


def test_delivery_order_and_identity(rng):
    blocks = tack.Blocks(["cpu"] * 4)
    a, b, c = (tack.array(rng.standard_normal(n)) for n in (0, 1, 7))
    got = blocks.exchange({3: {0: {"c": c, "a": a}}, 1: {0: {"b": b}, 1: {}}, 0: {0: {}}})
    assert list(got) == [0, 1, 2, 3]
    assert list(got[0]) == [0, 1, 3]             # in order of source
    assert got[0][0] == {} and got[1] == {1: {}} and got[2] == {} and got[3] == {}
    assert list(got[0][3]) == ["c", "a"]         # names in the sender's order
    assert got[0][3]["c"] is c and got[0][1]["b"] is b   # one process: no copies


def test_nothing_sent():
    blocks = tack.Blocks(["cpu"] * 2)
    assert blocks.exchange({}) == {0: {}, 1: {}}


def test_a_repeated_call_through_another_blocks_is_checked_and_routed_anew():
    """The same arrays again, through a new Blocks of the same world: the
    first call's routing and checks do not carry over."""
    world = tack.World()
    three, two = tack.Blocks(["cpu"] * 3, world), tack.Blocks(["cpu"] * 2, world)
    x = tack.zeros(4)
    assert three.exchange({2: {0: {"x": x}}})[0] == {2: {"x": x}}
    for messages in ({2: {0: {"x": x}}}, {2: {0: {}}}):   # block 2 is not in `two`
        three.exchange(messages)
        with pytest.raises(ValueError, match=re.escape(
                "Blocks.exchange(): block 2 is out of range: the world has 2 blocks")):
            two.exchange(messages)
    assert two.exchange({1: {0: {"x": x}}})[0] == {1: {"x": x}}


def test_errors():
    blocks = tack.Blocks(["cpu"] * 2)
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.exchange() takes a dict for the messages, not list")):
        blocks.exchange([])
    with pytest.raises(ValueError, match=re.escape(
            "Blocks.exchange(): block 2 is out of range: the world has 2 blocks")):
        blocks.exchange({0: {2: {"x": tack.zeros(1)}}})
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.exchange(): the messages of block 0 must be a dict of destination "
            "blocks to messages, not list")):
        blocks.exchange({0: [1]})
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.exchange(): the message from block 0 to block 1['x'] must be a "
            "tack.Array, not ndarray")):
        blocks.exchange({0: {1: {"x": np.zeros(2)}}})
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.exchange(): the message from block 0 to block 1 must be a dict of "
            "names to tack.Arrays; it has the key 3")):
        blocks.exchange({0: {1: {3: tack.zeros(2)}}})
    with pytest.raises(TypeError, match=re.escape(
            "Blocks.exchange(): block ids are integers, not str")):
        blocks.exchange({"0": {}})
    if tack.device_count("opencl"):   # another memory than the block's device's
        with pytest.raises(ValueError, match=re.escape(
                "Blocks.exchange(): the message from block 0 to block 1['x']: the array "
                "is on Device('opencl:0'), not on block 0's device (Device('cpu')); copy "
                "it there first (a.to_device(...))")):
            blocks.exchange({0: {1: {"x": tack.zeros(2, device="opencl")}}})


def test_a_message_between_two_cpu_devices_can_be_passed_on():
    # Regression: the message arrived on the sender's CPU device, which was
    # refused as "not on block 1's device", and a.to_device() could not move it.
    blocks = tack.Blocks(["cpu", tack.device("cpu", num_threads=1)])
    x = tack.array(np.arange(3.0))
    got = blocks.exchange({0: {1: {"x": x}}})[1][0]["x"]
    back = blocks.exchange({1: {0: {"x": got}}})[0][1]["x"]
    assert back.numpy().tolist() == [0.0, 1.0, 2.0]
    assert blocks.all_reduce({0: x, 1: got}).numpy().tolist() == [0.0, 2.0, 4.0]


def test_a_repeat_with_float_block_ids_is_checked_as_a_first_call_is():
    blocks = tack.Blocks(["cpu", "cpu"])
    x = tack.array(np.arange(3.0))
    for _ in range(2):
        blocks.exchange({0: {1: {"x": x}}})
    for messages, kind in (({0: {1.0: {"x": x}}}, "float"), ({0.0: {1: {"x": x}}}, "float"),
                           ({0: {True: {"x": x}}}, "bool")):
        with pytest.raises(TypeError, match=re.escape(
                f"Blocks.exchange(): block ids are integers, not {kind}")):
            blocks.exchange(messages)
