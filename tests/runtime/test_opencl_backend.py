"""The OpenCL backend's own behaviour: refusals, allocation errors, element reads
(the kernels themselves run in the backend suites, tests/test_backend_suites.py)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import tack


@tack.kernel
def printing(a):
    for i in range(len(a)):
        print("a", a[i])


@tack.kernel
def reading_next(a, out):
    for i in range(len(out)):
        out[i] = a[i + 1]


@pytest.mark.parametrize("feature, kernel, debug", [("print()", printing, False),
                                                    ("debug mode", reading_next, True)])
def test_counters_need_64_bit_atomics(opencl, monkeypatch, feature, kernel, debug):
    """print() and debug mode count with 64-bit atomics: a device without them
    refuses the kernel by name instead of failing in the driver's compiler."""
    monkeypatch.setattr(opencl.backend, "int64_atomics", False)
    args = [tack.zeros(3, device=opencl) for _ in range(kernel.fn.__code__.co_argcount)]
    tack.set_debug(debug)
    try:
        with pytest.raises(RuntimeError, match="^" + re.escape(
                f"Kernel '{kernel.name}' failed on OpenCLBackend: {feature} needs 64-bit "
                f"atomics (cl_khr_int64_base_atomics), which the OpenCL device "
                f"{opencl.backend.device.name!r} lacks")):
            kernel(*args)
    finally:
        tack.set_debug(False)


@tack.kernel
def staged(x, out):
    for i in range(len(x)):
        t = tack.shared(600_000, tack.f32)   # 2.4 MB, past PoCL's 2 MiB of local memory
        t[tack.thread_id()] = x[i]
        tack.barrier()
        out[i] = t[tack.thread_id()]


def test_shared_arrays_past_the_local_memory_are_refused_at_the_build(opencl):
    """PoCL aborted the process on such a launch; the build refuses it now."""
    limit = opencl.backend.device.local_mem_size
    if limit >= 2_400_000:
        pytest.skip(f"this OpenCL device has {limit} bytes of local memory")
    x, out = tack.ones(256, device=opencl), tack.zeros(256, device=opencl)
    with pytest.raises(RuntimeError, match="^" + re.escape(
            f"Kernel 'staged' failed on OpenCLBackend: its shared arrays take 2400000 "
            f"bytes of local memory; the OpenCL device {opencl.backend.device.name!r} "
            f"has {limit}")):
        staged(x, out)
    assert not out.numpy().any()


def test_a_failed_enqueue_is_a_runtime_error(opencl, monkeypatch):
    import pyopencl as cl

    @tack.kernel
    def doubled(a):   # its own kernel: the launch is written at its first call
        for i in range(len(a)):
            a[i] = a[i] * 2.0

    def failing(*args, **kwargs):
        raise cl.LogicError("clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")
    monkeypatch.setattr(cl, "enqueue_nd_range_kernel", failing)
    with pytest.raises(RuntimeError, match="^" + re.escape(
            "Kernel 'doubled' failed on OpenCLBackend: an OpenCL launch failed: "
            "clEnqueueNDRangeKernel failed: OUT_OF_RESOURCES")):
        doubled(tack.ones(3, device=opencl))


def test_an_element_read_copies_only_that_element(opencl, monkeypatch):
    values = np.arange(60, dtype=np.float64).reshape(3, 4, 5)
    a = tack.array(values, device=opencl)
    sizes = []
    read = type(a._buffer).read

    def counted(self, nbytes, copy, offset=0):
        sizes.append(nbytes)
        return read(self, nbytes, copy, offset)
    monkeypatch.setattr(type(a._buffer), "read", counted)
    for index in [(0, 0, 0), (2, 3, 4), (1, -1, 2), (-3, 0, -5)]:
        assert a[index] == values[index]
    assert sizes == [8] * 4
    vectors = tack.array(values.reshape(20, 3), dtype=tack.vec3(dtype=tack.f64), device=opencl)
    np.testing.assert_array_equal(vectors[7], values.reshape(20, 3)[7])
    assert tack.array(np.int16(-7), device=opencl)[()] == -7


@pytest.mark.parametrize("shape", [(1 << 40,), (1 << 32, 1 << 32)])
def test_an_allocation_past_the_device_limit_is_a_memory_error(opencl, shape):
    limit = opencl.backend.device.max_mem_alloc_size
    with pytest.raises(MemoryError, match=re.escape(
            f"bytes on an OpenCL device: it allocates at most {limit} bytes in one "
            f"buffer")):
        tack.empty(shape, tack.u8, device=opencl)


THREADS_PRINTING = """
import sys, threading
import numpy as np, tack

@tack.kernel
def shout(a, t):
    for i in range(len(a)):
        print("thread", t, "line", a[i])

dev = tack.device("opencl")
a = tack.array(np.arange(12000, dtype=np.int32), device=dev)
shout(a, -1)                       # built before the threads start

def run(t):
    for _ in range(3):
        shout(a, t)

threads = [threading.Thread(target=run, args=(t,)) for t in range(6)]
for t in threads:
    t.start()
for t in threads:
    t.join()
"""


