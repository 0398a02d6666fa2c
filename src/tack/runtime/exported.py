"""``Array.export_memory()``: a handle another API or process imports.

Only CUDA exports memory (spec 003): its exportable allocations
(``tack.empty(..., exportable=True)``) are shared as they are; any other
CUDA array is first copied once into a new exportable allocation, so its
export is a snapshot. Every other backend raises ``RuntimeError``.
"""

from __future__ import annotations

import os


class ExportedMemory:
    """One exported allocation.

    Attributes:
        handle: the POSIX file descriptor (``handle_type`` "opaque_fd"). This
            object owns it and closes it in :meth:`close` or when collected;
            an importer that takes ownership of a descriptor (Vulkan's
            ``vkAllocateMemory`` does) should get ``os.dup(handle)``.
        size: bytes of the whole allocation (granularity-rounded): what an
            importer maps.
        offset: where the array's first element is in it.
        nbytes, shape, dtype: the array's.
        device: the Tack device the memory is on.
        array: the exported array (the snapshot copy when one was made),
            kept alive as long as this object.
        snapshot: whether the memory is a copy made by ``export_memory``.
    """

    def __init__(self, handle: int, handle_type: str, size: int, offset: int, array,
                 snapshot: bool):
        self.handle = handle
        self.handle_type = handle_type
        self.size = size
        self.offset = offset
        self.array = array
        self.nbytes = array.nbytes
        self.shape = array.shape
        self.dtype = array.dtype
        self.device = array.device
        self.snapshot = snapshot

    def close(self) -> None:
        """Close the file descriptor (the memory stays while the array does)."""
        handle, self.handle = self.handle, -1
        if handle >= 0:
            os.close(handle)

    def __del__(self):
        try:
            self.close()
        except OSError:
            pass

    def __repr__(self) -> str:
        return (f"ExportedMemory({self.handle_type} {self.handle}, {self.nbytes} of "
                f"{self.size} bytes at offset {self.offset}, {self.device}"
                f"{', snapshot' if self.snapshot else ''})")


def export_memory(array) -> ExportedMemory:
    backend = array.device.backend
    if not hasattr(backend, "export_memory"):
        raise RuntimeError(f"export_memory() is not supported on {array.device}: only "
                           f"CUDA devices export memory (the {backend.class_name} has "
                           f"no exportable allocations); share it through DLPack instead")
    return backend.export_memory(array)
