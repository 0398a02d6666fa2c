"""Vector and matrix element types on the host: ``tack.vec3()``, ``tack.mat33()``, ...

Called with no components, each constructor returns the element type, for
array creation (``tack.zeros(n, tack.vec3())``) and ``array_from_ptr``; with
components it returns them as a NumPy array of the element's shape (for
``fill``). Inside kernels the same names construct a vector or matrix value
(see ``docs/language.md``), and ``dot``, ``cross``, ``length``, ``normalize``
and ``transpose`` are kernel intrinsics.
"""

from __future__ import annotations

import numpy as np

from . import types as T
from .lang.intrinsics import _device_only


def _constructor(kind: str, shape: tuple):
    name = f"{kind}{''.join(map(str, shape))}"

    def construct(*components, dtype=T.f32):
        element = T.composite(kind, shape, T.as_scalar_type(dtype))
        if not components:
            return element
        if any(isinstance(c, (type, np.dtype, str, T.ScalarType, T.CompositeType))
               for c in components):
            raise TypeError(f"tack.{name}() takes numbers as its components; its "
                            f"component type is a keyword: tack.{name}(dtype=tack.f64)")
        values = np.asarray(components, dtype=element.scalar.numpy)
        count = element.count
        if values.size == 1 and len(components) == 1:
            return np.full(shape, values.reshape(()), dtype=values.dtype)
        if values.size != count:
            raise ValueError(f"tack.{name}() takes {count} components, got {values.size}")
        return values.reshape(shape)

    construct.__name__ = construct.__qualname__ = name
    construct.__doc__ = (f"The {name} element type of ``dtype`` (default f32), or, given "
                         f"components, those components as a NumPy array.")
    construct._tack_element = (kind, shape)
    return construct


vec2 = _constructor("vec", (2,))
vec3 = _constructor("vec", (3,))
vec4 = _constructor("vec", (4,))
mat22 = _constructor("mat", (2, 2))
mat33 = _constructor("mat", (3, 3))
mat44 = _constructor("mat", (4, 4))

CONSTRUCTORS = {"vec2": vec2, "vec3": vec3, "vec4": vec4,
                "mat22": mat22, "mat33": mat33, "mat44": mat44}


dot = _device_only("dot", "a, b", "the dot product of two vectors.")
cross = _device_only("cross", "a, b", "the cross product of two 3-vectors.")
length = _device_only("length", "v", "the Euclidean length of a vector.")
normalize = _device_only("normalize", "v", "v divided by its length.")
transpose = _device_only("transpose", "m", "the transpose of a matrix.")

FUNCTIONS = {"dot": dot, "cross": cross, "length": length, "normalize": normalize,
             "transpose": transpose}
