"""pack: GPU scalar packing. Scalar parameters become reads of pack buffers.

Assumes: optimized IR (scalar parameters typed). Guarantees: no scalar
parameter remains (verifier stage 'packed'); for each scalar dtype used there
is one array parameter ``__tack_pack_<dtype>__`` after the kernel's own, and
each former scalar parameter is a local assigned from its slot at the top of
the kernel, so assignments to it stay local, as on the CPU. ``PackInfo`` says
which argument goes to which buffer and slot.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..expressions import Const, Load
from ..statements import Assign, Function, Param


@dataclass(frozen=True)
class PackInfo:
    """``slots[k] = (argument index, buffer index, slot)``; ``buffers`` are dtypes."""

    buffers: tuple
    slots: tuple


def pack_name(dtype) -> str:
    return f"__tack_pack_{dtype.name}__"


def pack_scalars(fn: Function):
    """(packed function, PackInfo)."""
    buffers, slots, counts = [], [], {}
    seeds, kept = [], []
    for k, param in enumerate(fn.params):
        if param.is_array:
            kept.append(param)
            continue
        if param.dtype not in counts:
            counts[param.dtype] = 0
            buffers.append(param.dtype)
        slot = counts[param.dtype]
        counts[param.dtype] += 1
        slots.append((k, buffers.index(param.dtype), slot))
        load = Load(pack_name(param.dtype), Const(slot, span=param.span), span=param.span)
        seeds.append(Assign(param.name, load, span=param.span))
    packs = tuple(Param(pack_name(d), dtype=d, is_array=True, ndim=1, span=fn.span)
                  for d in buffers)
    packed = fn.replace(params=tuple(kept) + packs, body=tuple(seeds) + fn.body)
    return packed, PackInfo(tuple(buffers), tuple(slots))
