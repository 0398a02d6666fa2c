"""Host operations on arrays: ``copyto``, ``concat`` and the ``*_like`` constructors."""

from __future__ import annotations

import numpy as np

from .. import types as T
from .array import Array, converted_type, on_device, shares_memory
from .creation import _resolve_device, element_dims, empty
from .host_kernels import copy_convert, copy_into


def _two_devices(operation: str, a: Array, b: Array) -> ValueError:
    return ValueError(f"{operation} was given arrays on two devices ({a.device} and "
                      f"{b.device}); copy them to one device first (a.to_device(...)).")


def _same_domain(a: Array, b: Array) -> bool:
    return a.device.backend.memory_domain == b.device.backend.memory_domain


def copyto(a, src) -> None:
    """Copy ``src`` into ``a``: host values broadcast like ``np.copyto`` to
    ``a.numpy()``'s shape (component dimensions included, so a flat array does
    not fill a vector or matrix array); a Tack array of the same shape and
    scalar count is copied on the device."""
    if not isinstance(a, Array):
        raise TypeError(f"copyto() copies into a tack.Array, not {type(a).__name__}")
    a._require_writable("copyto()")
    if isinstance(src, Array):
        if not _same_domain(a, src):
            raise _two_devices("copyto()", a, src)
        if src.shape != a.shape or src.scalar_size != a.scalar_size:
            if src.storage_shape == a.storage_shape:  # f32 (4, 3) and vec3 (4,)
                raise ValueError(f"copyto() from a Tack array needs the same shape in "
                                 f"elements: a {src.dtype} array of shape {src.shape} "
                                 f"into a {a.dtype} array of shape {a.shape}; to copy "
                                 f"the values across element types, pass src.numpy()")
            raise ValueError(f"copyto() into an array whose values have shape "
                             f"{a.storage_shape}: cannot broadcast shape "
                             f"{src.storage_shape}")
        if shares_memory(a, src) and not (a._lo == src._lo and
                                          a._scalar.itemsize == src._scalar.itemsize):
            src = src.copy()   # partly overlapping: a would change src unread
        on_device(a.device, copy_convert, src._scalars(), a._scalars())
        return
    _require_numbers(src)
    try:
        values = np.asarray(src, dtype=a.scalar_dtype.numpy)
    except TypeError as exc:
        raise TypeError(f"copyto() cannot convert src to {a.scalar_dtype}: {exc}") from None
    if values.dtype.kind == "f" and isinstance(src, (list, tuple)) and \
            np.isnan(values).any():
        _require_no_none(src)       # a None converts to NaN
    storage = a.storage_shape
    try:
        np.broadcast_shapes(values.shape, storage)
        broadcast = np.broadcast_to(values, storage)
    except ValueError:
        raise ValueError(f"copyto() into an array whose values have shape {storage}: "
                         f"cannot broadcast shape {values.shape}") from None
    a._store(broadcast)


def _require_numbers(src) -> None:
    """``TypeError`` for a host ``src`` that is no number (``None`` would cast to
    NaN, a string would be parsed): checked whole for NumPy arrays, by the first
    element for sequences (converting a list twice would double the cost of
    the copy; a ``None`` among numbers is found by its NaN, see ``copyto``)."""
    what = None
    first = src
    while isinstance(first, (list, tuple)) and first:
        first = first[0]
    if src is None or isinstance(src, (str, bytes)):
        what = type(src).__name__
    elif first is None or isinstance(first, (str, bytes)):
        what = f"a {type(src).__name__} holding None or strings"
    elif isinstance(src, np.ndarray) and src.dtype.kind in "OUSV":
        what = f"a NumPy array of {src.dtype}"
    if what:
        _refuse(what)


def _require_no_none(src) -> None:
    try:
        held = np.asarray(src, dtype=object).ravel()
    except ValueError:          # ragged: the conversion already said so
        return
    if any(v is None for v in held):
        _refuse(f"a {type(src).__name__} holding None or strings")


def _refuse(what: str):
    raise TypeError(f"copyto() takes numbers as src (a scalar, a sequence, a NumPy or "
                    f"Tack array), not {what}")


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
    out = empty(sum(a.size for a in arrays), first.dtype, device=first.device)
    flat, offset = out._scalars(), 0
    with first.device:
        for a in arrays:
            if a.size:
                copy_into(a._scalars(), flat, offset)
            offset += a.scalar_size
    return out


def _prototype(prototype, dtype, device, operation):
    """(shape, element type, device) of a new array like ``prototype``.

    A scalar ``dtype`` over a vector or matrix Tack prototype keeps its element
    dimensions. A vector or matrix ``dtype`` over a NumPy prototype consumes the
    element's dimensions at the end of its shape, as ``tack.array`` does."""
    if isinstance(prototype, Array):
        dev = prototype.device if device is None else _resolve_device(device)
        if dtype is None:
            return prototype.shape, prototype.dtype, dev
        target = T.as_element_type(dtype)
        if isinstance(target, T.ScalarType):
            target = converted_type(prototype.dtype, target, operation)
        return prototype.shape, target, dev
    if isinstance(prototype, np.ndarray):
        dt = T.from_numpy(prototype.dtype) if dtype is None else T.as_element_type(dtype)
        shape = element_dims(prototype.shape, dt, operation)
        return shape, dt, _resolve_device(device)
    raise TypeError("expected a Tack array or NumPy array as the prototype")


def empty_like(prototype, dtype=None, *, device=None) -> Array:
    """A new array of ``prototype``'s shape (a Tack or NumPy array), with its
    dtype unless ``dtype`` is given, on its device (a Tack array's) unless
    ``device`` is given; the contents are unspecified."""
    return _like(prototype, dtype, device, "empty_like()")


def _like(prototype, dtype, device, operation) -> Array:
    shape, dt, dev = _prototype(prototype, dtype, device, operation)
    return empty(shape, dt, device=dev)


def zeros_like(prototype, dtype=None, *, device=None) -> Array:
    """``empty_like(prototype, dtype, device=device)`` filled with zeros."""
    out = _like(prototype, dtype, device, "zeros_like()")
    out.fill(0)
    return out


def ones_like(prototype, dtype=None, *, device=None) -> Array:
    """``empty_like(prototype, dtype, device=device)`` filled with ones."""
    out = _like(prototype, dtype, device, "ones_like()")
    out.fill(1)
    return out


def full_like(prototype, fill_value, dtype=None, *, device=None) -> Array:
    """``empty_like(prototype, dtype, device=device)`` filled with ``fill_value``."""
    out = _like(prototype, dtype, device, "full_like()")
    out.fill(fill_value)
    return out
