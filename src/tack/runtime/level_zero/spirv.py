"""OpenCL C to SPIR-V, what ``zeModuleCreate`` loads: clang (``-target spir64``,
OpenCL C 1.2) to LLVM bitcode, then ``llvm-spirv``. Debian's ``clang-14`` and
``llvm-spirv-14`` (or ``TACK_CLANG`` and ``TACK_LLVM_SPIRV``) do it; the same
commands make the SPIR-V that CI checks with ``spirv-val``."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

_CLANG = ("clang-14", "clang")
_LLVM_SPIRV = ("llvm-spirv-14", "llvm-spirv")
INSTALL = ("Tack compiles kernels for Level Zero with clang and llvm-spirv (Debian: "
           "apt-get install clang-14 llvm-spirv-14; or set TACK_CLANG and "
           "TACK_LLVM_SPIRV)")


def tools() -> tuple:
    """``(clang, llvm-spirv)`` paths; RuntimeError naming what is missing."""
    clang = os.environ.get("TACK_CLANG") or next(
        (found for name in _CLANG if (found := shutil.which(name))), None)
    to_spirv = os.environ.get("TACK_LLVM_SPIRV") or next(
        (found for name in _LLVM_SPIRV if (found := shutil.which(name))), None)
    missing = [name for name, path in (("clang", clang), ("llvm-spirv", to_spirv))
               if not path]
    if missing:
        raise RuntimeError(f"{' and '.join(missing)} not found. {INSTALL}.")
    return clang, to_spirv


def _run(command, folder: str) -> None:
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"compilation failed: {os.path.basename(command[0])} said:\n"
                           f"{(done.stderr or done.stdout).strip()}")


def compile_spirv(source: str) -> bytes:
    """The SPIR-V module of OpenCL C ``source``."""
    clang, to_spirv = tools()
    with tempfile.TemporaryDirectory(prefix="tack-spirv-") as folder:
        with open(os.path.join(folder, "tack.cl"), "w") as f:
            f.write(source)
        _run([clang, "-c", "-target", "spir64", "-cl-std=CL1.2", "-Xclang",
              "-finclude-default-header", "-O0", "-emit-llvm", "-o", "tack.bc",
              "tack.cl"], folder)
        _run([to_spirv, "tack.bc", "-o", "tack.spv"], folder)
        with open(os.path.join(folder, "tack.spv"), "rb") as f:
            return f.read()
