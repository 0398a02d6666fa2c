"""Spec 003, Devices: tack.device, tack.Device, device_count, the default device,
``with d:``, tack.sync, tack.sync_async and Array.numpy_async.

Only the CPU backend is part of this build, so every other type fails to start
with a RuntimeError that names it.
"""

from __future__ import annotations

import asyncio
import re
import threading

import numpy as np
import pytest

import tack

OTHER_TYPES = ("cuda", "hip", "level_zero", "metal")


@tack.kernel
def add_one(a, out):
    for i in range(len(out)):
        out[i] = a[i] + 1


# -- tack.device(spec, **options) ---------------------------------------------------

def test_cpu_device_members():
    d = tack.device()
    assert d is tack.device("cpu")
    assert (d.type, d.index) == ("cpu", 0)
    assert str(d) == "cpu"
    assert repr(d) == "Device('cpu')"
    assert d.synchronize() is None


def test_a_device_passed_as_spec_is_returned_as_it_is():
    d = tack.device("cpu", num_threads=1)
    assert tack.device(d) is d
    assert tack.device(tack.device("cpu")) is tack.device("cpu")


def test_options_with_a_device_raise_type_error():
    with pytest.raises(TypeError, match=re.escape(
            "options make a new device: pass a device spec, not a Device")):
        tack.device(tack.device("cpu"), num_threads=2)


@pytest.mark.parametrize("spec,name", [(3, "int"), (None, "NoneType"),
                                       (b"cpu", "bytes"), (("cpu",), "tuple")])
def test_spec_neither_string_nor_device_raises_type_error(spec, name):
    with pytest.raises(TypeError, match=re.escape(
            f"a device is a Device or a string such as 'cpu' or 'cuda:0', not {name}")):
        tack.device(spec)


@pytest.mark.parametrize("spec,type_", [("vulkan", "vulkan"), ("CPU", "CPU"),
                                        ("", ""), ("sycl:0", "sycl")])
def test_unknown_device_type_raises_value_error(spec, type_):
    with pytest.raises(ValueError, match=re.escape(
            f"Unknown device type: '{type_}'. Available: cpu, cuda, hip, level_zero, "
            f"metal, opencl")):
        tack.device(spec)


@pytest.mark.parametrize("spec,fix", [
    ("cpu:0", "write 'cpu'"), ("cpu:x", "write 'cpu'"), ("metal:0", "write 'metal'"),
    ("cuda:x", "write 'cuda' or 'cuda:N'"), ("cuda:", "write 'cuda' or 'cuda:N'"),
    ("hip:-1", "write 'hip' or 'hip:N'"),
    ("level_zero:1.5", "write 'level_zero' or 'level_zero:N'"),
    ("opencl:\u00b2", "write 'opencl' or 'opencl:N'"),   # a superscript two
    ("cuda:\u0661", "write 'cuda' or 'cuda:N'"),         # an Arabic-Indic one
])
def test_number_on_cpu_or_metal_or_non_numeric_suffix_raises_value_error(spec, fix):
    with pytest.raises(ValueError, match=re.escape(f"'{spec}' is not a device: {fix}")):
        tack.device(spec)


@pytest.mark.parametrize("options,named", [({"foo": 1}, "foo"),
                                           ({"foo": 1, "bar": 2}, "bar, foo")])
def test_option_not_in_device_options_raises_value_error(options, named):
    with pytest.raises(ValueError, match=re.escape(
            f"The 'cpu' device does not accept the option(s) {named}. "
            f"Accepted: num_threads.")):
        tack.device("cpu", **options)


@pytest.mark.parametrize("spec", OTHER_TYPES + ("cuda:1", "level_zero:0"))
def test_backend_not_in_this_build_cannot_start(spec):
    type_ = spec.partition(":")[0]
    if type_ == "cuda" and tack.device_count("cuda"):
        pytest.skip("a CUDA device is present")
    # "... device: <why>" for a backend not built (or a missing dependency);
    # "... device on Linux. <why>" for a built one without a driver (CUDA here).
    with pytest.raises(RuntimeError, match=re.escape(f"Cannot start the '{type_}' device")):
        tack.device(spec)


