"""Argument checks shared by the communication calls, and errors agreed across ranks.

A check raises the exception of the spec's table (``ValueError`` or
``TypeError``) on the rank that finds the problem; :meth:`World.agree` then
makes every rank raise it. :func:`fault` runs checks and returns what they
raised instead of raising, so the rank can still take part in the agreement.
"""

from __future__ import annotations

import operator
import sys

import numpy as np

from .. import types as T
from ..runtime.array import Array

_PLAIN = (str, bytes, int, float, bool, type(None))


def the_blocks(blocks, call: str) -> tuple:
    """The agreement field of the ``Blocks`` a call goes through: ranks calling
    through different ones raise ``ValueError: <call>: the Blocks differs between
    ranks`` on every rank (``World.agree``)."""
    return (blocks.id, ValueError, f"{call}: the Blocks")


def fault(check, *args):
    """``(result, None)`` of ``check(*args)``, or ``(None, exception)``: any
    exception, ``BaseException`` included (a user's ``holds`` may raise
    anything, even ``KeyboardInterrupt``), so that the rank still takes part in
    the agreement and every rank raises it."""
    try:
        return check(*args), None
    except BaseException as exc:   # noqa: BLE001 (raised again, on every rank)
        return None, exc


def error_record(exc) -> tuple:
    """What another rank needs to raise ``exc`` too: its class's module and
    qualified name, its arguments when they are plain values, its message."""
    cls = type(exc)
    args = exc.args if all(isinstance(a, _PLAIN) for a in exc.args) else None
    return (cls.__module__, cls.__qualname__, args, str(exc))


def agreed_error(local, faults, rank: int):
    """The exception every rank raises: the lowest failing rank's, as its own
    class where this rank can make one with the same message (the builtins,
    and the program's own classes, which every rank of an SPMD program has),
    else a RuntimeError that names it. On the other ranks it notes where it
    came from (Python 3.11 and later).

    Args:
        local: this rank's exception or None.
        faults: per rank, ``error_record(exception)`` or None.
        rank: this rank.
    """
    first = next(r for r, f in enumerate(faults) if f is not None)
    record = faults[first]
    if first == rank:
        return local
    module, qualname, args, message = record
    error = _rebuild(module, qualname, args, message)
    if error is None:
        error = RuntimeError(f"rank {first} raised {qualname}: {message}")
    if local is not None:
        error.__cause__ = local
    if hasattr(error, "add_note"):
        error.add_note(f"Raised on rank {first}, the lowest rank that found an error; "
                       + ("this rank found one too (the cause above)." if local is not None
                          else "this rank's own arguments were fine."))
    return error


def _rebuild(module: str, qualname: str, args, message: str):
    """An instance of the named exception class with ``message``, or None."""
    found = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if not (isinstance(found, type) and issubclass(found, BaseException)):
        return None
    try:
        error = found(*args) if args is not None else found(message)
    except Exception:   # a class whose constructor wants something else
        return None
    return error if str(error) == message else None


def mismatch_message(calls) -> str:
    """Say which rank made which call, for calls made in a different order."""
    seen = "; ".join(f"rank {r} is in {op} (call {n})" for r, (op, n) in enumerate(calls))
    return (f"collective calls differ between ranks: {seen}. Every rank must make the "
            f"same communication calls in the same order")


# -- argument checks ------------------------------------------------------------------

def require_dict(call: str, what: str, value) -> dict:
    if not isinstance(value, dict):
        raise TypeError(f"{call} takes a dict for {what}, not {type(value).__name__}")
    return value


def require_gid(blocks, call: str, gid, local: bool = True) -> int:
    """``gid`` as an int: a global id, and this rank's when ``local``."""
    gid = integer_gid(call, gid)
    if not 0 <= gid < blocks.count:
        raise ValueError(f"{call}: block {gid} is out of range: the world has "
                         f"{blocks.count} blocks (ids 0 to {blocks.count - 1})")
    if local and gid not in blocks.local:
        raise ValueError(f"{call}: block {gid} belongs to rank {blocks.rank_of(gid)}, "
                         f"not to this rank ({blocks.world.rank}), whose blocks are "
                         f"{_ids(blocks.local)}")
    return gid


