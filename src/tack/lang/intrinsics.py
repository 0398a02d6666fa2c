"""Python-side objects of the device-only intrinsics ``tack.*`` exposes.

Kernels refer to these by name; lowering recognizes them through
:data:`TACK_INTRINSICS`. Called from Python they raise ``RuntimeError``.
"""

from __future__ import annotations


def _device_only(name: str, signature: str, doc: str):
    def intrinsic(*args, **kwargs):
        raise RuntimeError(f"tack.{name}() can only be called inside a "
                           f"@tack.kernel or @tack.func")
    intrinsic.__name__ = name
    intrinsic.__qualname__ = name
    intrinsic.__doc__ = (f"tack.{name}({signature}), in a kernel or device function: "
                         f"{doc}\n\nCalled from Python it raises RuntimeError "
                         f"(docs/language.md).")
    return intrinsic


def _atomic(op: str, name: str):
    return _device_only(name, "array, index, value", f"atomically {op} array[index] "
                        f"and return its old value (index: an integer, a tuple for "
                        f"an n-d array).")


atomic_add = _atomic("add value to", "atomic_add")
atomic_sub = _atomic("subtract value from", "atomic_sub")
atomic_min = _atomic("take the minimum of value and", "atomic_min")
atomic_max = _atomic("take the maximum of value and", "atomic_max")
thread_id = _device_only("thread_id", "", "this iteration's lane in its workgroup of "
                         "256, 0 to 255 (GPU backends).")
barrier = _device_only("barrier", "", "a statement: wait until every lane of the "
                       "workgroup reaches it (GPU backends).")
shared = _device_only("shared", "n, dtype", "``name = tack.shared(n, dtype)`` makes an "
                      "array of n elements shared by the workgroup (GPU backends).")
local_array = _device_only("local_array", "n, dtype", "``name = tack.local_array(n, "
                           "dtype)`` makes a private array of n elements for the "
                           "iteration.")
shared_like = _device_only("shared_like", "array, n", "tack.shared(n, ...) with the "
                           "dtype of ``array``.")
local_array_like = _device_only("local_array_like", "array, n", "tack.local_array(n, "
                                "...) with the dtype of ``array``.")


def _block(op: str, what: str):
    return _device_only(f"block_{op}", "value", f"the {what} of value (as f32) over "
                        f"the workgroup's 256 lanes, to every lane (GPU backends).")


block_sum = _block("sum", "sum, in a fixed order,")
block_min = _block("min", "minimum")
block_max = _block("max", "maximum")


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
