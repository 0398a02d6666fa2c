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