def integer_gid(call: str, gid) -> int:
    """``gid`` as an int (a NumPy integer too), else ``TypeError``."""
    return _integer(call, "block ids", gid)


def integer_rank(call: str, rank) -> int:
    """``rank`` as an int (a NumPy integer too), else ``TypeError``."""
    return _integer(call, "ranks", rank)


def _integer(call: str, what: str, value) -> int:
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{call}: {what} are integers, not {type(value).__name__}")
    if not isinstance(value, int):
        try:
            value = operator.index(value)
        except TypeError:
            raise TypeError(f"{call}: {what} are integers, not "
                            f"{type(value).__name__}") from None
    return value


def require_every_local(blocks, call: str, what: str, mapping: dict) -> None:
    """``mapping`` has an entry for every block of this rank, and only those."""
    for gid in mapping:
        require_gid(blocks, call, gid)
    missing = [g for g in blocks.local if g not in mapping]
    if missing:
        raise ValueError(f"{call}: no entry in {what} for block "
                         f"{', '.join(map(str, missing))} of this rank; every block "
                         f"of the rank needs one")


def require_array(call: str, what: str, value) -> Array:
    if not isinstance(value, Array):
        raise TypeError(f"{call}: {what} must be a tack.Array, not "
                        f"{type(value).__name__}")
    return value


def require_on_device(blocks, call: str, what: str, gid: int, array: Array) -> Array:
    """``array`` if it is in the memory of block ``gid``'s device: on that device
    or on another of its memory domain (every CPU device shares the host's, so
    a message passed between two of them on one rank stays where it is)."""
    device = blocks.device(gid)
    if array.device.backend.memory_domain != device.backend.memory_domain:
        raise ValueError(f"{call}: {what}: the array is on {array.device!r}, not on "
                         f"block {gid}'s device ({device!r}); copy it there first "
                         f"(a.to_device(...))")
    return array


def require_named_arrays(blocks, call: str, what: str, gid: int, value) -> dict:
    """A message: a dict of string names to Tack arrays on ``gid``'s device."""
    if not isinstance(value, dict):
        raise TypeError(f"{call}: {what} must be a dict of names to tack.Arrays, not "
                        f"{type(value).__name__}")
    for name, array in value.items():
        if not isinstance(name, str):
            raise TypeError(f"{call}: {what} must be a dict of names to tack.Arrays; "
                            f"it has the key {name!r}")
        require_array(call, f"{what}[{name!r}]", array)
        require_on_device(blocks, call, f"{what}[{name!r}]", gid, array)
    return value


def row_layout(blocks, call: str, tables, rows: dict, words: dict) -> tuple:
    """The ``(name, dtype, trailing shape)``s of per-row payloads on every local
    block, checked: each array has ``rows[gid]`` rows, and every block has the
    same layout. ``words`` gives the messages' wording: ``type`` (what the
    payloads must be), ``what`` (the dict), ``block(gid)``, ``bad(gid, name,
    shape, rows)`` and ``differ``."""
    if not isinstance(tables, dict):
        raise TypeError(f"{call} takes {words['type']}, not {type(tables).__name__}")
    require_every_local(blocks, call, words["what"], tables)
    layouts = set()
    for gid in blocks.local:
        named = require_named_arrays(blocks, call, words["block"](gid), gid, tables[gid])
        for name, a in named.items():
            if a.ndim == 0 or a.shape[0] != rows[gid]:
                raise ValueError(f"{call}: {words['bad'](gid, name, a.shape, rows[gid])}")
        layouts.add(tuple((n, T.type_name(a.dtype), a.shape[1:]) for n, a in named.items()))
    if len(layouts) > 1:
        raise TypeError(f"{call}: {words['differ']} have different names, types or "
                        f"trailing shapes on different blocks")
    return layouts.pop() if layouts else None


def _ids(ids: range) -> str:
    if not len(ids):
        return "none"
    return f"{ids.start} to {ids.stop - 1}" if len(ids) > 1 else str(ids.start)
