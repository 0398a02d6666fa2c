"""``import tack`` loads the runtime, not the compiler (which loads with the first
kernel compiled), and imports no MPI, OpenCL or GPU module."""

from __future__ import annotations

import json
import subprocess
import sys

LAZY = ["tack.lang.lower.kernel", "tack.ir.passes.pipeline", "tack.ir.passes.annotate",
        "tack.codegen.llvm.module", "tack.codegen.c_family.emitter",
        "mpi4py", "pyopencl", "cuda", "cupy", "torch", "llvmlite.binding"]


def loaded_after(code: str) -> list:
    script = f"import sys\n{code}\nimport json\n" \
             f"print(json.dumps([m for m in {LAZY!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_tack_loads_no_compiler_and_no_optional_dependency():
    assert loaded_after("import tack, tack.algorithms, tack.cache") == []


def test_the_check_sees_the_modules_it_names():
    # (so that the test above cannot pass by naming modules that do not exist)
    compiler = LAZY[:5]
    assert loaded_after("import " + ", ".join(compiler)) == compiler
