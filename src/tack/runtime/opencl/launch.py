"""The warm launch of the OpenCL backend: one generated Python function per
built variant.

``make_launch(backend, program)`` writes ``launch(args, extents)`` for one
variant. Its array arguments' positions and its number of extents are known,
so the function is straight-line code: it hands pyopencl the arguments in one
``set_args`` call (the scalars' types were declared at the build, so pyopencl
packs Python numbers itself) and queues the kernel over the extents rounded
up to whole workgroups, under the variant's lock (the kernel object holds its
arguments between the two calls).
"""

from __future__ import annotations

from ..grid import WORKGROUP, count_lines, launch_count


def launch_source(n_args: int, positions, n_extents: int, plain: bool) -> str:
    """Source of ``launch(args, extents)`` for one variant (see module doc)."""
    lines = ["def launch(args, extents):"] + count_lines(plain, n_extents)
    values = [f"args[{k}]._buffer.mem" if k in positions else f"args[{k}]"
              for k in range(n_args)]
    values += ["total"] + [f"extents[{k}]" for k in range(1, n_extents)]
    lines += ["    acquire()",   # a `with` block costs twice as much on Python 3.11
              "    try:",
              f"        set_args({', '.join(values)})",
              "        enqueue(queue, kernel, (-(-total // WORKGROUP) * WORKGROUP,), LOCAL)",
              "    finally:",
              "        release()"]
    return "\n".join(lines) + "\n"


def make_launch(backend, program, enqueue, max_launch: int):
    """The variant's ``launch(args, extents)`` (its source: ``launch.source``)."""
    kernel = program.kernel

    def count(extents):
        return launch_count(program.name, extents, program.full_workgroups, max_launch,
                            backend.api_name)

    scope = dict(MAX_LAUNCH=max_launch, WORKGROUP=WORKGROUP, LOCAL=(WORKGROUP,),
                 count=count, set_args=kernel.set_args, enqueue=enqueue,
                 queue=backend.queue, kernel=kernel,
                 acquire=program.lock.acquire, release=program.lock.release)
    source = launch_source(program.n_args, set(program.array_positions),
                           program.n_extents, not program.full_workgroups)
    exec(compile(source, f"<tack OpenCL launch of {program.name}>", "exec"), scope)
    launch = scope["launch"]
    launch.source = source
    return launch