def test_an_import_error_in_a_backend_constructor_is_a_missing_dependency(monkeypatch):
    from tack.runtime import device as devices

    class Needy:
        device_options = ()

        def __init__(self, index):
            raise ImportError("No module named 'fakedep'")
    monkeypatch.setitem(devices._LOADERS, "opencl", lambda: Needy)
    with pytest.raises(RuntimeError, match=re.escape(
            "Cannot start the 'opencl' device: missing dependency. (No module named "
            "'fakedep') Install it with: pip install pyopencl")):
        tack.device("opencl:7")


def test_a_backend_that_cannot_start_is_reported_before_its_options():
    with pytest.raises(RuntimeError, match=re.escape("Cannot start the 'metal' device")):
        tack.device("metal", num_threads=2)


@pytest.mark.parametrize("value", ["abc", 2.0, True])
def test_num_threads_must_be_an_integer(value):
    with pytest.raises(ValueError, match=re.escape(
            f"num_threads must be an integer, got {value!r}")):
        tack.device("cpu", num_threads=value)


@pytest.mark.parametrize("value", [4097, 10**12])
def test_num_threads_past_the_limit_is_refused_before_any_thread_exists(value):
    with pytest.raises(ValueError, match=re.escape(
            f"num_threads must be at most 4096, got {value}")):
        tack.device("cpu", num_threads=value)


def test_num_threads_takes_a_numpy_integer(rng):
    dev = tack.device("cpu", num_threads=np.int64(2))
    host = rng.values(tack.f64, 9)
    with dev:
        a = tack.array(host)
        assert a.sum() == pytest.approx(host.sum())


# -- identity ------------------------------------------------------------------------

def test_without_options_the_same_device_every_time():
    assert tack.device("cpu") is tack.device("cpu")
    assert tack.device("cpu") == tack.device("cpu")
    assert hash(tack.device("cpu")) == hash(tack.device("cpu"))


def test_with_options_every_call_makes_a_new_device():
    plain = tack.device("cpu")
    d1 = tack.device("cpu", num_threads=2)
    d2 = tack.device("cpu", num_threads=2)
    assert d1 is not d2
    assert d1 != d2 and d1 != plain and d2 != plain
    assert d1 == d1 and hash(d1) == hash(d1)
    assert len({plain, d1, d2, tack.device("cpu")}) == 3
    assert (d1.type, d1.index, str(d1), repr(d1)) == ("cpu", 0, "cpu", "Device('cpu')")
    assert d1 != "cpu"


def test_num_threads_option_sets_the_worker_count():
    # backend.num_threads is internal; it is how the option is observable.
    assert tack.device("cpu", num_threads=3).backend.num_threads == 3
    assert tack.device("cpu", num_threads=1).backend.num_threads == 1
    assert tack.device("cpu", num_threads=0).backend.num_threads == 1
    assert tack.device("cpu", num_threads=-4).backend.num_threads == 1


# -- with d: --------------------------------------------------------------------------

def test_with_makes_the_default_and_nests():
    outer = tack.get_default_device()
    d1 = tack.device("cpu", num_threads=1)
    d2 = tack.device("cpu", num_threads=2)
    with d1 as entered:
        assert entered is d1
        assert tack.get_default_device() is d1
        assert tack.zeros(3).device is d1
        with d2:
            assert tack.get_default_device() is d2
            assert tack.empty(3).device is d2
        assert tack.get_default_device() is d1
    assert tack.get_default_device() is outer


def test_with_restores_the_default_when_the_block_raises():
    outer = tack.get_default_device()
    d1 = tack.device("cpu", num_threads=1)
    with pytest.raises(KeyError):
        with d1:
            raise KeyError("inside")
    assert tack.get_default_device() is outer


def test_with_applies_to_its_own_thread_only():
    main_default = tack.get_default_device()
    d1 = tack.device("cpu", num_threads=1)
    d2 = tack.device("cpu", num_threads=2)
    entered, release = threading.Event(), threading.Event()
    seen = {}

    def worker():
        seen["before"] = tack.get_default_device()
        with d2:
            seen["inside"] = tack.get_default_device()
            entered.set()
            release.wait(10)
        seen["after"] = tack.get_default_device()

    with d1:
        thread = threading.Thread(target=worker)
        thread.start()
        assert entered.wait(10)
        assert tack.get_default_device() is d1  # the other thread's block is not ours
        release.set()
        thread.join(10)
    assert seen == {"before": main_default, "inside": d2, "after": main_default}
    assert tack.get_default_device() is main_default


