"""The base of every IR node: frozen slotted dataclasses with declared field roles.

Each field of a node class has one role:

* ``operand``: a child node, or a tuple of child nodes; walked and rewritten;
* ``definition``: a name the node binds (an assignment's target, a loop variable);
* ``attr``: plain data (a constant's value, an array's name, a dimension).

The span is excluded from equality and hashing, so structurally equal trees
compare equal wherever they came from. Walking, rewriting, printing and
verification are written once over these roles (see ``traversal.py``).
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import ClassVar

OPERAND = "operand"
DEFINITION = "definition"
ATTR = "attr"


@dataclass(frozen=True, slots=True)
class Span:
    """Where a node came from: the file, and line and column in the captured source.

    ``line`` and ``col`` are 1-based and count from the first line of the
    dedented source that ``inspect.getsource`` returned (the decorator line);
    ``first_line`` is that line's number in ``file``; ``function`` is the
    kernel or device function whose source it is (inlining keeps the device
    function's spans, so errors found later can name it).
    """

    file: str = "<unknown>"
    line: int = 0
    col: int = 0
    first_line: int = 1
    indent: int = 0
    function: str = ""

    @property
    def file_line(self) -> int:
        return self.first_line + self.line - 1


NO_SPAN = Span()


def operand(**kw):
    return field(metadata={"role": OPERAND}, **kw)


def definition(**kw):
    return field(metadata={"role": DEFINITION}, **kw)


def attr(**kw):
    return field(metadata={"role": ATTR}, **kw)


class Node:
    """Base class of IR nodes. Subclasses are declared with :func:`node`."""

    __slots__ = ()
    _operands: ClassVar[tuple[str, ...]] = ()
    _definitions: ClassVar[tuple[str, ...]] = ()
    _attrs: ClassVar[tuple[str, ...]] = ()

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def node(cls):
    """Make ``cls`` a frozen slotted dataclass node and record its field roles.

    A subclass that declares no fields of its own (``class Sin(MathUnary)``,
    most of them) inherits its base's generated methods, which work for any
    subclass: it is only remade with empty slots. Generating them again for
    each (``dataclass`` writes and compiles their source) took about 1 ms a
    class, a fifth of the time ``import tack`` takes."""
    if inspect.get_annotations(cls) or not dataclasses.is_dataclass(cls.__base__):
        cls = dataclass(frozen=True, slots=True)(cls)
    else:
        namespace = {k: v for k, v in cls.__dict__.items()
                     if k not in ("__dict__", "__weakref__")}
        cls = type(cls)(cls.__name__, cls.__bases__, dict(namespace, __slots__=()))
    roles = {OPERAND: [], DEFINITION: [], ATTR: []}
    for f in dataclasses.fields(cls):
        if f.name == "span":
            continue
        role = f.metadata.get("role")
        if role is None:
            raise TypeError(f"{cls.__name__}.{f.name} declares no role")
        roles[role].append(f.name)
    cls._operands = tuple(roles[OPERAND])
    cls._definitions = tuple(roles[DEFINITION])
    cls._attrs = tuple(roles[ATTR])
    return cls


def span_field():
    return field(default=NO_SPAN, compare=False, kw_only=True, repr=False)
