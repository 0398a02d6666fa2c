"""The Level Zero backend (spec 003 "Devices"), without an Intel GPU.

* start-up through the public API: with the loader (Debian's libze1, which CI
  installs) but no driver, ``device_count`` is 0 and ``tack.device`` says why;
  without the loader, "missing dependency."; an incomplete
  ``external_context`` is a ValueError before anything starts;
* a device over a fake loader (internal: ``tack.runtime.level_zero.ze._library``)
  whose memory is host memory and whose launches are recorded, while clang
  and llvm-spirv make real SPIR-V: the module's bytes, kernel arguments
  (scalars by value, in their types' sizes), groups, ``memory_space``, errors at the next wait, deferred
  frees, ``external_context`` and the refusals.
"""

from __future__ import annotations

import ctypes
import os
import re

import numpy as np
import pytest

import tack
from dropped_classes import launch_and_drop   # tests/ is on sys.path

INSTALL = ("Install it with: apt-get install libze1 clang-14 llvm-spirv-14 (the Level "
           "Zero loader, and the compilers that make SPIR-V) and Intel's GPU driver "
           "(intel-level-zero-gpu).")


def _loader() -> bool:
    try:
        ctypes.CDLL("libze_loader.so.1")
        return True
    except OSError:
        return False


@tack.kernel
def saxpy(x, y, a):
    for i in range(len(x)):
        y[i] = a * x[i] + y[i]


def test_start_up_without_a_driver_says_why():
    assert tack.device_count("level_zero") == 0
    with pytest.raises(RuntimeError) as info:
        tack.device("level_zero")
    message = str(info.value)
    if _loader():
        assert message.startswith("Cannot start the 'level_zero' device on ")
        assert "No Level Zero driver could start: zeInit failed with ZE_RESULT_" in message
    else:
        assert message.startswith("Cannot start the 'level_zero' device: missing "
                                  "dependency. (the Level Zero loader")
    assert message.endswith(INSTALL)


def test_an_incomplete_external_context_is_a_value_error():
    with pytest.raises(ValueError, match="^" + re.escape(
            "external_context takes a dict with the 'driver', 'device' and 'context' "
            "handles of a Level Zero context; got context, driver")):
        tack.device("level_zero", external_context={"driver": 1, "context": 2})


# -- a fake loader --------------------------------------------------------------------

def _value(x):
    return x.value if hasattr(x, "value") else x


