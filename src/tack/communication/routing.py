"""``Routing``: where points go among boxes, and moving per-point data there and back.

A point is a candidate for every block whose closed box holds it (points on
faces are candidates for both sides); a point no box holds, for the blocks
whose box grown by 1e-6 of its finite extent holds it (``candidates.py``).
Without ``holds`` the lowest candidate block wins. With ``holds(gid, points)
-> ranks`` the coordinates (as f64) are sent to every candidate block's rank,
which answers a rank per point; the highest rank wins, the lowest block id
on a tie, and a point whose every answer is 0 (or that no box holds) goes
nowhere (-1).

The same object then moves per-point payloads to the destinations
(``send``, in order of origin block and then of the points there) and answers
back to the origins (``reply``), which serves particle migration and point
queries alike.
"""

from __future__ import annotations

import numpy as np

from .. import types as T
from ..runtime.creation import array as _to_device
from . import transport
from .candidates import BoxIndex, best_answer, per_block
from .collectives import box
from .errors import (fault, require_array, require_every_local, require_on_device,
                     row_layout, the_blocks)
from .exchange import exchange

CALL, SEND, REPLY = "Routing()", "Routing.send()", "Routing.reply()"


class Routing:
    """The destinations of points among the blocks' boxes.

    Args:
        blocks: the :class:`Blocks`.
        bounds: ``{gid: (lo, hi)}`` for every block of this rank.
        points: ``{gid: Array of shape (n, d)}`` for every block of this rank.
        holds: optional ``holds(gid, points) -> ranks``, called on the rank of
            block ``gid`` with an ``(m, d)`` f64 ``tack.Array`` (on the block's
            device) of the points its box holds;
            it returns ``m`` non-negative integers (0: the block does not hold it).
    """

    def __init__(self, blocks, bounds: dict, points: dict, holds=None):
        self.blocks = blocks
        world = blocks.world
        checked, error = fault(_check, blocks, bounds, points, holds)
        boxes, coords = checked if checked else (None, None)
        dims = boxes[0][1].__len__() if boxes else None
        world.agree(CALL, error, [(dims, ValueError, f"{CALL}: the number of dimensions"),
                                  (holds is None, ValueError,
                                   f"{CALL}: whether holds is given"),
                                  the_blocks(blocks, CALL)])
        self.id = world.next_serial()   # send and reply agree on it
        index = BoxIndex([b for part in world.allgather(boxes) for b in part])
        if holds is None:
            chosen = {g: index.lowest(coords[g], home=g) for g in blocks.local}
        else:
            chosen = self._ask(coords, holds, index)
        self._destination = chosen
        self.destination = {g: _to_device(chosen[g].astype(np.int64),
                                          device=blocks.device(g)) for g in blocks.local}
        self._routes = {g: _routes(chosen[g]) for g in blocks.local}
        # Who sends how many points where: each destination learns its origins.
        announced = exchange(blocks, {g: {d: {"index": _to_device(i.astype(np.int64),
                                                                  device=blocks.device(g))}
                                          for d, i in self._routes[g].items()}
                                      for g in blocks.local}, CALL)
        self._incoming = {d: [(o, m["index"].size) for o, m in by_origin.items()]
                          for d, by_origin in announced.items()}

    def _ask(self, coords: dict, holds, index) -> dict:
        blocks = self.blocks
        candidates = {g: index.candidates(coords[g]) for g in blocks.local}
        questions, pairs = {}, {}
        for g in blocks.local:
            points, _ = candidates[g]
            pairs[g] = per_block(*candidates[g])
            questions[g] = {c: {"x": _to_device(coords[g][points[k]],
                                                device=blocks.device(g))}
                            for c, k in pairs[g].items()}
        asked = exchange(blocks, questions, CALL)
        replies, error = fault(_answer, blocks, asked, holds)
        answered = exchange(blocks, replies or {}, CALL, error)
        chosen = {}
        for g in blocks.local:
            points, among = candidates[g]
            ranks = np.zeros(len(points), np.int64)
            for c, message in answered[g].items():
                ranks[pairs[g][c]] = message["rank"].numpy()
            chosen[g] = best_answer(len(coords[g]), points, among, ranks)
        return chosen

    # -- moving data --------------------------------------------------------------------
    def send(self, payloads: dict) -> dict:
        """Deliver per-point rows to the points' destination blocks.

        Args:
            payloads: ``{gid: {name: Array}}`` for every block of this rank, each
                array's first extent the block's number of points.

        Returns:
            ``{gid: {name: Array}}`` for this rank's blocks: the rows of the points
            that came to the block, in order of origin block and then of point.
        """
        blocks = self.blocks
        layout, error = fault(self._layout, SEND, payloads,
                              {g: len(d) for g, d in self._destination.items()})
        messages = {}
        if error is None:
            for g in blocks.local:
                rows = {n: transport.host_values(a) for n, a in payloads[g].items()}
                messages[g] = {d: {n: _to_device(r[i], device=blocks.device(g))
                                   for n, r in rows.items()}
                               for d, i in self._routes[g].items()}
        received = exchange(blocks, messages, SEND, error, self._fields(SEND, layout))
        return {g: _stack(received[g], layout, blocks.device(g)) for g in blocks.local}

    def _fields(self, call: str, layout) -> list:
        """The fields send and reply agree on: the payloads' layout, and this
        Routing (ranks sending through different ones would mix deliveries)."""
        return _same(call, layout) + [(self.id, ValueError, f"{call}: the Routing")]

    def reply(self, answers: dict) -> dict:
        """Return per-point rows from the destinations to the points' origins.

        Args:
            answers: ``{gid: {name: Array}}`` for every block of this rank, rows in
                the order :meth:`send` delivered them.

        Returns:
            ``{gid: {name: Array}}`` per origin block, a row per point, zero for
            points that went nowhere.
        """
        blocks = self.blocks
        expected = {d: sum(n for _, n in self._incoming[d]) for d in blocks.local}
        layout, error = fault(self._layout, REPLY, answers, expected)
        messages = {}
        if error is None:
            for d in blocks.local:
                rows = {n: transport.host_values(a) for n, a in answers[d].items()}
                start, messages[d] = 0, {}
                for origin, count in self._incoming[d]:
                    messages[d][origin] = {n: _to_device(r[start:start + count],
                                                         device=blocks.device(d))
                                           for n, r in rows.items()}
                    start += count
        received = exchange(blocks, messages, REPLY, error, self._fields(REPLY, layout))
        out = {}
        for g in blocks.local:
            n = len(self._destination[g])
            result = {name: np.zeros((n,) + _host_shape(dtype, shape), _host_type(dtype))
                      for name, dtype, shape in layout}
            for d, message in received[g].items():
                index = self._routes[g][d]
                for name, array in message.items():
                    result[name][index] = array.numpy()
            types = {name: T.from_type_name(dtype) for name, dtype, _ in layout}
            out[g] = {k: _to_device(v, device=blocks.device(g), dtype=types[k])
                      for k, v in result.items()}
        return out

    def _layout(self, call: str, payloads, rows: dict) -> tuple:
        """The payloads' ``(name, dtype, trailing shape)``s, checked on this rank."""
        return row_layout(self.blocks, call, payloads, rows, _PAYLOAD_WORDS)


