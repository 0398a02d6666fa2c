"""Suite-wide setup: a private, empty kernel cache directory for the whole run."""

import atexit
import os
import shutil
import tempfile

_CACHE = tempfile.mkdtemp(prefix="tack-test-cache-")
atexit.register(shutil.rmtree, _CACHE, True)   # each run's kernels: about 50 MB
os.chmod(_CACHE, 0o700)
os.environ["TACK_CACHE_DIR"] = _CACHE
os.environ.setdefault("TACK_CACHE", "write")


# TACK_TEST_DEVICE=opencl runs the backend-parametrized suites (the kernel
# language, code generation, algorithms) with that device as the default, so
# every array they make and every kernel they launch is on it.
_DEVICE = os.environ.get("TACK_TEST_DEVICE", "").strip()
if _DEVICE:
    import tack

    tack.set_default_device(_DEVICE)

# tests/ itself is importable (compiler_tools.py, shared helpers).
import sys as _sys

_sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


# -- debug mode, for the tests that turn it on (tests/runtime, tests/codegen) --

import pytest as _pytest


@_pytest.fixture
def debug():
    """Debug mode on for one test."""
    import tack
    tack.set_debug(True)
    yield
    tack.set_debug(False)
