"""Vector and matrix values as kernel arguments (Warp's ``g: wp.vec3``).

A NumPy array of a vector's or matrix's shape (``tack.vec3(0, -9.8, 0)``
makes one) or a tuple or list of numbers (nested, for a matrix) passed to a
kernel is a vector or matrix *value* in its body, like a vector local. Its
element type is the NumPy array's dtype; a tuple's is the kernel's default
float if any component is a float, else the integer type of the widest
component (as for a Python number).

The kernel's IR has one scalar parameter per component, typed by the element
type (``lang/lower/kernel.py``); a call's arguments are flattened to match
(:func:`flatten`) and the runner of the flat arguments is wrapped in a
:class:`Flattening` that flattens every call the same way.
"""

from __future__ import annotations

import numpy as np

from .. import types as T

# shapes of values and the element kind they make
SHAPES = T.COMPOSITE_KINDS
_NUMBERS = (int, float, np.integer, np.floating)


def _structure(value):
    """The shape of a tuple or list of numbers (nested one level for a matrix),
    or None when it is not one."""
    if all(isinstance(x, _NUMBERS) and not isinstance(x, (bool, np.bool_))
           for x in value):
        return (len(value),)
    rows = [len(r) if isinstance(r, (tuple, list)) and all(
        isinstance(x, _NUMBERS) and not isinstance(x, (bool, np.bool_)) for x in r)
        else None for r in value]
    if rows and None not in rows and len(set(rows)) == 1:
        return (len(value), rows[0])
    return None


def is_value(value) -> bool:
    """Whether ``value`` is passed as a vector or matrix value."""
    kind = type(value)
    if kind is np.ndarray:
        return value.shape in SHAPES and value.dtype.kind in "iuf"
    if kind is tuple or kind is list:
        return _structure(value) in SHAPES
    return False


def element_of(value, floats: T.ScalarType) -> T.CompositeType:
    """The vector or matrix type of value ``value`` (``floats``: the call's
    default float, for a tuple with a float component)."""
    if type(value) is np.ndarray:
        shape, scalar = value.shape, T.from_numpy(value.dtype)
    else:
        shape, scalar = _structure(value), component_type(_components(value))
        scalar = floats if scalar is float else scalar
    return T.composite(SHAPES[shape], shape, scalar)


def component_type(flat):
    """``float`` if a component is a float (the call's default float), else the
    one integer type that holds every component: i32, i64 or u64, as for a
    Python number (``TypeError`` for negative components beside ones past
    the i64 range)."""
    if any(isinstance(x, (float, np.floating)) for x in flat):
        return float
    kinds = {T.int_type_for(int(x)) for x in flat}
    if kinds <= {T.i32}:
        return T.i32
    if T.u64 not in kinds:
        return T.i64
    if min(int(x) for x in flat) < 0:
        raise TypeError(f"the components {flat} of a vector or matrix value do not "
                        f"fit one integer type (negative ones beside ones past "
                        f"{2**63 - 1})")
    return T.u64


def _components(value) -> list:
    """The components of a value, row by row."""
    if type(value) is np.ndarray:
        return value.ravel().tolist()
    if value and isinstance(value[0], (tuple, list)):
        return [x for row in value for x in row]
    return list(value)


def counts(elements) -> dict:
    """``{position: components}`` of the values among a template's elements
    (``dispatch.element_spec``)."""
    return {k: dtype.count for k, ndim, dtype in elements if ndim == "value"}


def flatten(args, positions) -> tuple:
    """``args`` with the value at each of ``positions`` replaced by its
    components."""
    flat = []
    for k, a in enumerate(args):
        if k in positions:
            flat.extend(_components(a))
        else:
            flat.append(a)
    return tuple(flat)


def flat_positions(counts: dict, n_args: int) -> list:
    """Per argument, its first position among the flat arguments (``counts``:
    the number of components of each value's position)."""
    out, at = [], 0
    for k in range(n_args):
        out.append(at)
        at += counts.get(k, 1)
    return out


class Flattening:
    """The runner of a signature with vector or matrix values: it flattens the
    arguments (generated code, one per signature) and runs ``inner``, the
    runner of the flat arguments."""

    __slots__ = ("inner", "run", "default", "device", "devices")

    def __init__(self, inner, args, positions):
        self.inner = inner
        self.default = inner.default
        self.device = getattr(inner, "device", None)
        self.devices = getattr(inner, "devices", None)
        parts = []
        for k, a in enumerate(args):
            if k not in positions:
                parts.append(f"a{k}, ")
            elif type(a) is np.ndarray:   # (a signature fixes the shape)
                parts.append(f"*a{k}.tolist(), " if a.ndim == 1 else
                             f"*a{k}.ravel().tolist(), ")
            elif len(_structure(a)) == 2:
                parts.append(f"*[x for row in a{k} for x in row], ")
            else:
                parts.append(f"*a{k}, ")
        names = "".join(f"a{k}, " for k in range(len(args)))
        source = (f"def run(args):\n    {names}= args\n"
                  f"    return inner.run(({''.join(parts)}))\n")
        scope = {"inner": inner}
        exec(compile(source, "<tack values>", "exec"), scope)   # noqa: S102
        self.run = scope["run"]