class FakeZe:
    """The loader's calls, with C's out-parameters reached through ``byref``."""

    def __init__(self):
        self.memory, self.host = {}, set()
        self.args, self.launches, self.spirv, self.freed = {}, [], [], []
        self.sync_error, self.syncs = 0, 0
        self.module_flags = 1 << 2     # ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS
        # A launch's effect on memory (``effect(args)`` gives it, when a test
        # sets one) happens at once on an in-order list; otherwise at the next
        # barrier, an order the Level Zero spec allows ("only guaranteed to
        # start in the same order"), while a copy completes at once.
        self.effect, self.pending, self.in_order = None, [], False
        self.destroyed = []

    def _out(self, ref, value):
        ref._obj.value = value
        return 0

    def zeInit(self, flags):
        return 0

    def zeDriverGet(self, count, found):
        if found is not None:
            found[0] = 0xD0
        return self._out(count, 1)

    def zeDeviceGet(self, driver, count, found):
        if found is not None:
            found[0], found[1] = 0xE0, 0xE1
        return self._out(count, 2)

    def zeDeviceGetProperties(self, device, props):
        props._obj.name = b"Fake Arc A770"
        return 0

    def zeDeviceGetModuleProperties(self, device, props):
        props._obj.fp64flags = 1
        props._obj.flags = self.module_flags
        return 0

    def zeContextCreate(self, driver, desc, context):
        return self._out(context, 0xC0)

    def zeCommandListCreateImmediate(self, context, device, desc, out):
        assert desc._obj.mode == 2   # asynchronous
        self.in_order = bool(desc._obj.flags & 0x2)   # ZE_COMMAND_QUEUE_FLAG_IN_ORDER
        return self._out(out, 0x11)

    def zeEventPoolCreate(self, context, desc, count, devices, pool):
        return self._out(pool, 0x21)

    def zeEventCreate(self, pool, desc, event):
        return self._out(event, 0x22)

    def _allocate(self, size, pointer, host):
        buffer = np.zeros(_value(size), np.uint8)
        self.memory[buffer.ctypes.data] = buffer
        if host:
            self.host.add(buffer.ctypes.data)
        return self._out(pointer, buffer.ctypes.data)

    def zeMemAllocDevice(self, context, desc, size, alignment, device, pointer):
        return self._allocate(size, pointer, False)

    def zeMemAllocHost(self, context, desc, size, alignment, pointer):
        return self._allocate(size, pointer, True)

    def zeMemFree(self, context, pointer):
        self.freed.append(_value(pointer))
        self.memory.pop(_value(pointer))
        return 0

    def zeCommandListAppendMemoryCopy(self, lst, dst, src, size, event, n, waits):
        ctypes.memmove(_value(dst), _value(src), _value(size))
        return 0

    def zeCommandListAppendBarrier(self, lst, event, n, waits):
        for job in self.pending:
            job()
        self.pending.clear()
        return 0

    def zeEventHostSynchronize(self, event, timeout):
        self.syncs += 1
        error, self.sync_error = self.sync_error, 0
        return error

    def zeEventHostReset(self, event):
        return 0

    def zeModuleCreate(self, context, device, desc, module, log):
        d = desc._obj
        self.spirv.append(ctypes.string_at(d.pInputModule, d.inputSize))
        self.build_flags = d.pBuildFlags
        return self._out(module, 0x33)

    def zeModuleBuildLogDestroy(self, log):
        return 0

    def zeKernelCreate(self, module, desc, kernel):
        self.kernel_name = desc._obj.pKernelName
        return self._out(kernel, 0x44)

    def zeKernelDestroy(self, kernel):
        self.destroyed.append(("kernel", _value(kernel)))
        return 0

    def zeModuleDestroy(self, module):
        self.destroyed.append(("module", _value(module)))
        return 0

    def zeKernelSetGroupSize(self, kernel, x, y, z):
        self.group = (_value(x), _value(y), _value(z))
        return 0

    def zeKernelSetArgumentValue(self, kernel, index, size, pointer):
        self.args[index] = ctypes.string_at(pointer, size)   # the argument's bytes
        return 0

    def zeCommandListAppendLaunchKernel(self, lst, kernel, groups, event, n, waits):
        self.launches.append((groups._obj.groupCountX, dict(self.args)))
        if self.effect is not None:
            job = self.effect(dict(self.args))
            job() if self.in_order else self.pending.append(job)
        return 0

    def zeMemGetAllocProperties(self, context, pointer, props, device):
        address = _value(pointer)
        known = any(a <= address < a + b.size for a, b in self.memory.items())
        props._obj.type = (0 if not known else 1 if address in self.host else 2)
        return 0


@pytest.fixture
def fake(monkeypatch):
    from tack.runtime.level_zero import spirv, ze
    try:
        spirv.tools()
    except RuntimeError as exc:
        if os.environ.get("TACK_REQUIRE_COMPILERS", "").strip() not in ("", "0"):
            pytest.fail(f"{exc}; TACK_REQUIRE_COMPILERS is set")
        pytest.skip(str(exc))
    loader = FakeZe()
    monkeypatch.setattr(ze, "_library", [loader])
    return loader


def _device(index=0, **options):
    from tack.runtime.device import Device
    from tack.runtime.level_zero.backend import LevelZeroBackend
    backend = LevelZeroBackend(index, **options)
    backend.memory_domain = ("fake-level-zero", index)
    return Device(backend, "level_zero", index)


def _word(data: bytes) -> int:
    assert len(data) == 8
    return int.from_bytes(data, "little")


def test_kernels_become_spirv_and_launch_with_their_arguments(fake, rng):
    dev = _device()
    values = rng.values(tack.f32, 1001)
    with dev:
        x, y = tack.array(values), tack.zeros(1001)
        saxpy(x, y, 2.5)
        np.testing.assert_array_equal(x.numpy(), values)
    assert fake.spirv[-1][:4] == (0x07230203).to_bytes(4, "little")   # SPIR-V magic
    assert fake.kernel_name == b"tack_kernel_saxpy" and fake.group == (256, 1, 1)
    groups, args = fake.launches[-1]
    assert groups == 4 and [_word(args[k]) for k in (0, 1, 3)] == [x._ptr, y._ptr, 1001]
    assert args[2] == np.float32(2.5).tobytes()   # the scalar by value, 4 bytes
    assert dev.backend.cache_target() == ("level_zero", "Fake Arc A770")
    assert x.__dlpack_device__() == (14, 0)   # kDLOneAPI


