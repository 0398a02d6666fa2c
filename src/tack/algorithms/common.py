"""Argument checks shared by the algorithms."""

from __future__ import annotations

import operator
import threading

import numpy as np

from .. import types as T
from ..runtime.array import Array
from ..runtime.creation import empty
from ..runtime.device import is_shared

CHUNK = 1 << 16  # elements per chunk: fixed, so results never depend on threads


def one_thread(device) -> bool:
    """Whether ``device`` runs every launch on one thread (a CPU device of one
    thread): then a serial pass needs no chunks, rows or atomics."""
    return getattr(device.backend, "num_threads", 0) == 1


def chunks_of(n: int, chunk: int = CHUNK) -> int:
    return max(1, -(-n // chunk))


_kept = threading.local()   # .arrays: {(device, dtype): a one-element array}


def scratch(count: int, dtype, device) -> Array:
    """An array of ``count`` elements with undefined contents, for partial
    results that are read before the call returns. One element, the common
    case of a small input, is kept per thread, device and dtype, so a small
    call allocates nothing; not on a device made with options, which would
    then live as long as the thread (runtime.md: a few such devices at most)."""
    if count != 1 or not is_shared(device):
        return empty(count, dtype, device=device)
    kept = getattr(_kept, "arrays", None)
    if kept is None:
        kept = _kept.arrays = {}
    key = (device, dtype)
    found = kept.get(key)
    if found is None:
        found = kept[key] = empty(1, dtype, device=device)
    return found


def require_array(name: str, what: str, value, elements: bool = False) -> Array:
    """``value`` if it is a tack.Array (of scalars, unless ``elements`` allows
    vector and matrix elements too), else ``TypeError``."""
    if not isinstance(value, Array):
        raise TypeError(f"{name}() takes a tack.Array for {what}, not "
                        f"{type(value).__name__}")
    if not elements and isinstance(value.dtype, T.CompositeType):
        raise TypeError(f"{name}() takes an array of scalars for {what}, not of "
                        f"{value.dtype} elements (use one array per component)")
    return value


def require_1d(name: str, what: str, value: Array) -> Array:
    if value.ndim != 1:
        raise ValueError(f"{name}() takes a one-dimensional array for {what}, got "
                         f"shape {value.shape}")
    return value


def same_device(name: str, *arrays) -> None:
    """Refuse arrays in two memory domains, naming the public function."""
    first = arrays[0]
    for other in arrays[1:]:
        if other is None:
            continue
        if other.device.backend.memory_domain != first.device.backend.memory_domain:
            raise ValueError(f"{name}() was given arrays on two devices ({first.device} "
                             f"and {other.device}); copy them to one device first "
                             f"(a.to_device(...)).")


def require_writable(name: str, what: str, value: Array) -> Array:
    """``value`` if it may be written, else ``ValueError`` naming the function."""
    if not value.writable:
        raise ValueError(f"{name}() writes {what}, but the array is read-only; pass a "
                         f"writable array (or a copy)")
    return value


def require_count(name: str, what: str, value) -> int:
    """``value`` as a non-negative int (``operator.index``: no floats, no
    strings; no bools either, as everywhere in Tack)."""
    try:
        if isinstance(value, (bool, np.bool_)):
            raise TypeError
        count = operator.index(value)
    except TypeError:
        raise TypeError(f"{name}() takes an integer for {what}, not "
                        f"{type(value).__name__}") from None
    if count < 0:
        raise ValueError(f"{name}() takes a non-negative {what}, got {count}")
    return count
