"""The threading decision's calibration (runtime/cpu/fanout.py): a program's
first launches between the cost model's threshold and CALIBRATION_BAND times it
run serially and are timed, and the median time per iteration they took sets
the threshold. The clock is replaced, so that the decision is a function of
the test's numbers and not of this machine's load; the results are always
checked against NumPy."""

import re

import numpy as np
import pytest

import tack
from tack.runtime.cpu import fanout


@tack.kernel
def iota(out):
    for i in range(len(out)):
        out[i] = i


MODEL = 1000   # iterations: the cost model's threshold the tests set up


class FakeClock:
    """Each reading is ``step`` seconds after the one before: a timed launch
    takes ``step``, whatever its size."""

    def __init__(self, step: float):
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.fixture
def device(monkeypatch):
    """A 2-thread CPU device whose model threshold for ``iota`` is ``MODEL``
    iterations, and the list of the row counts it fans out."""
    monkeypatch.setenv("TACK_CPU_MARGIN", "1")
    dev = tack.device("cpu", num_threads=2)
    cost = tack.inspect(iota, tack.zeros(5, tack.i64, device=dev), mode="cost")
    flops, nbytes = map(float, re.search(r"([\d.]+) flops, ([\d.]+) bytes", cost).groups())
    work = flops + nbytes / 4 + 1            # docs/pipeline.md, "Threading"
    monkeypatch.setattr(dev.backend, "fanout_work", lambda: MODEL * work)
    monkeypatch.setattr(dev.backend, "known_fanout_work", lambda: MODEL * work)
    fanned = []
    original = dev.backend.fan_out

    def fan_out(target):
        run, job, owner = original(target)

        def counted(job, address, rows):
            fanned.append(rows)
            run(job, address, rows)
        return counted, job, owner
    monkeypatch.setattr(dev.backend, "fan_out", fan_out)
    return dev, fanned, MODEL * work * fanout.SECONDS_PER_WORK


def _launch(dev, n):
    out = tack.full(n, -1, tack.i64, device=dev)
    with dev:
        iota(out)
    np.testing.assert_array_equal(out.numpy(), np.arange(n), err_msg=f"n={n}")


def _calibrate(dev, monkeypatch, n, seconds):
    monkeypatch.setattr(fanout, "clock", FakeClock(seconds))
    for _ in range(fanout.CALIBRATION_RUNS):
        _launch(dev, n)


def test_fast_launches_raise_the_threshold(device, monkeypatch):
    dev, fanned, fanout_seconds = device
    # 2,000 iterations in a tenth of the fan-out budget: the threshold is 20,000
    _calibrate(dev, monkeypatch, 2000, fanout_seconds / 10)
    assert fanned == []                      # the timed launches ran serially
    _launch(dev, 19_000)
    assert fanned == []
    _launch(dev, 21_000)
    assert fanned == [21_000]


def test_the_threshold_stays_within_the_band(device, monkeypatch):
    dev, fanned, fanout_seconds = device
    _calibrate(dev, monkeypatch, 2000, fanout_seconds / 1e6)   # "free" launches
    top = int(MODEL * fanout.CALIBRATION_BAND)
    _launch(dev, top - 1)
    assert fanned == []
    _launch(dev, top)
    assert fanned == [top]


def test_slow_launches_lower_the_threshold(device, monkeypatch):
    dev, fanned, fanout_seconds = device
    # 2,000 iterations in ten times the budget: worth a fan-out from 200 on
    _calibrate(dev, monkeypatch, 2000, fanout_seconds * 10)
    assert fanned == []
    _launch(dev, 199)
    assert fanned == []
    _launch(dev, 201)
    assert fanned == [201]


@pytest.mark.parametrize("slow", [(1,), (0, 1)])
def test_the_fastest_of_the_timed_launches_decides(device, monkeypatch, slow):
    dev, fanned, fanout_seconds = device
    clock = FakeClock(0.0)
    monkeypatch.setattr(fanout, "clock", clock)
    # one or two launches disturbed (100 times slower: a preemption, page faults
    # of a fresh output) among three: only the undisturbed one counts
    for k in range(fanout.CALIBRATION_RUNS):
        clock.step = fanout_seconds * 10 if k in slow else fanout_seconds / 10
        _launch(dev, 2000)
    _launch(dev, 19_000)
    assert fanned == []


def test_launches_beyond_the_band_fan_out_before_any_calibration(device, monkeypatch):
    dev, fanned, fanout_seconds = device
    monkeypatch.setattr(fanout, "clock", FakeClock(fanout_seconds / 1e6))
    top = int(MODEL * fanout.CALIBRATION_BAND)
    _launch(dev, top + 1)
    assert fanned == [top + 1]
    _launch(dev, MODEL - 1)                  # below the model: serial, untimed
    assert fanned == [top + 1]
    _calibrate(dev, monkeypatch, 2000, fanout_seconds / 10)
    _launch(dev, 19_000)
    assert fanned == [top + 1]


def test_no_calibration_when_every_launch_fans_out(monkeypatch):
    # TACK_CPU_MARGIN=0: every launch of two or more rows fans out, none timed
    monkeypatch.setenv("TACK_CPU_MARGIN", "0")
    dev = tack.device("cpu", num_threads=2)

    def no_clock():
        raise AssertionError("a launch was timed")
    monkeypatch.setattr(fanout, "clock", no_clock)
    for n in (2, 1001, 50_000):
        _launch(dev, n)


class SleepingClock(FakeClock):
    """A FakeClock that lets other threads run at every reading, so that
    threads interleave inside the calibration."""

    def __call__(self) -> float:
        import time
        time.sleep(0.0005)
        return super().__call__()


def _fresh_iota():
    @tack.kernel
    def iota(out):
        for i in range(len(out)):
            out[i] = i
    return iota


def test_first_launches_from_several_threads_at_once(device, monkeypatch):
    import threading
    dev, fanned, fanout_seconds = device
    monkeypatch.setattr(fanout, "clock", SleepingClock(fanout_seconds / 10))
    errors = []
    for _ in range(4):   # a new kernel each round: a calibration from the start
        kernel, outs = _fresh_iota(), [tack.full(2000, -1, tack.i64, device=dev)
                                       for _ in range(6)]
        barrier = threading.Barrier(len(outs))

        def work(out):
            barrier.wait()
            try:
                with dev:
                    for _ in range(3):
                        kernel(out)
                np.testing.assert_array_equal(out.numpy(), np.arange(2000))
            except Exception as error:   # noqa: BLE001 (collected for the assert)
                errors.append(repr(error))
        threads = [threading.Thread(target=work, args=(out,)) for out in outs]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
