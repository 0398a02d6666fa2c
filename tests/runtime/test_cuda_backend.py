"""The CUDA backend (spec 003 "Devices", spec 000 "The backend build callback").

Two parts, without a GPU (the kernels are in tests/cuda_kernels.py; the
tests on a GPU are in test_cuda_gpu.py):

* start-up failures through the public API: a missing cuda-python or NVRTC
  ("missing dependency."), no driver ("on Linux."), ``device_count`` 0;
* the build path without a GPU: a device over a fake driver (internal:
  ``tack.runtime.cuda.driver.modules`` and ``tack.runtime.device.Device``)
  whose memory is host memory and whose launches are recorded, while NVRTC
  compiles every kernel for real (sm_90 PTX and cubin); this checks the
  generated code compiles, the kernel parameters, the pack of scalars, grids,
  and the launch checks.
"""

from __future__ import annotations

import ctypes
import platform
import re
import sys
import warnings

import numpy as np
import pytest

import tack
# tests/ is on sys.path (tests/conftest.py)
from cuda_kernels import (block_sums, doubled_plus, extremes, grid_fill, int_sum, mixed,
                          printing, read_next, saxpy)
from dropped_classes import launch_and_drop
from fake_cuda import FakeDriver

HAS_GPU = tack.device_count("cuda") > 0
INSTALL = ("Install it with: pip install cuda-python nvidia-cuda-nvrtc (and an NVIDIA "
           "GPU driver).")


# -- start-up failures (public API) -----------------------------------------------------

MISSING = re.escape("Cannot start the 'cuda' device: missing dependency. (") + r".+" + \
    re.escape(f") {INSTALL}")


def test_missing_cuda_python_is_a_missing_dependency(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)  # import fails
    for spec in ("cuda", "cuda:7"):
        with pytest.raises(RuntimeError, match=f"^{MISSING}$") as info:
            tack.device(spec)
        assert isinstance(info.value.__cause__, ImportError)
    assert tack.device_count("cuda") == 0


def test_missing_nvrtc_library_is_a_missing_dependency(monkeypatch):
    from cuda.bindings import nvrtc

    def absent():
        raise RuntimeError("libnvrtc.so.13: cannot open shared object file")
    monkeypatch.setattr(nvrtc, "nvrtcVersion", absent)
    with pytest.raises(RuntimeError, match=re.escape(
            "Cannot start the 'cuda' device: missing dependency. (NVRTC cannot be "
            "loaded: libnvrtc.so.13: cannot open shared object file) " + INSTALL)):
        tack.device("cuda:7")
    assert tack.device_count("cuda") == 0


@pytest.mark.skipif(HAS_GPU, reason="this machine has a CUDA driver and GPU")
def test_no_driver_cannot_start_on_this_platform():
    prefix = (f"Cannot start the 'cuda' device on {platform.system()}. The CUDA driver "
              f"(libcuda.so) cannot be loaded: ")
    for spec in ("cuda", "cuda:0", "cuda:3"):
        with pytest.raises(RuntimeError, match=f"^{re.escape(prefix)}.+{re.escape(INSTALL)}$"):
            tack.device(spec)
    with pytest.raises(RuntimeError, match=re.escape(prefix)):
        tack.set_default_device("cuda")
    assert tack.device_count("cuda") == 0


def test_a_driver_without_devices_cannot_start(monkeypatch, fake):
    fake.init_error = fake.CUresult.CUDA_ERROR_NO_DEVICE
    with pytest.raises(RuntimeError, match="^" + re.escape(
            f"Cannot start the 'cuda' device on {platform.system()}. The CUDA driver "
            f"cannot start: cuInit failed with CUDA_ERROR_NO_DEVICE (fake: "
            f"CUDA_ERROR_NO_DEVICE). {INSTALL}") + "$"):
        tack.device("cuda:6")
    assert tack.device_count("cuda") == 0


# -- a fake driver: host memory, recorded launches, real NVRTC ------------------------------

