"""``print()`` in kernels on the GPU backends: the host side.

A variant that prints (``codegen/c_family/prints.py``) takes a buffer of
records as its last argument. ``printing_launch`` wraps the variant's launch:
it clears the buffer's header, launches with the buffer appended, waits for
the launch by reading the header back, and prints one line per record with
Python's ``str`` of each value, as ``print`` on the CPU backend does. So a
launch that prints completes before the call returns. Records that did not
fit are counted, and a last line says how many were dropped.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from .. import types as T
from ..codegen.c_family.prints import CAPACITY, HEADER, value_kind
from ..ir.expressions import Str


def _line_format(statement) -> tuple:
    """Per argument of a print statement: ``("s", label)`` or ``(kind, None)``."""
    return tuple(("s", a.value) if isinstance(a, Str) else (value_kind(a.dtype), None)
                 for a in statement.args)


def _decode(kind: str, word: np.uint64):
    if kind == "i":
        return int(word.view(np.int64))
    if kind == "u":
        return int(word)
    if kind == "f":
        return np.uint32(word & np.uint64(0xFFFFFFFF)).view(np.float32)
    return float(word.view(np.float64))


def format_records(words: np.ndarray, formats) -> list:
    """The lines of the records in ``words`` (the buffer after its header, as far
    as records were reserved); a last record that runs past the end was
    dropped (only its statement number was written) and ends the walk."""
    lines, at = [], 0
    while at < len(words):
        fields = formats[int(words[at])]
        size = 1 + sum(1 for kind, _ in fields if kind != "s")
        if at + size > len(words):
            break
        values = iter(words[at + 1:at + size])
        lines.append(" ".join(label if kind == "s" else str(_decode(kind, next(values)))
                              for kind, label in fields))
        at += size
    return lines


def printing_launch(launch, device, statements, kernel_name: str):
    """``launch(args, extents)`` of a variant whose ``statements`` print."""
    from .creation import empty
    formats = tuple(_line_format(s) for s in statements)
    buffer = empty(HEADER + CAPACITY, T.u64, device=device)
    memory, clear = buffer._buffer, np.zeros(HEADER, np.uint64)
    lock = threading.Lock()

    def run(args, extents):
        with lock:   # one buffer per variant: its launches print one at a time
            memory.write(clear)
            launch(tuple(args) + (buffer,), extents)
            reserved, dropped = (int(v) for v in memory.read(8 * HEADER, True)
                                 .view(np.uint64))
            words = min(reserved, CAPACITY)
            data = memory.read(8 * (HEADER + words), True).view(np.uint64)[HEADER:]
        lines = format_records(data, formats)
        if dropped:
            what = "lines were" if dropped != 1 else "line was"
            lines.append(f"[tack] print buffer full: {dropped} print() {what} dropped "
                         f"from kernel '{kernel_name}' (it holds {CAPACITY} words a "
                         f"launch)")
        # One write per line, as the CPU's prints: one long write to a full pipe
        # goes out in pieces, and another thread's lines could land mid-line.
        for line in lines:
            sys.stdout.write(line + "\n")
        if lines:
            sys.stdout.flush()
    return run

