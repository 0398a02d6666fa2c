"""``tack.texture3d``: a 3-D f32 field sampled with trilinear interpolation.

A :class:`Texture3D` owns a copy of its array (``texels``, taken at creation
and again by :meth:`Texture3D.update`), so kernels sample a snapshot while the
array itself may change. Sampling is done in software on every backend: the
texture is a ``@tack.device_class`` whose ``sample`` method is ordinary
kernel code, inlined where a kernel calls ``tex.sample(u, v, w)``. Its extents
become part of the compiled variant, like any baked array shape.

Coordinates are normalized: ``u`` runs along the last axis (the fastest in
memory), ``v`` along the middle one and ``w`` along the first, each over
``[0, 1]``, with texel ``k`` of ``n`` centred at ``(k + 0.5) / n``. Outside
the texel centres the value is clamped to the edge.
"""

from __future__ import annotations

import math
import operator

from .. import types as T
from ..lang.device_class import device_class
from ..lang.func import func
from .array import Array


@func
def _axis(c, n):
    """Lower and upper texel and the weight of the upper one, along one axis."""
    x = min(max(c * n - 0.5, 0.0), n - 1.0)
    lo = int(math.floor(x))
    hi = min(lo + 1, n - 1)
    return lo, hi, x - lo


@device_class
class Texture3D:
    """A sampled 3-D texture; create one with :func:`texture3d`."""

    def __init__(self, array: Array, shape: tuple):
        self._array = array
        self._shape = shape
        self.texels = array.copy().reshape(shape)

    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def array(self) -> Array:
        return self._array

    @property
    def device(self):
        return self._array.device

    def update(self) -> None:
        """Copy the array again (after it changed)."""
        self.texels = self._array.copy().reshape(self._shape)

    def __repr__(self) -> str:
        return f"tack.Texture3D(shape={self._shape}, device='{self.device}')"

    @func
    def sample(self, u, v, w):
        x0, x1, fx = _axis(u, self.texels.shape[2])
        y0, y1, fy = _axis(v, self.texels.shape[1])
        z0, z1, fz = _axis(w, self.texels.shape[0])
        c00 = self.texels[z0, y0, x0] * (1.0 - fx) + self.texels[z0, y0, x1] * fx
        c01 = self.texels[z0, y1, x0] * (1.0 - fx) + self.texels[z0, y1, x1] * fx
        c10 = self.texels[z1, y0, x0] * (1.0 - fx) + self.texels[z1, y0, x1] * fx
        c11 = self.texels[z1, y1, x0] * (1.0 - fx) + self.texels[z1, y1, x1] * fx
        c0 = c00 * (1.0 - fy) + c01 * fy
        c1 = c10 * (1.0 - fy) + c11 * fy
        return T.f32(c0 * (1.0 - fz) + c1 * fz)


def _extents(shape):
    """``shape`` as a tuple of Python ints (NumPy integers accepted), else None."""
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        return None


def texture3d(array, shape=None, interp: str = "linear") -> Texture3D:
    """A :class:`Texture3D` holding a copy of ``array`` (f32), viewed with
    ``shape`` (default: the array's own, which must then be 3-D)."""
    if not isinstance(array, Array):
        raise TypeError(f"texture3d takes a tack.Array, got {type(array).__name__}")
    if isinstance(array.dtype, T.CompositeType):
        raise ValueError(f"texture3d requires an f32 array of scalars, got {array.dtype} "
                         f"elements; sample one component array per texture")
    if array.dtype is not T.f32:
        raise ValueError(f"texture3d requires an f32 array, got {array.dtype}; convert "
                         f"it first with array.astype(tack.f32)")
    if interp != "linear":
        raise ValueError(f"texture3d supports interp='linear' only, got interp={interp!r}")
    shape = array.shape if shape is None else _extents(shape)
    if shape is None or len(shape) != 3 or not all(d > 0 for d in shape):
        raise ValueError("texture3d requires a 3D shape")
    if math.prod(shape) != array.size:
        raise ValueError(f"texture3d shape {shape} holds {math.prod(shape)} elements, but "
                         f"the array has {array.size}")
    return Texture3D(array, shape)
