"""Exportable CUDA memory: ``tack.empty(..., exportable=True)`` and ``export_memory``.

An exportable allocation is made with the driver's virtual memory calls: a
physical allocation (``cuMemCreate``) that may be exported as a POSIX file
descriptor, mapped at a reserved address range and made readable and
writable by its device. ``cuMemExportToShareableHandle`` turns it into a file
descriptor that another process (``cuMemImportFromShareableHandle``) or
another API (Vulkan's ``VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT``,
OpenGL's ``GL_HANDLE_TYPE_OPAQUE_FD_EXT``) imports. Sizes round up to the
driver's allocation granularity (2 MiB on current GPUs).
"""

from __future__ import annotations

from .driver import check

HANDLE_TYPE = "opaque_fd"   # what ExportedMemory.handle_type says


def _properties(driver, ordinal: int):
    prop = driver.CUmemAllocationProp()
    prop.type = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = ordinal
    prop.requestedHandleTypes = (
        driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
    return prop


def granularity(backend) -> int:
    """The device's allocation granularity (asked once per backend)."""
    found = backend._export_granularity
    if found is not None:
        return found
    driver = backend.driver
    backend._export_granularity = found = int(check(driver.cuMemGetAllocationGranularity(
        _properties(driver, backend.index),
        driver.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        "cuMemGetAllocationGranularity"))
    return found


def allocate(backend, nbytes: int) -> tuple:
    """``(address, size, handle)`` of a new exportable allocation of at least
    ``nbytes`` (``size``: rounded up to the granularity)."""
    driver = backend.driver
    step = granularity(backend)
    size = max(step, -(-nbytes // step) * step)
    prop = _properties(driver, backend.index)
    undo = []   # what to take back, last step first, if a later step fails
    with backend.context.active():
        try:
            handle = check(driver.cuMemCreate(size, prop, 0), f"cuMemCreate({size} bytes)")
            undo.append(lambda: driver.cuMemRelease(handle))
            address = check(driver.cuMemAddressReserve(size, 0, 0, 0),
                            "cuMemAddressReserve")
            undo.append(lambda: driver.cuMemAddressFree(address, size))
            check(driver.cuMemMap(address, size, 0, handle, 0), "cuMemMap")
            undo.append(lambda: driver.cuMemUnmap(address, size))
            access = driver.CUmemAccessDesc()
            access.location = prop.location
            access.flags = driver.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            check(driver.cuMemSetAccess(address, size, [access], 1), "cuMemSetAccess")
        except Exception:
            for step in reversed(undo):
                step()
            raise
    return int(address), size, handle


def release(backend, address: int, size: int, handle) -> None:
    """Unmap and release an exportable allocation once the stream is done with
    it (exported file descriptors keep the physical memory until closed)."""
    driver = backend.driver
    with backend.context.active():
        driver.cuStreamSynchronize(backend.stream)
        driver.cuMemUnmap(address, size)
        driver.cuMemAddressFree(address, size)
        driver.cuMemRelease(handle)


def export(backend, handle) -> int:
    """A new POSIX file descriptor of the allocation ``handle``."""
    driver = backend.driver
    kind = driver.CUmemAllocationHandleType.CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    with backend.context.active():
        return int(check(driver.cuMemExportToShareableHandle(handle, kind, 0),
                         "cuMemExportToShareableHandle"))
