"""tack.algorithms against NumPy: scans, reductions, radix sort, histogram."""

import math
import re
import secrets

import numpy as np
import pytest

import tack
import tack.algorithms as A

SEED = secrets.randbits(32)
SIZES = [0, 1, 7, 65536, 65537, 200_003]
SCAN_TYPES = [np.int32, np.int64, np.uint32, np.float32, np.float64]


def _values(rng, n, dtype):
    if np.dtype(dtype).kind == "f":
        return (rng.random(n) * 100 - 50).astype(dtype)
    return rng.integers(0, 100, n).astype(dtype)


@pytest.mark.parametrize("dtype", SCAN_TYPES)
@pytest.mark.parametrize("n", SIZES)
def test_scans(n, dtype):
    rng = np.random.default_rng(SEED)
    x = _values(rng, n, dtype)
    inclusive = A.inclusive_scan(tack.array(x)).numpy()
    exclusive = A.exclusive_scan(tack.array(x)).numpy()
    if x.dtype.kind == "f":
        # Compare with an f64 scan; the bound grows with the running sum of |x|.
        reference = np.cumsum(x, dtype=np.float64)
        bound = 4 * np.finfo(x.dtype).eps * np.cumsum(np.abs(x), dtype=np.float64) + 1e-30
    else:
        reference = np.cumsum(x, dtype=x.dtype)
        bound = 0
    assert (np.abs(inclusive - reference) <= bound).all(), f"seed {SEED}"
    if n:
        assert exclusive[0] == 0
        assert (np.abs(exclusive[1:] - reference[:-1]) <= np.asarray(bound)[:-1]
                if x.dtype.kind == "f" else exclusive[1:] == reference[:-1]).all(), \
            f"seed {SEED}"


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.uint8])
def test_a_one_thread_scan_reads_once_and_gets_the_same_bits(dtype):
    """On a CPU device of one thread the scan is one pass that keeps each chunk's
    total beside the running sum: the same order of additions, so the same bits
    as the chunked passes on two threads, at every length."""
    from tack.algorithms import scan
    serial, threaded = tack.device("cpu", num_threads=1), tack.device("cpu", num_threads=2)
    rng = np.random.default_rng()
    variants = []
    for n in (1, 7, 65_537, 3 * 65_536 + 17):
        x = (rng.standard_normal(n) * 1e3 if np.dtype(dtype).kind == "f"
             else rng.integers(0, 255, n)).astype(dtype)
        for call in (A.inclusive_scan, A.exclusive_scan):
            one = call(tack.array(x, device=serial)).numpy()
            two = call(tack.array(x, device=threaded)).numpy()
            assert one.tobytes() == two.tobytes(), (call.__name__, n, dtype)
            in_place = tack.array(x, device=serial)
            call(in_place, out=in_place)
            assert in_place.numpy().tobytes() == two.tobytes(), (call.__name__, n)
        variants.append(len(scan.serial_scan._variants))
    # it ran, and a new length compiled nothing new
    assert variants[0] > 0 and variants == variants[:1] * 4


def test_scan_in_place_and_out():
    x = tack.array(np.arange(10, dtype=np.int32))
    A.inclusive_scan(x, out=x)
    np.testing.assert_array_equal(x.numpy(), np.cumsum(np.arange(10)))
    with pytest.raises(ValueError, match="out must have shape"):
        A.exclusive_scan(x, out=tack.zeros(3, tack.i32))


@pytest.mark.parametrize("dtype", SCAN_TYPES + [np.int8, np.uint64])
@pytest.mark.parametrize("n", SIZES)
def test_reductions(n, dtype):
    rng = np.random.default_rng(SEED)
    x = _values(rng, n, dtype)
    t = tack.array(x)
    if x.dtype.kind == "f":
        assert A.sum(t) == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-12,
                                         abs=1e-9)
    else:
        assert A.sum(t) == int(x.astype(np.int64).sum())
    if n == 0:
        with pytest.raises(ValueError, match="min reduction requires a nonempty array"):
            A.min(t)
        with pytest.raises(ValueError, match="max reduction requires a nonempty array"):
            A.max(t)
    else:
        assert A.min(t) == x.min() and A.max(t) == x.max()


INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
             np.uint64]


