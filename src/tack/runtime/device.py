"""Devices: naming, the default device, and the ``with`` override (per thread,
and per asyncio task: the blocks in force are a context variable).

A :class:`Device` is a handle on one backend instance. ``tack.device(spec)``
without options returns the same Device for the same spec every time;
with options it makes a new one.
"""

from __future__ import annotations

import contextvars
import itertools
import platform
import threading
import weakref

from .. import config

KNOWN_TYPES = ("cpu", "cuda", "hip", "level_zero", "metal", "opencl")
NUMBERED_TYPES = ("cuda", "hip", "level_zero", "opencl")
_INSTALL = {
    "opencl": "Install it with: pip install pyopencl (and an OpenCL driver, such as "
              "Debian's pocl-opencl-icd for CPUs).",
    "cuda": "Install it with: pip install cuda-python nvidia-cuda-nvrtc (and an NVIDIA "
            "GPU driver).",
    "hip": "Install it with: pip install hip-python (and ROCm with hipRTC, and an AMD "
           "GPU driver).",
    "level_zero": "Install it with: apt-get install libze1 clang-14 llvm-spirv-14 (the "
                  "Level Zero loader, and the compilers that make SPIR-V) and Intel's "
                  "GPU driver (intel-level-zero-gpu).",
}
_PENDING = {
    "metal": "the Metal backend",
}


class Device:
    """One device: ``type``, ``index``, ``synchronize()``; usable as ``with d:``.

    ``slot`` is a small number no other live device has, for array signatures
    (``Array._sig``). A dead device's slot goes to the next device made, so a
    program that makes a device per task does not grow the signature and
    runner tables by one entry per device: an entry keyed by a slot whose
    device has died holds no device (one that held it would have kept it
    alive), and so serves the next device in that slot just as well."""

    __slots__ = ("backend", "type", "index", "slot", "__weakref__")

    def __init__(self, backend, type_: str, index: int):
        self.backend = backend
        self.type = type_
        self.index = index
        self.slot = _take_slot(self)

    def synchronize(self) -> None:
        self.backend.synchronize()

    def __copy__(self) -> "Device":
        return self   # a handle: a copy would be a second device with this slot

    def __deepcopy__(self, memo) -> "Device":
        return self

    def __str__(self) -> str:
        return f"{self.type}:{self.index}" if self.type in NUMBERED_TYPES else self.type

    def __repr__(self) -> str:
        return f"Device('{self}')"

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and other.backend is self.backend

    def __hash__(self) -> int:
        return id(self.backend)

    def __enter__(self) -> "Device":
        global _open_blocks
        with _lock:
            _open_blocks += 1
            _refresh_warm()
        _blocks.set(_blocks.get() + (_Block(self),))
        return self

    def __exit__(self, *exc) -> None:
        global _open_blocks
        blocks = _blocks.get()
        for k in range(len(blocks) - 1, -1, -1):   # the innermost: blocks nest
            if blocks[k].device is self and blocks[k].open:
                blocks[k].open = False   # also for the contexts copied from this one
                _blocks.set(blocks[:k] + blocks[k + 1:])
                break
        with _lock:
            _open_blocks -= 1
            _refresh_warm()


class _Block:
    """One `with device:` block; ``open`` until it is left. A task or thread that
    runs in a copy of the context keeps the entry, and uses the device only
    while the block is still open."""

    __slots__ = ("device", "open")

    def __init__(self, device):
        self.device, self.open = device, True


_lock = threading.Lock()
_open_blocks = 0   # `with device:` blocks open on any thread
_devices: dict = {}
_default = None
# The `with` blocks (``_Block``) entered in this context, innermost last: a
# context variable, so each thread, and each asyncio task (which runs in a
# copy of its creator's context), has its own.
_blocks: contextvars.ContextVar = contextvars.ContextVar("tack_device_blocks", default=())


class WarmDefault:
    """The device a warm kernel call may take without asking: ``device`` is the
    default device while nothing else can decide a call's device or template
    (no `with device:` block open on any thread, no ``detour`` such as debug
    mode), else None, which sends every call to the slow path. Whatever changes
    those refreshes it, so the warm path reads one attribute."""

    __slots__ = ("device", "detour")

    def __init__(self):
        self.device = None
        self.detour = False