_PAYLOAD_WORDS = {
    "type": "a dict of block ids to dicts of arrays", "what": "the payloads",
    "block": lambda g: f"the payload of block {g}",
    "bad": lambda g, name, shape, rows: (f"the payload {name!r} of block {g} has shape "
                                         f"{shape}; it needs {rows} rows"),
    "differ": "the payloads",
}


def _same(call: str, layout) -> list:
    return [(layout, TypeError,
             f"{call}: the layout of the payloads (names, types, trailing shapes)")]


def _check(blocks, bounds, points, holds) -> tuple:
    if holds is not None and not callable(holds):
        raise TypeError(f"{CALL}: holds must be callable, not {type(holds).__name__}")
    for what, table in (("bounds", bounds), ("points", points)):
        if not isinstance(table, dict):
            raise TypeError(f"{CALL} takes a dict of block ids for the {what}, not "
                            f"{type(table).__name__}")
        require_every_local(blocks, CALL, f"the {what}", table)
    boxes = [(g, *box(CALL, g, bounds[g])) for g in blocks.local]
    coords = {}
    for g, lo, _ in boxes:
        p = require_array(CALL, f"the points of block {g}", points[g])
        require_on_device(blocks, CALL, f"the points of block {g}", g, p)
        host = p.numpy()   # a vector array's: (n, components)
        if host.ndim != 2 or host.shape[1] != len(lo):
            raise ValueError(f"{CALL}: the points of block {g} are {p.dtype} of shape "
                             f"{p.shape}; "
                             f"they must be (n, {len(lo)}) (or n vectors of "
                             f"{len(lo)}), the boxes' dimensions")
        coords[g] = host.astype(np.float64)
    dims = {len(lo) for _, lo, _ in boxes}
    if len(dims) > 1:
        raise ValueError(f"{CALL}: the boxes of this rank's blocks have different "
                         f"numbers of dimensions")
    return boxes, coords


