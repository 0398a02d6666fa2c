"""Storage that a backend did not allocate: wrapped pointers and imported tensors."""

from __future__ import annotations

import ctypes

import numpy as np


class ExternalBuffer:
    """Host memory at ``address`` that Tack does not own; ``owner`` keeps it alive.

    ``owner`` is whatever must outlive the array: a NumPy array, a DLPack hold.
    Views of the array share this object, so the owner is released once the
    array and every view of it are gone.
    """

    __slots__ = ("address", "nbytes", "owner", "_view")

    def __init__(self, address: int, nbytes: int, owner=None):
        self.address = address
        self.nbytes = nbytes
        self.owner = owner
        self._view = None

    def host_view(self) -> np.ndarray:
        if self._view is None:
            if self.nbytes == 0:
                self._view = np.empty(0, np.uint8)
            else:
                raw = (ctypes.c_uint8 * self.nbytes).from_address(self.address)
                self._view = np.frombuffer(raw, dtype=np.uint8)
        return self._view

    def read(self, nbytes: int, copy: bool, offset: int = 0):
        view = self.host_view()[offset:offset + nbytes]
        return view.copy() if copy else view

    def write(self, data, offset: int = 0) -> None:
        self.host_view()[offset:offset + data.size] = data
