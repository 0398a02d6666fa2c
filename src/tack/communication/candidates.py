"""Which blocks' boxes hold which points, for ``Routing``: a uniform grid of
cells over the boxes, so that each point is tested against the few boxes
that overlap its cell rather than against every block of the world.

A point's candidates are the blocks whose closed box holds it. A point that
no box holds is a candidate for the blocks whose box, grown by ``SLACK`` of
its extent per dimension, holds it (a point pushed just past an outer face
by rounding). An infinite extent is not grown, and a box's growth never
takes a point another box holds: an open outer box ``(-inf, 0.5)`` or a
very wide one does not swallow its neighbours.

Candidates are ``(points, blocks)``: two int64 arrays of equal length, one
entry per (point, candidate block) pair, sorted by point and then block.
"""

from __future__ import annotations

import numpy as np

SLACK = 1e-6
CHUNK = 1 << 15      # points tested at a time (bounds the pairs held at once)


class BoxIndex:
    """The boxes of every block (``[(gid, lo, hi)]`` in block order) on a grid
    whose cells are about a typical box's size (at most ``CELLS`` per box in
    all), each cell listing the grown boxes that overlap it."""

    CELLS = 8

    def __init__(self, boxes: list):
        self.lo = np.array([b[1] for b in boxes], np.float64).reshape(len(boxes), -1)
        self.hi = np.array([b[2] for b in boxes], np.float64).reshape(len(boxes), -1)
        extent = self.hi - self.lo
        slack = np.where(np.isfinite(extent), SLACK * extent, 0.0)
        self.grown_lo, self.grown_hi = self.lo - slack, self.hi + slack
        ends = np.concatenate([self.grown_lo, self.grown_hi])
        dims = self.lo.shape[1]
        self.origin, span, sides = np.zeros(dims), np.zeros(dims), np.ones(dims)
        for d in range(dims):   # over the finite faces and extents only
            faces = ends[np.isfinite(ends[:, d]), d]
            sizes = extent[np.isfinite(extent[:, d]) & (extent[:, d] > 0), d]
            if len(faces):
                self.origin[d], span[d] = faces.min(), faces.max() - faces.min()
            if len(sizes) and np.isfinite(span[d] / np.median(sizes)):
                sides[d] = np.clip(round(span[d] / np.median(sizes)), 1, len(boxes))
        self.sides = self._capped(sides)
        self.width = np.where(span > 0, span / self.sides, 1.0)
        self._cells_of_boxes()

    def _capped(self, sides: np.ndarray) -> tuple:
        """Cells per dimension, at most ``CELLS`` per box in all."""
        limit = self.CELLS * max(1, len(self.lo))
        total = float(np.prod(sides))
        if total > limit:
            sides = np.maximum(1, np.floor(sides * (limit / total) ** (1 / len(sides))))
        return tuple(int(k) for k in sides)

    def _cell(self, x: np.ndarray) -> np.ndarray:
        """Per dimension, the cell of each coordinate, clamped to the grid (an
        infinite or NaN coordinate included)."""
        with np.errstate(all="ignore"):
            k = np.floor((x - self.origin) / self.width)
        top = np.array(self.sides) - 1
        return np.clip(np.nan_to_num(k, nan=0.0), 0, top).astype(np.int64)

    def _flat(self, k: np.ndarray) -> np.ndarray:
        return np.ravel_multi_index(tuple(k.T), self.sides)

    def _cells_of_boxes(self) -> None:
        """Each cell's grown boxes, ascending: ``self.boxes[self.start[c]:
        self.start[c + 1]]``."""
        first, last = self._cell(self.grown_lo), self._cell(self.grown_hi)
        spans = last - first + 1                  # cells per dimension of each box
        counts = np.prod(spans, axis=1)
        owners = np.repeat(np.arange(len(first)), counts)
        rest = np.arange(len(owners)) - np.repeat(np.cumsum(counts) - counts, counts)
        cell = np.zeros((len(owners), first.shape[1]), np.int64)
        for d in reversed(range(first.shape[1])):   # the box's cells, row-major
            span = spans[owners, d]
            cell[:, d] = first[owners, d] + rest % span
            rest //= span
        cells = self._flat(cell)
        order = np.argsort(cells, kind="stable")   # boxes stay ascending per cell
        self.boxes = owners[order]
        total = int(np.prod(self.sides))
        self.start = np.concatenate([[0], np.cumsum(np.bincount(cells, minlength=total))])

    def candidates(self, coords: np.ndarray) -> tuple:
        """``(points, blocks)`` for an ``(n, d)`` f64 array (see the module)."""
        found = [self._chunk(coords[s:s + CHUNK], s) for s in range(0, len(coords), CHUNK)]
        if not found:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return (np.concatenate([p for p, _ in found]),
                np.concatenate([b for _, b in found]))

    def _chunk(self, x: np.ndarray, offset: int) -> tuple:
        if not len(self.lo):
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        cell = self._flat(self._cell(x))
        first, counts = self.start[cell], self.start[cell + 1] - self.start[cell]
        point = np.repeat(np.arange(len(x)), counts)
        within = np.arange(len(point)) - np.repeat(np.cumsum(counts) - counts, counts)
        block = self.boxes[np.repeat(first, counts) + within]
        xs = x[point]
        held = np.all((xs >= self.lo[block]) & (xs <= self.hi[block]), axis=1)
        near = np.all((xs >= self.grown_lo[block]) & (xs <= self.grown_hi[block]), axis=1)
        inside = np.zeros(len(x), bool)
        inside[point[held]] = True
        keep = held | (near & ~inside[point])
        return point[keep] + offset, block[keep]


def lowest(count: int, points: np.ndarray, blocks: np.ndarray) -> np.ndarray:
    """Per point, its lowest candidate block, or -1 without one."""
    chosen = np.full(count, -1, np.int64)
    ids, first = np.unique(points, return_index=True)   # pairs: by point, then block
    chosen[ids] = blocks[first]
    return chosen


def per_block(points: np.ndarray, blocks: np.ndarray) -> dict:
    """``{block: indices into the pairs}`` for each block with candidates; the
    points of each are ascending."""
    order = np.argsort(blocks, kind="stable")
    ids, starts = np.unique(blocks[order], return_index=True)
    ends = list(starts[1:]) + [len(order)]
    return {int(b): order[s:e] for b, s, e in zip(ids, starts, ends)}


def best_answer(count: int, points: np.ndarray, blocks: np.ndarray,
                ranks: np.ndarray) -> np.ndarray:
    """Per point, the block with the highest answer (the lowest block on a tie),
    or -1 where every answer is 0 or there is none."""
    order = np.lexsort((blocks, -ranks, points))
    chosen = np.full(count, -1, np.int64)
    top = np.zeros(count, np.int64)
    first = order[np.unique(points[order], return_index=True)[1]]
    chosen[points[first]] = blocks[first]
    top[points[first]] = ranks[first]
    return np.where(top > 0, chosen, -1)
