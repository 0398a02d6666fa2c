"""``tack_print``: kernels print through Python, so output formats like ``print``.

Compiled kernels call the symbol ``tack_print(kinds, values, n)``; ``kinds``
has one letter per value (``i`` signed, ``u`` unsigned, ``f`` f32 widened to
a double, ``d`` f64, ``s`` a string's address). The callback takes the GIL,
so prints from worker threads are whole lines.
"""

from __future__ import annotations

import ctypes
import struct
import sys

import llvmlite.binding as llvm
import numpy as np

_CALLBACK_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_char_p,
                                  ctypes.POINTER(ctypes.c_uint64), ctypes.c_int64)


def _decode(kind: str, bits: int):
    if kind == "i":
        return bits - (1 << 64) if bits >= (1 << 63) else bits
    if kind == "u":
        return bits
    value = struct.unpack("<d", struct.pack("<Q", bits))[0]
    if kind == "f":
        return np.float32(value)
    if kind == "d":
        return value
    return ctypes.string_at(bits).decode("utf-8")


def _print(kinds, values, n):
    text = " ".join(str(_decode(chr(k), values[i])) for i, k in enumerate(kinds[:n]))
    # one write per line: print() writes the text and the newline separately,
    # and another thread's line could come between them
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


_callback = _CALLBACK_TYPE(_print)
_registered = False


def register() -> None:
    global _registered
    if not _registered:
        llvm.add_symbol("tack_print", ctypes.cast(_callback, ctypes.c_void_p).value)
        _registered = True
