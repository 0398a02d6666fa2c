"""Tack's exceptions. Everything else uses Python's built-in types (see docs).

``UnsupportedSyntaxError`` is a ``NotImplementedError`` (so also a
``RuntimeError``); ``IRVerificationError`` is a ``RuntimeError`` that signals
a compiler bug, never a user error.
"""

from __future__ import annotations


class UnsupportedSyntaxError(NotImplementedError):
    """Source outside the kernel language, with the function and position.

    The message reads ``Kernel 'k': unsupported Assert at line 4, column 9``;
    line and column count in the dedented captured source (line 1 is the
    decorator). When the file is known, a note with the file's own line and a
    caret under the column is attached for the traceback.
    """


class IRVerificationError(RuntimeError):
    """A pass produced IR that breaks a structural invariant (a compiler bug)."""


def add_source_note(exc: BaseException, span) -> None:
    """Attach ``File "...", line N`` and the source line with a caret, if known."""
    if span is None or not span.line or not hasattr(exc, "add_note"):
        return
    import linecache
    text = linecache.getline(span.file, span.file_line).rstrip("\n")
    note = f'  File "{span.file}", line {span.file_line}'
    if text:
        note += f"\n    {text.strip()}\n    {' ' * (span.col - 1 + span.indent - (len(text) - len(text.lstrip())))}^"
    exc.add_note(note)
