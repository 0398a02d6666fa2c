"""Many kernels in one C-family translation unit, for offline compile checks.

``translation_unit(functions, target)`` packs and annotates each optimized IR
function, emits it under a unique entry name, and shares the helpers among
them. A kernel that prints gets its print buffer, as in a GPU build. A kernel
the build refuses (a user error that only the build reports, such as a
negative literal integer exponent) is counted, not emitted: dispatch raises
those errors explicitly already.
"""

from __future__ import annotations

from ...ir.passes.annotate import annotate_types
from ...ir.passes.pack import pack_scalars
from ...ir.verify import verify
from .emitter import CEmitter
from .prelude import Prelude
from .prints import with_print_buffer


def translation_unit(functions, target):
    """(source, emitted count, refused count)."""
    prelude = Prelude(target)
    parts, refused = [], 0
    for k, fn in enumerate(functions):
        try:  # the same steps, and the same refusals, as a GPU backend's build
            packed, _ = pack_scalars(with_print_buffer(fn))
            typed = verify(annotate_types(verify(packed, "packed")), "typed")
            parts.append(CEmitter(typed, target, prelude).function(f"tack_k{k}"))
        except (NotImplementedError, TypeError, ValueError):
            refused += 1
    return f"{target.header}{prelude.text()}\n" + "\n".join(parts), len(parts), refused