def test_lines_printed_from_several_threads_stay_whole_through_a_pipe(opencl, tmp_path):
    # Regression: each launch's text went out in one write, which a full pipe
    # takes in pieces, so other threads' lines landed mid-line.
    import subprocess
    import sys
    import time
    script = tmp_path / "threads.py"
    script.write_text(THREADS_PRINTING)
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
    chunks = []
    while True:                       # drained slowly, so the pipe fills up
        chunk = child.stdout.read1(4096)
        if not chunk:
            break
        chunks.append(chunk)
        time.sleep(0.0005)
    assert child.wait(timeout=600) == 0
    lines = b"".join(chunks).decode().splitlines()
    whole = re.compile(r"thread -?\d line \d+")
    assert [line for line in lines if not whole.fullmatch(line)] == []
    assert len(lines) == 12000 * 19


@tack.kernel
def touch_first(a, n):
    for i in range(n):
        if i == 0:
            a[0] = 1.0


@pytest.mark.parametrize("count", [(1 << 40) - 255, 1 << 40, (1 << 40) + 1])
def test_a_launch_of_2_to_the_32_workgroups_is_refused(opencl, count):
    # Rounded up to whole workgroups these are 2^32 groups of 256: PoCL died
    # with SIGILL on them, where one more iteration had the ValueError.
    a = tack.zeros(1, device=opencl)
    limit = ((1 << 32) - 1) * 256
    with pytest.raises(ValueError, match=re.escape(
            f"Kernel 'touch_first': a launch of {count} iterations is larger than one OpenCL grid can "
            f"index ({limit})")):
        touch_first(a, count)
    assert a.numpy()[0] == 0


def test_f32_division_and_sqrt_are_correctly_rounded_where_the_device_can(opencl):
    # Without the option OpenCL 1.2 allows 2.5 ulp for f32 / and 3 for sqrt
    import pyopencl as cl
    fp = opencl.backend.device.single_fp_config
    exact = bool(fp & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT)
    assert ("-cl-fp32-correctly-rounded-divide-sqrt" in opencl.backend.build_options) \
        == exact
    x = np.random.default_rng().uniform(-1e3, 1e3, 4097).astype(np.float32)
    y = np.random.default_rng().uniform(0.5, 1e3, 4097).astype(np.float32)
    out = tack.zeros(4097, device=opencl)
    divide(tack.array(x, device=opencl), tack.array(y, device=opencl), out)
    if exact:
        np.testing.assert_array_equal(out.numpy(), x / y)


@tack.kernel
def divide(x, y, out):
    for i in range(len(x)):
        out[i] = x[i] / y[i]


@tack.kernel
def powers_of(x, out):
    for i in range(len(x)):
        out[i, 0] = x[i] ** -16
        out[i, 1] = x[i] ** -7
        out[i, 2] = x[i] ** -2
        out[i, 3] = x[i] ** -1
        out[i, 4] = x[i] ** 0
        out[i, 5] = x[i] ** 1
        out[i, 6] = x[i] ** 2
        out[i, 7] = x[i] ** 3.0
        out[i, 8] = x[i] ** 5
        out[i, 9] = x[i] ** 12
        out[i, 10] = x[i] ** 16


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_literal_integer_powers_have_the_cpus_bits(opencl, dtype):
    # both multiply out the same products (a C pow call differed in the last bit)
    rng = np.random.default_rng()
    with np.errstate(over="ignore"):
        x = np.concatenate([
            rng.standard_normal(2001) * 10.0 ** rng.uniform(-40, 40, 2001),
            rng.uniform(-3, 3, 2001),
            [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-310, -1e-310, 1e300, 1.0, -1.0],
        ]).astype(dtype)
    results = []
    for device in ("cpu", opencl):
        out = tack.zeros((len(x), 11), dtype, device=device)
        powers_of(tack.array(x, device=device), out)
        results.append(out.numpy())
    bits = f"u{np.dtype(dtype).itemsize}"
    np.testing.assert_array_equal(results[0].view(bits), results[1].view(bits))


@tack.kernel
def _slow_fill(out, reps):
    for i in range(len(out)):
        s = 0.0
        for r in range(reps):
            s += r * 0.5
        out[i] = s


def test_dropped_buffers_wait_for_the_queue_past_a_bound(opencl, monkeypatch):
    """A step loop that never waits, dropping a temporary each step, keeps at
    most MAX_PENDING_FREES dropped buffers (or Drops.limit bytes) for the queue:
    the drop past the bound waits for it (soak audit: 200 steps held 200
    temporaries, 800 MiB, until the end)."""
    from tack.runtime.opencl import backend as cl_backend
    monkeypatch.setattr(cl_backend, "MAX_PENDING_FREES", 8)
    drops = opencl.backend.drops
    opencl.synchronize()
    assert drops.count == 0
    for step in range(7):
        temporary = tack.empty(1000, device=opencl)
        _slow_fill(temporary, 10)
        del temporary
    assert drops.count == 7
    temporary = tack.empty(1000, device=opencl)
    _slow_fill(temporary, 10)
    del temporary                       # the eighth: waits, and counts from zero
    assert drops.count == 0 and drops.nbytes == 0
    monkeypatch.setattr(drops, "limit", 1 << 16)
    big = tack.empty(1 << 15, tack.f32, device=opencl)   # 128 KiB, past the limit
    _slow_fill(big, 10)
    values = big.numpy()
    del big
    assert drops.count == 0
    np.testing.assert_array_equal(values, np.full(1 << 15, 22.5, np.float32))
    tack.empty(3, device=opencl)          # dropped at once: counted until the next wait
    assert drops.count == 1
    opencl.synchronize()
    assert drops.count == 0
