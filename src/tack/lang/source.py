"""Capturing a function's source: the text kernels and device functions compile from."""

from __future__ import annotations

import ast
import functools
import inspect
import os
import textwrap
import threading
from dataclasses import dataclass

from ..ir.node import Span
from .names import scan

# Decorating kernels from several threads at once: one parse at a time (two
# at once raised SystemError on CPython 3.11.7).
_PARSE_LOCK = threading.Lock()


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
        return Span(self.file, getattr(node, "lineno", 0), self.column(node),
                    self.first_line, self.indent, self.name)

    def where(self, node) -> str:
        return f"at line {getattr(node, 'lineno', 0)}, column {self.column(node)}"

    def column(self, node) -> int:
        """``node``'s column, from 1, in characters: ``ast`` counts the UTF-8
        bytes before it, which differ on a line with non-ASCII text. (A
        stand-in position that is not an AST node already counts characters.)"""
        offset = getattr(node, "col_offset", -1)
        line = self._wide_lines.get(getattr(node, "lineno", 0))
        if line is None or offset <= 0 or not isinstance(node, ast.AST):
            return offset + 1
        return len(line.encode()[:offset].decode("utf-8", "replace")) + 1

    @functools.cached_property
    def names(self):
        """What the function's names are (``names.Scanned``), worked out once:
        the tree never changes once parsed (rewrites make new ``Source``s)."""
        return scan(self.tree)

    @functools.cached_property
    def _wide_lines(self) -> dict:
        """``{line number: text}`` of the lines that are not all ASCII."""
        return {number: line for number, line in enumerate(self.text.splitlines(), 1)
                if not line.isascii()}


def read_source(fn, kind: str) -> Source:
    """Read, dedent and parse ``fn``'s source; ``RuntimeError`` if unreadable."""
    name = getattr(fn, "__name__", repr(fn))
    try:
        lines, first_line = inspect.getsourcelines(fn)
        file = inspect.getsourcefile(fn)
        # One spelling per file: it is part of the disk cache's key, and
        # "python job.py" and "python -m mpi4py job.py" name the script
        # differently (absolute, relative).
        # (A pseudo-name such as IPython's "<ipython-input-1-...>" stays as it is.)
        if not file:
            file = "<unknown>"
        elif not (file.startswith("<") and file.endswith(">")):
            file = os.path.normpath(os.path.abspath(file))
    except (OSError, TypeError) as exc:
        raise RuntimeError(
            f"Cannot read the source of {kind.lower()} '{name}'. Tack compiles "
            f"kernels and device functions from their source text, so they must "
            f"be defined in a file (a module or script), not with exec(), in an "
            f"interactive prompt or with python -c.") from exc
    raw = "".join(lines)
    text = textwrap.dedent(raw)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    with _PARSE_LOCK:   # CPython 3.11's parser is not thread-safe (gh-106905)
        module = ast.parse(text)
    tree = module.body[0]
    if not isinstance(tree, ast.FunctionDef):
        raise TypeError(f"@tack.{'kernel' if kind == 'Kernel' else 'func'} "
                        f"decorates a def, not {type(tree).__name__}")
    return Source(name, kind, text, tree, file, first_line, indent)