@pytest.mark.parametrize("dtype", INT_TYPES)
@pytest.mark.parametrize("n", [1, 3, 7, 70_001])
def test_integer_sums_and_scans_of_the_whole_range(n, dtype):
    # sum accumulates in i64/u64 and wraps modulo 2**64; scans wrap in the
    # values' own type (the NumPy cumsum of that dtype)
    rng = np.random.default_rng(SEED)
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    x[0] = info.max
    exact = sum(int(v) for v in x) % 2**64
    if info.min < 0 and exact >= 2**63:
        exact -= 2**64
    assert A.sum(tack.array(x)) == exact, f"seed {SEED}"
    with np.errstate(over="ignore"):
        reference = np.cumsum(x, dtype=dtype)
    np.testing.assert_array_equal(A.inclusive_scan(tack.array(x)).numpy(), reference,
                                  err_msg=f"seed {SEED}")


def test_reductions_of_nan_and_nd():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    x[1, 2] = np.nan
    assert np.isnan(A.min(tack.array(x))) and np.isnan(A.max(tack.array(x)))
    assert A.sum(tack.array(np.ones((3, 5), np.float32))) == 15.0


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
@pytest.mark.parametrize("n", [0, 1, 2, 1000, 70_001])
@pytest.mark.parametrize("spread", ["full", "few"])
def test_radix_sort_pairs_is_stable(n, dtype, spread):
    rng = np.random.default_rng(SEED)
    info = np.iinfo(dtype)
    if spread == "full":
        keys = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    else:
        keys = rng.integers(0, 5, n).astype(dtype)
    values = np.arange(n, dtype=np.int64)
    sorted_keys, sorted_values = A.radix_sort_pairs(tack.array(keys), tack.array(values))
    order = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(sorted_keys.numpy(), keys[order], err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(sorted_values.numpy(), order, err_msg=f"seed {SEED}")


def test_radix_sort_leaves_inputs_and_checks_arguments():
    keys = tack.array(np.array([3, 1, 2], np.int32))
    values = tack.array(np.array([1.5, 2.5, 3.5], np.float32))
    k, v = A.radix_sort_pairs(keys, values)
    np.testing.assert_array_equal(keys.numpy(), [3, 1, 2])
    np.testing.assert_array_equal(v.numpy(), [2.5, 3.5, 1.5])
    with pytest.raises(TypeError, match="radix_sort_pairs\\(\\) takes i32, u32, i64 or u64"):
        A.radix_sort_pairs(tack.zeros(3, tack.f32), values)
    with pytest.raises(ValueError, match="as many values as keys"):
        A.radix_sort_pairs(keys, tack.zeros(2))
    with pytest.raises(TypeError, match="takes a tack.Array"):
        A.radix_sort_pairs(np.zeros(3, np.int32), values)


def test_histogram():
    rng = np.random.default_rng(SEED)
    keys = rng.integers(-3, 40, 100_001).astype(np.int64)
    counts = A.histogram(tack.array(keys), 32).numpy()
    inside = keys[(keys >= 0) & (keys < 32)]
    np.testing.assert_array_equal(counts, np.bincount(inside, minlength=32))
    with pytest.raises(TypeError, match="histogram\\(\\) takes i32"):
        A.histogram(tack.zeros(3), 4)


@pytest.mark.parametrize("n, bins", [(70_000, 8192), (40_000, 8192), (300_001, 17),
                                     (1, 3), (65_537, 4096)])
def test_histogram_rows_and_atomics_agree_with_bincount(n, bins):
    # every way of counting: rows per chunk, rows past 4,096 bins when there
    # are enough keys (the CPU), one atomic per key; out is added to
    rng = np.random.default_rng(SEED + n)
    keys = rng.integers(-2, bins + 2, n).astype(np.int32)
    out = tack.full(bins, 5, tack.i64)
    A.histogram(tack.array(keys), bins, out=out)
    inside = keys[(keys >= 0) & (keys < bins)]
    np.testing.assert_array_equal(out.numpy(), np.bincount(inside, minlength=bins) + 5,
                                  err_msg=f"{SEED}")


@pytest.mark.parametrize("key_type", [np.int32, np.uint64])
@pytest.mark.parametrize("n, bins", [(0, 4), (1, 3), (7, 1), (70_001, 17), (70_000, 8192)])
def test_a_one_thread_histogram_counts_in_one_pass(n, bins, key_type):
    """A CPU device of one thread counts serially into out (no rows, no atomics):
    the same counts, keys outside the bins skipped, out added to."""
    one = tack.device("cpu", num_threads=1)
    rng = np.random.default_rng()
    keys = rng.integers(0, bins + 3, n).astype(key_type)
    if key_type is np.uint64 and n:
        keys[rng.integers(0, n, max(1, n // 10))] = np.uint64(2**63 + 5)
    else:
        keys -= 2 * (rng.random(n) < 0.1).astype(key_type)   # some negative keys
    out = tack.full(bins, 3, tack.i64, device=one)
    A.histogram(tack.array(keys, device=one), bins, out=out)
    signed = keys.astype(np.float64)
    inside = keys[(signed >= 0) & (signed < bins)].astype(np.int64)
    np.testing.assert_array_equal(out.numpy(), np.bincount(inside, minlength=bins) + 3)


def test_histogram_u64_keys_past_2_63_are_outside_every_bin():
    # Regression: compared with the i64 length as negative i64s, such keys were
    # counted far out of bounds (wrong counts, then a crash).
    rng = np.random.default_rng(SEED)
    keys = np.concatenate([rng.integers(0, 2**64, 100_000, dtype=np.uint64,
                                        endpoint=False),
                           np.array([1, 2**63, 2**64 - 1, 2**63 + 2, 3], np.uint64)])
    counts = A.histogram(tack.array(keys), 4).numpy()
    np.testing.assert_array_equal(counts, np.bincount(keys[keys < 4].astype(np.int64),
                                                      minlength=4), err_msg=f"{SEED}")


def test_histogram_checks_bins_and_out():
    keys = tack.array(np.array([0, 1, 1, 3], np.int32))
    with pytest.raises(TypeError, match=re.escape("histogram() takes an integer for "
                                                  "bins, not float")):
        A.histogram(keys, 2.7)
    with pytest.raises(TypeError, match=re.escape("histogram() takes an integer for "
                                                  "bins, not str")):
        A.histogram(keys, "3")
    for flag in (True, np.bool_(True)):   # a bool is not a count (it gave 1 bin)
        with pytest.raises(TypeError, match=re.escape(
                f"histogram() takes an integer for bins, not {type(flag).__name__}")):
            A.histogram(keys, flag)
    with pytest.raises(ValueError, match=re.escape("histogram() takes a non-negative "
                                                   "bins, got -1")):
        A.histogram(keys, -1)
    with pytest.raises(ValueError, match=re.escape("histogram() out must not be keys")):
        A.histogram(keys, 4, out=keys)
    np.testing.assert_array_equal(keys.numpy(), [0, 1, 1, 3])
    assert A.histogram(keys, np.int64(2)).numpy().tolist() == [1, 2]


def test_a_read_only_out_is_refused_by_the_public_function():
    held = np.zeros(4, np.int64)     # wrapped read-only: host memory, on the CPU
    cpu = tack.device("cpu")
    out = tack.array_from_ptr(held, (4,), tack.i64, device=cpu)
    keys = tack.array(np.array([0, 1], np.int32), device=cpu)
    for call, name in ((lambda: A.exclusive_scan(tack.ones(4, tack.i64, device=cpu),
                                                 out=out), "exclusive_scan"),
                       (lambda: A.histogram(keys, 4, out=out), "histogram")):
        with pytest.raises(ValueError, match=re.escape(
                f"{name}() writes out, but the array is read-only")):
            call()
    np.testing.assert_array_equal(held, 0)


def _wrap(host, first, n, dtype, cpu):
    """Elements first..first+n of ``host`` as a writable Tack array on ``cpu``."""
    return tack.array_from_ptr(host.ctypes.data + first * host.itemsize, (n,), dtype,
                               device=cpu, writable=True)


def test_histogram_refuses_an_out_that_shares_memory_with_keys():
    cpu = tack.device("cpu")
    host = np.array([1, 2, 3, 3, 0, 9, 5, 1, 2, 4], np.int64)
    keys = tack.from_dlpack(host)    # two imports of one buffer: two Tack arrays
    for out in (tack.from_dlpack(host), _wrap(host, 5, 5, tack.i64, cpu)):
        with pytest.raises(ValueError, match=re.escape(
                "histogram() out must not be keys: the counts would change the keys")):
            A.histogram(keys, out.size, out=out)
    np.testing.assert_array_equal(host, [1, 2, 3, 3, 0, 9, 5, 1, 2, 4])


def test_histogram_counts_into_an_empty_out_inside_the_keys():
    # an empty array shares no byte with anything, as np.shares_memory says
    cpu = tack.device("cpu")
    host = np.array([1, 2, 3, 3, 0, 9, 5, 1, 2, 4], np.int64)
    keys = tack.from_dlpack(host)
    out = _wrap(host, 4, 0, tack.i64, cpu)
    assert A.histogram(keys, 0, out=out).size == 0
    np.testing.assert_array_equal(host, [1, 2, 3, 3, 0, 9, 5, 1, 2, 4])


def test_histogram_refuses_a_misaligned_out_by_its_own_name():
    cpu = tack.device("cpu")
    raw = np.zeros(40, np.uint8)
    base = -raw.ctypes.data % 8 + 4                 # 4 bytes past an 8-byte boundary
    out = tack.array_from_ptr(raw.ctypes.data + base, (3,), tack.i64, device=cpu,
                              writable=True)
    keys = tack.array(np.array([0, 1, 1], np.int64), device=cpu)
    with pytest.raises(ValueError, match=re.escape(
            "histogram() out is not aligned to its 8-byte elements")):
        A.histogram(keys, 3, out=out)
    assert not raw.any()


@pytest.mark.parametrize("shift", [-2, 2])
@pytest.mark.parametrize("scan, reference", [
    (A.inclusive_scan, np.cumsum),
    (A.exclusive_scan, lambda v: np.concatenate([[0], np.cumsum(v)[:-1]]))])
def test_scans_of_partly_overlapping_values_and_out_match_numpy(scan, reference, shift):
    cpu, rng = tack.device("cpu"), np.random.default_rng(SEED)
    host = rng.integers(0, 100, 200_004).astype(np.int64)
    n, first = 200_000, 2
    want = reference(host[first:first + n].copy())
    scan(_wrap(host, first, n, tack.i64, cpu), out=_wrap(host, first + shift, n,
                                                            tack.i64, cpu))
    np.testing.assert_array_equal(host[first + shift:first + shift + n], want,
                                  err_msg=f"seed {SEED}")


@pytest.mark.parametrize("dtype", [tack.f32, tack.f64])
def test_scans_keep_the_sign_of_zero(dtype):
    values = np.array([-0.0, -0.0, 1.0, -1.0, -0.0], dtype.numpy)
    inclusive = A.inclusive_scan(tack.array(values)).numpy()
    np.testing.assert_array_equal(np.signbit(inclusive), np.signbit(np.cumsum(values)))
    exclusive = A.exclusive_scan(tack.array(values)).numpy()
    assert not np.signbit(exclusive[0]) and np.signbit(exclusive[1])


def test_histogram_out_must_match_the_bins():
    keys = tack.array(np.array([0, 1, 1], np.int32))
    with pytest.raises(ValueError, match="out must have 4 elements"):
        A.histogram(keys, 4, out=tack.zeros(20, tack.i64))
    with pytest.raises(TypeError, match="histogram\\(\\) counts into i32, u32, i64 or u64"):
        A.histogram(keys, 4, out=tack.zeros(4, tack.f32))
    counts = A.histogram(keys, 2, out=tack.full(2, 5, tack.i32))
    np.testing.assert_array_equal(counts.numpy(), [6, 7])


@pytest.mark.parametrize("n", [0, 1, 7, 1001])
def test_radix_sort_carries_vector_values(n):
    rng = np.random.default_rng(SEED)
    keys = rng.integers(0, 50, n).astype(np.int64)
    values = rng.standard_normal((n, 3)).astype(np.float32)
    sorted_keys, sorted_values = A.radix_sort_pairs(
        tack.array(keys), tack.array(values, dtype=tack.vec3()))
    order = np.argsort(keys, kind="stable")
    assert sorted_values.dtype == tack.vec3()
    np.testing.assert_array_equal(sorted_keys.numpy(), keys[order], err_msg=f"seed {SEED}")
    np.testing.assert_array_equal(sorted_values.numpy(), values[order], err_msg=f"seed {SEED}")


@pytest.mark.parametrize("call, name", [(A.inclusive_scan, "inclusive_scan"),
                                        (A.exclusive_scan, "exclusive_scan"),
                                        (A.sum, "sum"), (A.min, "min"), (A.max, "max")])
def test_scans_and_reductions_refuse_vector_elements(call, name):
    v = tack.zeros(4, tack.vec3())
    message = (f"{name}() takes an array of scalars for values, not of vec3(f32) elements "
               f"(use one array per component)")
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        call(v)


def test_new_lengths_reuse_the_compiled_kernels():
    """Lengths change every step in particle codes: the kernels take the length
    as an argument, so a new one compiles nothing (len(x) in a loop body would
    be compiled in)."""
    import sys
    from tack.algorithms import reduce_kernels, scan, sort
    histogram = sys.modules["tack.algorithms.histogram"]   # the name is the function's
    kernels = (reduce_kernels.float_partials, reduce_kernels.float_max_partials,
               reduce_kernels.combine_sum, scan.serial_scan, scan.chunk_totals,
               scan.chunk_scan,
               scan.scan_totals, sort.digit_counts, sort.digit_offsets, sort.scatter,
               histogram.count_keys, histogram.chunk_counts, histogram.add_rows,
               histogram.serial_counts)
    counts = None
    # lengths within one chunk and across several (65,536 for the scans and
    # sums, 32,768 for the sort): the chunk counts were baked in too
    for n in (1001, 1002, 1007, 1013, 70_001, 140_003):
        x = tack.ones(n, dtype=tack.f32)
        keys = tack.arange(n, dtype=tack.i64)
        assert A.sum(x) == n and A.min(x) == 1.0
        assert A.inclusive_scan(keys).numpy()[-1] == n * (n - 1) // 2
        np.testing.assert_array_equal(A.radix_sort_pairs(keys, keys)[0].numpy(),
                                      np.arange(n))
        bins = n % 97 + 3   # a new bin count with each length
        binned = tack.array(np.arange(n) % bins)
        np.testing.assert_array_equal(A.histogram(binned, bins).numpy(),
                                      np.bincount(np.arange(n) % bins))
        now = [len(k._variants) for k in kernels]
        assert counts is None or now == counts, f"length {n} compiled {now} (was {counts})"
        counts = now


@pytest.mark.parametrize("bins", [1, 16, 4096, 4097, 70_000])
@pytest.mark.parametrize("n", [0, 1, 7, 100_003])
def test_histogram_private_rows_and_atomics_agree_with_bincount(bins, n):
    # up to 4,096 bins the chunks count into rows of their own; past it, atomics
    gen = np.random.default_rng()
    host = gen.integers(-3, bins + 3, n).astype(np.int64)   # some keys out of range
    out = tack.full(bins, 5, tack.i32)                      # counted into: added to
    A.histogram(tack.array(host), bins, out=out)
    inside = host[(host >= 0) & (host < bins)]
    np.testing.assert_array_equal(out.numpy(), 5 + np.bincount(inside, minlength=bins))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, 9, 17, 65_537, 131_081])
def test_min_max_find_a_nan_in_any_lane(dtype, n):
    # eight lanes compare past NaNs; a loop of their own counts them
    gen = np.random.default_rng()
    for where in sorted({0, min(7, n - 1), min(8, n - 1), n // 2, n - 1}):
        host = gen.uniform(-5, 5, n).astype(dtype)
        x = tack.array(host)
        assert A.min(x) == host.min() and A.max(x) == host.max()
        host[where] = np.nan
        x = tack.array(host)
        assert math.isnan(A.min(x)) and math.isnan(A.max(x)), (n, where)


def test_small_reductions_on_several_threads_keep_their_own_partials():
    import threading
    rng = np.random.default_rng(SEED)
    inputs = [rng.integers(-1000, 1000, 257).astype(np.int64) for _ in range(4)]
    wrong = []

    def work(x):
        t, f = tack.array(x), tack.array(x.astype(np.float64))
        for _ in range(300):
            got = (A.sum(t), A.min(t), A.max(t), A.sum(f), A.max(f))
            want = (int(x.sum()), x.min(), x.max(), float(x.sum()), float(x.max()))
            if got != want:
                wrong.append((got, want))

    threads = [threading.Thread(target=work, args=(x,)) for x in inputs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_small_reductions_keep_no_device_made_with_options_alive():
    import gc
    import weakref

    kept = []
    for _ in range(12):
        dev = tack.device("cpu", num_threads=2)
        kept.append(weakref.ref(dev))
        x = tack.ones(100, device=dev)
        assert A.sum(x) == 100.0 and A.max(x) == 1.0
        assert A.inclusive_scan(x).numpy()[-1] == 100.0
        del dev, x
    gc.collect()
    alive = [ref() for ref in kept if ref() is not None]
    # none (the shared default runs them), or under another default device
    # (the OpenCL matrix) the last few, which the kernels' own tables keep
    assert len(alive) <= 4 and kept[0]() is None
