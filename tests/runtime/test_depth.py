"""Kernels whose expressions nest deeply compile: Python's recursion limit is
raised while Tack compiles (``runtime/depth.py``), and put back after."""

from __future__ import annotations

import os
import re
import sys
import threading

import numpy as np
import pytest

import tack
from tack.runtime import depth

TERMS = 400     # about twice what the default limit of 1,000 frames allowed


def long_sum_kernel(tmp_path):
    """A kernel summing ``TERMS`` products, from a file of its own."""
    terms = " + ".join(f"a[i] * {k}.0" for k in range(TERMS))
    path = tmp_path / "long_sum.py"
    path.write_text(f"import tack\n\n\n@tack.kernel\ndef long_sum(a, out):\n"
                    f"    for i in range(len(out)):\n        out[i] = {terms}\n")
    sys.path.insert(0, os.fspath(tmp_path))
    try:
        import long_sum
    finally:
        sys.path.remove(os.fspath(tmp_path))
        sys.modules.pop("long_sum", None)
    return long_sum.long_sum


def expected(host):
    want = np.zeros_like(host)
    for k in range(TERMS):      # the kernel's order of additions
        want = want + host * float(k)
    return want


@pytest.mark.parametrize("in_thread", [False, True])
def test_a_sum_of_hundreds_of_terms_compiles_and_matches_numpy(tmp_path, rng, in_thread):
    kernel = long_sum_kernel(tmp_path)
    host = rng.values(tack.f64, 7)
    a, out = tack.array(host), tack.zeros(7, dtype=tack.f64)
    limit = sys.getrecursionlimit()
    if in_thread:
        failures = []
        worker = threading.Thread(target=lambda: _call(kernel, a, out, failures))
        worker.start()
        worker.join()
        assert failures == []
    else:
        kernel(a, out)
    np.testing.assert_array_equal(out.numpy(), expected(host), err_msg=repr(rng))
    assert sys.getrecursionlimit() == limit


def _call(kernel, a, out, failures):
    try:
        kernel(a, out)
    except Exception as exc:   # noqa: BLE001 - reported by the test
        failures.append(exc)


def test_a_limit_the_program_set_higher_stays(tmp_path):
    kernel = long_sum_kernel(tmp_path)
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(depth.LIMIT + 500)
    try:
        kernel(tack.ones(3, dtype=tack.f64), tack.zeros(3, dtype=tack.f64))
        assert sys.getrecursionlimit() == depth.LIMIT + 500
    finally:
        sys.setrecursionlimit(before)


def test_nesting_past_the_limit_says_what_to_do(monkeypatch):
    @tack.kernel
    def nested(out):
        for i in range(len(out)):
            out[i] = 1.0

    def too_deep(self, template):
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(type(nested), "_lower", too_deep)
    with pytest.raises(RuntimeError, match=re.escape(
            "Kernel 'nested' failed on CPUBackend: an expression is nested too deeply "
            "to compile")):
        nested(tack.zeros(2, dtype=tack.f64))


def test_inspect_compiles_deep_nesting_too(tmp_path):
    kernel = long_sum_kernel(tmp_path)
    text = tack.inspect(kernel, tack.ones(3, dtype=tack.f64), tack.zeros(3, dtype=tack.f64),
                        mode="ir")
    assert text.count("*") >= TERMS - 1
