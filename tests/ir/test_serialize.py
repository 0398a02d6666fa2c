"""The disk cache's IR codec (``tack.ir.serialize``): every node, field and span
comes back, and malformed data is a ``ValueError``, never another node.

The kernels cover the node kinds a cache entry meets: arithmetic, math,
casts, loads and stores on n-d arrays, ``if``/``while``/sequential ``for``,
atomics, a device function inlined, a vector value, a returned value (its
epilogue), and the optimized IR of a variant (``Const``s of every type).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import tack
from tack import types as T
from tack.ir import serialize
from tack.ir.passes.common import ArgSpec
from tack.ir.passes.pipeline import VariantRequest, run_pipeline
from tack.ir.traversal import walk


@tack.func
def smooth(a, b):
    return 0.5 * (a + b) if a < b else math.sqrt(abs(a - b))


@tack.kernel
def mixed(x, grid, counts, out, n):
    for i in range(len(x)):
        v = x[i]
        k = 0
        while v > 1.0 and k < n:
            v = v / 2.0
            k += 1
        for j in range(grid.shape[1]):
            v += grid[i % grid.shape[0], j] * tack.f32(j)
        if v != v:
            v = 0.0
        tack.atomic_add(counts, k % len(counts), 1)
        out[i] = smooth(v, float(int(v * 3.0) // 2)) + math.exp(-abs(v))


@tack.kernel
def rotated(p, out) -> float:
    for i in range(len(p)):
        q = tack.vec3(p[i], 2.0 * p[i], 1.0)
        out[i] = tack.dot(q, q) ** 0.5
    return 1.5 * len(p)


def round_trip(fn):
    """``fn`` encoded, through JSON text (as the cache stores it), decoded."""
    return serialize.decode(json.loads(json.dumps(serialize.encode(fn))))


def assert_same_tree(got, want):
    assert got == want              # structure and every field (spans aside)
    pairs = list(zip(walk(got), walk(want)))
    assert len(pairs) == sum(1 for _ in walk(want))
    for a, b in pairs:
        assert type(a) is type(b) and a.span == b.span, (a, b)


@pytest.mark.parametrize("kernel", [mixed, rotated], ids=lambda k: k.name)
def test_lowered_kernels_and_epilogues_come_back_whole(kernel):
    lowered = kernel.get_ir()
    assert_same_tree(round_trip(lowered.kernel), lowered.kernel)
    if lowered.epilogue is not None:
        assert_same_tree(round_trip(lowered.epilogue), lowered.epilogue)


def test_an_optimized_variant_comes_back_whole():
    specs = (ArgSpec(T.f32, (7,), "array"), ArgSpec(T.f32, (7, 3), "array"),
             ArgSpec(T.i32, (4,), "array"), ArgSpec(T.f32, (7,), "array"),
             ArgSpec(T.i64))
    request = VariantRequest(specs, frozenset(T.SCALAR_TYPES),
                             frozenset((T.i32, T.i64, T.f32, T.f64)), "CPUBackend")
    optimized = run_pipeline(mixed.get_ir().kernel, request)
    assert_same_tree(round_trip(optimized), optimized)


def test_spans_are_stored_once_and_names_once():
    data = serialize.encode(mixed.get_ir().kernel)
    spans = [tuple(s) for s in data["spans"]]
    assert len(spans) == len(set(spans))
    assert len(data["names"]) == len(set(data["names"]))
    assert any(name.endswith("test_serialize.py") for name in data["names"])


def test_floats_that_json_spells_specially_come_back():
    @tack.kernel
    def specials(out):
        for i in range(len(out)):
            out[i] = math.inf if i == 0 else (-0.0 if i == 1 else 1e-310)
    fn = specials.get_ir().kernel
    back = round_trip(fn)
    consts = [n.value for n in walk(back) if type(n).__name__ == "Const"
              and isinstance(n.value, float)]
    assert math.inf in consts and 1e-310 in consts
    assert any(v == 0.0 and math.copysign(1.0, v) < 0 for v in consts)


def _good():
    return json.loads(json.dumps(serialize.encode(rotated.get_ir().kernel)))


def _first_node(data):
    """The first node below the root (nodes are lists; a tuple's items are
    the list inside ``{"t": [...]}``)."""
    stack = list(reversed(data["ir"][2:]))
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            return item
        if isinstance(item, dict) and "t" in item:
            stack.extend(reversed(item["t"]))
    raise AssertionError("no inner node")


BREAKAGES = {
    "not a dict": lambda d: ["Function"],
    "old format (node dicts)": lambda d: {"node": "Function"},
    "an extra key": lambda d: dict(d, more=1),
    "spans not a list": lambda d: dict(d, spans={"0": 1}),
    "a span of five fields": lambda d: dict(d, spans=[s[:5] for s in d["spans"]]),
    "a span naming no name": lambda d: dict(d, spans=[[99] + s[1:] for s in d["spans"]]),
    "an unknown node": lambda d: dict(d, ir=["Popen"] + d["ir"][1:]),
    "a class that is not a node": lambda d: dict(d, ir=["Span"] + d["ir"][1:]),
    "a missing field": lambda d: dict(d, ir=d["ir"][:-1]),
    "an extra field": lambda d: dict(d, ir=d["ir"] + [0]),
    "a span index out of range": lambda d: dict(d, ir=d["ir"][:1] + [10 ** 6] + d["ir"][2:]),
    "a span index that is text": lambda d: dict(d, ir=d["ir"][:1] + ["0"] + d["ir"][2:]),
    "an unknown tag": lambda d: dict(d, ir=d["ir"][:2] + [{"x": 1}] + d["ir"][3:]),
    "an empty list": lambda d: dict(d, ir=d["ir"][:2] + [[]] + d["ir"][3:]),
    "a negative name index": lambda d: dict(d, spans=[[-1] + s[1:] for s in d["spans"]]),
    "an unknown scalar type": lambda d: dict(d, ir=["Const", 0, 1, {"y": "f99"}]),
    "nesting deeper than Python recurses": lambda d: dict(d, ir=_nested(100_000)),
}


def _nested(depth):
    value = {"t": []}
    for _ in range(depth):
        value = {"t": [value]}
    return value


@pytest.mark.parametrize("name", list(BREAKAGES))
def test_malformed_data_raises_value_error(name):
    with pytest.raises(ValueError, match="IR"):
        serialize.decode(BREAKAGES[name](_good()))


def test_a_damaged_inner_node_raises_value_error():
    data = _good()
    node = _first_node(data)
    node[0] = "NoSuchNode"
    with pytest.raises(ValueError, match="unknown IR node 'NoSuchNode'"):
        serialize.decode(data)


def test_encoding_refuses_values_that_are_not_ir():
    fn = mixed.get_ir().kernel
    with pytest.raises(TypeError, match="cannot serialize ndarray in IR"):
        serialize.encode(fn.replace(name=np.zeros(2)))
