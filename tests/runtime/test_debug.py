"""Debug mode as the runtime sees it: switching it on and off, per-thread reports,
the environment variable, inspection, and Tack's own kernels left unchecked.

What each backend's checks do (loads, stores, atomics, dimensions, the
returned value) is tested in tests/codegen/test_bounds_checks.py, which the
backend suites also run on OpenCL.
"""

import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import tack


@tack.kernel
def read_next(a, out):
    for i in range(len(out)):
        out[i] = a[i + 1]


@tack.kernel
def write_past(out, extra):
    for i in range(len(out) + extra):
        out[i] = 1.0


def test_threads_report_their_own_violations(debug):
    results = {}

    def run(name, n):
        try:
            write_past(tack.zeros(n), 1)
        except IndexError as exc:
            results[name] = str(exc)

    threads = [threading.Thread(target=run, args=(k, 3 + k)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        assert f"index {3 + k} is out of bounds (extent {3 + k})" in results[k]


def test_inspect_shows_the_checks(debug):
    text = tack.inspect(read_next, tack.zeros(3), tack.zeros(2), mode="ir")
    assert "checked#0" in text and "__tack_errors__" in text


def test_turning_it_off_stops_checking():
    tack.set_debug(True)
    tack.set_debug(False)
    assert not tack.debug_enabled()
    out = tack.zeros(10)
    read_next(tack.arange(11, dtype=tack.f32), out)  # in bounds: plain variant
    np.testing.assert_array_equal(out.numpy(), np.arange(1, 11))


def test_a_warm_signature_is_checked_once_debug_is_on():
    @tack.kernel
    def copy_next(a, out):
        for i in range(len(out)):
            out[i] = a[i + 1]
    a, out = tack.arange(10, dtype=tack.f32), tack.zeros(10)
    copy_next(tack.arange(11, dtype=tack.f32), out)   # warm, plain variant
    tack.set_debug(True)
    try:
        with pytest.raises(IndexError, match="index 10 is out of bounds"):
            copy_next(a, out)
    finally:
        tack.set_debug(False)
    copy_next(tack.arange(11, dtype=tack.f32), out)   # warm again, unchecked
    np.testing.assert_array_equal(out.numpy(), np.arange(1, 11))


def test_tack_debug_environment_variable(tmp_path):
    script = tmp_path / "k.py"
    script.write_text(
        "import tack\n"
        "@tack.kernel\n"
        "def k(a):\n"
        "    for i in range(len(a)):\n"
        "        a[i + 1] = 0\n"
        "print(tack.debug_enabled())\n"
        "try:\n"
        "    k(tack.zeros(2))\n"
        "except IndexError as e:\n"
        "    print('IndexError', e)\n")
    env = dict(os.environ, TACK_DEBUG="1")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.stdout.startswith("True\nIndexError Kernel 'k': index 2 is out of bounds")
    env["TACK_DEBUG"] = "off"
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.stdout.startswith("False\n")


def test_tacks_own_kernels_run_unchecked(debug, opencl):
    # host operations run kernels of Tack's own, which debug mode leaves alone:
    # they work with debug mode on, on the CPU and on OpenCL
    for device in (tack.device("cpu"), opencl):
        big = tack.zeros(1 << 16, device=device)          # a fill kernel from 256 KiB
        assert big.copy().astype(tack.i32).numpy().sum() == 0
        assert tack.array(big, dtype=tack.f64, device=device).device == device
        out = tack.zeros(10, device=device)
        with pytest.raises(IndexError, match="out of bounds"):   # the user's kernels are
            read_next(tack.arange(10, dtype=tack.f32, device=device), out)


@tack.kernel
def reads_past_the_rank(a, o):
    for i in range(len(o)):
        o[i] = a.shape[1] * 1000 + o.shape[0]


def test_a_shape_read_past_the_rank_is_the_type_error_of_normal_mode(debug):
    # Regression: the debug template read another array's extent (0 or o's),
    # or past the hidden extents buffer on OpenCL, where normal mode refuses it.
    o = tack.full(3, 7, tack.i64)
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'reads_past_the_rank': a.shape[1] of an array with 1 dimension(s) "
            "at line")):
        reads_past_the_rank(tack.zeros(3, tack.i64), o)
    assert o.numpy().tolist() == [7, 7, 7]
    two = tack.zeros((3, 5), tack.i64)
    reads_past_the_rank(two, o)
    assert o.numpy().tolist() == [5003, 5003, 5003]
