"""The CUDA backend on an NVIDIA GPU (``tack.device_count("cuda") > 0``,
skipped elsewhere; ``scripts/gpu-check`` runs it): kernels against NumPy,
atomics, returns, workgroups, DLPack with CuPy and PyTorch, ``memory_space``,
``array_from_ptr`` and ``export_memory``. The half without a GPU is
test_cuda_backend.py.
"""

from __future__ import annotations

import math
import os
import re

import numpy as np
import pytest

import tack
# tests/ is on sys.path (tests/conftest.py)
from cuda_kernels import (add_scalar, block_sums, doubled_plus, extremes, grid_fill,
                          int_sum, saxpy)

gpu = pytest.mark.skipif(tack.device_count("cuda") == 0,
                         reason="no CUDA device (needs an NVIDIA GPU, its driver, "
                         "cuda-python and nvidia-cuda-nvrtc)")


@pytest.fixture
def cuda():
    return tack.device("cuda:0")


@gpu
@pytest.mark.parametrize("n", [0, 1, 7, 1000, 1 << 20 | 3])
def test_gpu_saxpy_matches_numpy(cuda, rng, n):
    x_host, y_host = rng.values(tack.f32, n), rng.values(tack.f32, n)
    x, y = tack.array(x_host, device=cuda), tack.array(y_host, device=cuda)
    saxpy(x, y, 1.75)
    want = np.float32(1.75) * x_host + y_host
    np.testing.assert_array_equal(y.numpy(), want, err_msg=repr(rng))


@gpu
def test_gpu_ndindex_and_int_scalars(cuda, rng):
    out = tack.zeros((37, 129), tack.f64, device=cuda)
    grid_fill(out, 3, -0.5)
    i, j = np.indices((37, 129))
    np.testing.assert_array_equal(out.numpy(), (i * 1000 + j) * 3 - 0.5)


@gpu
@pytest.mark.parametrize("dtype", [tack.i32, tack.i64, tack.u64])
def test_gpu_integer_reduction_and_extremes(cuda, rng, dtype):
    values = (rng.values(dtype, 100_003) >> 20).astype(dtype.numpy)
    a = tack.array(values, device=cuda)
    total = tack.zeros(1, dtype, device=cuda)
    int_sum(a, total)
    assert total[0] == int(values.sum(dtype=dtype.numpy)), repr(rng)
    out = tack.array(np.array([values.max(), values.min()], dtype.numpy), device=cuda)
    extremes(a, out)
    assert (out[0], out[1]) == (values.min(), values.max()), repr(rng)


@gpu
def test_gpu_float_reduction(cuda, rng):
    values = rng.gen.random(50_001).astype(np.float32)
    total = tack.zeros(1, device=cuda)
    int_sum(tack.array(values, device=cuda), total)
    assert abs(total[0] - values.sum(dtype=np.float64)) < 1e-3 * len(values), repr(rng)


