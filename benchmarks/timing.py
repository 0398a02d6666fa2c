"""Timing helpers shared by the benchmark scripts (run as scripts: this
directory is on ``sys.path``)."""

import statistics
import time


def per_call(run, sync, calls: int, repeats: int, warm: bool = True) -> float:
    """Median seconds per call over ``repeats`` batches of ``calls`` calls of
    ``run`` followed by one ``sync`` (after one warm-up call unless ``warm`` is
    false)."""
    if warm:
        run()
        sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            run()
        sync()
        times.append((time.perf_counter() - start) / calls)
    return statistics.median(times)


def in_turns(contenders: dict, calls: int, rounds: int, settle: float = 0.0) -> dict:
    """Seconds per call of each of ``contenders`` (``{name: (run, sync)}``),
    measured in turns: every round runs one batch of ``calls`` calls of each (a
    warm-up call and its ``sync`` first), the order rotating, so that a machine
    whose speed drifts between batches treats them alike. ``settle`` seconds
    pass after each warm-up: thread pools spin for a while after a launch
    (OpenMP's, which Numba uses, up to about 20 ms, Tack's about 1 ms), and on
    two cores a pool still spinning from the other contender's batch slows the
    next one (``cpu_peers.py`` warms each turn up for as long instead). Returns
    ``{name: [seconds per call, per round]}``, rounds aligned."""
    names = list(contenders)
    times = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            run, sync = contenders[name]
            run()
            sync()
            if settle:
                time.sleep(settle)
                run()          # the pool's threads wake from their sleep once
                sync()
            start = time.perf_counter()
            for _ in range(calls):
                run()
            sync()
            times[name].append((time.perf_counter() - start) / calls)
    return times


def paired(times: dict, name: str, other: str, how) -> float:
    """The median over rounds of ``how(name's time, other's time)`` (see
    ``in_turns``)."""
    return statistics.median(how(a, b) for a, b in zip(times[name], times[other]))