warm = WarmDefault()


def _refresh_warm() -> None:
    """Recompute ``warm.device`` (the caller holds ``_lock``)."""
    warm.device = None if _open_blocks or warm.detour else _default


def set_detour(on: bool, apply=None) -> None:
    """Send every kernel call through the slow path while ``on`` (debug mode);
    ``apply()`` (the caller's own flag) runs under the same lock, so that
    concurrent calls never leave the two disagreeing."""
    with _lock:
        if apply is not None:
            apply()
        warm.detour = bool(on)
        _refresh_warm()


def _parse(spec: str):
    type_, sep, suffix = spec.partition(":")
    if type_ not in KNOWN_TYPES:
        raise ValueError(f"Unknown device type: '{type_}'. Available: "
                         f"{', '.join(KNOWN_TYPES)}")
    if not sep:
        return type_, None
    if type_ not in NUMBERED_TYPES:
        raise ValueError(f"'{spec}' is not a device: write '{type_}'")
    if not (suffix.isascii() and suffix.isdigit()):   # int() takes "²" and "١" too
        raise ValueError(f"'{spec}' is not a device: write '{type_}' or '{type_}:N'")
    return type_, int(suffix)


def _opencl():
    from .opencl.backend import OpenCLBackend, _cl
    _cl()
    return OpenCLBackend


def _cuda():
    from .cuda.backend import CUDABackend
    from .cuda.driver import load
    load()
    return CUDABackend


def _hip():
    from .hip.backend import HIPBackend
    from .hip.driver import load
    load()
    return HIPBackend


def _level_zero():
    from .level_zero.backend import LevelZeroBackend
    from .level_zero.ze import library
    library()   # ImportError without the loader
    return LevelZeroBackend


# Backends that need a Python dependency (or, for Level Zero, the loader
# library): a loader that imports it (ImportError when it is missing) and
# returns the backend class.
_LOADERS = {"opencl": _opencl, "cuda": _cuda, "hip": _hip, "level_zero": _level_zero}


def _backend_class(type_: str):
    if type_ == "cpu":
        from .cpu.backend import CPUBackend
        return CPUBackend
    if type_ in _LOADERS:
        try:
            return _LOADERS[type_]()
        except ImportError as exc:
            raise _missing(type_, exc) from exc
    raise RuntimeError(
        f"Cannot start the '{type_}' device: {_PENDING[type_]} is not part of this "
        f"build of Tack yet. Use tack.device('cpu') (the default).")


def _missing(type_: str, exc: ImportError) -> RuntimeError:
    return RuntimeError(f"Cannot start the '{type_}' device: missing dependency. "
                        f"({exc}) {_INSTALL[type_]}")


def _make(type_: str, index, options: dict) -> Device:
    cls = _backend_class(type_)
    unknown = sorted(set(options) - set(cls.device_options))
    if unknown:
        accepted = ", ".join(cls.device_options) or "none"
        raise ValueError(f"The '{type_}' device does not accept the option(s) "
                         f"{', '.join(unknown)}. Accepted: {accepted}.")
    if type_ not in NUMBERED_TYPES:
        return Device(cls(**options), type_, 0)
    try:
        backend = cls(index or 0, **options)
    except (ValueError, TypeError):
        raise
    except ImportError as exc:   # a module the constructor imports
        raise _missing(type_, exc) from exc
    except RuntimeError as exc:
        raise RuntimeError(f"Cannot start the '{type_}' device on {platform.system()}. "
                           f"{exc} {_INSTALL.get(type_, '')}") from exc
    except Exception as exc:  # a driver error (pyopencl raises its own types)
        raise RuntimeError(f"Cannot start the '{type_}' device on {platform.system()}. "
                           f"{exc} {_INSTALL.get(type_, '')}") from exc
    return Device(backend, type_, index or 0)


_free_slots: list = []
_new_slots = itertools.count()
_slot_lock = threading.Lock()


def _take_slot(dev) -> int:
    with _slot_lock:
        slot = _free_slots.pop() if _free_slots else next(_new_slots)
    weakref.finalize(dev, _free_slot, slot)
    return slot