@pytest.fixture
def fake(monkeypatch):
    from cuda.bindings import nvrtc

    from tack.runtime.cuda import driver
    fake = FakeDriver()
    monkeypatch.setattr(driver, "modules", lambda: (fake, nvrtc))
    monkeypatch.setattr(driver, "_initialized", False)
    monkeypatch.setattr(driver, "_held", set())
    monkeypatch.setattr(driver, "several", [False])
    return fake


@pytest.fixture
def fake_device(fake):
    from tack.runtime.cuda.backend import CUDABackend
    from tack.runtime.device import Device
    backend = CUDABackend(0)
    backend.memory_domain = ("fake-cuda", 0)   # never mixed with a real cuda:0
    return Device(backend, "cuda", 0)


def test_the_fake_device_retains_the_primary_context_and_makes_it_current(fake,
                                                                         fake_device):
    backend = fake_device.backend
    assert (fake.retained, int(fake.current)) == (1, 0xC0)
    assert (backend.capability, backend.arch, backend.pools) == (90, "sm_90", True)
    assert backend.memory_domain != tack.device("cpu").backend.memory_domain


def test_a_context_current_on_the_thread_is_adopted(fake):
    from tack.runtime.cuda.backend import CUDABackend
    fake.current = fake.real.CUcontext(0x1AB)   # device 1's, made by another library
    fake.devices = 2
    backend = CUDABackend(1)
    assert backend.context.adopted and fake.retained == 0
    assert int(backend.context.handle) == 0x1AB



def test_another_devices_memory_is_refused(fake, fake_device):
    from tack.runtime.cuda.backend import CUDABackend
    from tack.runtime.device import Device
    fake.devices = 2
    other = CUDABackend(1)
    other.memory_domain = ("fake-cuda", 1)
    elsewhere = tack.zeros(4, device=Device(other, "cuda", 1))
    with pytest.raises(ValueError, match=re.escape(
            "Pointer is in the memory of cuda:1 but the device is cuda:0. "
            "array_from_ptr() on cuda:0 takes memory of that device")):
        tack.array_from_ptr(elsewhere._ptr, (4,), tack.f32, device=fake_device)
    own = tack.zeros(4, device=fake_device)
    assert tack.array_from_ptr(own._ptr + 8, (2,), tack.f32, device=fake_device).size == 2


def test_a_pointer_that_is_not_an_address_names_the_device_kind(fake, fake_device):
    with pytest.raises(TypeError, match=re.escape(
            "array_from_ptr() on the CUDA backend takes a device address (an integer), "
            "not str")):
        tack.array_from_ptr("0x1000", (4,), tack.f32, device=fake_device)
    with pytest.raises(ValueError, match=re.escape("array_from_ptr() was given the "
                                                   "address -8: with 16 bytes")):
        tack.array_from_ptr(-8, (4,), tack.f32, device=fake_device)


def test_a_device_past_the_last_is_a_value_error(fake):
    from tack.runtime.cuda.backend import CUDABackend
    with pytest.raises(ValueError, match=re.escape("cuda:3: this machine has 1 CUDA "
                                                   "devices")):
        CUDABackend(3)


def test_two_contexts_switch_around_each_operation(fake):
    from tack.runtime.cuda.backend import CUDABackend
    fake.devices = 2
    first = CUDABackend(0)
    second = CUDABackend(1)   # made while device 0's context is current: not current
    assert int(fake.current) == 0xC0
    before = fake.set_current
    kept = [first.allocate(16), second.allocate(16)]
    assert int(fake.current) == 0xC0       # each operation restored the thread's
    assert fake.set_current == before + 2  # second switched in and back; first did not
    assert fake.retained == 2 and len(kept) == 2


def test_saxpy_launch_parameters_grid_and_pack(fake, fake_device, rng):
    n = 3001   # four iterations per thread: ceil(3001 / 1024) blocks of 256
    with fake_device:
        x = tack.array(rng.values(tack.f32, n))
        y = tack.zeros(n)
        fake.arity = 4    # x, y, the f32 pack, the iteration count
        saxpy(x, y, 2.5)
    assert fake.images[0] == b"\x7fELF", "a cubin for sm_90 is loaded first"
    grid, block, values = fake.launches[-1]
    assert (grid, block) == ((3, 1, 1), (256, 1, 1))
    assert values[:2] == [x._ptr, y._ptr] and values[3] == n
    assert np.frombuffer(fake.pack_copies[-1][:4], np.float32)[0] == np.float32(2.5)
    assert x.device is fake_device and y.numpy().shape == (n,)


