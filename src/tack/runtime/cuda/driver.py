"""The CUDA driver API through cuda-python: loading, status checks, contexts.

Every ``cuda.bindings.driver`` call returns a tuple ``(CUresult, values...)``;
:func:`check` turns a failure into :class:`CUDAError` (a ``RuntimeError``)
naming the call and the driver's error, and returns the values.

Contexts follow spec 003 "Devices": a device works in its primary context
(retained when the backend is made, released, never destroyed, at exit), or
adopts a context of its device already current on the calling thread. While
Tack holds one context and it is current on the thread that made it, nothing
is switched; otherwise every operation makes its context current for its
duration and restores the thread's afterwards (:meth:`Context.enter`).
"""

from __future__ import annotations

import ctypes
import os
import threading
import weakref

from ..stream.context import Bracketing


def modules():
    """``(driver, nvrtc)`` of cuda-python; ImportError when it is missing."""
    from cuda.bindings import driver, nvrtc  # an ImportError: "missing dependency"
    return driver, nvrtc


def load():
    """Import cuda-python and load NVRTC: an ImportError for either one missing
    (the NVRTC library comes from the nvidia-cuda-nvrtc wheel)."""
    driver, nvrtc = modules()
    try:
        err, *_ = nvrtc.nvrtcVersion()
    except Exception as exc:  # the library could not be loaded at all
        raise ImportError(f"NVRTC cannot be loaded: {exc}") from exc
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise ImportError(f"NVRTC cannot be loaded: {err.name}")
    return driver, nvrtc


class CUDAError(RuntimeError):
    """A driver call failed; ``code`` is its CUresult."""

    def __init__(self, what: str, code):
        self.code = code
        super().__init__(f"{what} failed: {describe(code)}")


def describe(code) -> str:
    """``"CUDA_ERROR_X (the driver's sentence)"``; the name alone when the driver
    cannot say more (it may not be loaded)."""
    name = getattr(code, "name", f"status {code}")
    try:
        err, text = modules()[0].cuGetErrorString(code)
    except Exception:  # no driver to ask: the name says enough
        return name
    if err != 0 or not text:
        return name
    return f"{name} ({text.decode(errors='replace')})"


def check(result, what: str):
    """The values of a driver call's ``(CUresult, values...)``, or CUDAError."""
    code, *values = result
    if code != 0:
        raise CUDAError(what, code)
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def raw_launcher(driver, function, stream, params: int) -> tuple:
    """``(launch, function, stream, params)``: ``launch(function, gx, gy, gz, bx,
    by, bz, shared, stream, params, None)`` returns the CUresult as an int.

    With cuda-python's own module, ``launch`` is libcuda's ``cuLaunchKernel``
    through ctypes, the handles and ``params`` (the address of the parameter
    pointers) as ready ``c_void_p`` objects and no ``argtypes``: the counts go
    as C ints, which is how the ABI passes unsigned ints below 2**31. That
    costs about 0.6 us a call, against about 1.3 us with ``argtypes`` and more
    through cuda-python's wrapper, which converts every argument each call.
    Otherwise (the tests' fake driver, or libcuda not loadable by name) it is
    the module's own wrapper."""
    if getattr(driver, "__name__", "") == "cuda.bindings.driver":
        try:
            library = ctypes.CDLL("nvcuda.dll" if os.name == "nt" else "libcuda.so.1")
            launch = library.cuLaunchKernel
        except (OSError, AttributeError):
            launch = None
        if launch is not None:
            launch.restype = ctypes.c_int
            return (launch, ctypes.c_void_p(int(function)), ctypes.c_void_p(int(stream)),
                    ctypes.c_void_p(params))
    wrapper = driver.cuLaunchKernel
    return (lambda *args: wrapper(*args)[0]), function, stream, params


_init_lock = threading.Lock()
_initialized = False


def init():
    """``cuInit`` once; a RuntimeError naming what is missing when it fails."""
    global _initialized
    if _initialized:
        return modules()[0]
    driver = modules()[0]
    with _init_lock:
        if not _initialized:
            try:
                result = driver.cuInit(0)
            except Exception as exc:  # cuda-python raises when libcuda is absent
                raise RuntimeError(f"The CUDA driver (libcuda.so) cannot be loaded: "
                                   f"{str(exc).rstrip('.')}.") from exc
            if result[0] != 0:
                raise RuntimeError(f"The CUDA driver cannot start: cuInit failed with "
                                   f"{describe(result[0])}.")
            _initialized = True
    return driver