def _free_slot(slot: int) -> None:
    with _slot_lock:
        _free_slots.append(slot)


def device(spec="cpu", **options) -> Device:
    """The Device ``spec`` names: ``"cpu"``, or ``"opencl"``, ``"cuda"``, ``"hip"``
    or ``"level_zero"`` with an optional ``":N"`` (``"opencl"`` is
    ``"opencl:0"``); a Device is returned as it is. Without options a spec
    names one device for the life of the process; options (the CPU's
    ``num_threads``) make a new device at every call. The runtime guide's
    "Devices" section lists every option and mistake."""
    if isinstance(spec, Device):
        if options:
            raise TypeError("options make a new device: pass a device spec, not a Device")
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"a device is a Device or a string such as 'cpu' or 'cuda:0', "
                        f"not {type(spec).__name__}")
    type_, index = _parse(spec)
    if index is None and type_ in NUMBERED_TYPES:
        # A bare "cuda" is the thread's current device (the backend says which).
        index = getattr(_backend_class(type_), "current_index", lambda: 0)()
    if options:
        made = _make(type_, index, options)
        with _lock:
            _with_options[:] = [r for r in _with_options if r() is not None]
            _with_options.append(weakref.ref(made))
        return made
    key = (type_, index or 0)
    found = _devices.get(key)
    if found is None:
        with _lock:
            found = _devices.get(key)
            if found is None:
                found = _devices[key] = _make(type_, index, {})
    return found


def is_shared(dev: Device) -> bool:
    """Whether ``dev`` is the one device its spec names (made without options)."""
    return _devices.get((dev.type, dev.index)) is dev


def device_count(type: str) -> int:  # noqa: A002 (the spec's name for it)
    """How many devices of ``type`` there are; 0 where its backend cannot start."""
    type_ = type
    if not isinstance(type_, str):
        raise TypeError(f"device_count() takes a device type such as 'cpu' or 'cuda', "
                        f"not {type_.__class__.__name__}")
    if type_ not in KNOWN_TYPES:
        raise ValueError(f"Unknown device type: '{type_}'. Available: "
                         f"{', '.join(KNOWN_TYPES)}")
    try:
        _backend_class(type_)
    except RuntimeError:
        return 0
    if type_ == "opencl":
        from .opencl.backend import all_devices
        try:
            return len(all_devices())
        except Exception:  # no driver: nothing to count
            return 0
    if type_ == "cuda":
        from .cuda.driver import device_count as cuda_devices
        return cuda_devices()  # 0 without a driver or a GPU; never raises
    if type_ == "hip":
        from .hip.driver import device_count as hip_devices
        return hip_devices()   # 0 without ROCm or a GPU; never raises
    if type_ == "level_zero":
        from .level_zero.ze import device_count as ze_devices
        return ze_devices()    # 0 without a driver or a GPU; never raises
    return 1


def set_default_device(spec="cpu", **options) -> Device:
    """Make ``tack.device(spec, **options)`` the process-wide default."""
    global _default
    if _default is not None and config.env_flag("TACK_NO_REINIT"):
        return _default
    chosen = device(spec, **options)
    with _lock:
        _default = chosen
        _refresh_warm()
    return chosen


def get_default_device() -> Device:
    """The innermost ``with device:`` block's device in this thread or task,
    else the one ``set_default_device`` chose, else the CPU device."""
    global _default
    if not _open_blocks and _default is not None:
        return _default  # the warm path: no `with` block anywhere
    for block in reversed(_blocks.get()):
        if block.open:
            return block.device
    if _default is None:
        chosen = device("cpu")
        with _lock:
            if _default is None:   # unless another thread set one meanwhile
                _default = chosen
            _refresh_warm()
    return _default


_with_options: list = []   # weak references to devices made with options


def known_devices() -> list:
    """Every device made so far that is still alive."""
    alive = [ref() for ref in _with_options]
    return list(_devices.values()) + [d for d in alive if d is not None]


def sync() -> None:
    """Wait for every launch on every device made so far; raises a queued
    launch's error (a no-op on the CPU, whose launches complete on return)."""
    for dev in known_devices():
        dev.synchronize()
