"""HIP C++ to a code object with hipRTC (the runtime's compiler).

``-ffp-contract=off`` keeps ``a * b + c`` two roundings, as ``--fmad=false``
does for CUDA. The HIP target's ``#include <hip/hip_runtime.h>`` is for
hipcc (the offline check); hipRTC provides those declarations itself.
"""

from __future__ import annotations

from . import driver

OPTIONS = (b"-ffp-contract=off", b"-std=c++17")
_INCLUDE = "#include <hip/hip_runtime.h>\n"


def _ok(hiprtc, result, what: str):
    code, *values = result
    if int(code) != 0:
        raise RuntimeError(f"{what} failed: {getattr(code, 'name', code)}")
    return values[0] if values else None


def _log(hiprtc, program) -> str:
    size = _ok(hiprtc, hiprtc.hiprtcGetProgramLogSize(program), "hiprtcGetProgramLogSize")
    log = bytearray(size)
    hiprtc.hiprtcGetProgramLog(program, log)
    return bytes(log).rstrip(b"\0").decode(errors="replace")


def compile_hip(source: str, arch: str, name: str = "tack.hip") -> bytes:
    """The code object of ``source`` for ``arch`` (``"gfx90a"``, features
    allowed). A rejected source raises RuntimeError("compilation failed: ...")
    with hipRTC's log."""
    hiprtc = driver.modules()[1]
    source = source.replace(_INCLUDE, "", 1)
    program = _ok(hiprtc, hiprtc.hiprtcCreateProgram(source.encode(), name.encode(), 0,
                                                      [], []), "hiprtcCreateProgram")
    try:
        options = [b"--offload-arch=" + arch.encode(), *OPTIONS]
        code, = hiprtc.hiprtcCompileProgram(program, len(options), options)
        if int(code) != 0:
            raise RuntimeError(f"compilation failed ({getattr(code, 'name', code)}):\n"
                               f"{_log(hiprtc, program)}")
        size = _ok(hiprtc, hiprtc.hiprtcGetCodeSize(program), "hiprtcGetCodeSize")
        out = bytearray(size)
        _ok(hiprtc, hiprtc.hiprtcGetCode(program, out), "hiprtcGetCode")
        return bytes(out)
    finally:
        hiprtc.hiprtcDestroyProgram(program)


def version() -> str:
    hiprtc = driver.modules()[1]
    code, major, minor = hiprtc.hiprtcVersion()
    return f"{major}.{minor}"
