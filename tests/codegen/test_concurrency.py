"""Several Python threads calling one kernel at once, with different dtypes and shapes.

Each test wraps a module-level function in a fresh ``tack.kernel`` so the
threads race on the first build of the template and of every variant.
"""

from __future__ import annotations

import threading

import numpy as np

import tack

TYPES = (tack.i8, tack.i16, tack.i32, tack.i64, tack.u8, tack.u16, tack.u32, tack.u64,
         tack.f32, tack.f64)
THREADS = 10


def scale_add(a, b, out):
    for i in range(len(out)):
        out[i] = a[i] * 3 + b[i] // 2


def row_weighted(a, out):
    for i in range(len(out)):
        s = 0
        for j in range(a.shape[1]):
            s += a[i, j] * (j + 1)
        out[i] = s


def _run_threads(work, count):
    barrier = threading.Barrier(count)
    errors = []

    def run(k):
        try:
            barrier.wait()
            work(k)
        except BaseException as exc:  # reported below, with the thread's number
            errors.append((k, exc))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_threads_with_different_dtypes(rng):
    kernel = tack.kernel(scale_add)
    seeds = rng.gen.integers(0, 2**32, size=THREADS)

    def work(k):
        dtype = TYPES[k % len(TYPES)]
        local = np.random.default_rng(seeds[k])
        for n in (0, 1, 7, 33, 1000, 4097):
            if dtype.is_float:
                a_np, b_np = (local.uniform(-100, 100, n).astype(dtype.numpy)
                              for _ in range(2))
            else:
                info = np.iinfo(dtype.numpy)
                a_np, b_np = (local.integers(info.min, info.max, n, dtype=dtype.numpy,
                                             endpoint=True) for _ in range(2))
            out = tack.zeros(n, dtype=dtype)
            kernel(tack.asarray(a_np), tack.asarray(b_np), out)
            with np.errstate(over="ignore"):
                want = a_np * dtype.numpy.type(3) + np.floor_divide(b_np,
                                                                    dtype.numpy.type(2))
            np.testing.assert_array_equal(out.numpy(), want,
                                          err_msg=f"{dtype} n={n} thread {k} {rng}")

    _run_threads(work, THREADS)


def test_threads_with_different_shapes(rng):
    kernel = tack.kernel(row_weighted)
    shapes = [(5, 1 + k) for k in range(THREADS // 2)] * 2
    arrays = [rng.ints(tack.i64, r * c, -100, 100).reshape(r, c) for r, c in shapes]

    def work(k):
        for _ in range(3):
            out = tack.zeros(shapes[k][0], dtype=tack.i64)
            kernel(tack.asarray(arrays[k]), out)
            weights = np.arange(1, shapes[k][1] + 1)
            np.testing.assert_array_equal(out.numpy(), (arrays[k] * weights).sum(axis=1),
                                          err_msg=f"shape {shapes[k]} thread {k} {rng}")

    _run_threads(work, THREADS)
