"""The vendor compilers behind the offline compile checks, found or reported missing.

Each ``compile_*`` takes a translation unit and raises ``CompileFailed`` with
the compiler's output, or ``Missing`` when its tools are not installed (the
test then skips with the reason, unless TACK_REQUIRE_COMPILERS is set).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile


class Missing(Exception):
    """A compiler this check needs is not installed."""


class CompileFailed(Exception):
    """The compiler rejected the generated source."""


def required() -> bool:
    return os.environ.get("TACK_REQUIRE_COMPILERS", "").strip() not in ("", "0")


def _tool(*names) -> str:
    for name in names:
        path = shutil.which(name)
        if path:
            return path
    raise Missing(f"none of {', '.join(names)} is installed")


def _run(args, what: str, cwd: str, env=None) -> None:
    done = subprocess.run(args, capture_output=True, text=True, cwd=cwd, timeout=1800,
                          env=env)
    if done.returncode:
        raise CompileFailed(f"{what} failed ({' '.join(args)}):\n"
                            f"{(done.stdout + done.stderr)[-6000:]}")


def compile_cuda(source: str) -> str:
    """NVRTC (from the nvidia-cuda-nvrtc wheel, through cuda-python) to PTX for
    compute_90, then ptxas -arch=sm_90. Returns the cubin's size as text."""
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:
        raise Missing(f"cuda-python's NVRTC bindings ({exc}); pip install cuda-python "
                      f"nvidia-cuda-nvrtc") from exc
    ptxas = _tool("ptxas")
    err, program = nvrtc.nvrtcCreateProgram(source.encode(), b"tack.cu", 0, [], [])
    _check(nvrtc, err, "nvrtcCreateProgram")
    options = [b"--gpu-architecture=compute_90", b"-std=c++17"]
    err, = nvrtc.nvrtcCompileProgram(program, len(options), options)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, size = nvrtc.nvrtcGetProgramLogSize(program)
        log = bytearray(size)
        nvrtc.nvrtcGetProgramLog(program, log)
        raise CompileFailed("NVRTC failed:\n" + log.decode(errors="replace")[-6000:])
    _, size = nvrtc.nvrtcGetPTXSize(program)
    ptx = bytearray(size)
    nvrtc.nvrtcGetPTX(program, ptx)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "tack.ptx"), "wb") as f:
            f.write(bytes(ptx).rstrip(b"\0"))
        _run([ptxas, "-arch=sm_90", "tack.ptx", "-o", "tack.cubin"], "ptxas", tmp)
        return f"{os.path.getsize(os.path.join(tmp, 'tack.cubin'))} bytes of sm_90 code"


def _check(nvrtc, err, what):
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileFailed(f"{what}: {err}")


def compile_hip(source: str) -> str:
    """Debian's hipcc for gfx90a, code object only (no GPU needed)."""
    hipcc = _tool("hipcc")
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "tack.hip"), "w") as f:
            f.write(source)
        env = dict(os.environ, HIP_PLATFORM="amd")
        _run([hipcc, "--offload-arch=gfx90a", "--genco", "-O1", "tack.hip", "-o",
              "tack.co"], "hipcc", tmp, env)
        return f"{os.path.getsize(os.path.join(tmp, 'tack.co'))} bytes of gfx90a code"


def compile_spirv(source: str) -> str:
    """OpenCL C to SPIR-V with the Level Zero backend's own commands
    (``tack.runtime.level_zero.spirv``: clang-14 + llvm-spirv-14), checked by
    spirv-val: what Level Zero loads."""
    from tack.runtime.level_zero import spirv
    try:
        spirv.tools()
    except RuntimeError as exc:
        raise Missing(str(exc)) from exc
    validate = _tool("spirv-val")
    try:
        binary = spirv.compile_spirv(source)
    except RuntimeError as exc:
        raise CompileFailed(str(exc)[-6000:]) from exc
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "tack.spv"), "wb") as f:
            f.write(binary)
        _run([validate, "tack.spv"], "spirv-val", tmp)
    return f"{len(binary)} bytes of valid SPIR-V"
