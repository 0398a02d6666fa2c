"""The OpenCL backend's own refusals (the kernels themselves run in the backend
suites, tests/test_backend_suites.py)."""

from __future__ import annotations

import re

import pytest

import tack


@tack.kernel
def printing(a):
    for i in range(len(a)):
        print("a", a[i])


@tack.kernel
def reading_next(a, out):
    for i in range(len(out)):
        out[i] = a[i + 1]


@pytest.mark.parametrize("feature, kernel, debug", [("print()", printing, False),
                                                    ("debug mode", reading_next, True)])
def test_counters_need_64_bit_atomics(opencl, monkeypatch, feature, kernel, debug):
    """print() and debug mode count with 64-bit atomics: a device without them
    refuses the kernel by name instead of failing in the driver's compiler."""
    monkeypatch.setattr(opencl.backend, "int64_atomics", False)
    args = [tack.zeros(3, device=opencl) for _ in range(kernel.fn.__code__.co_argcount)]
    tack.set_debug(debug)
    try:
        with pytest.raises(RuntimeError, match="^" + re.escape(
                f"Kernel '{kernel.name}' failed on OpenCLBackend: {feature} needs 64-bit "
                f"atomics (cl_khr_int64_base_atomics), which the OpenCL device "
                f"{opencl.backend.device.name!r} lacks")):
            kernel(*args)
    finally:
        tack.set_debug(False)
