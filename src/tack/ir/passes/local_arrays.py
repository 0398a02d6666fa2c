"""local_arrays: a bound on the per-iteration storage of ``tack.local_array``.

Each iteration's local arrays live on a thread's stack (CPU) or in private
memory (GPUs), and neither overflow is reported: a CPU thread past its stack,
and PoCL from 32 KiB per work-item (it keeps the private arrays of a whole
256-lane workgroup on one worker thread's stack), died with SIGSEGV, taking
the interpreter with them. Drivers do not say where that limit is (PoCL
reports 1024 bytes of private memory for any kernel), so Tack refuses,
before building, a kernel whose local arrays take more than ``LIMIT_BYTES``
together (``ValueError``), the same bound on every backend. Larger scratch
belongs in an array argument.
"""

from __future__ import annotations

from .. import statements as S
from ..traversal import walk
from .common import kernel_error

LIMIT_BYTES = 16 << 10


def check_local_arrays(fn: S.Function) -> S.Function:
    allocations = [n for stmt in fn.body for n in walk(stmt)
                   if isinstance(n, S.Allocate) and n.space == "local"]
    total = sum(n.size * n.dtype.itemsize for n in allocations)
    if total > LIMIT_BYTES:
        largest = max(allocations, key=lambda n: n.size * n.dtype.itemsize)
        raise kernel_error(
            ValueError, fn.name,
            f"its tack.local_array arrays take {total} bytes per iteration, more than "
            f"the {LIMIT_BYTES} allowed (a thread's stack or private memory would "
            f"overflow); pass larger scratch space as an array argument",
            largest.span)
    return fn