@tack.kernel
def scale_shift(x, y, a, b, k):
    for i in range(len(x)):
        y[i] = a * x[i] + b + k


def test_scalars_go_by_value_in_their_types_and_changing_them_never_waits(fake):
    dev = _device()
    with dev:
        x, y = tack.zeros(5, tack.f64), tack.zeros(5, tack.f64)
        source = tack.inspect(scale_shift, x, y, 0.5, 1.5, 2, mode="source")
        assert "double tack_var_a, double tack_var_b, int tack_var_k, long tack_total" in source
        dev.synchronize()
        syncs = fake.syncs
        for step in range(4):
            scale_shift(x, y, 0.5 * step, -1.5 * step, 3 - step)
        assert fake.syncs == syncs   # no wait for a pack buffer
    for step, (_, args) in enumerate(fake.launches[-4:]):
        assert args[2] == np.float64(0.5 * step).tobytes()
        assert args[3] == np.float64(-1.5 * step).tobytes()   # -0.0 keeps its sign
        assert args[4] == np.int32(3 - step).tobytes()
        assert [_word(args[k]) for k in (0, 1, 5)] == [x._ptr, y._ptr, 5]


@tack.kernel
def last_of(x, out):
    for i in range(len(out)):
        out[i] = x[len(x) - 1]


def test_a_length_read_at_run_time_is_an_i64_argument_after_the_others(fake):
    """Past four lengths, a length the body reads is a hidden ``long``
    argument, set from each call's array."""
    dev = _device()
    with dev:
        x, out = tack.zeros(300), tack.zeros(4)
        for n in [10, 20, 30, 40, 50, 60, 7]:
            last_of(x[:n], out)
            _, args = fake.launches[-1]
            if n in (50, 60, 7):
                assert [_word(args[k]) for k in (0, 1, 2, 3)] == [x._ptr, out._ptr, n, 4]
        source = tack.inspect(last_of, x[:9], out, mode="source")
        assert "long tack_var__u_utack_ushape0_ux, long tack_total" in source


@tack.kernel
def checked_print(a, b):
    for i in range(len(b)):
        print("b", b[i + 1], a)


def test_print_and_debug_mode_become_spirv_with_their_hidden_arrays(fake, monkeypatch,
                                                                     capsys):
    """A debug kernel that prints: its arguments are b, the errors and extents
    arrays, the print buffer; what the kernel leaves in the print buffer and
    the errors array is printed and raised after the launch."""
    launch = fake.zeCommandListAppendLaunchKernel

    def kernel(lst, handle, groups, event, n, waits):
        code = launch(lst, handle, groups, event, n, waits)
        args = fake.launches[-1][1]
        if len(args) == 6:   # a (by value), b, errors, extents, print buffer, count
            errors, extents, words = (_word(args[k]) for k in (2, 3, 4))
            assert list((ctypes.c_int64 * 8).from_address(extents)) == [3] + [0] * 7
            (ctypes.c_int64 * 5).from_address(errors)[:] = [1, 0, 3, 0, 3]
            (ctypes.c_uint64 * 5).from_address(words)[:] = [3, 0, 0, 7, 5]
        return code

    monkeypatch.setattr(fake, "zeCommandListAppendLaunchKernel", kernel)
    dev = _device()
    tack.set_debug(True)
    try:
        with dev:
            with pytest.raises(IndexError, match=re.escape(
                    "Kernel 'checked_print': index 3 is out of bounds (extent 3) in b[i + 1]")):
                checked_print(5, tack.zeros(3, tack.i64))
    finally:
        tack.set_debug(False)
    assert capsys.readouterr().out == "b 7 5\n"


def test_a_device_without_64_bit_atomics_refuses_what_needs_them(fake):
    fake.module_flags = 0
    dev = _device()
    assert tack.i64 not in dev.backend.atomic_dtypes

    @tack.kernel
    def shows(a):            # new here: no variant of it is built yet
        for i in range(len(a)):
            print(a[i])

    @tack.kernel
    def reads_next(a, out):
        for i in range(len(out)):
            out[i] = a[i + 1]

    with dev:
        with pytest.raises(RuntimeError, match=re.escape(
                "print() needs 64-bit atomics (ZE_DEVICE_MODULE_FLAG_INT64_ATOMICS), "
                "which the Level Zero device 'Fake Arc A770' lacks")):
            shows(tack.zeros(3))
        tack.set_debug(True)
        try:
            with pytest.raises(RuntimeError, match=re.escape(
                    "debug mode needs 64-bit atomics")):
                reads_next(tack.zeros(3), tack.zeros(2))
        finally:
            tack.set_debug(False)


