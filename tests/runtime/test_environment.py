"""Spec 003, Environment variables: the CPU backend's variables.

A CPU backend reads its variables when it is constructed. ``tack.device("cpu")``
is made once per process, so the variables that decide its worker count are
checked in a fresh interpreter; the ones read on every construction are checked
in-process through ``tack.device("cpu", num_threads=N)``, which always makes a
new backend. TACK_NO_REINIT is covered in test_devices.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import tack

PROBE = """
import tack
try:
    print("threads", tack.device("cpu").backend.num_threads)
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def fresh_cpu_device(**env):
    """What ``tack.device("cpu")`` gives in a new interpreter with ``env`` set."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TACK_")}
    environ.update(env)
    done = subprocess.run([sys.executable, "-c", PROBE], env=environ, text=True,
                          capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("value,expected", [
    ("3", "threads 3"),
    ("0", "threads 1"),
    ("-2", "threads 1"),
    ("abc", "ValueError TACK_CPU_THREADS must be an integer, got 'abc'"),
    ("5000", "ValueError TACK_CPU_THREADS must be at most 4096, got 5000"),
])
def test_cpu_threads_sets_the_default_cpu_worker_count(value, expected):
    assert fresh_cpu_device(TACK_CPU_THREADS=value) == expected


def test_num_threads_takes_precedence_over_cpu_threads(monkeypatch):
    monkeypatch.setenv("TACK_CPU_THREADS", "abc")  # not even read
    assert tack.device("cpu", num_threads=2).backend.num_threads == 2


@pytest.mark.parametrize("value", ["", "v2", " v2 "])
def test_cpu_policy_accepts_only_v2(monkeypatch, value):
    monkeypatch.setenv("TACK_CPU_POLICY", value)
    assert tack.device("cpu", num_threads=2).type == "cpu"


@pytest.mark.parametrize("value", ["v1", "fast"])
def test_cpu_policy_other_values_raise_value_error(monkeypatch, value):
    monkeypatch.setenv("TACK_CPU_POLICY", value)
    with pytest.raises(ValueError, match=re.escape(
            f"TACK_CPU_POLICY={value!r} is not a threading policy: the only policy "
            f"is v2 (leave the variable unset)")):
        tack.device("cpu", num_threads=2)


@pytest.mark.parametrize("value", ["python", "0", "OFF", "no", "false", ""])
def test_cpu_pool_accepted_values(monkeypatch, value):
    monkeypatch.setenv("TACK_CPU_POOL", value)
    assert tack.device("cpu", num_threads=2).type == "cpu"


def test_cpu_pool_unknown_value_raises_value_error(monkeypatch):
    monkeypatch.setenv("TACK_CPU_POOL", "gpu")
    with pytest.raises(ValueError, match=re.escape(
            "TACK_CPU_POOL must be 'python', 'native' or unset, got 'gpu'")):
        tack.device("cpu", num_threads=2)


def test_cpu_stream_bytes_is_an_integer(monkeypatch):
    monkeypatch.delenv("TACK_CPU_STREAM_BYTES", raising=False)
    assert tack.device("cpu", num_threads=2).backend.streaming_bytes == 64 << 20
    monkeypatch.setenv("TACK_CPU_STREAM_BYTES", "4096")
    assert tack.device("cpu", num_threads=2).backend.streaming_bytes == 4096
    monkeypatch.setenv("TACK_CPU_STREAM_BYTES", "-1")   # never
    assert tack.device("cpu", num_threads=2).backend.streaming_bytes >= 1 << 62
    monkeypatch.setenv("TACK_CPU_STREAM_BYTES", "lots")
    with pytest.raises(ValueError, match=re.escape(
            "TACK_CPU_STREAM_BYTES must be an integer, got 'lots'")):
        tack.device("cpu", num_threads=2)


@pytest.mark.parametrize("threads", [1, 2])
def test_cpu_pool_spin_is_read_when_the_device_starts(monkeypatch, threads):
    """With one thread there is never a pool, and a bad value is refused anyway."""
    monkeypatch.setenv("TACK_CPU_POOL_SPIN", "lots")
    with pytest.raises(ValueError, match=re.escape(
            "TACK_CPU_POOL_SPIN must be an integer, got 'lots'")):
        tack.device("cpu", num_threads=threads)


def test_cpu_margin_is_a_float(monkeypatch):
    monkeypatch.setenv("TACK_CPU_MARGIN", "2.5")
    assert tack.device("cpu", num_threads=2).backend.margin == 2.5
    monkeypatch.setenv("TACK_CPU_MARGIN", "wide")
    with pytest.raises(ValueError, match=re.escape(
            "TACK_CPU_MARGIN must be a number, got 'wide'")):
        tack.device("cpu", num_threads=2)


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "-0.5"])
def test_cpu_margin_is_finite_and_not_negative(monkeypatch, value):
    monkeypatch.setenv("TACK_CPU_MARGIN", value)
    with pytest.raises(ValueError, match=re.escape(
            f"TACK_CPU_MARGIN must be a finite number of 0 or more, got '{value}'")):
        tack.device("cpu", num_threads=2)
