"""Helpers shared by passes: argument descriptions and positioned errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ...types import ScalarType


@dataclass(frozen=True)
class ArgSpec:
    """What a pass may know of one argument: never the data, only its type.

    ``shape`` is set for arrays (the element shape); ``None`` for scalars.
    """

    dtype: ScalarType
    shape: Optional[tuple] = None
    category: str = "scalar"  # "array" | "scalar" | "result" (a hidden output array)

    @property
    def is_array(self) -> bool:
        return self.category != "scalar"


def where(span) -> str:
    return f"at line {span.line}, column {span.col}" if span.line else ""


EPILOGUE_SUFFIX = "__result"   # the return epilogue is the kernel's name plus this


def kernel_error(exc_type, fn_name: str, message: str, span=None):
    """``exc_type("Kernel 'k': message at line L, column C")`` with a source
    note; ``... in device function 'f' at ...`` where the span is a device
    function's (inlined into ``fn_name``, or its return epilogue)."""
    from ...errors import add_source_note
    kernel = fn_name.removesuffix(EPILOGUE_SUFFIX)
    suffix = f" {where(span)}" if span is not None and span.line else ""
    if suffix and span.function and span.function != kernel:
        suffix = f" in device function '{span.function}'{suffix}"
    exc = exc_type(f"Kernel '{kernel}': {message}{suffix}")
    if span is not None:
        add_source_note(exc, span)
    return exc
