"""Debug mode: bounds-checked launches that report the first bad access.

``tack.set_debug(True)`` (or ``TACK_DEBUG=1`` at import) makes every launch
use the kernel's debug template (``lang/lower/bounds.py``). Each launch gets
two hidden arrays: ``errors`` = [count, site, index, dimension, extent] and
the extents of every array argument. After the launch, a recorded violation
becomes an ``IndexError`` naming the kernel (and device function), the file,
line and column, the access as written, the index, dimension and extent, and
how many more accesses were skipped.
"""

from __future__ import annotations

import threading

import numpy as np

from .. import config
from .. import types as T
from ..lang.lower.bounds import SLOTS
from .device import set_detour


class _State:
    __slots__ = ("enabled",)

    def __init__(self):
        self.enabled = config.env_flag("TACK_DEBUG")


state = _State()
set_detour(state.enabled)   # debug launches never take the warm path
_local = threading.local()


def set_debug(enabled: bool = True) -> None:
    """Turn debug mode on or off for every launch from now on."""
    on = bool(enabled)
    set_detour(on, lambda: setattr(state, "enabled", on))


def debug_enabled() -> bool:
    """Whether debug mode (bounds checks on kernels' array accesses) is on."""
    return state.enabled


def hidden_arrays(function, args, device):
    """(errors, extents) arrays for one launch of ``function`` with ``args``."""
    from .array import Array
    from .creation import array, zeros
    params = function.params[:len(args)]
    shapes = [a.shape for p, a in zip(params, args)
              if p.is_array and isinstance(a, Array)]
    extents = np.zeros(max(1, len([p for p in params if p.is_array])) * SLOTS, np.int64)
    for k, shape in enumerate(shapes):
        if len(shape) > SLOTS:
            raise ValueError(f"debug mode checks arrays of up to {SLOTS} dimensions, "
                             f"got one with {len(shape)}")
        extents[k * SLOTS:k * SLOTS + len(shape)] = shape
    errors = zeros(5, T.i64, device=device)
    return errors, array(extents, device=device)


def report(kernel_name: str, sites, errors) -> None:
    """Raise the IndexError for the first violation ``errors`` recorded, if any."""
    count, site, index, dim, extent = (int(v) for v in errors.numpy())
    if count == 0:
        return
    where = sites[site] if 0 <= site < len(sites) else None
    access = f"{where.text}{where.owner} at {where.file}, line {where.line}, " \
             f"column {where.column}" if where else "an array access"
    dimension = f" in dimension {dim}" if where and where.dims > 1 else ""
    more = count - 1
    tail = f"; {more} more out-of-bounds access{'es were' if more != 1 else ' was'} " \
           f"skipped" if more else ""
    raise IndexError(f"Kernel '{kernel_name}': index {index} is out of bounds"
                     f"{dimension} (extent {extent}) in {access}{tail}")


def check_shape_reads(name: str, function, args) -> None:
    """``TypeError`` for an ``a.shape[k]`` read with ``k`` at or past ``a``'s
    rank, as normal mode raises it when it bakes the extents
    (``ir/passes/resolve.py``). The debug template reads extents from the
    hidden array instead, which has ``SLOTS`` of them per array whatever its
    rank: it read another array's extent, or past the buffer on OpenCL. (An
    index's own extents are never past the rank: the index count is checked.)"""
    from ..ir import expressions as E
    from ..ir.passes.common import kernel_error
    from ..ir.traversal import walk
    from ..lang.lower.bounds import EXTENTS
    from .array import Array
    arrays = [p.name for p in function.params if p.is_array]
    ranks = {p.name: len(a.shape) for p, a in zip(function.params, args)
             if p.is_array and isinstance(a, Array)}
    for node in (n for stmt in function.body for n in walk(stmt)):
        if isinstance(node, E.Load) and node.array == EXTENTS and \
                isinstance(node.index, E.Const):
            k, dim = divmod(node.index.value, SLOTS)
            rank = ranks.get(arrays[k])
            if rank is not None and dim >= rank:
                raise kernel_error(TypeError, name, f"{arrays[k]}.shape[{dim}] of an "
                                   f"array with {rank} dimension(s)", node.span)


class Checked:
    """Debug mode's runner: fresh hidden arrays per launch, then the report."""

    __slots__ = ("name", "bound", "lowered", "device", "default")

    def __init__(self, name, bound, lowered, device, count):
        self.name = name
        self.bound = bound
        self.lowered = lowered
        self.device = device
        self.default = bound.default

    def run(self, args):
        errors, extents = hidden_arrays(self.lowered.kernel, args, self.device)
        value = self.bound.run(tuple(args) + (errors, extents))
        report(self.name, self.lowered.sites, errors)
        return value
