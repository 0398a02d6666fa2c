"""Offline compile checks: every kernel of the backend suites, for CUDA, HIP and
SPIR-V (Level Zero), with the vendors' real compilers and no GPU.

The kernel suites (tests/lang, tests/codegen, tests/algorithms) run once in a
subprocess with TACK_RECORD_VARIANTS, which records the optimized IR of every
variant they compile. Each target then gets one translation unit holding all
of those kernels, built by NVRTC + ptxas (sm_90), hipcc (gfx90a, code object)
and clang-14 + llvm-spirv-14 + spirv-val. A missing compiler skips its test
with the reason, unless TACK_REQUIRE_COMPILERS=1 (set by CI): then it fails.
"""

import json
import os
import subprocess
import sys

import pytest

from tack.codegen.c_family.offline import translation_unit
from tack.codegen.c_family.targets import CUDATarget, HIPTarget, OpenCLTarget
from tack.ir import serialize
from tack.runtime.record import recorded

import compiler_tools as C  # tests/ is on sys.path through rootdir conftest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITES = ["tests/lang", "tests/codegen", "tests/algorithms"]


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    path = tmp_path_factory.mktemp("record") / "variants.jsonl"
    env = dict(os.environ, TACK_RECORD_VARIANTS=str(path), TACK_CACHE="off")
    env.pop("TACK_TEST_DEVICE", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:warnings",
                           "-p", "no:cacheprovider", *SUITES], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=3000)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    unique = {}
    for fn in recorded(str(path)):
        unique.setdefault(json.dumps(serialize.encode(fn), sort_keys=True), fn)
    assert len(unique) > 300, f"only {len(unique)} kernels were recorded"
    return list(unique.values())


def _check(kernels, target, compile_source):
    source, emitted, refused = translation_unit(kernels, target)
    assert refused < 20, f"{refused} kernels refused by {target.name}"
    try:
        result = compile_source(source)
    except C.Missing as exc:
        if C.required():
            pytest.fail(f"{exc}; TACK_REQUIRE_COMPILERS is set")
        pytest.skip(str(exc))
    print(f"{target.name}: {emitted} kernels compiled ({refused} refused), {result}")


def test_cuda_nvrtc_and_ptxas(kernels):
    _check(kernels, CUDATarget(), C.compile_cuda)


def test_hip_hipcc(kernels):
    _check(kernels, HIPTarget(), C.compile_hip)


def test_level_zero_spirv(kernels):
    _check(kernels, OpenCLTarget(), C.compile_spirv)


@pytest.mark.parametrize("dialect, compile_source", [("cuda", C.compile_cuda),
                                                     ("hip", C.compile_hip)])
def test_the_reduction_kernels(dialect, compile_source):
    """The device reductions' source (runtime/stream/reduce.py) in each dialect."""
    from tack.runtime.stream.reduce import source
    try:
        result = compile_source(source(dialect))
    except C.Missing as exc:
        if C.required():
            pytest.fail(f"{exc}; TACK_REQUIRE_COMPILERS is set")
        pytest.skip(str(exc))
    print(f"{dialect} reductions: {result}")