# -- device_count -------------------------------------------------------------------------

def test_device_count():
    assert tack.device_count("cpu") == 1
    assert tack.device_count(type="cpu") == 1   # the parameter's name, as the spec has it
    for type_ in OTHER_TYPES:
        assert tack.device_count(type_) == 0, type_


@pytest.mark.parametrize("type_", ["vulkan", "cpu:0"])
def test_device_count_of_an_unknown_type_raises_value_error(type_):
    with pytest.raises(ValueError, match=re.escape(f"Unknown device type: '{type_}'.")):
        tack.device_count(type_)


@pytest.mark.parametrize("type_", [3, None, tack.device("cpu")])
def test_device_count_of_something_not_a_string_raises_type_error(type_):
    # as tack.device(3) does (it raised ValueError)
    with pytest.raises(TypeError, match=re.escape(
            "device_count() takes a device type such as 'cpu' or 'cuda', not "
            f"{type(type_).__name__}")):
        tack.device_count(type_)


# -- set_default_device / get_default_device -------------------------------------------------

def test_set_default_device_returns_the_device_and_allocates_there():
    assert tack.set_default_device("cpu") is tack.device("cpu")
    assert tack.get_default_device() is tack.device("cpu")
    d = tack.set_default_device("cpu", num_threads=1)
    assert d != tack.device("cpu") and d.backend.num_threads == 1
    assert tack.get_default_device() is d
    assert tack.zeros(2).device is d
    assert tack.set_default_device(d) is d


def test_set_default_device_in_another_thread_is_process_wide():
    d = tack.device("cpu", num_threads=1)
    thread = threading.Thread(target=tack.set_default_device, args=(d,))
    thread.start()
    thread.join(10)
    assert tack.get_default_device() is d


def test_with_blocks_of_asyncio_tasks_apply_to_their_own_task():
    """Two tasks on one thread whose blocks span an ``await``: each sees its
    own block, and leaving one restores that task's default (a per-thread
    stack let one task's exit pop the other's block)."""
    main_default = tack.get_default_device()
    one, two = tack.device("cpu", num_threads=1), tack.device("cpu", num_threads=2)
    seen = {}

    async def task(name, dev, first, second):
        with dev:
            await first.wait()
            second.set()
            await asyncio.sleep(0)
            seen[name, "inside"] = tack.get_default_device()
            seen[name, "array"] = tack.zeros(3).device
        seen[name, "after"] = tack.get_default_device()

    async def main():
        a_go, b_go = asyncio.Event(), asyncio.Event()
        a_go.set()
        await asyncio.gather(task("a", one, a_go, b_go), task("b", two, b_go, asyncio.Event()))

    asyncio.run(main())
    assert seen["a", "inside"] is one and seen["a", "array"] is one
    assert seen["b", "inside"] is two and seen["b", "array"] is two
    assert seen["a", "after"] is main_default and seen["b", "after"] is main_default
    assert tack.get_default_device() is main_default


@pytest.mark.parametrize("other_block_open", [False, True])
def test_a_task_made_in_a_block_uses_it_only_while_the_block_is_open(other_block_open):
    """A task created inside ``with d:`` inherits the block; once the block is
    left, the task gets the default device, whatever other threads do (it got
    the closed block's device whenever another thread had a block open)."""
    main_default = tack.get_default_device()
    d = tack.device("cpu", num_threads=1)
    seen = {}
    opened, done = threading.Event(), threading.Event()

    def other_thread():
        with tack.device("cpu", num_threads=2):
            opened.set()
            done.wait(30)
    thread = threading.Thread(target=other_thread)
    if other_block_open:
        thread.start()
        assert opened.wait(30)

    async def task(left):
        seen["inside"] = tack.get_default_device()
        await left.wait()
        seen["after"] = tack.get_default_device()
        seen["array"] = tack.zeros(2).device

    async def main():
        left = asyncio.Event()
        with d:
            child = asyncio.create_task(task(left))
            await asyncio.sleep(0)
        left.set()
        await child

    try:
        asyncio.run(main())
    finally:
        done.set()
        if other_block_open:
            thread.join(30)
    assert seen["inside"] is d
    assert seen["after"] is main_default and seen["array"] is main_default


