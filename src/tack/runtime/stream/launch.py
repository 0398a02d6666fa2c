"""The warm launch of the stream backends (CUDA, HIP): one generated Python
function per built variant, or per call signature with the runner written in.

``make_launch(backend, program)`` writes ``launch(args, extents)`` for one
variant, which a call signature's runner calls;
``make_launch(backend, program, head)`` writes that runner itself with
the launch inside, one Python call less (``launcher.fused_head``). The
variant's array positions, scalar slots and number of extents are known, so
either is straight-line code. A warm call reads the arrays' device addresses
into the reused parameter block, rewrites the scalar pack only when the
scalars changed, and calls the driver's launch function as
``backend.launch_function`` gives it (CUDA: libcuda's ``cuLaunchKernel``)
through ``trampoline.py``, one foreign call with two arguments, under the
variant's dispatch lock. The pack is the variant's, and so is the record of
what it holds (``program_writer``), shared by every launch of the variant.
It makes its context (or device) current only when the device model says
so: two held, a device of its own (``context.foreign``), or another thread.

Every kernel parameter is 8 bytes (device pointers and ``long long``
extents): ``values`` holds them and ``pointers`` their addresses, which is
what ``kernelParams`` is; the launch copies them, so the next launch may
overwrite them at once. An array that another library shares
(``DeviceBuffer.shared``) makes the launch complete before returning.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from ..grid import WORKGROUP, count_lines, launch_count, standalone_head
from .trampoline import bind

MAX_LAUNCH = ((1 << 31) - 1) * WORKGROUP   # gridDim.x blocks of 256 threads


def launch_source(head, positions, slot_args, n_extents: int, first_extent: int,
                  plain: bool) -> str:
    """Source of one variant's launch: ``head`` (see ``grid.standalone_head``
    and ``launcher.fused_head``) sets the arguments ``a<k>`` and the extents
    ``e<k>``; the body is the module doc's."""
    lines = head + count_lines(plain, n_extents)
    # acquire/release: a `with` block costs twice as much on Python 3.11
    lines += ["    acquire()",
              "    try:",
              "        previous = (enter() if several[0] or foreign or get_ident() != thread",
              "                    else None)",
              "        try:"]
    body = []
    if slot_args:
        body += [f"scalars = ({''.join(f'a{k}, ' for k in slot_args)})",
                 "if scalars != writer.last or (floats and 0 in scalars):",
                 "    writer.write(scalars, copy)"]
    body += [f"values[{k}] = a{position}._ptr" for k, position in enumerate(positions)]
    shared = " or ".join(f"a{p}._buffer.shared" for p in positions) or "False"
    body.append(f"values[{first_extent}] = total")
    body += [f"values[{first_extent + k}] = e{k}" for k in range(1, n_extents)]
    body += ["code = fire(job, -(-total // per_block))",
             "if code:",
             "    failed(code)",
             f"if {shared}:   # memory another library uses: complete before returning",
             "    wait()"]
    lines += ["            " + line for line in body]
    lines += ["        finally:",
              "            if previous is not None:",
              "                leave(previous)",
              "    finally:",
              "        release()"]
    return "\n".join(lines) + "\n"


