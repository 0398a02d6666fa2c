"""The interface every backend implements.

A backend is three small things: options that enter the cache key
(``cache_target``), build stages (``build``, from optimized IR to a loaded
program), and a runtime (allocation, copies, ``launch``, ``synchronize``).
Backends differ in their own classes, never in ``if kind == ...`` chains.
"""

from __future__ import annotations

from .. import types as T


def device_address(ptr):
    """``ptr`` as a 64-bit address a driver may be asked about, or None (spec 003
    memory_space: a value that cannot be one answers "cpu" without a query)."""
    try:
        address = int(ptr)
    except (TypeError, ValueError):
        return None
    return address if 0 < address < (1 << 64) else None


class Backend:
    name: str = "backend"
    memory_domain: object = None
    supported_dtypes = frozenset(T.SCALAR_TYPES)
    atomic_dtypes = frozenset()
    supports_workgroups = False
    # With workgroups: the most iterations one launch may index, and the name
    # of the API in messages.
    max_launch: int = 0
    api_name: str = ""
    specialize_disjoint = False
    # Disjoint calls whose write-only arrays hold at least ``streaming_bytes``
    # take a variant whose stores into them bypass the caches (the CPU).
    supports_streaming = False
    streaming_bytes = 0
    device_options: tuple = ()
    launch_style = "arguments"  # "packed": the CPU's one-struct native entry
    dlpack_device_type = 1  # kDLCPU
    dlpack_refusal_note = ("this backend wraps host memory only; import on the "
                           "tensor's own device, or pass copy=True")

    def cache_target(self):
        """A hashable identity of the code this backend runs; variants are
        shared between backends with equal targets."""
        raise NotImplementedError

    # -- memory -----------------------------------------------------------------
    def allocate(self, nbytes: int):
        """A buffer object with ``address`` and ``host_view(nbytes)``."""
        raise NotImplementedError

    # -- kernels ----------------------------------------------------------------
    def build(self, fn, epilogue=None):
        """Typed, native code for the optimized IR ``fn``; returns a program."""
        raise NotImplementedError

    def launcher(self, program):
        """A callable ``launch(pack_address, rows, total)`` for ``program``."""
        raise NotImplementedError

    def fused_launcher(self, program, head):
        """A call signature's runner with ``program``'s launch written in, one
        Python call less than the runner calling ``launcher(program)``: its
        source starts with ``head`` (``launcher.fused_head``: lines and the
        names they use). None where the backend does not write one (its
        runners call the launch)."""
        return None

    def synchronize(self) -> None:
        """Wait for every launch so far (a no-op where launches are synchronous)."""

    def async_marker(self):
        """Something with ``wait()`` for the launches so far, or None when
        launches complete before returning."""
        return None

    def memory_space(self, ptr) -> str:
        return "cpu"

    # -- reductions ---------------------------------------------------------------
    # A backend with device reductions reduces f32 arrays itself (spec 003
    # Reductions): ``reduce(array, op)`` for op "sum", "min" or "max".
    supports_device_reductions = False

    # -- GPU-aware MPI ---------------------------------------------------------------
    mpi_direct = True   # whether MPI may be handed this backend's buffers as they are

    def allocate_mpi_array(self, device, shape, dtype):
        """A new array on ``device`` in memory MPI may be handed (GPU-aware
        transport stages through one where ``mpi_direct`` is false)."""
        from .creation import empty
        return empty(shape, dtype, device=device)

    @property
    def class_name(self) -> str:
        return type(self).__name__
