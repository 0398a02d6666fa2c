"""Capturing a function's source: the text kernels and device functions compile from."""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass

from ..ir.node import Span


@dataclass(frozen=True)
class Source:
    """The dedented source of one function, parsed, with what spans need."""

    name: str
    kind: str  # "Kernel" or "Device function"
    text: str
    tree: ast.FunctionDef
    file: str
    first_line: int
    indent: int

    def span(self, node) -> Span:
        return Span(self.file, getattr(node, "lineno", 0),
                    getattr(node, "col_offset", -1) + 1, self.first_line, self.indent,
                    self.name)

    def where(self, node) -> str:
        return (f"at line {getattr(node, 'lineno', 0)}, "
                f"column {getattr(node, 'col_offset', -1) + 1}")


def read_source(fn, kind: str) -> Source:
    """Read, dedent and parse ``fn``'s source; ``RuntimeError`` if unreadable."""
    name = getattr(fn, "__name__", repr(fn))
    try:
        lines, first_line = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn) or "<unknown>"
    except (OSError, TypeError) as exc:
        raise RuntimeError(
            f"Cannot read the source of {kind.lower()} '{name}'. Tack compiles "
            f"kernels and device functions from their source text, so they must "
            f"be defined in a file (a module or script), not with exec(), in an "
            f"interactive prompt or with python -c.") from exc
    raw = "".join(lines)
    text = textwrap.dedent(raw)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    module = ast.parse(text)
    tree = module.body[0]
    if not isinstance(tree, ast.FunctionDef):
        raise TypeError(f"@tack.{'kernel' if kind == 'Kernel' else 'func'} "
                        f"decorates a def, not {type(tree).__name__}")
    return Source(name, kind, text, tree, file, first_line, indent)
