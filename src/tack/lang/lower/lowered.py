"""``Lowered``: what lowering a kernel produces, and what the disk cache keeps.

Apart from the lowering itself (``kernel.py``), so that a template read from
the disk cache is rebuilt without importing the lowering.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...ir import statements as S


@dataclass(frozen=True)
class Lowered:
    kernel: S.Function
    epilogue: Optional[S.Function]
    result_type: object         # ScalarType or CompositeType, None without a result
    result_kind: Optional[str]  # "int", "float", "bool", "array" for the Python value
    sites: tuple = ()           # debug mode: the checked access sites
