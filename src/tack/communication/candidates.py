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
PAIRS = 1 << 19      # (point, box) pairs tested at a time: about 50 MB at most
DENSE = 4            # a chunk whose points meet more than 1/DENSE of the boxes
                     # tests them against every box at once (broadcasting)


class BoxIndex:
    """The boxes of every block (``[(gid, lo, hi)]`` in block order) on a grid
    whose cells are about a typical box's size (at most ``CELLS`` per box in
    all), each cell listing the grown boxes that overlap it."""

    CELLS = 8

    def __init__(self, boxes: list):
        dims = len(boxes[0][1]) if boxes else 1
        self.lo = np.array([b[1] for b in boxes], np.float64).reshape(len(boxes), dims)
        self.hi = np.array([b[2] for b in boxes], np.float64).reshape(len(boxes), dims)
        with np.errstate(all="ignore"):   # infinite faces: inf - inf is not an extent
            extent = self.hi - self.lo
            slack = np.where(np.isfinite(extent), SLACK * extent, 0.0)
            self.grown_lo, self.grown_hi = self.lo - slack, self.hi + slack
            self._grid(extent)
        self._cells_of_boxes()

    def _grid(self, extent: np.ndarray) -> None:
        """The grid's origin, cell counts and cell widths, from the finite faces
        and extents only (infinite faces fall in the outer cells)."""
        ends = np.concatenate([self.grown_lo, self.grown_hi])
        dims = self.lo.shape[1]
        self.origin, span, sides = np.zeros(dims), np.zeros(dims), np.ones(dims)
        for d in range(dims):
            faces = ends[np.isfinite(ends[:, d]), d]
            sizes = extent[np.isfinite(extent[:, d]) & (extent[:, d] > 0), d]
            if len(faces):
                self.origin[d], span[d] = faces.min(), faces.max() - faces.min()
            if len(sizes) and np.isfinite(span[d] / np.median(sizes)):
                sides[d] = np.clip(round(span[d] / np.median(sizes)), 1, len(self.lo))
        self.sides = self._capped(sides)
        self.width = np.where((span > 0) & np.isfinite(span), span / self.sides, 1.0)

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
        owners, rest = _expand(np.prod(spans, axis=1))
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

    # -- queries ---------------------------------------------------------------------------
    def candidates(self, coords: np.ndarray) -> tuple:
        """``(points, blocks)`` for an ``(n, d)`` f64 array (see the module)."""
        found = list(self._pairs(coords))
        if not found:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return (np.concatenate([p for p, _ in found]),
                np.concatenate([b for _, b in found]))

    def lowest(self, coords: np.ndarray, home: int = None) -> np.ndarray:
        """Per point, its lowest candidate block, or -1 without one (keeping no
        more than one chunk's pairs). ``home``: the block the points are on.
        Most stay in its box, and a point there goes home unless a lower
        block's box holds it too (only the few lower boxes that meet home's
        can); only the points outside are searched for."""
        chosen = np.full(len(coords), -1, np.int64)
        rest = np.arange(len(coords))
        if home is not None and len(coords):
            lo, hi = self.lo[home], self.hi[home]
            within = (coords >= lo) & (coords <= hi)   # per coordinate
            at_home = np.all(within, axis=1)
            chosen[at_home] = home
            lower, deep = self._lower_meeting(home)
            if len(lower):
                # a lower box meeting home's only on its faces holds none of its
                # inner points: test the points on home's faces (few, if any)
                edge = np.flatnonzero(at_home & ~np.all(within & (coords != lo) &
                                                        (coords != hi), axis=1))
                for h, inner in zip(lower[::-1], deep[::-1]):   # the lowest last
                    tested = np.flatnonzero(at_home) if inner else edge
                    chosen[tested[_inside(coords[tested], self.lo[h], self.hi[h])]] = h
            rest = np.flatnonzero(~at_home)
        for points, blocks in self._pairs(coords[rest]):
            first = _firsts(points)   # pairs go by point, then block
            chosen[rest[points[first]]] = blocks[first]
        return chosen

    def _lower_meeting(self, home: int) -> tuple:
        """``(blocks, deep)``: the blocks below ``home`` whose closed boxes meet
        its box, ascending, and for each whether the two share more than a part
        of home's faces (then any of home's points may be in it)."""
        lo, hi, home_lo, home_hi = self.lo[:home], self.hi[:home], self.lo[home], self.hi[home]
        meet = np.flatnonzero(np.all((lo <= home_hi) & (hi >= home_lo), axis=1))
        start, stop = np.maximum(lo[meet], home_lo), np.minimum(hi[meet], home_hi)
        # flat where home's face is: the common part lies in that face
        on_face = (start == stop) & ((start == home_lo) | (start == home_hi))
        return meet, ~np.any(on_face, axis=1)

    def _pairs(self, coords: np.ndarray):
        """The candidate pairs, chunk by chunk: each chunk's points meet at most
        ``PAIRS`` boxes in their cells (one point at least)."""
        if not len(self.lo) or not len(coords):
            return
        cell = self._flat(self._cell(coords))
        counts = self.start[cell + 1] - self.start[cell]
        total = np.cumsum(counts)
        stops = np.searchsorted(total, np.arange(PAIRS, total[-1], PAIRS), side="right")
        bounds = [0] + [int(k) for k in np.unique(np.maximum(stops, 1))] + [len(coords)]
        for lo, hi in zip(bounds, bounds[1:]):
            if hi > lo:
                yield self._chunk(coords[lo:hi], cell[lo:hi], counts[lo:hi], lo)

    def _chunk(self, x, cell, counts, offset: int) -> tuple:
        """The pairs of the points ``x`` (whose cells hold ``counts`` boxes): the
        boxes that hold a point, or, for a point no box holds, the grown boxes
        that do."""
        if counts.sum() * DENSE > len(x) * len(self.lo):   # the grid does not help
            keep = _inside(x[:, None, :], self.lo, self.hi)
            outside = np.flatnonzero(~keep.any(axis=1))   # grown boxes for these only
            keep[outside] = _inside(x[outside, None, :], self.grown_lo, self.grown_hi)
            point, block = np.nonzero(keep)   # row-major: by point, then block
            return point + offset, block
        point, within = _expand(counts)
        block = self.boxes[np.repeat(self.start[cell], counts) + within]
        keep = _inside(x[point], self.lo[block], self.hi[block])
        inside = np.zeros(len(x), bool)
        inside[point[keep]] = True
        rest = np.flatnonzero(~inside[point])   # pairs of points no box holds
        keep[rest] = _inside(x[point[rest]], self.grown_lo[block[rest]],
                             self.grown_hi[block[rest]])
        return point[keep] + offset, block[keep]


def _inside(x, lo, hi) -> np.ndarray:
    return np.all((x >= lo) & (x <= hi), axis=-1)


def _firsts(points: np.ndarray) -> np.ndarray:
    """Where each run of equal values begins in the sorted ``points``."""
    return np.flatnonzero(np.concatenate([points[:1] == points[:1],   # [True], or []
                                          points[1:] != points[:-1]]))


def _expand(counts: np.ndarray) -> tuple:
    """``(owner, k)`` for every item of groups of ``counts`` items: the group's
    index and the item's position in it (``counts`` [2, 0, 3] gives owners
    0 0 2 2 2 and positions 0 1 0 1 2)."""
    owner = np.repeat(np.arange(len(counts)), counts)
    return owner, np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)


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
    first = order[_firsts(points[order])]
    chosen[points[first]] = blocks[first]
    top[points[first]] = ranks[first]
    return np.where(top > 0, chosen, -1)
