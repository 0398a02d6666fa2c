"""``tack.Array``: a typed, shaped buffer on one device.

An array records its device, element dtype and shape; its storage is a
buffer the device's backend allocated (host memory for the CPU). Host code
reads it through ``numpy()`` (always a copy) and single-element reads;
kernels read and write it in place.
"""

from __future__ import annotations

import math
import operator

import numpy as np

from .. import types as T


class Array:
    """A device array. Create one with ``tack.zeros``, ``tack.array``, ..."""

    __slots__ = ("_buffer", "_ptr", "_shape", "_dtype", "_device", "_writable",
                 "_size", "_sig", "_lo", "_hi", "__weakref__")

    def __init__(self, buffer, shape: tuple, dtype: T.ScalarType, device,
                 writable: bool = True, address: int = None):
        self._buffer = buffer
        self._ptr = buffer.address if address is None else address
        self._shape = shape
        self._dtype = dtype
        self._device = device
        self._writable = writable
        self._size = math.prod(shape)
        # What a kernel call's signature needs, computed once.
        self._sig = (dtype, len(shape), device.backend.memory_domain, writable)
        self._lo = self._ptr
        self._hi = self._ptr + self._size * dtype.itemsize

    # -- metadata -------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def dtype(self) -> T.ScalarType:
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> int:
        return self._size

    @property
    def nbytes(self) -> int:
        return self._size * self._dtype.itemsize

    @property
    def writable(self) -> bool:
        return self._writable

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    def __repr__(self) -> str:
        return (f"tack.Array(shape={self._shape}, dtype={self._dtype}, "
                f"device='{self._device}')")

    # -- host access ----------------------------------------------------------
    def _view(self) -> np.ndarray:
        """A NumPy view of host-visible storage (internal: never returned)."""
        raw = self._buffer.host_view()[: self.nbytes]
        return raw.view(self._dtype.numpy).reshape(self._shape)

    def numpy(self) -> np.ndarray:
        """A new NumPy array holding a copy of the values."""
        self._device.backend.synchronize()
        return self._view().copy()

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("a tack.Array cannot be viewed as a NumPy array without "
                             "a copy; use np.asarray(a) or a.numpy()")
        values = self.numpy()
        return values if dtype is None else values.astype(dtype, copy=False)

    def __getitem__(self, key):
        if key == () and isinstance(key, tuple):
            self._device.backend.synchronize()
            return np.array(self._view()[()])
        index = key if isinstance(key, tuple) else (key,)
        if len(index) != len(self._shape) or not all(_is_int(i) for i in index):
            raise TypeError(f"a tack.Array is read on the host with one integer per "
                            f"dimension ({len(self._shape)} here); use a[()] for a "
                            f"0-d array and a.numpy() for anything else")
        position = []
        for i, extent in zip(index, self._shape):
            i = operator.index(i)
            if not -extent <= i < extent:
                raise IndexError(f"index {i} is out of bounds for a dimension of "
                                 f"length {extent}")
            position.append(i % extent)
        self._device.backend.synchronize()
        return self._view()[tuple(position)].item()

    def __setitem__(self, key, value):
        raise TypeError("tack.Array does not support host assignment: write it in a "
                        "kernel, or use tack.copyto(a, values) or a.fill(value)")

    def __iter__(self):
        raise TypeError("tack.Array is not iterable on the host; use a.numpy()")

    def fill(self, value) -> None:
        """Set every element to ``value`` (converted like ``ndarray.fill``)."""
        if not self._writable:
            raise RuntimeError("this array is read-only")
        self._device.backend.synchronize()
        self._view().fill(value)


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
