"""The compiled launch trampoline of the CUDA and HIP launches (runtime/stream/trampoline.py).

No GPU here: a ctypes callback with the drivers' launch signature stands in for
``cuLaunchKernel`` and records what arrives, so every argument and the status
are checked across the native call the real driver gets.
"""

import ctypes

import pytest

from tack.runtime.stream.trampoline import bind

LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, *[ctypes.c_uint] * 7,
                          ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


def _recording(status=0):
    calls = []

    def launch(function, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        calls.append((function, gx, gy, gz, bx, by, bz, shared, stream, params, extra))
        return status
    return LAUNCH(launch), calls


@pytest.mark.parametrize("blocks", [1, 7, 65535, 2**31 - 1])
def test_every_argument_reaches_the_driver(blocks):
    launch, calls = _recording()
    params = (ctypes.c_void_p * 2)()
    fire, job, owner = bind(launch, ctypes.c_void_p(0x1234), ctypes.c_void_p(0x5678),
                            ctypes.c_void_p(ctypes.addressof(params)), 256)
    assert owner is not None   # a C function: the native path
    assert fire(job, blocks) == 0
    assert calls == [(0x1234, blocks, 1, 1, 256, 1, 1, 0, 0x5678,
                      ctypes.addressof(params), None)]


def test_the_driver_status_comes_back():
    launch, calls = _recording(status=701)   # CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
    fire, job, _ = bind(launch, 1, 0, ctypes.c_void_p(8), 128)
    assert fire(job, 3) == 701
    assert calls[0][:2] == (1, 3) and calls[0][8] is None   # a null stream


def test_a_python_launch_function_is_called_as_it_is():
    calls = []

    def launch(*args):
        calls.append(args)
        return 0
    fire, job, owner = bind(launch, "f", "s", "p", 256)
    assert owner is None and fire(job, 9) == 0
    assert calls == [("f", 9, 1, 1, 256, 1, 1, 0, "s", "p", None)]
