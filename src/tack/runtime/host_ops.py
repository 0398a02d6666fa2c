"""Host operations on arrays: ``copyto``, ``concat`` and the ``*_like`` constructors."""

from __future__ import annotations

import numpy as np

from .. import types as T
from .array import Array
from .creation import _resolve_device, empty


def _two_devices(operation: str, a: Array, b: Array) -> ValueError:
    return ValueError(f"{operation} was given arrays on two devices ({a.device} and "
                      f"{b.device}); copy them to one device first (a.to_device(...)).")


def _same_domain(a: Array, b: Array) -> bool:
    return a.device.backend.memory_domain == b.device.backend.memory_domain


def copyto(a, src) -> None:
    """Copy ``src`` into ``a``: host values broadcast like ``np.copyto``; a Tack
    array of the same shape is copied on the device."""
    if not isinstance(a, Array):
        raise TypeError(f"copyto() copies into a tack.Array, not {type(a).__name__}")
    a._require_writable("copyto()")
    if isinstance(src, Array):
        if not _same_domain(a, src):
            raise _two_devices("copyto()", a, src)
        if src.shape != a.shape:
            raise ValueError(f"copyto() into an array whose values have shape "
                             f"{a.shape}: cannot broadcast shape {src.shape}")
        from .host_kernels import copy_convert
        with a.device:  # host operations run on the array's device
            copy_convert(src._flat(), a._flat())
        return
    values = np.asarray(src, dtype=a.dtype.numpy)
    try:
        np.broadcast_shapes(values.shape, a.shape)
        broadcast = np.broadcast_to(values, a.shape)
    except ValueError:
        raise ValueError(f"copyto() into an array whose values have shape {a.shape}: "
                         f"cannot broadcast shape {values.shape}") from None
    a._store(broadcast)


def concat(arrays) -> Array:
    """A new 1-D array of every element in order, on the first array's device."""
    arrays = list(arrays)
    if not arrays:
        raise ValueError("concat() needs at least one array")
    for a in arrays:
        if not isinstance(a, Array):
            raise TypeError(f"concat() takes tack.Arrays, not {type(a).__name__}")
    first = arrays[0]
    for a in arrays[1:]:
        if a.dtype != first.dtype:
            raise TypeError(f"concat() of arrays with different dtypes ({first.dtype} "
                            f"and {a.dtype})")
        if not _same_domain(first, a):
            raise _two_devices("concat()", first, a)
    from .host_kernels import copy_into
    out = empty(sum(a.size for a in arrays), first.dtype, device=first.device)
    offset = 0
    with first.device:
        for a in arrays:
            if a.size:
                copy_into(a._flat(), out, offset)
            offset += a.size
    return out


def _prototype(prototype, dtype, device):
    if isinstance(prototype, Array):
        dev = prototype.device if device is None else _resolve_device(device)
        return prototype.shape, (prototype.dtype if dtype is None else dtype), dev
    if isinstance(prototype, np.ndarray):
        dt = T.from_numpy(prototype.dtype) if dtype is None else dtype
        return prototype.shape, dt, _resolve_device(device)
    raise TypeError("expected a Tack array or NumPy array as the prototype")


def empty_like(prototype, dtype=None, *, device=None) -> Array:
    shape, dt, dev = _prototype(prototype, dtype, device)
    return empty(shape, dt, device=dev)


def zeros_like(prototype, dtype=None, *, device=None) -> Array:
    out = empty_like(prototype, dtype, device=device)
    out.fill(0)
    return out


def ones_like(prototype, dtype=None, *, device=None) -> Array:
    out = empty_like(prototype, dtype, device=device)
    out.fill(1)
    return out


def full_like(prototype, fill_value, dtype=None, *, device=None) -> Array:
    out = empty_like(prototype, dtype, device=device)
    out.fill(fill_value)
    return out
