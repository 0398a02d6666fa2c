"""Spec 003: ``a.export_memory()`` and ``tack.empty(..., exportable=True)`` are
CUDA only; every other backend refuses them with RuntimeError, before any
allocation. (The CUDA half runs on a GPU: tests/runtime/test_cuda_gpu.py.)"""

import re

import pytest

import tack


def _devices():
    found = ["cpu"]
    if tack.device_count("opencl"):
        found.append("opencl")
    return found


@pytest.mark.parametrize("name", _devices())
def test_export_memory_is_refused_off_cuda(name):
    dev = tack.device(name)
    a = tack.ones(5, device=dev)
    with pytest.raises(RuntimeError, match="^" + re.escape(
            f"export_memory() is not supported on {dev}: only CUDA devices export "
            f"memory (the {dev.backend.class_name} has no exportable allocations); "
            f"share it through DLPack instead") + "$"):
        a.export_memory()
    assert a.numpy().tolist() == [1.0] * 5


@pytest.mark.parametrize("name", _devices())
def test_exportable_allocation_is_refused_off_cuda(name):
    dev = tack.device(name)
    with pytest.raises(RuntimeError, match="^" + re.escape(
            f"empty(exportable=True) is not supported on {dev}: only CUDA devices have "
            f"exportable memory (export_memory() raises RuntimeError on the "
            f"{dev.backend.class_name} too)") + "$"):
        tack.empty((2, 3), tack.i32, device=dev, exportable=True)
    assert tack.empty((2, 3), tack.i32, device=dev, exportable=False).shape == (2, 3)


@pytest.mark.parametrize("shape, error", [("abc", TypeError), ((2, -1), ValueError)])
def test_a_bad_shape_is_reported_before_exportable_is_refused(shape, error):
    with pytest.raises(error):
        tack.empty(shape, device="cpu", exportable=True)
