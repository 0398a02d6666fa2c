"""Workgroup features: thread_id, barrier, shared and local arrays, block reductions.

On a backend with workgroups (OpenCL) they compute; on the CPU, which has
none, every one but local_array is refused with NotImplementedError (a
RuntimeError at the call). This file runs on both (tests/test_backend_suites.py).
"""

import re

import numpy as np
import pytest

import tack

DEVICE = tack.get_default_device()
HAS_WORKGROUPS = DEVICE.backend.supports_workgroups
BACKEND = DEVICE.backend.class_name


@tack.kernel
def tile_sums(x, out):
    for i in range(len(x)):
        tile = tack.shared(256, tack.f32)
        lane = tack.thread_id()
        tile[lane] = x[i]
        tack.barrier()
        if lane == 0:
            s = 0.0
            for k in range(256):
                s += tile[k]
            out[i // 256] = s


@tack.kernel
def reduce_all(x, sums, lows, highs):
    for i in range(len(x)):
        v = x[i]
        s = tack.block_sum(v)
        lo = tack.block_min(v)
        hi = tack.block_max(v)
        if tack.thread_id() == 0:
            sums[i // 256] = s
            lows[i // 256] = lo
            highs[i // 256] = hi


@tack.kernel
def reverse_quads(x, out):
    for i in range(len(x) // 4):
        buf = tack.local_array(4, tack.f32)
        for k in range(4):
            buf[k] = x[4 * i + k]
        for k in range(4):
            out[4 * i + k] = buf[3 - k]


@tack.kernel
def barrier_in_branch(x):
    for i in range(len(x)):
        if x[i] > 0:
            tack.barrier()


@tack.kernel
def barrier_after_continue(x):
    for i in range(len(x)):
        if x[i] > 0:
            continue
        tack.barrier()


@tack.kernel
def sum_of_f64(x, out):
    for i in range(len(x)):
        out[i // 256] = tack.block_sum(x[i])


def _refused(kernel, *args, feature):
    """The CPU's explicit refusal of a workgroup feature."""
    with pytest.raises(RuntimeError, match=re.escape(
            f"Kernel '{kernel.name}' failed on {BACKEND}: {feature} needs a backend "
            f"with workgroups, and {BACKEND} has none")):
        kernel(*args)


@pytest.fixture(params=[False, True], ids=["plain", "debug"])
def debug_or_not(request):
    """Each workgroup kernel plain and in debug mode (a debug launch of a barrier
    kernel once hung on PoCL: a return ahead of the barrier)."""
    tack.set_debug(request.param)
    yield request.param
    tack.set_debug(False)


def test_shared_tile_and_barrier(debug_or_not, rng=np.random.default_rng()):
    x = rng.random(4 * 256, dtype=np.float32)
    out = tack.zeros(4)
    if not HAS_WORKGROUPS:
        _refused(tile_sums, tack.array(x), out, feature="tack.shared()")
        return
    tile_sums(tack.array(x), out)
    np.testing.assert_allclose(out.numpy(), x.reshape(4, 256).sum(1), rtol=1e-5)


@tack.kernel
def sums_of_four_after_a_barrier(x, out):
    for i in range(len(x)):
        tack.barrier()
        if tack.thread_id() == 0:
            s = 0.0
            for k in range(4):
                s += x[i + k]
            out[i // 256] = s


def test_lane_zero_reads_after_a_barrier(debug_or_not):
    x = np.arange(512, dtype=np.float32)
    out = tack.zeros(2)
    if not HAS_WORKGROUPS:
        _refused(sums_of_four_after_a_barrier, tack.array(x), out,
                 feature="tack.barrier()")
        return
    sums_of_four_after_a_barrier(tack.array(x), out)
    np.testing.assert_array_equal(out.numpy(), [6.0, 256 + 257 + 258 + 259])


@tack.kernel
def next_tile_after_a_barrier(x, out):
    for i in range(len(x)):
        tack.barrier()
        if tack.thread_id() == 0:
            out[i // 256] = x[i + 256]


def test_an_access_after_a_barrier_is_checked():
    x, out = tack.array(np.arange(512, dtype=np.float32)), tack.full(2, -1.0)
    if not HAS_WORKGROUPS:
        return   # refused: test_lane_zero_reads_after_a_barrier
    tack.set_debug(True)
    try:   # lane 0 of the last workgroup reads past the end
        with pytest.raises(IndexError, match=re.escape(
                "index 512 is out of bounds (extent 512) in x[i + 256]")):
            next_tile_after_a_barrier(x, out)
    finally:
        tack.set_debug(False)
    np.testing.assert_array_equal(out.numpy(), [256.0, 0.0])   # the skipped load: 0


def test_block_reductions(debug_or_not, rng=np.random.default_rng()):
    x = (rng.random(3 * 256) * 100 - 50).astype(np.float32)
    sums, lows, highs = tack.zeros(3), tack.zeros(3), tack.zeros(3)
    if not HAS_WORKGROUPS:
        _refused(reduce_all, tack.array(x), sums, lows, highs,
                 feature="tack.block_sum()")
        return
    reduce_all(tack.array(x), sums, lows, highs)
    blocks = x.reshape(3, 256)
    np.testing.assert_allclose(sums.numpy(), blocks.sum(1), rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(lows.numpy(), blocks.min(1))
    np.testing.assert_array_equal(highs.numpy(), blocks.max(1))


def test_local_array_runs_everywhere():
    x = np.arange(12, dtype=np.float32)
    out = tack.zeros(12)
    reverse_quads(tack.array(x), out)
    np.testing.assert_array_equal(out.numpy(), x.reshape(3, 4)[:, ::-1].reshape(-1))


@tack.kernel
def scratch_at_the_limit(x, out):
    for i in range(len(x)):
        b = tack.local_array(4096, tack.f32)         # 16 KiB: the limit
        for k in range(len(b)):
            b[k] = x[i] + k
        out[i] = b[len(b) - 1] + b[0]


@tack.kernel
def scratch_past_the_limit(x, out):
    for i in range(len(x)):
        b = tack.local_array(2048, tack.f32)
        c = tack.local_array_like(x, 1025)           # f64 here: 16 KiB + 8 bytes
        b[0] = x[i]
        c[0] = x[i]
        out[i] = b[0] + c[0]


def test_local_arrays_past_16_kib_per_iteration_are_refused():
    # Past a thread's stack (CPU) or from 32 KiB on PoCL (a workgroup's private
    # arrays on one stack) the process died with SIGSEGV; the bound is checked
    # before building.
    x = np.arange(5, dtype=np.float32)
    out = tack.zeros(5)
    scratch_at_the_limit(tack.array(x), out)
    np.testing.assert_array_equal(out.numpy(), 2 * x + 4095)
    out = tack.full(5, 7.0, tack.f64)
    with pytest.raises(ValueError, match=re.escape(
            "Kernel 'scratch_past_the_limit': its tack.local_array arrays take 16392 bytes "
            "per iteration, more than the 16384 allowed")):
        scratch_past_the_limit(tack.array(x.astype(np.float64)), out)
    np.testing.assert_array_equal(out.numpy(), 7.0)


def test_launch_must_fill_workgroups():
    if not HAS_WORKGROUPS:
        _refused(tile_sums, tack.zeros(1000), tack.zeros(4), feature="tack.shared()")
        return
    out = tack.zeros(4)
    with pytest.raises(ValueError, match="1000 iterations is not a multiple of 256"):
        tile_sums(tack.zeros(1000), out)
    np.testing.assert_array_equal(out.numpy(), 0)  # refused before the launch


@pytest.mark.parametrize("kernel,why", [
    (barrier_in_branch, "it is inside an `if`"),
    (barrier_after_continue, "the parallel loop can `continue` past it"),
])
def test_collectives_need_uniform_control_flow(kernel, why):
    if not HAS_WORKGROUPS:
        _refused(kernel, tack.zeros(256), feature="tack.barrier()")
        return
    with pytest.raises(ValueError, match=re.escape(
            f"tack.barrier() must be reached by every thread of a workgroup, but {why}")):
        kernel(tack.zeros(256))


@tack.kernel
def sum_in_one_arm(x):
    for i in range(len(x)):
        x[i] = tack.block_sum(x[i]) if x[i] > 0 else -1.0


@tack.kernel
def max_after_and(x):
    for i in range(len(x)):
        x[i] = x[i] > 0 and tack.block_max(x[i]) > 0


@tack.kernel
def bound_set_in_a_branch(x):
    for i in range(len(x)):
        n = 1
        if x[i] > 0:
            n = 2
        s = 0.0
        for k in range(n):
            s += tack.block_sum(1.0)
        x[i] = s


@tack.kernel
def sum_before_a_break(x):
    for i in range(len(x)):
        s = 0.0
        for k in range(4):
            if x[i] > k:
                break
            s += tack.block_sum(1.0)
        x[i] = s


@tack.kernel
def uniform_loop_with_an_inner_break(x, n):
    for i in range(len(x)):
        s = 0.0
        for k in range(n):                # the same bound on every lane
            for m in range(10):
                if x[i] > m:              # leaves only the inner loop
                    break
            s += tack.block_sum(1.0)
        x[i] = s


@pytest.mark.parametrize("kernel,why", [
    (sum_in_one_arm, "it is inside one side of a conditional expression"),
    (max_after_and, "it is inside the right side of `and`/`or`"),
    (bound_set_in_a_branch, "it is inside a loop whose bounds differ between lanes"),
    (sum_before_a_break, "it is inside a loop that a `break` or `continue` may leave "
                         "early on some lanes"),
])
def test_collectives_some_lanes_skip_are_refused(kernel, why):
    x = tack.zeros(256)
    if not HAS_WORKGROUPS:
        _refused(kernel, x, feature="tack.block_max()" if kernel is max_after_and
                 else "tack.block_sum()")
        return
    with pytest.raises(ValueError, match=re.escape(f"must be reached by every thread "
                                                   f"of a workgroup, but {why}")):
        kernel(x)
    np.testing.assert_array_equal(x.numpy(), 0)


def test_a_uniform_loop_may_hold_a_loop_with_a_break():
    x = tack.zeros(512)
    if not HAS_WORKGROUPS:
        _refused(uniform_loop_with_an_inner_break, x, 3, feature="tack.block_sum()")
        return
    uniform_loop_with_an_inner_break(x, 3)
    np.testing.assert_array_equal(x.numpy(), 3 * 256.0)


def test_block_reductions_take_f32():
    if DEVICE.backend.supported_dtypes.isdisjoint({tack.f64}):
        pytest.fail("the backends under test all support f64")
    x = tack.zeros(256, tack.f64)
    if not HAS_WORKGROUPS:
        _refused(sum_of_f64, x, tack.zeros(1, tack.f64), feature="tack.block_sum()")
        return
    with pytest.raises(TypeError, match="tack.block_sum takes an f32 value, got f64"):
        sum_of_f64(x, tack.zeros(1, tack.f64))


def test_thread_id_with_arguments_is_rejected():
    with pytest.raises(tack.UnsupportedSyntaxError, match="tack.thread_id\\(\\) with "
                                                          "arguments"):
        bad_thread_id(tack.zeros(2))


@tack.kernel
def bad_thread_id(x):
    for i in range(len(x)):
        x[i] = tack.thread_id(1)


@tack.kernel
def reverse_like(x, out):
    for i in range(len(x) // 4):
        buf = tack.local_array_like(x, 4)
        for k in range(4):
            buf[k] = x[4 * i + k]
        for k in range(4):
            out[4 * i + k] = buf[3 - k]


@tack.kernel
def tile_max_like(x, out):
    for i in range(len(x)):
        tile = tack.shared_like(x, 256)
        lane = tack.thread_id()
        tile[lane] = x[i]
        tack.barrier()
        if lane == 0:
            m = tile[0]
            for k in range(1, 256):
                m = max(m, tile[k])
            out[i // 256] = m


@pytest.mark.parametrize("dtype", [np.int32, np.float64])
def test_like_allocations_take_the_array_dtype(dtype):
    x = (np.arange(512) % 97).astype(dtype)
    out = tack.zeros(512, dtype=dtype)
    reverse_like(tack.array(x), out)
    np.testing.assert_array_equal(out.numpy(), x.reshape(-1, 4)[:, ::-1].reshape(-1))
    highs = tack.zeros(2, dtype=dtype)
    if not HAS_WORKGROUPS:
        _refused(tile_max_like, tack.array(x), highs, feature="tack.shared()")
        return
    tile_max_like(tack.array(x), highs)
    np.testing.assert_array_equal(highs.numpy(), x.reshape(2, 256).max(1))


@tack.kernel
def local_extents(x, out):
    for i in range(len(x)):
        buf = tack.local_array(4, tack.i32)
        for j in range(len(buf)):
            buf[j] = j + buf.shape[0]
        out[i] = buf[3] + x[i]


@tack.kernel
def allocated_twice(out):
    for i in range(len(out)):
        buf = tack.local_array(2, tack.f32)
        buf = tack.local_array(2, tack.f32)
        out[i] = 0.0


def test_local_array_extents_are_constants_also_in_debug_mode():
    x = tack.array(np.arange(5, dtype=np.int32))
    for debug in (False, True):
        tack.set_debug(debug)
        try:
            out = tack.zeros(5, tack.i32)
            local_extents(x, out)
        finally:
            tack.set_debug(False)
        np.testing.assert_array_equal(out.numpy(), np.arange(5) + 7)


def test_an_array_is_allocated_once():
    with pytest.raises(tack.UnsupportedSyntaxError,
                       match="unsupported second allocation of 'buf'"):
        allocated_twice(tack.zeros(2))


@tack.kernel
def like_a_vector_array(p, out):
    for i in range(len(out)):
        buf = tack.local_array_like(p, 4)
        buf[0] = p[i].y
        out[i] = buf[0]


@tack.kernel
def shared_like_a_matrix_array(m, out):
    for i in range(len(out)):
        tile = tack.shared_like(m, 256)
        tile[0] = m[i][0, 0]
        out[i] = tile[0]


def test_like_allocations_of_vector_and_matrix_arrays_are_refused():
    """They made an array of n scalars of the storage type, silently (probes audit)."""
    p = tack.array(np.zeros((2, 3), np.float32), dtype=tack.vec3())
    with pytest.raises(tack.UnsupportedSyntaxError, match=re.escape(
            "unsupported tack.local_array_like() of an array of vec3(f32) elements (local "
            "and shared arrays hold scalars: tack.local_array(n * 3, tack.f32) holds the "
            "components of n)")):
        like_a_vector_array(p, tack.zeros(2))
    m = tack.array(np.zeros((2, 3, 3)), dtype=tack.mat33(dtype=tack.f64))
    with pytest.raises(tack.UnsupportedSyntaxError, match=re.escape(
            "tack.shared_like() of an array of mat33(f64) elements (local and shared arrays "
            "hold scalars: tack.shared(n * 9, tack.f64)")):
        shared_like_a_matrix_array(m, tack.zeros(2, tack.f64))