def make_launch(backend, program, head=None):
    """The variant's ``launch(args, extents)``, or with ``head`` (``lines,
    names``, from ``launcher.fused_head``) a runner with the launch written in.
    It keeps its parameter block alive (``launch.parameters``) and its source
    (``launch.source``)."""
    context, info = backend.context, program.pack
    values = (ctypes.c_uint64 * max(program.n_params, 1))()
    pointers = (ctypes.c_void_p * len(values))(
        *[ctypes.addressof(values) + 8 * k for k in range(len(values))])
    fire, job, owner = bind(*backend.launch_function(program.function,
                                                     ctypes.addressof(pointers)),
                            WORKGROUP)
    first_extent = program.n_arrays + len(info.buffers)
    if program.pack_memory is not None:
        base = program.pack_memory.address
        for k, offset in enumerate(program.pack_offsets):
            values[program.n_arrays + k] = base + offset
    slot_args = [arg for arg, _, _ in info.slots]
    n_extents = program.n_params - first_extent

    def count(extents):
        return launch_count(program.name, extents, program.full_workgroups,
                            backend.max_launch, backend.api_name)

    scope = dict(
        MAX_LAUNCH=backend.max_launch, WORKGROUP=WORKGROUP, count=count,
        failed=backend.launch_failed,
        acquire=program.lock.acquire, release=program.lock.release,
        enter=context.enter, leave=context.leave,
        several=context.several, foreign=context.foreign,
        get_ident=threading.get_ident, thread=context.thread,
        writer=program_writer(program), copy=backend.copy_from_host_async,
        fire=fire, job=job,
        # a memoryview writes an integer faster than the ctypes array does
        values=memoryview(values).cast("B").cast("Q"),
        per_block=WORKGROUP * program.items, wait=backend._wait,
        # A float zero is always rewritten: 0.0 == -0.0, and the sign matters.
        # (`0 in scalars` is one C-level test; an integer zero rewrites too.)
        floats=any(info.buffers[b].is_float for _, b, _ in info.slots))
    lines, names = head or (standalone_head(set(program.array_positions) | set(slot_args),
                                            n_extents), {})
    scope.update(names)
    source = launch_source(lines, program.array_positions, slot_args, n_extents,
                           first_extent, not program.full_workgroups)
    exec(compile(source, f"<tack {backend.api_name} launch of {program.name}>", "exec"),
         scope)
    launch = scope["launch"]
    launch.parameters = (values, pointers, owner)
    launch.source = source
    return launch


_F32_MAX = float(np.finfo(np.float32).max)


def program_writer(program) -> "PackWriter":
    """The variant's one ``PackWriter``: its ``last`` says what the variant's pack
    allocation holds, whichever launch wrote it. (One per launch went stale
    where a variant has several launches: the runners of two default devices,
    or of two threads' first calls; a launch whose scalars equalled its own last
    ones skipped a write the other had overwritten, and ran with those.)"""
    with program.lock:
        writer = program.writer
        if writer is None:
            writer = program.writer = PackWriter(program)
    return writer


class PackWriter:
    """Copies a launch's scalars into the variant's pack allocation, on the
    stream; ``last`` is what it holds. The scalars are written with one
    assignment to a NumPy record whose fields sit at their slots' byte offsets
    (NumPy's casts, as before: a float beyond f32 becomes inf, an integer its
    type cannot hold raises OverflowError). NumPy warns of the first
    (``RuntimeWarning``, an exception under ``-W error``) where the CPU and
    OpenCL backends pass inf silently, so a value past f32's range is written
    with that warning off: looked for first, as ``np.errstate`` costs three
    times the write. From pageable memory the copy has
    taken the bytes when ``cuMemcpyHtoDAsync`` returns; each write makes a new
    record anyway, and the last is kept."""

    def __init__(self, program):
        self.program = program
        buffers, offsets = program.pack.buffers, program.pack_offsets
        self.record = np.dtype({
            "names": [f"s{k}" for k in range(len(program.pack.slots))],
            "formats": [buffers[b].numpy for _, b, _ in program.pack.slots],
            "offsets": [offsets[b] + slot * buffers[b].numpy.itemsize
                        for _, b, slot in program.pack.slots],
            "itemsize": program.pack_bytes})
        self.narrow = tuple(k for k, (_, b, _) in enumerate(program.pack.slots)
                            if buffers[b].numpy == np.float32)   # slots of f32
        self.last, self.host = None, None

    def write(self, scalars, copy) -> None:
        """Write ``scalars`` with ``copy`` (the launching backend's
        ``copy_from_host_async``; the caller holds the variant's lock)."""
        host = np.zeros(1, self.record)
        if self.narrow and any(abs(scalars[k]) > _F32_MAX for k in self.narrow):
            with np.errstate(over="ignore"):
                host[0] = scalars
        else:
            host[0] = scalars
        self.last = None    # unknown until the copy is queued (a Ctrl-C in between)
        copy(self.program.pack_memory.address, host)
        self.last, self.host = scalars, host
