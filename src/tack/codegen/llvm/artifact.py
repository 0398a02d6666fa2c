"""What a compiled CPU kernel hands the runtime: its text, entry and packing.

Kept apart from the generator (``module.py``) so that a process loading every
kernel from the disk cache never imports llvmlite's IR builder or the
emitters.
"""

from __future__ import annotations

from dataclasses import dataclass

POINTER = "ptr"     # a pack field holding an array's data pointer


@dataclass(frozen=True)
class LLVMKernel:
    """Generated code and what the runtime needs to call it."""

    text: str
    entry: str
    pack_fields: tuple  # per field: a ScalarType or POINTER, extents last
