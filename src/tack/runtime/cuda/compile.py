"""CUDA C++ to loadable code with NVRTC: PTX, and a cubin for a real architecture.

Needs no GPU: ``compile_cuda(source, "sm_90")`` runs anywhere the
nvidia-cuda-nvrtc wheel is installed (the tests compile kernels with it).
``--fmad=false`` keeps ``a * b + c`` two roundings, as on the CPU, in OpenCL
(``FP_CONTRACT OFF``) and in Python.
"""

from __future__ import annotations

from .driver import modules

OPTIONS = (b"--fmad=false", b"-std=c++17")


def _log(nvrtc, program) -> str:
    size = nvrtc.nvrtcGetProgramLogSize(program)[1]
    log = bytearray(size)
    nvrtc.nvrtcGetProgramLog(program, log)
    return bytes(log).rstrip(b"\0").decode(errors="replace")


def _ok(nvrtc, result, what: str):
    code, *values = result
    if code != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"{what} failed: {getattr(code, 'name', code)}")
    return values[0] if values else None


def _output(nvrtc, program, size_call, get_call, what: str) -> bytes:
    size = _ok(nvrtc, size_call(program), f"{what}Size")
    out = bytearray(size)
    _ok(nvrtc, get_call(program, out), what)
    return bytes(out)


def compile_cuda(source: str, arch: str, name: str = "tack.cu") -> tuple:
    """``(ptx, cubin)`` of ``source`` for ``arch``: ``"sm_90"`` gives both (the
    PTX NUL-terminated, as cuModuleLoadData takes it), ``"compute_90"`` PTX
    and None. A rejected source raises RuntimeError("compilation failed: ...")
    with NVRTC's log."""
    nvrtc = modules()[1]
    program = _ok(nvrtc, nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [],
                                                  []), "nvrtcCreateProgram")
    try:
        options = [b"--gpu-architecture=" + arch.encode(), *OPTIONS]
        code, = nvrtc.nvrtcCompileProgram(program, len(options), options)
        if code != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"compilation failed ({getattr(code, 'name', code)}):\n"
                               f"{_log(nvrtc, program)}")
        ptx = _output(nvrtc, program, nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX,
                      "nvrtcGetPTX")
        cubin = None
        if arch.startswith("sm_"):
            cubin = _output(nvrtc, program, nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN,
                            "nvrtcGetCUBIN")
        return ptx, cubin
    finally:
        nvrtc.nvrtcDestroyProgram(program)


def compile_ptx(source: str, arch: str = "sm_90") -> str:
    """The PTX text of ``source`` for ``arch`` (no device needed)."""
    return compile_cuda(source, arch)[0].rstrip(b"\0").decode()


def version() -> str:
    nvrtc = modules()[1]
    code, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


def supported_archs() -> list:
    """The compute capabilities (``90`` for 9.0) this NVRTC compiles for."""
    nvrtc = modules()[1]
    return sorted(int(a) for a in _ok(nvrtc, nvrtc.nvrtcGetSupportedArchs(),
                                      "nvrtcGetSupportedArchs"))


def choose_arch(capability: int, supported) -> str:
    """``"sm_XX"`` when NVRTC knows the device's architecture; else PTX for the
    newest older one (``"compute_XX"``), which the driver compiles further."""
    if capability in supported:
        return f"sm_{capability}"
    older = [a for a in supported if a <= capability]
    if not older:
        raise RuntimeError(f"NVRTC {version()} cannot compile for compute capability "
                           f"{capability // 10}.{capability % 10} (it supports "
                           f"{', '.join(str(a) for a in supported)}); install an "
                           f"nvidia-cuda-nvrtc wheel that matches the GPU")
    return f"compute_{max(older)}"