@gpu
@pytest.mark.parametrize("n", [1, 2, 7, 4097, 1_000_003])
def test_gpu_f32_reductions_match_numpy(cuda, rng, n):
    host = rng.values(tack.f32, n)
    a = tack.array(host, device=cuda)
    wide = host.astype(np.float64)
    bound = 1e-14 * float(np.sum(np.abs(wide))) + 1e-300
    assert abs(a.sum() - float(np.sum(wide))) <= bound, repr(rng)
    assert a.sum() == a.sum(), "a reduction is reproducible"
    assert a.mean() == a.sum() / n
    assert (a.min(), a.max()) == (float(host.min()), float(host.max())), repr(rng)
    host[n // 2] = np.nan
    b = tack.array(host, device=cuda)
    assert all(math.isnan(v) for v in (b.sum(), b.min(), b.max())), repr(rng)


@gpu
def test_gpu_block_reduction(cuda, rng):
    values = rng.gen.random(1024).astype(np.float32)
    sums = tack.zeros(4, device=cuda)
    block_sums(tack.array(values, device=cuda), sums)
    np.testing.assert_allclose(sums.numpy(), values.reshape(4, 256).sum(axis=1),
                               rtol=1e-5, err_msg=repr(rng))


@gpu
def test_gpu_return_value(cuda, rng):
    values = rng.values(tack.f32, 9)
    a = tack.array(values, device=cuda)
    assert doubled_plus(a) == float(np.float32(values[0] * 2) + np.float32(0.25))
    np.testing.assert_array_equal(a.numpy(), values * 2, err_msg=repr(rng))


@gpu
def test_gpu_scalar_changes_reach_the_kernel(cuda):
    a = tack.zeros(5, device=cuda)
    for v in (1.0, 1.0, 2.5, 0.0, -0.0):
        add_scalar(a, v)
    np.testing.assert_array_equal(a.numpy(), np.full(5, 4.5, np.float32))


@gpu
def test_gpu_scalars_reach_the_kernel_through_every_runner_of_a_variant(cuda):
    # one variant, two runners (made under two default devices): each launch
    # must write the scalars the variant's pack last held from the other
    # runner (a per-runner record of the last write left 3.0 where 2.0 was due)
    out = tack.zeros(4, tack.f64, device=cuda)
    got = []
    for default, v in [(cuda, 2.0), (tack.device("cpu"), 3.0), (cuda, 2.0), (cuda, 2.0),
                       (tack.device("cpu"), 3.0), (cuda, 2.0)]:
        out.fill(0.0)
        with default:
            add_scalar(out, v)
        got.append(float(out.numpy()[0]))
    assert got == [2.0, 3.0, 2.0, 2.0, 3.0, 2.0]


@gpu
def test_gpu_bare_cuda_is_the_current_device(cuda):
    assert str(tack.device("cuda")) == "cuda:0"
    count = tack.device_count("cuda")
    with pytest.raises(ValueError, match=re.escape(f"cuda:{count}: this machine has "
                                                   f"{count} CUDA devices")):
        tack.device(f"cuda:{count}")


@gpu
def test_gpu_sync_async_and_numpy_async(cuda):
    import asyncio
    a = tack.zeros(1000, device=cuda)
    add_scalar(a, 2.0)

    async def main():
        await tack.sync_async()
        return await a.numpy_async()
    np.testing.assert_array_equal(asyncio.run(main()), np.full(1000, 2.0, np.float32))


@gpu
def test_gpu_memory_space(cuda):
    cp = pytest.importorskip("cupy")
    device_memory = cp.zeros(4)
    pinned = cp.cuda.alloc_pinned_memory(64)
    managed = cp.cuda.malloc_managed(64)
    assert tack.memory_space(device_memory.data.ptr, device=cuda) == "cuda"
    assert tack.memory_space(pinned.ptr, device=cuda) == "cuda_pinned"
    assert tack.memory_space(managed.ptr, device=cuda) == "cuda_managed"
    assert tack.memory_space(np.zeros(4).ctypes.data, device=cuda) == "cpu"
    assert tack.memory_space(tack.zeros(4, device=cuda)._ptr, device=cuda) == "cuda"


@gpu
def test_gpu_dlpack_round_trip_with_cupy(cuda, rng):
    cp = pytest.importorskip("cupy")
    values = rng.values(tack.f32, 1001)
    a = tack.array(values, device=cuda)
    seen = cp.from_dlpack(a)            # Tack -> CuPy, no copy
    np.testing.assert_array_equal(cp.asnumpy(seen), values, err_msg=repr(rng))
    add_scalar(a, 1.0)                  # completes before returning: the array is shared
    np.testing.assert_array_equal(cp.asnumpy(seen), values + 1, err_msg=repr(rng))
    source = cp.asarray(values)
    b = tack.from_dlpack(source)        # CuPy -> Tack, no copy
    assert b.device.type == "cuda"
    add_scalar(b, 2.0)
    np.testing.assert_array_equal(cp.asnumpy(source), values + 2, err_msg=repr(rng))


@gpu
def test_gpu_dlpack_round_trip_with_torch(cuda, rng):
    torch = pytest.importorskip("torch")
    values = rng.values(tack.f64, 513)
    a = tack.array(values, device=cuda)
    seen = torch.from_dlpack(a)
    assert seen.is_cuda
    np.testing.assert_array_equal(seen.cpu().numpy(), values, err_msg=repr(rng))
    source = torch.tensor(values, device="cuda")
    b = tack.from_dlpack(source)
    add_scalar(b, 0.5)
    np.testing.assert_array_equal(source.cpu().numpy(), values + 0.5, err_msg=repr(rng))


@gpu
def test_gpu_array_from_ptr(cuda, rng):
    cp = pytest.importorskip("cupy")
    values = rng.values(tack.i32, 77)
    source = cp.asarray(values)
    a = tack.array_from_ptr(source.data.ptr, (77,), tack.i32, device=cuda, writable=True)
    add_scalar(a, 3)
    np.testing.assert_array_equal(cp.asnumpy(source), values + 3, err_msg=repr(rng))
    with pytest.raises(ValueError, match=re.escape(
            "Pointer is in 'cpu' memory but the device is 'CUDA'.")):
        tack.array_from_ptr(np.zeros(4).ctypes.data, (4,), tack.f64, device=cuda)


def _read_exported(exported) -> np.ndarray:
    """Import ``exported``'s file descriptor as another process would (import,
    map, read), and return the array's values from that mapping."""
    from cuda.bindings import driver
    from tack.runtime.cuda.driver import check
    kind = driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    handle = check(driver.cuMemImportFromShareableHandle(exported.handle, kind),
                   "cuMemImportFromShareableHandle")
    address = check(driver.cuMemAddressReserve(exported.size, 0, 0, 0),
                    "cuMemAddressReserve")
    try:
        check(driver.cuMemMap(address, exported.size, 0, handle, 0), "cuMemMap")
        access = driver.CUmemAccessDesc()
        access.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
        access.location.id = exported.device.index
        access.flags = driver.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
        check(driver.cuMemSetAccess(address, exported.size, [access], 1), "cuMemSetAccess")
        out = np.empty(exported.shape, exported.dtype.numpy)
        check(driver.cuMemcpyDtoH(out.ctypes.data, int(address) + exported.offset,
                                  exported.nbytes), "cuMemcpyDtoH")
        check(driver.cuMemUnmap(address, exported.size), "cuMemUnmap")
    finally:
        driver.cuMemAddressFree(address, exported.size)
        driver.cuMemRelease(handle)
    return out


@gpu
def test_gpu_export_memory_shares_exportable_arrays_and_snapshots_others(cuda, rng):
    values = rng.values(tack.f32, 1001)
    a = tack.empty(1001, device=cuda, exportable=True)
    tack.copyto(a, values)
    shared = a.export_memory()
    assert (shared.snapshot, shared.handle_type, shared.offset) == (False, "opaque_fd", 0)
    assert shared.size >= a.nbytes and os.fstat(shared.handle)
    np.testing.assert_array_equal(_read_exported(shared), values, err_msg=repr(rng))
    add_scalar(a, 1.0)   # exported: the launch completes before returning
    np.testing.assert_array_equal(_read_exported(shared), values + np.float32(1))
    b = tack.array(values, device=cuda)
    snapshot = b.export_memory()
    assert snapshot.snapshot and snapshot.array is not b
    add_scalar(b, 5.0)
    np.testing.assert_array_equal(_read_exported(snapshot), values, err_msg=repr(rng))
    view = tack.array(values, device=cuda).reshape(7, 143)
    assert _read_exported(view.export_memory()).shape == (7, 143)
    shared.close()
    assert shared.handle == -1