def test_a_range_view_launches_and_copies_at_its_own_address(fake, fake_device, rng):
    host = rng.values(tack.f32, 50)
    with fake_device:
        x = tack.array(host)
        view = x[7:30]
        fake.arity = 4
        saxpy(view, view, 2.0)
        tack.copyto(x[40:45], np.arange(5, dtype=np.float32))
    assert view._ptr == x._ptr + 7 * 4
    assert fake.launches[-1][2][:2] == [view._ptr, view._ptr]
    np.testing.assert_array_equal(view.numpy(), host[7:30])   # the fake ran nothing
    host[40:45] = np.arange(5)
    np.testing.assert_array_equal(x.numpy(), host)
    assert view[-1] == host[29]


def test_scalars_are_copied_only_when_they_change(fake, fake_device):
    with fake_device:
        x, y = tack.zeros(300), tack.zeros(300)
        fake.arity = 4
        saxpy(x, y, 1.5)
        copies = len(fake.pack_copies)
        saxpy(x, y, 1.5)
        assert len(fake.pack_copies) == copies
        saxpy(x, y, 3.0)
        assert len(fake.pack_copies) == copies + 1
        saxpy(x, y, 0.0)
        saxpy(x, y, -0.0)    # equal to 0.0, but not the same value
        assert np.signbit(np.frombuffer(fake.pack_copies[-1][:4], np.float32)[0])


def test_a_pack_write_interrupted_after_its_copy_is_made_again(fake, fake_device):
    """A Ctrl-C that lands once the scalars are copied, before the launch: the
    next call with the earlier scalars must copy them again, not trust a record
    of the pack that the interrupted copy made stale."""
    with fake_device:
        x, y = tack.zeros(300), tack.zeros(300)
        fake.arity = 4
        saxpy(x, y, 1.5)
        copy = fake.cuMemcpyHtoDAsync

        def copied_then_interrupted(*args):
            copy(*args)
            raise KeyboardInterrupt
        fake.cuMemcpyHtoDAsync = copied_then_interrupted
        with pytest.raises(KeyboardInterrupt):
            saxpy(x, y, 3.0)
        fake.cuMemcpyHtoDAsync = copy
        saxpy(x, y, 1.5)
        assert np.frombuffer(fake.pack_copies[-1][:4], np.float32)[0] == 1.5


def test_calls_alternating_disjoint_and_aliased_arrays_launch_their_own_variants(
        fake, fake_device):
    """The runner of a signature has the launch of its first variant written in
    and hands a call whose arrays overlap to the plain runner, which launches
    the other variant, with each call's own arrays and scalar."""
    @tack.kernel
    def saxpy(x, y, a):   # its own kernel: variants are built (and loaded) here
        for i in range(len(x)):
            y[i] = a * x[i] + y[i]

    with fake_device:
        x, y = tack.zeros(300), tack.zeros(300)
        fake.arity = 4
        calls = [(x, y, 1.5), (x, x, 2.5), (y, x, 3.5), (y, y, 4.5), (x, y, 1.5)]
        for args in calls:
            saxpy(*args)
            pack = np.frombuffer(fake.pack_copies[-1][:4], np.float32)[0]
            assert pack == args[2] and fake.launches[-1][2][:2] == [a._ptr for a in args[:2]]
    disjoint, aliased = fake.functions[-5], fake.functions[-4]
    assert disjoint != aliased
    assert fake.functions[-5:] == [disjoint, aliased, disjoint, aliased, disjoint]


