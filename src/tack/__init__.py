"""Tack: compiled kernels and block-decomposed data for Python simulation codes.

Write kernels with :func:`tack.kernel` and device functions with
:func:`tack.func`, keep data in :class:`tack.Array`, and call kernels like
Python functions. See ``docs/`` for the language, the pipeline and the
runtime.
"""

from . import cache
from . import types as _types
from .elements import (cross, dot, length, mat22, mat33, mat44, normalize,
                       transpose, vec2, vec3, vec4)
from .errors import IRVerificationError, UnsupportedSyntaxError
from .lang.device_class import device_class
from .lang.func import Func, func
from .lang.intrinsics import (atomic_add, atomic_max, atomic_min, atomic_sub, barrier,
                              block_max, block_min, block_sum, local_array,
                              local_array_like, ndindex, shared_like,
                              register_type_intrinsics, shared, thread_id)
from .runtime.array import Array
from .runtime.debug import debug_enabled, set_debug
from .runtime.creation import arange, array, asarray, empty, full, ones, zeros
from .runtime.dlpack import from_dlpack
from .runtime.host_ops import (concat, copyto, empty_like, full_like, ones_like,
                               zeros_like)
from .runtime.pointers import array_from_ptr, memory_space
from .runtime.device import (Device, device, device_count, get_default_device,
                             set_default_device, sync)
from .runtime.inspection import inspect
from .runtime.kernel import Kernel, kernel
from .runtime.texture import Texture3D, texture3d
from .types import (CompositeType, ScalarType, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64)

__version__ = "0.1.0"

register_type_intrinsics(_types)

_LAZY = {"Blocks": "communication", "Plan": "communication", "Routing": "communication",
         "World": "communication"}


async def sync_async() -> None:
    """Wait, off the event loop, for the launches made so far on every device
    (see ``tack.runtime.aio``)."""
    from .runtime.aio import sync_async as wait
    await wait()


def __getattr__(name):
    # The communication layer, the algorithms and the checkpoints load on first
    # use, keeping `import tack` light (`tack.algorithms.sum(a)` works after
    # `import tack`).
    if name in ("algorithms", "communication", "io"):
        import importlib
        return importlib.import_module(f".{name}", __name__)
    if name in _LAZY:
        import importlib
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tack' has no attribute {name!r}")

__all__ = [
    "Blocks", "Plan", "Routing", "World",
    "Array", "Device", "Func", "IRVerificationError", "Kernel",
    "ScalarType",
    "UnsupportedSyntaxError", "arange", "array", "array_from_ptr", "asarray",
    "atomic_add", "barrier", "block_max", "block_min", "block_sum", "concat",
    "local_array", "local_array_like", "shared", "shared_like", "thread_id", "copyto", "empty_like", "from_dlpack", "full_like",
    "memory_space", "ones_like", "zeros_like", "sync_async",
    "set_debug", "debug_enabled",
    "atomic_max", "atomic_min", "atomic_sub", "device", "device_count", "empty",
    "f32", "f64", "full", "func", "get_default_device", "i8", "i16", "i32", "i64",
    "inspect", "kernel", "ndindex", "ones", "set_default_device", "sync", "u8",
    "u16", "u32", "u64", "zeros", "vec2", "vec3", "vec4", "mat22", "mat33", "mat44",
    "dot", "cross", "length", "normalize", "transpose", "CompositeType",
    "device_class", "Texture3D", "texture3d",
]