def test_a_with_block_overrides_the_process_default():
    d1 = tack.set_default_device("cpu", num_threads=1)
    d2 = tack.device("cpu", num_threads=2)
    with d2:
        assert tack.get_default_device() is d2
    assert tack.get_default_device() is d1


def test_failed_set_default_device_keeps_the_previous_default():
    previous = tack.set_default_device("cpu", num_threads=1)
    with pytest.raises(RuntimeError, match=re.escape("Cannot start the 'cuda' device")):
        tack.set_default_device("cuda")
    with pytest.raises(ValueError, match=re.escape("Unknown device type: 'vulkan'")):
        tack.set_default_device("vulkan")
    with pytest.raises(TypeError, match=re.escape("options make a new device")):
        tack.set_default_device(previous, num_threads=2)
    assert tack.get_default_device() is previous


def test_arrays_keep_their_device_across_a_switch_and_keep_working(rng):
    cpu = tack.device("cpu")
    tack.set_default_device(cpu)
    host = rng.values(tack.i32, 101) // 2
    a = tack.array(host)
    d = tack.set_default_device("cpu", num_threads=1)
    out = tack.empty(101, tack.i32)
    assert a.device is cpu and out.device is d
    add_one(a, out)
    np.testing.assert_array_equal(out.numpy(), host + 1, err_msg=repr(rng))
    tack.set_default_device(cpu)
    add_one(out, a)
    np.testing.assert_array_equal(a.numpy(), host + 2, err_msg=repr(rng))


# -- TACK_NO_REINIT -----------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["1", "yes", "true", " On ", "TRUE", "anything"])
def test_no_reinit_keeps_an_existing_default(monkeypatch, value):
    current = tack.set_default_device("cpu", num_threads=1)
    monkeypatch.setenv("TACK_NO_REINIT", value)
    assert tack.set_default_device("cpu") is current
    assert tack.set_default_device("cpu", num_threads=3) is current
    # spec and options are not even validated
    assert tack.set_default_device("vulkan") is current
    assert tack.set_default_device("cpu", bogus=1) is current
    assert tack.get_default_device() is current


@pytest.mark.parametrize("value", ["", "0", "false", " NO ", "Off", "  "])
def test_no_reinit_off_values(monkeypatch, value):
    tack.set_default_device("cpu", num_threads=1)
    monkeypatch.setenv("TACK_NO_REINIT", value)
    assert tack.set_default_device("cpu") is tack.device("cpu")
    assert tack.get_default_device() is tack.device("cpu")


# -- tack.sync, sync_async, numpy_async -----------------------------------------------------------

def test_sync_waits_for_every_device(rng):
    host = rng.values(tack.i32, 33) // 2
    a, out = tack.array(host), tack.empty(33, tack.i32)
    d = tack.device("cpu", num_threads=2)
    b = tack.array(host, device=d)
    add_one(a, out)
    assert tack.sync() is None
    assert d.synchronize() is None
    np.testing.assert_array_equal(out.numpy(), host + 1, err_msg=repr(rng))
    np.testing.assert_array_equal(b.numpy(), host, err_msg=repr(rng))


def test_sync_async_and_numpy_async(rng):
    host = rng.values(tack.i32, 7) // 2
    a, out = tack.array(host), tack.empty(7, tack.i32)

    async def main():
        add_one(a, out)
        await tack.sync_async()
        return await out.numpy_async()

    values = asyncio.run(main())
    assert isinstance(values, np.ndarray)
    np.testing.assert_array_equal(values, host + 1, err_msg=repr(rng))
    values[0] = 12345  # numpy_async returns a copy, as numpy() does
    assert out[0] == host[0] + 1


