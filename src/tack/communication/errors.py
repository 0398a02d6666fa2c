"""Argument checks shared by the communication calls, and errors agreed across ranks.

A check raises the exception of the spec's table (``ValueError`` or
``TypeError``) on the rank that finds the problem; :meth:`World.agree` then
makes every rank raise it. :func:`fault` runs checks and returns what they
raised instead of raising, so the rank can still take part in the agreement.
"""

from __future__ import annotations

from .. import types as T

import builtins

from ..runtime.array import Array

AGREED = (TypeError, ValueError, IndexError, KeyError, RuntimeError, ArithmeticError)


def fault(check, *args):
    """``(result, None)`` of ``check(*args)``, or ``(None, exception)``."""
    try:
        return check(*args), None
    except AGREED as exc:
        return None, exc


def agreed_error(local, faults):
    """The exception every rank raises: the lowest failing rank's.

    Args:
        local: this rank's exception or None.
        faults: per rank, ``(type name, message)`` or None.
    """
    first = next(r for r, f in enumerate(faults) if f is not None)
    name, message = faults[first]
    if local is not None and (type(local).__name__, str(local)) == (name, message):
        return local
    exc_type = getattr(builtins, name, None)
    if not (isinstance(exc_type, type) and issubclass(exc_type, Exception)):
        return RuntimeError(f"rank {first} raised {name}: {message}")
    error = exc_type(message)
    if local is not None:
        error.__cause__ = local
    return error


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
    if isinstance(gid, bool) or not isinstance(gid, int):
        try:
            import operator
            gid = operator.index(gid)
        except TypeError:
            raise TypeError(f"{call}: block ids are integers, not "
                            f"{type(gid).__name__}") from None
    if not 0 <= gid < blocks.count:
        raise ValueError(f"{call}: block {gid} is out of range: the world has "
                         f"{blocks.count} blocks (ids 0 to {blocks.count - 1})")
    if local and gid not in blocks.local:
        raise ValueError(f"{call}: block {gid} belongs to rank {blocks.rank_of(gid)}, "
                         f"not to this rank ({blocks.world.rank}), whose blocks are "
                         f"{_ids(blocks.local)}")
    return gid


def require_every_local(blocks, call: str, what: str, mapping: dict) -> None:
    """``mapping`` has an entry for every block of this rank, and only those."""
    for gid in mapping:
        require_gid(blocks, call, gid)
    missing = [g for g in blocks.local if g not in mapping]
    if missing:
        raise ValueError(f"{call}: {what} has no entry for block "
                         f"{', '.join(map(str, missing))} of this rank; every block "
                         f"of the rank needs one")


def require_array(call: str, what: str, value) -> Array:
    if not isinstance(value, Array):
        raise TypeError(f"{call}: {what} must be a tack.Array, not "
                        f"{type(value).__name__}")
    return value


def require_on_device(blocks, call: str, what: str, gid: int, array: Array) -> Array:
    device = blocks.device(gid)
    if array.device != device:
        raise ValueError(f"{call}: {what} is not on block {gid}'s device ({device!r}) "
                         f"but on another ({array.device!r}); copy it there first "
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
