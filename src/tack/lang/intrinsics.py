"""Python-side objects of the device-only intrinsics ``tack.*`` exposes.

Kernels refer to these by name; lowering recognizes them through
:data:`TACK_INTRINSICS`. Called from Python they raise ``RuntimeError``.
"""

from __future__ import annotations


def _device_only(name: str):
    def intrinsic(*args, **kwargs):
        raise RuntimeError(f"tack.{name}() can only be called inside a "
                           f"@tack.kernel or @tack.func")
    intrinsic.__name__ = name
    intrinsic.__qualname__ = name
    return intrinsic


atomic_add = _device_only("atomic_add")
atomic_sub = _device_only("atomic_sub")
atomic_min = _device_only("atomic_min")
atomic_max = _device_only("atomic_max")
thread_id = _device_only("thread_id")
barrier = _device_only("barrier")
shared = _device_only("shared")
local_array = _device_only("local_array")
shared_like = _device_only("shared_like")
local_array_like = _device_only("local_array_like")
block_sum = _device_only("block_sum")
block_min = _device_only("block_min")
block_max = _device_only("block_max")


def ndindex(*extents):
    """In a kernel, ``for i, j in tack.ndindex(n, m)`` is a 2-D parallel loop.

    From Python it iterates like ``numpy.ndindex`` does.
    """
    import numpy as np
    return np.ndindex(*extents)


TACK_INTRINSICS = {
    id(obj): name for name, obj in {
        "atomic_add": atomic_add, "atomic_sub": atomic_sub,
        "atomic_min": atomic_min, "atomic_max": atomic_max, "ndindex": ndindex,
        "thread_id": thread_id, "barrier": barrier, "shared": shared,
        "local_array": local_array, "shared_like": shared_like,
        "local_array_like": local_array_like, "block_sum": block_sum, "block_min": block_min,
        "block_max": block_max,
    }.items()
}


def register_type_intrinsics(types_module) -> None:
    """The scalar types (``tack.f32(x)``) act as casts inside kernels; the
    vector and matrix constructors and functions of ``tack.elements`` build
    and combine values."""
    from .. import elements
    for t in types_module.SCALAR_TYPES:
        TACK_INTRINSICS[id(t)] = t.name
    for table in (elements.CONSTRUCTORS, elements.FUNCTIONS):
        for name, obj in table.items():
            TACK_INTRINSICS[id(obj)] = name
