"""IR to and from plain JSON-compatible data, for the disk cache (no pickle).

Every node becomes ``{"node": class name, field: value, ...}`` over its
declared fields, spans become ``[file, line, col, first_line, indent, function]``,
scalar types their names and tuples lists. Decoding only ever constructs
registered node classes, so a cache file cannot name arbitrary Python.
"""

from __future__ import annotations

import dataclasses

from ..types import ScalarType, scalar_type
from . import expressions, statements
from .node import Node, Span

_CLASSES = {
    name: obj for module in (expressions, statements)
    for name, obj in vars(module).items()
    if isinstance(obj, type) and issubclass(obj, Node) and obj is not Node
}


def encode(value):
    """JSON-compatible data for an IR node (or any value a node field holds)."""
    if isinstance(value, Node):
        data = {"node": type(value).__name__}
        for f in dataclasses.fields(value):
            data[f.name] = encode(getattr(value, f.name))
        return data
    if isinstance(value, Span):
        return {"span": [value.file, value.line, value.col, value.first_line,
                         value.indent, value.function]}
    if isinstance(value, ScalarType):
        return {"type": value.name}
    if isinstance(value, tuple):
        return {"tuple": [encode(v) for v in value]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot serialize {type(value).__name__} in IR")


def decode(data):
    """The value :func:`encode` produced ``data`` from."""
    if isinstance(data, dict):
        if "node" in data:
            cls = _CLASSES.get(data["node"])
            if cls is None:
                raise ValueError(f"unknown IR node {data['node']!r}")
            fields = {k: decode(v) for k, v in data.items() if k != "node"}
            return cls(**fields)
        if "span" in data:
            return Span(*data["span"])
        if "type" in data:
            return scalar_type(data["type"])
        if "tuple" in data:
            return tuple(decode(v) for v in data["tuple"])
        raise ValueError(f"malformed IR data: keys {sorted(data)}")
    if isinstance(data, list):
        raise ValueError("malformed IR data: a bare list")
    return data
