"""The iteration count of a device launch, checked the same way on every GPU backend."""

from __future__ import annotations

WORKGROUP = 256   # lanes per workgroup on the device backends


def launch_count(name: str, extents, full_workgroups: bool, limit: int, api: str) -> int:
    """The product of ``extents``, or 0 when one is not positive (nothing runs:
    two negative extents must not multiply to a positive count). ``ValueError``
    for a workgroup kernel whose count is not a multiple of :data:`WORKGROUP`,
    or a count past ``limit``, what one ``api`` grid can index."""
    total = 1
    for e in extents:
        if e <= 0:
            return 0
        total *= e
    if full_workgroups and total % WORKGROUP:
        raise ValueError(f"Kernel '{name}' uses workgroup collectives (barriers, "
                         f"shared memory or block reductions), so its launch "
                         f"must fill whole workgroups of {WORKGROUP}: "
                         f"{total} iterations is not a multiple of {WORKGROUP}")
    if total > limit:
        raise ValueError(f"Kernel '{name}': a launch of {total} iterations is larger "
                         f"than one {api} grid can index ({limit})")
    return total


def count_lines(plain: bool, n_extents: int) -> list:
    """The first lines of a generated launch body (the OpenCL and stream
    backends'), after its head has set the extents ``e0``, ``e1``, ...:
    ``total`` from the extents, returning when it is not positive. A
    one-dimensional launch without workgroup collectives only compares with
    ``MAX_LAUNCH`` (``count`` raises the error); others call ``count``, which
    checks everything."""
    extents = "(" + "".join(f"e{k}, " for k in range(n_extents)) + ")"
    if plain and n_extents == 1:
        return ["    total = e0",
                "    if total <= 0:",
                "        return",
                "    if total > MAX_LAUNCH:",
                f"        count({extents})"]
    return [f"    total = count({extents})",
            "    if total <= 0:",
            "        return"]


def standalone_head(positions, n_extents: int) -> list:
    """The head of a launch called as ``launch(args, extents)``: the arguments
    the body reads (``a<k>`` for position k) and the extents (``e<k>``)."""
    return (["def launch(args, extents):"]
            + [f"    a{k} = args[{k}]" for k in sorted(positions)]
            + [f"    e{k} = extents[{k}]" for k in range(n_extents)])
