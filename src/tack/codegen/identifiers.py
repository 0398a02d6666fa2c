"""Target-language spelling of names: one injective encoding, no keyword lists.

ASCII letters and digits stay readable; ``_`` becomes ``_u``, ``Z`` becomes
``Zz``, and any other character becomes ``Z`` + its UTF-8 bytes in hex + ``_``. Distinct names give
distinct spellings, and the result is a valid identifier in every target.
"""

from __future__ import annotations


def encode(name: str) -> str:
    out = []
    for ch in name:
        if ch.isascii() and ch.isalnum() and ch != "Z":
            out.append(ch)
        elif ch == "_":
            out.append("_u")
        elif ch == "Z":
            out.append("Zz")
        else:
            out.append("Z" + ch.encode("utf-8").hex() + "_")
    return "".join(out)


def kernel_entry_name(name: str) -> str:
    """The exported symbol of a kernel; never collides with a libc/libm symbol."""
    return "tack_kernel_" + encode(name)


def variable_name(name: str) -> str:
    """A generated variable's spelling (``tack_var_`` + the encoding)."""
    return "tack_var_" + encode(name)
