"""``Blocks``: this rank's share of a block-decomposed domain.

Global ids run over every rank's blocks, contiguous by rank, rank 0's first.
Every method is collective: every rank of the world calls it, in the same
order. The work is done by the sibling modules (``exchange``, ``collectives``,
``sort``); this class holds the layout and checks the arguments' shape.
"""

from __future__ import annotations

import bisect

from ..runtime.device import device as _device
from ..runtime.dlpack import export_refusal
from . import collectives, exchange, redistribute, sort, transport
from .errors import fault, integer_rank, require_gid
from .world import World


class Blocks:
    """This rank's blocks, one per entry of ``devices``.

    Args:
        devices: one device (a ``tack.Device`` or a spec such as ``"cpu"``) per
            block of this rank; may be empty.
        world: the :class:`World` (default: ``World()``, one process).
    """

    def __init__(self, devices, world: World = None):
        self.world = World() if world is None else world
        if not isinstance(self.world, World):
            raise TypeError(f"Blocks() takes a tack.World, not "
                            f"{type(self.world).__name__}")
        resolved, error = fault(_devices, devices, self.world.gpu_aware)
        self.world.agree("Blocks()", error)
        counts = self.world.allgather(len(resolved))
        self._offsets = [sum(counts[:r]) for r in range(len(counts) + 1)]
        self._devices = resolved
        self.counts = tuple(counts)
        self.count = self._offsets[-1]
        self.local = range(self._offsets[self.world.rank],
                           self._offsets[self.world.rank + 1])
        # Made collectively, so every rank numbers it alike: each call agrees on
        # it (ranks calling through different Blocks would route by different
        # layouts, and hang or drop blocks).
        self.id = self.world.next_serial()

    def __repr__(self) -> str:
        return (f"tack.Blocks(local={self.local.start}..{self.local.stop - 1}, "
                f"count={self.count}, rank={self.world.rank} of {self.world.size})")

    # -- layout ---------------------------------------------------------------------
    def rank_of(self, gid: int) -> int:
        """The rank that holds block ``gid``."""
        if type(gid) is not int or not 0 <= gid < self.count:
            gid = require_gid(self, "Blocks.rank_of()", gid, local=False)
        return bisect.bisect_right(self._offsets, gid) - 1

    def first_of(self, rank: int) -> int:
        """The first global id of ``rank`` (its blocks are ``first_of(rank)`` up to
        ``first_of(rank + 1)``); ``first_of(world.size)`` is ``count``."""
        if type(rank) is not int:
            rank = integer_rank("Blocks.first_of()", rank)
        if not 0 <= rank <= self.world.size:
            raise ValueError(f"Blocks.first_of(): rank {rank} is out of range: the "
                             f"world has {self.world.size} ranks (0 to "
                             f"{self.world.size - 1}; {self.world.size} for the end)")
        return self._offsets[rank]

    def device(self, gid: int):
        """The device of this rank's block ``gid``."""
        if type(gid) is not int or gid not in self.local:
            gid = require_gid(self, "Blocks.device()", gid, local=False)
            if gid not in self.local:
                raise ValueError(f"Blocks.device(): block {gid} belongs to rank "
                                 f"{self.rank_of(gid)}, not to this rank "
                                 f"({self.world.rank}); only the devices of this rank's "
                                 f"blocks are known here")
        return self._devices[gid - self.local.start]

    # -- collectives ----------------------------------------------------------------
    def exchange(self, messages: dict) -> dict:
        """Send arrays between blocks.

        Args:
            messages: ``{source: {destination: {name: Array}}}``, sources being this
                rank's blocks and each array on its source block's device.

        Returns:
            ``{destination: {source: {name: Array}}}`` for every block of this rank
            (an empty dict where nothing came), sources in ascending order. A
            received array is on its destination block's device: the sent array
            itself where that device addresses it, so a sender must not write to
            what it sent.
        """
        return exchange.exchange(self, messages)

    def all_reduce(self, values: dict, op: str = "sum"):
        """Combine one value per block of the world, in order of global id.

        Args:
            values: ``{gid: value}`` for every block of this rank; a value is a
                Python or NumPy scalar or a Tack array (combined element-wise), of
                one type and shape on every block.
            op: ``"sum"``, ``"min"`` or ``"max"``.

        Returns:
            The combined value, the same bits on every rank whatever the
            assignment of blocks to ranks: a Python scalar for Python scalars, a
            NumPy scalar for NumPy scalars, a new Tack array (on this rank's first
            block's device, or the default device) for arrays.
        """
        return collectives.all_reduce(self, values, op)

    def exclusive_scan(self, values: dict, op: str = "sum") -> dict:
        """``{gid: op of the values of blocks 0 .. gid-1}`` for this rank's blocks.

        Block 0 gets the identity (zero for ``"sum"``; the type's largest value
        for ``"min"``, its smallest for ``"max"``). Values as for
        :meth:`all_reduce`; the prefixes' bits do not depend on the assignment.
        """
        return collectives.exclusive_scan(self, values, op)

    def all_gather(self, values: dict) -> dict:
        """``{gid: value}`` for every block of the world, in order of global id.

        Values as for :meth:`all_reduce`, but arrays may differ in their first
        extent (each block's particles); arrays from other ranks arrive as new
        arrays on this rank's first block's device (or the default device).
        """
        return collectives.all_gather(self, values)

    def link_by_bounds(self, bounds: dict, margin: float = 0.0) -> dict:
        """The neighbour graph of boxes.

        Args:
            bounds: ``{gid: (lo, hi)}`` for every block of this rank, ``lo`` and
                ``hi`` sequences of one length on every block.
            margin: how far the other blocks' boxes grow on every side before
                the test (blocks link when the gap between them is at most this).

        Returns:
            ``{gid: [other gids whose boxes, grown by margin, meet this block's]}``
            for this rank's blocks, ascending; closed boxes, so touching faces and
            corners count.
        """
        return collectives.link_by_bounds(self, bounds, margin)

    def sort_by_key(self, keys: dict, values: dict = None):
        """Sort keys across every block of the world, carrying payloads along.

        Args:
            keys: ``{gid: Array}`` for every block of this rank: one-dimensional
                i32, u32, i64 or u64 keys of one type on every block.
            values: optional ``{gid: {name: Array}}`` payloads whose first extent
                is the block's key count; same names, types and trailing shapes on
                every block.

        Returns:
            ``{gid: sorted keys}`` for this rank's blocks, or ``(keys, values)``
            when ``values`` is given. Block 0 ends with the smallest keys, each
            block ascending, every copy of a key on one block, the order stable
            (by block, then index), the sizes balanced up to keeping equal keys
            together.
        """
        return sort.sort_by_key(self, keys, values)

    def redistribute(self, new: "Blocks", values: dict) -> dict:
        """Move each block's arrays to its rank and device in another layout of
        the same blocks (rebalancing).

        Args:
            new: a ``Blocks`` of the same world with the same number of blocks,
                assigned to the ranks differently.
            values: ``{gid: Array}`` or ``{gid: {name: Array}}`` for every block
                of this rank, each on its block's device.

        Returns:
            ``{gid: value}`` for every block of ``new`` on this rank, each value
            in the form it was given, on the block's device in ``new``: the
            very arrays where the block stayed on a device that addresses them,
            else copies.
        """
        return redistribute.redistribute(self, new, values)


def _devices(devices, gpu_aware: bool) -> list:
    if isinstance(devices, (str, bytes)) or not hasattr(devices, "__iter__"):
        raise TypeError(f"Blocks() takes a sequence of devices, one per block, not "
                        f"{type(devices).__name__}")
    resolved = [_device(d) for d in devices]
    for device in resolved if gpu_aware else ():   # found here, on every rank,
        refusal = export_refusal(device)           # rather than mid-transfer
        if refusal:
            raise ValueError(f"Blocks(): World(comm, gpu_aware=True) hands MPI the "
                             f"arrays themselves through DLPack, and arrays on {device} "
                             f"cannot be exported that way; use World(comm), whose "
                             f"transport stages through host memory")
        transport.check_direct(device.backend)   # an MPI that is not CUDA-aware
    return resolved
