"""The warm launch of the OpenCL backend: one generated Python function per
built variant, or per call signature with the runner written in.

``make_launch(backend, program, cl, max_launch)`` writes
``launch(args, extents)`` for one variant, which a call signature's runner
calls; given ``head`` (``launcher.fused_head``) it writes that runner itself
with the launch inside, one Python call less. The variant's
array positions and number of extents are known, so either is straight-line
code: it hands pyopencl the arguments in one ``set_args`` call (the scalars'
types were declared at the build, so pyopencl packs Python numbers itself)
and queues the kernel over the extents rounded up to whole workgroups, under
the variant's lock (the kernel object holds its arguments between the two
calls). pyopencl's errors from the enqueue are ``RuntimeError``s.
"""

from __future__ import annotations

from ..grid import WORKGROUP, count_lines, launch_count, standalone_head


def launch_source(head, n_args: int, positions, n_extents: int, plain: bool) -> str:
    """Source of one variant's launch: ``head`` sets the arguments ``a<k>`` and
    the extents ``e<k>`` (see the module doc)."""
    lines = head + count_lines(plain, n_extents)
    values = [f"a{k}._buffer.mem" if k in positions else f"a{k}" for k in range(n_args)]
    values += ["total"] + [f"e{k}" for k in range(1, n_extents)]
    values += [f"a{k}._ptr" for k in sorted(positions)]   # bytes into the allocation
    lines += ["    acquire()",   # a `with` block costs twice as much on Python 3.11
              "    try:",
              f"        set_args({', '.join(values)})",
              "        enqueue(queue, kernel, (-(-total // WORKGROUP) * WORKGROUP,), LOCAL)",
              "    except Error as exc:   # pyopencl's: the launch failed",
              "        raise RuntimeError(f'an OpenCL launch failed: {exc}') from exc",
              "    finally:",
              "        release()"]
    return "\n".join(lines) + "\n"


def make_launch(backend, program, cl, max_launch: int, head=None):
    """The variant's ``launch(args, extents)``, or the fused runner (see the
    module doc); its source is ``launch.source``."""
    kernel = program.kernel

    def count(extents):
        return launch_count(program.name, extents, program.full_workgroups, max_launch,
                            backend.api_name)

    scope = dict(MAX_LAUNCH=max_launch, WORKGROUP=WORKGROUP, LOCAL=(WORKGROUP,),
                 count=count, set_args=kernel.set_args, enqueue=cl.enqueue_nd_range_kernel,
                 queue=backend.queue, kernel=kernel, Error=cl.Error,
                 acquire=program.lock.acquire, release=program.lock.release)
    lines, names = head or (standalone_head(range(program.n_args), program.n_extents), {})
    scope.update(names)
    source = launch_source(lines, program.n_args, set(program.array_positions),
                           program.n_extents, not program.full_workgroups)
    exec(compile(source, f"<tack OpenCL launch of {program.name}>", "exec"), scope)
    launch = scope["launch"]
    launch.source = source
    return launch