def test_devices_made_with_options_are_not_all_kept_by_the_kernels_they_ran():
    import gc
    import weakref

    @tack.kernel
    def scale(x, a):
        for i in range(len(x)):
            x[i] = x[i] * a

    kept = []
    for k in range(12):
        dev = tack.device("cpu", num_threads=2)
        kept.append(weakref.ref(dev))
        with dev:
            x = tack.ones(1 << 16)   # a fill kernel of Tack's own runs on dev too
            scale(x, 2.0)
            assert x.numpy()[[0, -1]].tolist() == [2.0, 2.0]
        del dev, x
    gc.collect()
    alive = [ref() for ref in kept if ref() is not None]
    assert len(alive) <= 4 and kept[0]() is None   # the most recent few at most


@pytest.mark.parametrize("where", ["argument", "attribute"])
def test_device_class_calls_on_devices_made_with_options_are_not_all_kept(opencl, where):
    # A kernel with a device-class argument, its array on a CPU device made
    # with options, called under a default device that cannot reach it (so
    # each call runs on the array's device).
    import gc
    import weakref

    @tack.device_class
    class Gain:
        def __init__(self, factor, out=None):
            self.factor = factor
            self.out = out

    @tack.kernel
    def scale(gain, x):
        for i in range(len(x)):
            x[i] = x[i] * gain.factor

    @tack.kernel
    def fill(gain):
        for i in range(len(gain.out)):
            gain.out[i] = gain.factor

    kept = []
    for k in range(12):
        dev = tack.device("cpu", num_threads=2)
        kept.append(weakref.ref(dev))
        x = tack.ones(5, device=dev)
        with opencl:
            if where == "argument":
                scale(Gain(3.0), x)
            else:
                fill(Gain(3.0, x))
        assert x.numpy().tolist() == [3.0] * 5
        del dev, x
    gc.collect()
    alive = [ref() for ref in kept if ref() is not None]
    assert len(alive) <= 4 and kept[0]() is None   # the most recent few at most


def test_a_device_per_task_does_not_grow_the_kernels_tables():
    # Arrays of a device made with options, used outside `with`: the call runs
    # on the shared default device. Each new device takes a dead one's place
    # in the call signatures, so the signature tables stop growing.
    import gc
    import tracemalloc

    @tack.kernel
    def saxpy(x, y, a):
        for i in range(len(x)):
            y[i] = a * x[i] + y[i]

    def task():
        dev = tack.device("cpu", num_threads=2)
        # large enough to fan out: the device's pool starts (and holds it in a
        # reference cycle, so it dies at a collection, not at once)
        x, y = tack.ones(300_000, device=dev), tack.zeros(300_000, device=dev)
        saxpy(x, y, 2.0)
        assert y.numpy()[[0, -1]].tolist() == [2.0, 2.0]

    for _ in range(120):   # as many devices as wait for a collection at once
        task()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(120):
            task()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # It was about 6 KB per task (a runner each: 720 KB here). What stays is
    # the bounded tables refilling and pools waiting for their finalizers:
    # 85-155 KB measured on the 2-core CI machine, old code and new alike.
    assert grown < 300 * 1024, grown


def test_a_reused_device_made_with_options_keeps_all_its_signatures():
    # The bound counts devices, not signatures: one such device used with six
    # signatures keeps six runners (it evicted one per call, a slow path each).
    @tack.kernel
    def bump(x):
        for i in range(len(x)):
            x[i] = x[i] + 1

    dev = tack.device("cpu", num_threads=2)
    arrays = [tack.zeros(3, dtype, device=dev)
              for dtype in (tack.f32, tack.f64, tack.i8, tack.i16, tack.i32, tack.i64)]
    with dev:
        for _ in range(2):
            for x in arrays:
                bump(x)
    assert [x.numpy().tolist() for x in arrays] == [[2, 2, 2]] * 6
    assert len(bump._plain.table) == 6   # white box: every signature's runner stays


def test_a_copied_device_is_the_device():
    import copy
    dev = tack.device("cpu", num_threads=2)
    assert copy.copy(dev) is dev and copy.deepcopy(dev) is dev
    assert copy.copy(tack.device("cpu")) is tack.device("cpu")
