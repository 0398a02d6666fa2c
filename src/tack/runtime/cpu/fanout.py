"""The threading decision: whether a launch runs on the calling thread or fans
out over the device's pool (docs/pipeline.md, "Threading").

A launch fans out when its serial time would exceed the pool's measured
fan-out cost times ``FANOUT_FACTOR`` times ``TACK_CPU_MARGIN``. The serial
time is first predicted by the cost model: work units (flops + bytes/4 + 1
per iteration) at ``SECONDS_PER_WORK`` each. That is about right for loops
that stream from memory, but a vectorized loop over data in L1 or L2 ran up to
19 times faster than it says, so launches of 1,300-10,000 saxpy elements fanned
out where the serial call was twice as fast. Each program therefore measures
itself: its first ``CALIBRATION_RUNS`` launches between the model's threshold
and ``CALIBRATION_BAND`` times it run serially under a clock, and the fewest
seconds per iteration they took replaces the model's estimate. The threshold it
gives is kept within that band, so a launch the model puts beyond it always
fans out, whatever the calibration saw.
"""

from __future__ import annotations

import threading
from time import perf_counter

SECONDS_PER_WORK = 0.25e-9
FANOUT_FACTOR = 2.0
MIN_FANOUT_SECONDS = 1e-6   # no pool wakes and joins its threads faster than this
CALIBRATION_RUNS = 3
CALIBRATION_BAND = 32.0
clock = perf_counter     # a module global, so that a test can drive the calibration


def bound(seconds: float, margin: float) -> float:
    """Work units whose predicted serial time equals a fan-out of ``seconds``
    times the factor and the margin."""
    return seconds * FANOUT_FACTOR * margin / SECONDS_PER_WORK


class Calibration:
    """The timed serial launches of one program, and the threshold they give:
    ``add`` records one and, at the last, returns the new threshold in
    iterations (``None`` before)."""

    def __init__(self, model: float, fanout_seconds: float):
        self.top = model * CALIBRATION_BAND
        self.fanout_seconds = fanout_seconds   # the serial time worth a fan-out
        self.seconds_per_iteration = []

    def add(self, seconds: float, total: int):
        self.seconds_per_iteration.append(seconds / total)
        if len(self.seconds_per_iteration) < CALIBRATION_RUNS:
            return None
        # the fastest: a preemption, another library's threads or a first
        # write's page faults only ever add time (the median of three let two
        # such samples fan a small launch out for the rest of the process)
        measured = min(self.seconds_per_iteration)
        return min(self.fanout_seconds / max(measured, 1e-15), self.top)


def make_launcher(backend, program):
    """``launch(pack_address, rows, total)`` for ``program`` on ``backend``:
    run ``rows`` rows of dimension 0 (``total`` iterations in all) serially or
    over the pool. The warm path is one comparison before the native call."""
    entry = program.entry
    if backend.num_threads == 1:
        return lambda address, rows, total: entry(address, 0, rows)
    work = program.cost.flops + program.cost.bytes / 4.0 + 1.0
    target = program.address if backend.pool_kind == "native" else entry
    # Until a launch is big enough to be worth measuring the pool, the bound
    # is what no fan-out can beat (MIN_FANOUT_SECONDS): small programs never
    # make the pool at all.
    known = backend.known_fanout_work()
    serial_below = [(known if known is not None
                     else bound(MIN_FANOUT_SECONDS, backend.margin)) / work]
    fan = []          # (pool.run, job, what keeps the job alive), from the first fan-out on
    calibrating = [None]   # the Calibration while it runs
    lock = threading.Lock()   # taken once, by the first launch worth a fan-out

    def start_fanning():
        with lock:
            if fan:
                return   # another thread got here first
            fanout_work = backend.fanout_work()
            serial_below[0] = fanout_work / work
            calibrating[0] = Calibration(serial_below[0], fanout_work * SECONDS_PER_WORK)
            fan.extend(backend.fan_out(target))   # last: a thread that sees it sees all

    def launch(address, rows, total):
        if total < serial_below[0] or rows < 2:
            entry(address, 0, rows)
            return
        if not fan:
            start_fanning()
            if total < serial_below[0]:
                entry(address, 0, rows)
                return
        calibration = calibrating[0]   # read once: another thread may end it
        if calibration is not None and total < calibration.top:
            start = clock()
            entry(address, 0, rows)
            threshold = calibration.add(clock() - start, total)
            if threshold is not None:
                serial_below[0] = threshold
                calibrating[0] = None
            return
        fan[0](fan[1], address, rows)
    return launch
