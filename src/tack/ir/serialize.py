"""IR to and from plain JSON-compatible data, for the disk cache (no pickle).

``encode(root)`` gives ``{"names": [...], "spans": [...], "ir": ...}``: the
file and function names of the spans, the distinct spans once each, as
``[file, line, col, first_line, indent, function]`` with the two names as
indices into ``names``, and the tree, where

* a node is a list: its class name, the index of its span, then its fields
  in the order of ``_LAYOUT`` (positional fields, then keyword-only ones);
* a tuple is ``{"t": [...]}``, a scalar type ``{"y": name}``, a span held
  outside a node's span field ``{"s": index}``;
* ``None``, booleans, numbers and strings are themselves.

Decoding only ever constructs registered node classes, so a cache file cannot
name arbitrary Python, and malformed data raises ``ValueError``. The types of
field values are not checked (nor were they before): cache entries carry a
SHA-256 of their bytes. (Nodes used to be dictionaries of field names, each
with its span written out: decoding a large kernel's template took most of a
disk-cache hit.)
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


def _layout(cls) -> tuple:
    """The names of ``cls``'s fields, positional ones first, span excluded."""
    fields = [f for f in dataclasses.fields(cls) if f.name != "span"]
    return tuple([f.name for f in fields if not f.kw_only] +
                 [f.name for f in fields if f.kw_only])


_LAYOUT = {cls: _layout(cls) for cls in _CLASSES.values()}
# Decoding fills a new node's slots directly, as its __init__ would (nodes are
# frozen slotted dataclasses with no __post_init__): a node took 1.2 us through
# __init__ here, 0.7 us this way. Per class: the setters of the span and of
# the fields in _LAYOUT's order.
_SETTERS = {cls: (getattr(cls, "span").__set__,
                  tuple(getattr(cls, name).__set__ for name in names))
            for cls, names in _LAYOUT.items()}
_PLAIN = (type(None), bool, int, float, str)
_new = object.__new__


def encode(root) -> dict:
    """JSON-compatible data for an IR node (or any value a node field holds)."""
    spans: dict = {}
    tree = _encode(root, spans)
    names: dict = {}
    for s in spans:
        names.setdefault(s.file, len(names))
        names.setdefault(s.function, len(names))
    return {"ir": tree, "names": list(names), "spans": [
        [names[s.file], s.line, s.col, s.first_line, s.indent, names[s.function]]
        for s in spans]}


def _encode(value, spans: dict):
    if isinstance(value, Node):
        return [type(value).__name__, _span_index(value.span, spans)] + [
            _encode(getattr(value, name), spans) for name in _LAYOUT[type(value)]]
    if isinstance(value, tuple):
        return {"t": [_encode(v, spans) for v in value]}
    if isinstance(value, ScalarType):
        return {"y": value.name}
    if isinstance(value, Span):
        return {"s": _span_index(value, spans)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot serialize {type(value).__name__} in IR")


def _span_index(span: Span, spans: dict) -> int:
    index = spans.get(span)
    if index is None:
        index = spans[span] = len(spans)
    return index


def decode(data):
    """The value :func:`encode` produced ``data`` from."""
    if not isinstance(data, dict) or sorted(data) != ["ir", "names", "spans"] or \
            not isinstance(data["spans"], list) or not isinstance(data["names"], list):
        raise ValueError("malformed IR data: not an encoded tree")
    names = data["names"]
    spans = []
    for s in data["spans"]:
        try:
            file, line, col, first_line, indent, function = s
            if not (type(file) is int and type(function) is int and
                    0 <= file < len(names) and 0 <= function < len(names)):
                raise ValueError
            spans.append(_span(names[file], line, col, first_line, indent,
                               names[function]))
        except (TypeError, ValueError):   # not six fields, names it does not have
            raise ValueError(f"malformed IR data: span {s!r}") from None
    try:
        return _Decoder(spans).value(data["ir"])
    except KeyError as exc:              # a scalar type Tack does not have
        raise ValueError(f"malformed IR data: type {exc}") from None
    except RecursionError:
        raise ValueError("malformed IR data: nested too deeply") from None


def _span(*fields) -> Span:
    """A Span, made as ``_Decoder.node`` makes nodes."""
    span = _new(Span)
    for setter, value in zip(_SPAN_SETTERS, fields):
        setter(span, value)
    return span


_SPAN_SETTERS = tuple(getattr(Span, f.name).__set__ for f in dataclasses.fields(Span))


class _Decoder:
    def __init__(self, spans: list):
        self.spans = spans

    def value(self, data):
        kind = type(data)
        if kind is list:
            return self.node(data)
        if kind is dict:
            return self.tagged(data)
        if kind in _PLAIN:
            return data
        raise ValueError(f"malformed IR data: a {kind.__name__}")

    def node(self, data: list):
        cls = _CLASSES.get(data[0]) if data and type(data[0]) is str else None
        if cls is None:
            raise ValueError(f"unknown IR node {data[0] if data else None!r}")
        set_span, setters = _SETTERS[cls]
        if len(data) != 2 + len(setters):
            raise ValueError(f"malformed IR data: {data[0]} with {len(data) - 2} fields")
        node = _new(cls)
        set_span(node, self.span(data[1]))
        for setter, v in zip(setters, data[2:]):
            setter(node, v if type(v) in _PLAIN else self.value(v))
        return node

    def tagged(self, data: dict):
        if len(data) == 1:
            (tag, inner), = data.items()
            if tag == "t" and type(inner) is list:
                return tuple(v if type(v) in _PLAIN else self.value(v) for v in inner)
            if tag == "y" and type(inner) is str:
                return scalar_type(inner)
            if tag == "s":
                return self.span(inner)
        raise ValueError(f"malformed IR data: keys {sorted(data)}")

    def span(self, index) -> Span:
        if type(index) is not int or not 0 <= index < len(self.spans):
            raise ValueError(f"malformed IR data: span {index!r}")
        return self.spans[index]