def test_ndindex_launch_passes_the_inner_extents_and_packs_by_type(fake, fake_device):
    with fake_device:
        out = tack.zeros((3, 700), tack.f64)
        fake.arity = 5    # out, the i32 pack, the f64 pack, total, extent 1
        grid_fill(out, 7, 0.5)
    grid, block, values = fake.launches[-1]
    assert grid == (-(-2100 // 1024), 1, 1) and values[3:] == [2100, 700]
    pack = fake.pack_copies[-1]
    assert np.frombuffer(pack[:4], np.int32)[0] == 7
    assert np.frombuffer(pack[8:16], np.float64)[0] == 0.5


def test_a_length_read_at_run_time_travels_in_the_i64_pack(fake, fake_device):
    """Past four lengths a length the body reads is a hidden i64 argument,
    filled from each call's array."""
    @tack.kernel
    def last_of(x, out):
        for i in range(len(out)):
            out[i] = x[len(x) - 1]

    with fake_device:
        x, out = tack.zeros(300), tack.zeros(4)
        fake.arity = 3    # x, out, the iteration count: the length baked in
        for n in [10, 20, 30, 40]:
            last_of(x[:n], out)
        fake.arity = 4    # x, out, the i64 pack, the iteration count
        for n in [50, 60, 7]:
            last_of(x[:n], out)
            assert np.frombuffer(fake.pack_copies[-1][:8], np.int64)[0] == n
            assert fake.launches[-1][2][0] == x._ptr and fake.launches[-1][2][3] == 4


def test_every_scalar_lands_in_its_slot_of_its_types_pack(fake, fake_device):
    with fake_device:
        x, y = tack.zeros(300), tack.zeros(300)
        fake.arity = 5    # x, y, the f32 pack, the i32 pack, the iteration count
        for a, k, b, m in [(1.25, 7, -3.5, 11), (0.5, -2, 1e30, 3)]:
            mixed(x, y, a, k, b, m)
            pack = fake.pack_copies[-1]
            assert np.float32([a, b]).tobytes() in pack
            assert np.int32([k, m]).tobytes() in pack


@pytest.mark.parametrize("n", [0, -3])
def test_an_empty_range_launches_nothing(fake, fake_device, n):
    with fake_device:
        out = tack.zeros((0, 4))
        fake.arity = 5
        grid_fill(out, 1, 1.0)
        x = tack.zeros(0)
        saxpy(x, x, 1.0)
    assert fake.launches == []


def test_workgroup_kernels_compile_and_must_fill_whole_workgroups(fake, fake_device):
    with fake_device:
        x, sums = tack.zeros(512), tack.zeros(2)
        fake.arity = 3
        block_sums(x, sums)
        assert fake.launches[-1][:2] == ((2, 1, 1), (256, 1, 1))
        message = ("Kernel 'block_sums' uses workgroup collectives (barriers, shared "
                   "memory or block reductions), so its launch must fill whole workgroups "
                   "of 256: 300 iterations is not a multiple of 256")
        with pytest.raises(ValueError, match=re.escape(message)):
            block_sums(tack.zeros(300), sums)
        with pytest.raises(ValueError, match=re.escape(message)):   # inspect refuses it too
            tack.inspect(block_sums, tack.zeros(300), sums)


def test_disjoint_arrays_get_restrict_pointers_and_four_iterations_per_thread(
        fake, fake_device):
    with fake_device:
        x, y = tack.zeros(4), tack.zeros(4)
        disjoint = tack.inspect(saxpy, x, y, 2.0)
        aliased = tack.inspect(saxpy, x, x, 2.0)
        workgroup = tack.inspect(block_sums, tack.zeros(256), tack.zeros(1))
    assert disjoint.count("__restrict__") == 3   # x, y and the scalar pack
    assert "__restrict__" not in aliased
    assert "tack_item < 4" in disjoint and "tack_item < 4" in aliased
    assert "tack_item" not in workgroup   # lanes map one to one onto iterations
    assert "(long long)blockIdx.x * 1024 + threadIdx.x" in disjoint
    full_tile, last_tile = disjoint.split("} else {")
    assert "if (tack_first + 768 < tack_total)" in full_tile
    assert "tack_flat >= tack_total" not in full_tile   # no test between the items
    assert "if (tack_flat >= tack_total) return;" in last_tile


def test_f32_reductions_launch_on_the_device_and_others_stay_on_the_host(fake,
                                                                       fake_device):
    with fake_device:
        a = tack.ones(5000)
        fake.arity = 3
        before = len(fake.launches)
        assert a.sum() == 0.0   # the fake runs no kernel: its partials stay zero
        grid, block, values = fake.launches[-1]
        assert (grid, block) == ((2, 1, 1), (256, 1, 1))   # tiles of 4096
        assert values[:2] == [a._ptr, 5000]
        a.min(), a.max(), a.mean()
        assert len(fake.launches) == before + 4
        assert tack.ones(5000, tack.i32).sum() == 5000.0     # NumPy on the host
        assert tack.ones(7, tack.f64).max() == 1.0
        assert np.array_equal(tack.ones(5, tack.vec3()).sum(), [5.0, 5.0, 5.0])
        assert len(fake.launches) == before + 4
        assert tack.ones(0).sum() == 0.0
        with pytest.raises(ValueError, match="^min reduction requires a nonempty array$"):
            tack.ones(0).min()


def test_mpi_staging_memory_is_plain_device_memory(fake, fake_device, rng):
    backend = fake_device.backend
    assert backend.mpi_direct is False   # pooled memory is staged for MPI
    staged = backend.allocate_mpi_array(fake_device, (3, 5), tack.f64)
    assert staged.shape == (3, 5) and staged.device is fake_device
    assert staged._buffer.pooled is False and staged._buffer.owned
    values = rng.values(tack.f64, 15).reshape(3, 5)
    tack.copyto(staged, values)
    np.testing.assert_array_equal(staged.numpy(), values, err_msg=repr(rng))
    wrapped = backend.wrap(staged._ptr, 15 * 8)
    assert wrapped.shared and not wrapped.owned


def test_print_reads_the_records_the_kernel_wrote(fake, fake_device, monkeypatch, capsys):
    """print() on CUDA: the kernel compiles (NVRTC) with the print buffer as its
    last array; the records a launch leaves there ([statement, value bits])
    are printed after it, and the header is cleared before the next launch."""
    launch, headers = fake.cuLaunchKernel, []

    def kernel(f, *grid_and_rest):
        code = launch(f, *grid_and_rest)
        values = fake.launches[-1][2]
        if len(values) == 3:              # printing's launch: a, the buffer, the count
            words = (ctypes.c_uint64 * 8).from_address(values[1])
            headers.append((words[0], words[1]))
            bits = int(np.float32(2.5).view(np.uint32))
            words[:6] = [4, 1, 0, bits, 0, int(np.float32(-1).view(np.uint32))]
        return code

    monkeypatch.setattr(fake, "cuLaunchKernel", kernel)
    with fake_device:
        fake.arity = 3
        printing(tack.zeros(3))
        printing(tack.zeros(3))
    assert headers == [(0, 0), (0, 0)]
    out = capsys.readouterr().out
    line = "[tack] print buffer full: 1 print() line was dropped from kernel " \
           "'printing' (it holds 65536 words a launch)"
    assert out.splitlines() == ["2.5", "-1.0", line] * 2


def test_debug_mode_builds_and_reports_what_the_kernel_recorded(fake, fake_device,
                                                                monkeypatch):
    """Debug mode on CUDA: the checked kernel compiles (NVRTC, a cubin), gets the
    errors array and the extents as its last two arrays, and the record a
    kernel leaves in the errors array becomes the IndexError."""
    launch, seen, violations = fake.cuLaunchKernel, [], []

    def kernel(f, *grid_and_rest):
        code = launch(f, *grid_and_rest)
        values = fake.launches[-1][2]     # read and written while the arrays exist
        if len(values) == 5:              # read_next's launch
            extents = (ctypes.c_int64 * 16).from_address(values[3])
            seen.append(np.ctypeslib.as_array(extents).copy())
            if violations:   # 3 of them: site 0, index 10, dimension 0, extent 10
                (ctypes.c_int64 * 5).from_address(values[2])[:] = violations
        return code

    monkeypatch.setattr(fake, "cuLaunchKernel", kernel)
    with fake_device:
        a, out = tack.arange(10, dtype=tack.f32), tack.zeros(7)
        tack.set_debug(True)
        try:
            fake.arity = 5    # a, out, errors, extents, the iteration count
            read_next(a, out)                        # nothing recorded: no error
            values = fake.launches[-1][2]
            assert values[:2] == [a._ptr, out._ptr] and values[4] == 7
            assert list(seen[-1]) == [10] + [0] * 7 + [7] + [0] * 7
            violations[:] = [3, 0, 10, 0, 10]
            with pytest.raises(IndexError, match=re.escape(
                    "Kernel 'read_next': index 10 is out of bounds (extent 10) in a[i + 1] "
                    "at ") + r".*; 2 more out-of-bounds accesses were skipped$"):
                read_next(a, out)
        finally:
            tack.set_debug(False)
        source = tack.inspect(read_next, a, out)
        assert "tack_check_1" not in source     # debug off: the plain variant
        tack.set_debug(True)
        try:
            assert "tack_check_1(" in tack.inspect(read_next, a, out)
        finally:
            tack.set_debug(False)


def test_two_identical_devices_each_load_their_own_program(fake, monkeypatch):
    """Regression: the variant key named the device model only, so cuda:1 launched
    the function loaded into cuda:0's context (and used its scalar pack)."""
    from tack.runtime.cuda.backend import CUDABackend
    from tack.runtime.device import Device
    fake.devices = 2
    loaded, launched, handles = [], [], iter(range(0xF00, 0xFFF))
    load, launch = fake.cuModuleLoadData, fake.cuLaunchKernel

    def load_data(image):
        loaded.append(int(fake.current))
        return load(image)

    def get_function(module, name):    # a distinct handle per load
        return (fake.ok, fake.real.CUfunction(next(handles)))

    def launch_kernel(f, *rest):
        launched.append((int(f), int(fake.current)))
        return launch(f, *rest)
    monkeypatch.setattr(fake, "cuModuleLoadData", load_data)
    monkeypatch.setattr(fake, "cuModuleGetFunction", get_function)
    monkeypatch.setattr(fake, "cuLaunchKernel", launch_kernel)
    devices = []
    for k in range(2):
        backend = CUDABackend(k)
        backend.memory_domain = ("fake-cuda", k)
        devices.append(Device(backend, "cuda", k))
    @tack.kernel
    def scale(x, y, a):     # new here: no variant of it exists yet
        for i in range(len(x)):
            y[i] = a * x[i]

    fake.arity = 4
    for device in devices:
        with device:
            scale(tack.zeros(300), tack.zeros(300), 2.0)
    assert loaded == [0xC0, 0x1C0]                       # one load per context
    assert launched == [(0xF00, 0xC0), (0xF01, 0x1C0)]   # each its own function


def test_atomics_and_return_values_compile(fake, fake_device):
    with fake_device:
        for dtype in (tack.i32, tack.u32, tack.i64, tack.u64, tack.f32, tack.f64):
            fake.arity = 3
            extremes(tack.zeros(5, dtype), tack.zeros(2, dtype))
            int_sum(tack.zeros(5, dtype), tack.zeros(1, dtype))
        fake.arity = 2
        before = len(fake.launches)
        value = doubled_plus(tack.zeros(4))   # the loop, then the return's epilogue
        assert type(value) is float and len(fake.launches) == before + 2
        assert fake.launches[-1][:2] == ((1, 1, 1), (256, 1, 1))


def test_inspect_shows_the_cuda_source(fake, fake_device):
    with fake_device:
        source = tack.inspect(saxpy, tack.zeros(4), tack.zeros(4), 2.0)
        assert 'extern "C" __global__ void' in source
        with pytest.raises(ValueError, match=re.escape("inspect mode 'optimized' is CPU "
                                                       "only")):
            tack.inspect(saxpy, tack.zeros(4), tack.zeros(4), 2.0, mode="optimized")


def test_a_failed_launch_raises_at_the_next_wait(fake, fake_device):
    with fake_device:
        x = tack.zeros(4)
        fake.sync_error = fake.CUresult.CUDA_ERROR_ILLEGAL_ADDRESS
        with pytest.raises(RuntimeError, match=re.escape(
                "a CUDA launch or copy on this device failed: CUDA_ERROR_ILLEGAL_ADDRESS "
                "(fake: CUDA_ERROR_ILLEGAL_ADDRESS)")):
            fake_device.synchronize()
        fake.sync_error = fake.CUresult.CUDA_ERROR_LAUNCH_FAILED
        with pytest.raises(RuntimeError, match="CUDA_ERROR_LAUNCH_FAILED"):
            x.numpy()


def test_a_launch_status_the_bindings_cannot_name_is_a_runtime_error(fake, fake_device,
                                                                     monkeypatch):
    """A driver newer than cuda-python may return a status its CUresult lacks."""
    monkeypatch.setattr(fake, "cuLaunchKernel", lambda *args: (1000,), raising=False)
    with fake_device:
        x, y = tack.zeros(4), tack.zeros(4)
        with pytest.raises(RuntimeError, match="^" + re.escape(
                "Kernel 'saxpy' failed on CUDABackend: cuLaunchKernel failed: "
                "status 1000")):
            saxpy(x, y, 2.0)


@pytest.mark.parametrize("failing, undone", [
    ("cuMemAddressReserve", ["cuMemRelease"]),
    ("cuMemMap", ["cuMemAddressFree", "cuMemRelease"]),
    ("cuMemSetAccess", ["cuMemUnmap", "cuMemAddressFree", "cuMemRelease"])])
def test_a_failed_exportable_allocation_takes_back_each_step(fake, fake_device,
                                                             monkeypatch, failing, undone):
    for name in ("CUmemAllocationProp", "CUmemAllocationType", "CUmemLocationType",
                 "CUmemAllocationHandleType", "CUmemAllocationGranularity_flags",
                 "CUmemAccessDesc", "CUmemAccess_flags"):
        monkeypatch.setattr(fake, name, getattr(fake.real, name), raising=False)
    calls, unraisable = [], []
    answers = {"cuMemGetAllocationGranularity": (fake.ok, 2 << 20),
               "cuMemCreate": (fake.ok, 0x1234),
               "cuMemAddressReserve": (fake.ok, fake.real.CUdeviceptr(0x7000000))}
    for name in ("cuMemGetAllocationGranularity", "cuMemCreate", "cuMemAddressReserve",
                 "cuMemMap", "cuMemSetAccess", "cuMemUnmap", "cuMemAddressFree",
                 "cuMemRelease"):
        answer = ((fake.CUresult.CUDA_ERROR_OUT_OF_MEMORY,) if name == failing else
                  answers.get(name, (fake.ok,)))
        monkeypatch.setattr(fake, name, lambda *a, name=name, answer=answer: (
            calls.append(name), answer)[1], raising=False)
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    with pytest.raises(RuntimeError, match=re.escape(f"{failing} failed")):
        tack.empty(1000, device=fake_device, exportable=True)
    assert calls[calls.index(failing) + 1:] == undone
    assert unraisable == []   # no error from the half-made buffer's __del__


def test_a_dropped_variants_module_is_unloaded_at_the_next_synchronize(fake, fake_device):
    with fake_device:
        x = tack.ones(16)
        fake.arity = 2
        launch_and_drop(x, (2.0, 3.0, 5.0))   # each class collected with its variants
        assert fake.unloaded == []    # not before a wait: a queued launch may run it
        fake_device.synchronize()
        assert len(fake.unloaded) == 3
        assert x.numpy().tolist() == [1.0] * 16   # the fake runs no kernel


def test_memory_space_classifies_pointers(fake, fake_device):
    backend = fake_device.backend
    device_array = tack.zeros(8, device=fake_device)
    host = np.zeros(8)
    fake.pinned.add(host.ctypes.data)
    managed = np.zeros(8)
    fake.managed.add(managed.ctypes.data)
    assert backend.memory_space(device_array._ptr) == "cuda"
    assert backend.memory_space(device_array._ptr + 8) == "cuda"
    assert backend.memory_space(host.ctypes.data) == "cuda_pinned"
    assert backend.memory_space(managed.ctypes.data) == "cuda_managed"
    assert backend.memory_space(np.zeros(3).ctypes.data) == "cpu"
    assert backend.memory_space("not an address") == "cpu"
    assert backend.memory_space(-5) == "cpu"
    assert backend.memory_space(1 << 64) == "cpu"


class _LabelledCUDA:
    """A DLPack producer whose tensor says kDLCUDA, device 0, over ``values``'
    memory, wherever that is."""

    def __init__(self, values):
        self.values = values

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, **kwargs):
        from tack.runtime import dlpack
        wrapped = tack.array_from_ptr(self.values.ctypes.data, self.values.shape,
                                      tack.f32, device="cpu")
        capsule = wrapped.__dlpack__()
        dlpack._open(capsule)[1].dl_tensor.device.device_type = 2   # kDLCUDA
        return capsule


def test_from_dlpack_checks_the_memory_as_array_from_ptr_does(fake, fake_device):
    host = np.arange(4, dtype=np.float32)   # pageable host memory, labelled kDLCUDA
    with pytest.raises(ValueError, match=re.escape(
            "Pointer is in 'cpu' memory but the device is 'CUDA'. from_dlpack() on "
            "cuda:0 takes cuda or cuda_managed memory")):
        tack.from_dlpack(_LabelledCUDA(host), device=fake_device)
    device_memory = tack.zeros(4, device=fake_device)
    view = np.ctypeslib.as_array((ctypes.c_float * 4).from_address(device_memory._ptr))
    view[:] = [1, 2, 3, 4]
    shared = tack.from_dlpack(_LabelledCUDA(view), device=fake_device)
    assert shared.device is fake_device and shared.numpy().tolist() == [1, 2, 3, 4]


# -- NVRTC, no device -------------------------------------------------------------------------

def test_compile_ptx_targets_the_requested_architecture():
    from tack.runtime.cuda.compile import compile_cuda, compile_ptx
    source = 'extern "C" __global__ void k(float* a) { a[threadIdx.x] = 2.0f; }'
    ptx = compile_ptx(source, "sm_90")
    assert ".target sm_90" in ptx and ".entry k(" in ptx
    ptx, cubin = compile_cuda(source, "compute_80")
    assert b".target sm_80" in ptx and cubin is None


def test_compile_errors_carry_nvrtcs_log():
    from tack.runtime.cuda.compile import compile_ptx
    with pytest.raises(RuntimeError, match=r"^compilation failed \(NVRTC_ERROR_COMPILATION\)"
                                           r":\n.*error.*undefined"):
        compile_ptx('extern "C" __global__ void k() { undefined_name = 1; }')


def test_fmad_is_off_so_multiply_add_rounds_twice():
    from tack.runtime.cuda.compile import compile_ptx
    ptx = compile_ptx('extern "C" __global__ void k(float* a, float b, float c) '
                      '{ a[0] = a[0] * b + c; }')
    assert "fma" not in ptx and "mul.rn.f32" in ptx


def test_arch_choice():
    from tack.runtime.cuda.compile import choose_arch
    assert choose_arch(90, [80, 90]) == "sm_90"
    assert choose_arch(95, [80, 90]) == "compute_90"
    with pytest.raises(RuntimeError, match=re.escape("cannot compile for compute "
                                                     "capability 7.0")):
        choose_arch(70, [80, 90])


def test_a_float_past_f32s_range_arrives_as_inf_without_a_warning(fake, fake_device):
    """As on the CPU and OpenCL: NumPy's cast warning (an error under -W error)
    stays inside the pack writer."""
    with fake_device:
        x, y = tack.zeros(300), tack.zeros(300)
        fake.arity = 4
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for value, want in ((1e300, np.inf), (-1e39, -np.inf), (2.5, 2.5)):
                saxpy(x, y, value)
                assert np.frombuffer(fake.pack_copies[-1][:4], np.float32)[0] == want