def _routes(chosen: np.ndarray) -> dict:
    """``{destination: indices of the points going there}``, ascending."""
    order = np.argsort(chosen, kind="stable")
    ids, starts = np.unique(chosen[order], return_index=True)
    ends = list(starts[1:]) + [len(order)]
    return {int(d): order[s:e] for d, s, e in zip(ids, starts, ends) if d >= 0}


def _answer(blocks, asked: dict, holds) -> dict:
    """Each block's answers, per origin block, to the points it was asked about."""
    replies = {}
    for g in blocks.local:
        origins = list(asked[g].items())
        replies[g] = {}
        if not origins:
            continue
        coords = np.concatenate([m["x"].numpy() for _, m in origins])
        ranks = holds(g, _to_device(coords, device=blocks.device(g)))
        ranks = ranks.numpy() if hasattr(ranks, "numpy") else np.asarray(ranks)
        if ranks.shape != (len(coords),) or ranks.dtype.kind not in "iub":
            raise ValueError(f"{CALL}: holds({g}, points) must return {len(coords)} "
                             f"integers, one per point; it returned {ranks.dtype} of "
                             f"shape {ranks.shape}")
        if ranks.size and ranks.min() < 0:
            raise ValueError(f"{CALL}: holds({g}, points) returned a negative rank "
                             f"({ranks.min()})")
        if ranks.size and ranks.max() > np.iinfo(np.int64).max:   # u64: would wrap
            raise ValueError(f"{CALL}: holds({g}, points) returned a rank past "
                             f"2**63 - 1 ({ranks.max()})")
        start = 0
        for origin, message in origins:
            m = len(message["x"])
            replies[g][origin] = {"rank": _to_device(ranks[start:start + m].astype(
                np.int64), device=blocks.device(g))}
            start += m
    return replies


def _stack(by_origin: dict, layout, device) -> dict:
    """Each payload's rows from every origin, in one new array per name: a
    copy on the device of the one part there is, else the parts' host values
    (views where they are large) joined."""
    out = {}
    for name, dtype, shape in layout:
        parts = [m[name] for m in by_origin.values()]
        if len(parts) == 1 and parts[0].device == device and \
                T.type_name(parts[0].dtype) == dtype:
            out[name] = parts[0].copy()
            continue
        values = np.concatenate([transport.host_values(p) for p in parts]) if parts \
            else np.empty((0,) + _host_shape(dtype, shape), _host_type(dtype))
        out[name] = _to_device(values, device=device, dtype=T.from_type_name(dtype))
    return out


def _host_type(type_name: str) -> np.dtype:
    return T.scalar_of(T.from_type_name(type_name)).numpy


def _host_shape(type_name: str, shape: tuple) -> tuple:
    """A row's shape on the host: its trailing shape and any component dims."""
    return shape + T.element_shape(T.from_type_name(type_name))