def device_count() -> int:
    """How many CUDA devices there are; 0 without cuda-python, NVRTC, a driver or a GPU."""
    try:
        load()
        driver = init()
        return int(check(driver.cuDeviceGetCount(), "cuDeviceGetCount"))
    except (ImportError, RuntimeError):
        return 0


def current_index() -> int:
    """The device of the context current on this thread, else 0 (what a bare
    ``"cuda"`` names); 0 when the driver cannot start (the constructor then
    reports why)."""
    try:
        driver = init()
        context = check(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")
        if not int(context):
            return 0
        return int(check(driver.cuCtxGetDevice(), "cuCtxGetDevice"))
    except RuntimeError:
        return 0


# -- contexts --------------------------------------------------------------------------

_held: set = set()       # context handles (ints) that some backend works in
_held_lock = threading.Lock()
several = [False]        # whether _held has two or more: launches then switch


def _hold(key: int, add: bool) -> None:
    with _held_lock:
        (_held.add if add else _held.discard)(key)
        several[0] = len(_held) > 1


def _release(driver, device, handle: int, state) -> None:
    """At exit (or when the backend goes): release the primary context; buffers
    freed later see ``state.open`` false and leave their memory to the driver."""
    state.open = False
    _hold(handle, False)
    try:
        driver.cuDevicePrimaryCtxRelease(device)
    except Exception:  # the driver may already be gone at interpreter exit
        pass


class State:
    """Shared by a context and its buffers: whether the context may still be used."""

    __slots__ = ("open",)

    def __init__(self):
        self.open = True


class Context(Bracketing):
    """One device's context; ``enter()``/``leave()`` bracket every operation."""

    def __init__(self, ordinal: int):
        driver = init()
        self.driver = driver
        count = int(check(driver.cuDeviceGetCount(), "cuDeviceGetCount"))
        if ordinal >= count:
            raise ValueError(f"cuda:{ordinal}: this machine has {count} CUDA devices")
        self.device = check(driver.cuDeviceGet(ordinal), "cuDeviceGet")
        self.ordinal = ordinal
        self.state = State()
        current = check(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")
        if int(current) and int(check(driver.cuCtxGetDevice(), "cuCtxGetDevice")) == ordinal:
            self.handle, self.adopted, self.foreign = current, True, False
        else:
            self.handle = check(driver.cuDevicePrimaryCtxRetain(self.device),
                                "cuDevicePrimaryCtxRetain")
            self.adopted = False
            self.foreign = bool(int(current))   # the thread keeps its own context
            if not self.foreign:
                check(driver.cuCtxSetCurrent(self.handle), "cuCtxSetCurrent")
            weakref.finalize(self, _release, driver, self.device, int(self.handle),
                             self.state)
        self.key = int(self.handle)
        self.several = several   # [whether two or more contexts are held]
        self.thread = threading.get_ident()
        _hold(self.key, True)

    def enter(self):
        """Make this context current if the rules say so; returns what ``leave``
        restores (None when nothing was switched)."""
        if len(_held) < 2 and not self.foreign and threading.get_ident() == self.thread:
            return None
        previous = check(self.driver.cuCtxGetCurrent(), "cuCtxGetCurrent")
        if int(previous) == self.key:
            return None
        check(self.driver.cuCtxSetCurrent(self.handle), "cuCtxSetCurrent")
        return previous

    def leave(self, previous) -> None:
        if previous is not None:
            self.driver.cuCtxSetCurrent(previous)

    def attribute(self, name: str) -> int:
        attr = getattr(self.driver.CUdevice_attribute, name)
        return int(check(self.driver.cuDeviceGetAttribute(attr, self.device),
                         f"cuDeviceGetAttribute({name})"))

    def name(self) -> str:
        raw = check(self.driver.cuDeviceGetName(256, self.device), "cuDeviceGetName")
        return bytes(raw).split(b"\0", 1)[0].decode(errors="replace")
