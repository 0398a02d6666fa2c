"""The HIP runtime through hip-python: loading, status checks, the device model.

Every ``hip.hip`` call returns a tuple ``(hipError_t, values...)``;
:func:`check` turns a failure into :class:`HIPError` (a ``RuntimeError``)
naming the call and the error, and returns the values.

The device model follows spec 003 "Devices": HIP works with the calling
thread's current device (``hipSetDevice``). While Tack uses device 0 alone,
on the thread that made it, nothing is switched; once it uses a device other
than 0, or two devices, or another thread, every operation makes its device
current for its duration and restores the thread's afterwards
(:meth:`Device.enter`).
"""

from __future__ import annotations

import atexit
import ctypes
import os
import threading

from ..stream.context import Bracketing


def modules():
    """``(hip, hiprtc)`` of hip-python; ImportError when it is missing."""
    from hip import hip, hiprtc  # an ImportError: "missing dependency"
    return hip, hiprtc


def load():
    """Import hip-python and load hipRTC: an ImportError for either missing."""
    hip, hiprtc = modules()
    try:
        err, *_ = hiprtc.hiprtcVersion()
    except Exception as exc:  # the library could not be loaded at all
        raise ImportError(f"hipRTC cannot be loaded: {exc}") from exc
    if int(err) != 0:
        raise ImportError(f"hipRTC cannot be loaded: {getattr(err, 'name', err)}")
    return hip, hiprtc


class HIPError(RuntimeError):
    """A HIP call failed; ``code`` is its hipError_t."""

    def __init__(self, what: str, code):
        self.code = code
        super().__init__(f"{what} failed: {describe(code)}")


def describe(code) -> str:
    """``"hipErrorX (the runtime's sentence)"``; the name alone when it cannot say."""
    name = getattr(code, "name", f"status {code}")
    try:
        err, text = modules()[0].hipGetErrorString(code)
        text = text if isinstance(text, (bytes, bytearray)) else bytes(text)
    except Exception:  # no runtime to ask: the name says enough
        return name
    text = text.split(b"\0", 1)[0].decode(errors="replace")
    return f"{name} ({text})" if text else name


def check(result, what: str):
    """The values of a HIP call's ``(hipError_t, values...)``, or HIPError."""
    code, *values = result
    if int(code) != 0:
        raise HIPError(what, code)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def runtime():
    """hip-python's ``hip`` module with the runtime loaded; RuntimeError naming
    what is missing when it cannot start."""
    hip = modules()[0]
    try:
        result = hip.hipInit(0)
    except Exception as exc:  # hip-python raises when libamdhip64 is absent
        raise RuntimeError(f"The HIP runtime (libamdhip64.so) cannot be loaded: "
                           f"{str(exc).rstrip('.')}.") from exc
    if int(result[0]) != 0:
        raise RuntimeError(f"The HIP runtime cannot start: hipInit failed with "
                           f"{describe(result[0])}.")
    return hip


def device_count() -> int:
    """How many HIP devices there are; 0 without hip-python, hipRTC, ROCm or a GPU."""
    try:
        load()
        return int(check(runtime().hipGetDeviceCount(), "hipGetDeviceCount"))
    except (ImportError, RuntimeError):
        return 0


def current_index() -> int:
    """HIP's current device on this thread (``hipGetDevice``), else 0: what a
    bare ``"hip"`` names."""
    try:
        return int(check(runtime().hipGetDevice(), "hipGetDevice"))
    except (ImportError, RuntimeError):
        return 0


def raw_launcher(hip, function, stream, params: int) -> tuple:
    """``(launch, function, stream, params)`` as CUDA's ``driver.raw_launcher``:
    ``hipModuleLaunchKernel`` of libamdhip64 through ctypes with ready handle
    objects, or hip-python's own wrapper (returning the code) where the handles
    or the library cannot be had that way (the tests' fake runtime)."""
    if getattr(hip, "__name__", "") == "hip.hip":
        try:
            library = ctypes.CDLL("amdhip64.dll" if os.name == "nt" else "libamdhip64.so")
            launch = library.hipModuleLaunchKernel
            handles = (ctypes.c_void_p(int(function)), ctypes.c_void_p(int(stream)))
        except (OSError, AttributeError, TypeError):
            launch = None
        if launch is not None:
            launch.restype = ctypes.c_int
            return launch, handles[0], handles[1], ctypes.c_void_p(params)
    wrapper = hip.hipModuleLaunchKernel
    return (lambda *args: int(wrapper(*args)[0])), function, stream, params


# -- the device model ------------------------------------------------------------------

_in_use: set = set()        # device ordinals some backend works on
_in_use_lock = threading.Lock()
several = [False]           # whether two or more devices are in use


class State:
    """Shared by a device and its buffers: whether the runtime may still be used."""

    __slots__ = ("open",)

    def __init__(self):
        self.open = True


def _close(state: State) -> None:
    state.open = False   # at exit: buffers freed later leave their memory to the runtime


class Device(Bracketing):
    """One HIP device; ``enter()``/``leave()`` bracket every operation."""

    def __init__(self, ordinal: int):
        hip = runtime()
        self.hip = hip
        count = int(check(hip.hipGetDeviceCount(), "hipGetDeviceCount"))
        if ordinal >= count:
            raise ValueError(f"hip:{ordinal}: this machine has {count} HIP devices")
        self.ordinal = ordinal
        self.state = State()
        atexit.register(_close, self.state)
        # Made current around each operation: a device other than 0, or any
        # device the thread's current one (another library's choice) is not.
        current = int(check(hip.hipGetDevice(), "hipGetDevice"))
        self.foreign = ordinal != 0 or current != ordinal
        self.several = several
        self.thread = threading.get_ident()
        with _in_use_lock:
            _in_use.add(ordinal)
            several[0] = len(_in_use) > 1

    def enter(self):
        """Make this device current if the rules say so; returns what ``leave``
        restores (None when nothing was switched)."""
        if not several[0] and not self.foreign and threading.get_ident() == self.thread:
            return None
        previous = int(check(self.hip.hipGetDevice(), "hipGetDevice"))
        if previous == self.ordinal:
            return None
        check(self.hip.hipSetDevice(self.ordinal), "hipSetDevice")
        return previous

    def leave(self, previous) -> None:
        if previous is not None:
            self.hip.hipSetDevice(previous)

    def attribute(self, name: str) -> int:
        attr = getattr(self.hip.hipDeviceAttribute_t, name)
        return int(check(self.hip.hipDeviceGetAttribute(attr, self.ordinal),
                         f"hipDeviceGetAttribute({name})"))

    def name(self) -> str:
        raw = check(self.hip.hipDeviceGetName(256, self.ordinal), "hipDeviceGetName")
        return _text(raw)

    def arch(self) -> str:
        """The GPU's architecture with its features, such as
        ``"gfx90a:sramecc+:xnack-"`` (what hipRTC's ``--offload-arch`` takes)."""
        props = self.hip.hipDeviceProp_t()
        check(self.hip.hipGetDeviceProperties(props, self.ordinal),
              "hipGetDeviceProperties")
        return _text(props.gcnArchName)


def _text(raw) -> str:
    if isinstance(raw, str):
        return raw.split("\0", 1)[0]
    return bytes(raw).split(b"\0", 1)[0].decode(errors="replace")