def test_drops_are_freed_at_the_next_wait_and_errors_raise_there(fake):
    dev = _device()
    with dev:
        a = tack.zeros(16)
        address = a._ptr
        del a
        assert address not in fake.freed   # a queued launch may still use it
        dev.synchronize()
        assert address in fake.freed
        made = [tack.zeros(4)._ptr for _ in range(300)]   # dropped at once
        assert set(made[:256]) <= set(fake.freed)   # a wait every 256 drops
        dropped, freed = tack.zeros(4)._ptr, len(fake.freed)
        fake.sync_error = 0x70000001   # ZE_RESULT_ERROR_DEVICE_LOST
        with pytest.raises(RuntimeError, match=re.escape(
                "a Level Zero launch or copy on this device failed: "
                "ZE_RESULT_ERROR_DEVICE_LOST")):
            dev.synchronize()
        assert len(fake.freed) == freed   # the failed wait did not see launches end
        dev.synchronize()
        assert dropped in fake.freed[freed:]


@tack.kernel
def set_ones(out):
    for i in range(len(out)):
        out[i] = 1.0


def test_a_copy_after_a_launch_completes_after_it(fake):
    """The command list is in order: without it, the fake (as the spec allows)
    completes the launch at the wait after the copy, over the copied values."""
    def ones(args):
        return lambda: ctypes.memmove(_word(args[0]), np.ones(4, np.float32).tobytes(), 16)
    dev = _device()
    with dev:
        out = tack.zeros(4)
        fake.effect = ones
        set_ones(out)
        tack.copyto(out, np.full(4, 5.0, np.float32))
        fake.effect = None
        np.testing.assert_array_equal(out.numpy(), np.full(4, 5.0, np.float32))


def test_modules_are_built_with_64_bit_buffer_offsets(fake):
    @tack.kernel
    def set_twos(out):   # its own kernel: built (and its module made) here
        for i in range(len(out)):
            out[i] = 2.0

    dev = _device()
    with dev:
        set_twos(tack.zeros(4))
    assert fake.build_flags == b"-ze-opt-greater-than-4GB-buffer-required"


def test_a_dropped_variants_kernel_and_module_are_destroyed_at_the_next_wait(fake):
    dev = _device()
    with dev:
        x = tack.ones(16)
        dev.synchronize()
        launch_and_drop(x)   # each class collected with its variants
        assert fake.destroyed == []   # not before a wait: a queued launch may use them
        dev.synchronize()
    assert fake.destroyed == [("kernel", 0x44), ("module", 0x33)] * 2


def test_memory_space_and_array_from_ptr(fake):
    dev = _device()
    with dev:
        a = tack.zeros(8)
    space = dev.backend.memory_space
    assert space(a._ptr) == "level_zero" and space(np.zeros(2).ctypes.data) == "cpu"
    assert space("not an address") == "cpu"
    with pytest.raises(ValueError, match=re.escape(
            "Pointer is in 'cpu' memory but the device is 'Level Zero'.")):
        tack.array_from_ptr(np.zeros(4).ctypes.data, (4,), tack.f64, device=dev)
    wrapped = tack.array_from_ptr(a._ptr, (8,), tack.f32, device=dev)
    assert wrapped.numpy().tolist() == [0.0] * 8


def test_external_context_and_device_numbers(fake):
    dev = _device(1, external_context={"driver": 0xD0, "device": 0xE1, "context": 0xC5})
    assert dev.backend.context.value == 0xC5 and not dev.backend.owns_context
    with pytest.raises(ValueError, match=re.escape(
            "level_zero:1: the external_context's device is level_zero:0; name that "
            "device, or pass its own context")):
        _device(1, external_context={"driver": 0xD0, "device": 0xE0, "context": 0xC5})
    with pytest.raises(ValueError, match=re.escape(
            "level_zero:2: the first Level Zero driver has 2 devices")):
        _device(2)


def test_exports_are_refused(fake):
    dev = _device()
    with dev:
        with pytest.raises(RuntimeError, match=re.escape(
                "export_memory() is not supported on level_zero:0")):
            tack.zeros(4).export_memory()
