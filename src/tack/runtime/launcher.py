"""The warm dispatch path: one generated Python function per call signature.

For a signature seen before, ``Kernel.__call__`` runs a function written for
exactly that argument pattern: it unpacks the arguments, reads the extents
the variant takes at run time, evaluates the loop extents, tests the arrays
for overlap (picking the disjoint or aliased variant, and on the CPU the
streaming one for large write-only arrays), packs the arguments with one
``struct.pack_into`` into a buffer owned by the calling thread, and makes one
native call. Nothing in it walks IR, derives a key, or allocates beyond
Python's own integers (and, on a device, the tuples it hands the launch).

The generated source is kept on the launcher (``source``) for inspection.
"""

from __future__ import annotations

import ctypes
import struct
import threading

from .. import types as T
from ..codegen.llvm.artifact import POINTER
from .host_eval import extent_source, helpers

_FORMATS = {T.i8: "b", T.i16: "h", T.i32: "i", T.i64: "q", T.u8: "B", T.u16: "H",
            T.u32: "I", T.u64: "Q", T.f32: "f", T.f64: "d", POINTER: "P"}


MAX_CPU_LAUNCH = (1 << 63) - 1   # the entry's row and iteration counts are i64


def pack_format(fields) -> struct.Struct:
    """The native-aligned layout of a pack, the same as the LLVM struct's."""
    return struct.Struct("@" + "".join(_FORMATS[f] for f in fields) or "@i")


class PackBuffers(threading.local):
    """One pack buffer per thread, so concurrent dispatches never share one."""

    def __init__(self, size: int):
        self.buffer = (ctypes.c_char * max(size, 8))()
        self.address = ctypes.addressof(self.buffer)


# Up to this many arrays the overlap test compares every pair inline; more
# sort their byte ranges (24 arrays were 276 comparisons a call, 7.2 us a
# launch, 4.9 us sorted; 8 arrays compare faster inline, 1.6 us against 2.7).
PAIRWISE_ARRAYS = 12


def _overlap_test(array_positions) -> str:
    if len(array_positions) > PAIRWISE_ARRAYS:
        return f"disjoint(({''.join(f'a{k}, ' for k in array_positions)}))"
    pairs = [(i, j) for n, i in enumerate(array_positions)
             for j in array_positions[n + 1:]]
    if not pairs:
        return "True"
    return " and ".join(f"(a{i}._hi <= a{j}._lo or a{j}._hi <= a{i}._lo)"
                        for i, j in pairs)


def disjoint(arrays) -> bool:
    """Whether no two of ``arrays`` share a byte: their ranges, sorted, each
    end where the next begins or before (the pairwise test's answer). The
    generated runners call it past ``PAIRWISE_ARRAYS`` arrays, and
    ``dispatch.variant_mode`` for any number."""
    spans = sorted([(a._lo, a._hi) for a in arrays])
    end = spans[0][1] if spans else 0
    for lo, hi in spans[1:]:
        if lo < end:
            return False
        end = hi
    return True


def rows_stream(row: int, *arrays) -> bool:
    """Whether streaming stores pay in a loop of several dimensions whose
    innermost extent is ``row``, into ``arrays`` (the write-only ones). A
    streaming store that fills part of a cache line, at a row's ends, costs
    more than the stores save unless the rows are long: on this project's VM
    an (n, 8) f32 loop ran 70 times as long as with cached stores, (n, 100)
    3.5 times, (n, 1000) 0.8 times. Rows that are whole, aligned cache lines
    (the array's own rows, 64-byte multiples from a 64-byte boundary) always
    pay."""
    for a in arrays:
        size = row * a._dtype.itemsize
        whole = size % 64 == 0 and a._shape[-1:] == (row,) and a._lo % 64 == 0
        if not (whole or size >= 4096):
            return False
    return True


def _mode(test: str, streamed, streaming_bytes: int, n_extents: int = 1) -> str:
    """The variant a call takes (dispatch.ALIASED 0, DISJOINT 1, STREAMING 2):
    streaming when the arrays are disjoint, the write-only ones (``streamed``)
    hold at least ``streaming_bytes`` and, in a loop of several dimensions,
    ``rows_stream`` says its rows pay."""
    if not streamed or test == "False":
        return test   # a bool indexes ALIASED (False) or DISJOINT (True)
    size = " + ".join(f"(a{k}._hi - a{k}._lo)" for k in streamed)
    rows = (f" and rows_stream(e{n_extents - 1}, {''.join(f'a{k}, ' for k in streamed)})"
            if n_extents > 1 else "")
    return f"((2 if {size} >= {streaming_bytes}{rows} else 1) if {test} else 0)"


def _prologue(name: str, n_args: int, extents, positions, hidden=()) -> list:
    """``def <name>(args):`` unpacking the arguments as ``a<k>``, setting the
    run-time extents the kernel takes as hidden parameters after them (``hidden``:
    ``(position, dim)`` of each, see ``resolve``) and the loop's extents ``e<k>``."""
    lines = [f"def {name}(args):"]
    if n_args:
        lines.append(f"    {', '.join(f'a{k}' for k in range(n_args))}, = args")
    lines += [f"    a{n_args + j} = a{k}._shape[{d}]" for j, (k, d) in enumerate(hidden)]
    lines += [f"    e{k} = {extent_source(e, positions, checked=False)}"
              for k, e in enumerate(extents)]
    return lines


def generate(n_args: int, array_positions, extents, positions, disjoint_ok: bool,
             result: bool, packed: bool = True, streamed=(),
             streaming_bytes: int = 0, hidden=()) -> str:
    """Source of ``run(args)`` for one signature (see module doc)."""
    lines = _prologue("run", n_args, extents, positions, hidden)
    test = _overlap_test(array_positions) if disjoint_ok else "False"
    lines.append(f"    m = {_mode(test, streamed, streaming_bytes, len(extents))}")
    lines.append("    p = programs[m] or program(m)")
    if not packed:  # the backend binds the arguments itself (device backends)
        given = (f"({''.join(f'a{k}, ' for k in range(n_args + len(hidden)))})"
                 if hidden else "args")
        lines.append(f"    p.launch({given}, "
                     f"({''.join(f'e{k}, ' for k in range(len(extents)))}))")
        lines.append("    return result(args)" if result else "    return None")
        return "\n".join(lines) + "\n"
    total = " * ".join(f"e{k}" for k in range(len(extents)))
    extent_tuple = f"({''.join(f'e{k}, ' for k in range(len(extents)))})"
    positive = " and ".join(f"e{k} > 0" for k in range(len(extents)))
    lines.append(f"    if {positive}:")
    values = [f"a{k}._ptr" if k in array_positions else f"a{k}"
              for k in range(n_args + len(hidden))]
    values += [f"e{k}" for k in range(1, len(extents))]
    if len(extents) > 1:   # the product is the entry's i64 loop count: it must fit
        lines.append(f"        t = {total}")
        lines.append(f"        if t > {MAX_CPU_LAUNCH}:")
        lines.append(f"            too_large({extent_tuple})")
        total = "t"
    lines.append("        buffers = p.buffers")
    lines.append("        try:")   # costs nothing until it catches
    lines.append(f"            p.pack(buffers.buffer, 0, {', '.join(values)})")
    lines.append(f"            p.launch(buffers.address, e0, {total})")
    lines.append("        except (OverflowError, struct.error):")
    lines.append(f"            too_large({extent_tuple})")
    lines.append("            raise")
    lines.append("    return result(args)" if result else "    return None")
    return "\n".join(lines) + "\n"


def fused_head(kernel: str, n_args: int, array_positions, extents, positions,
               disjoint_ok: bool, hidden, mode: int, other) -> tuple:
    """``(lines, names)``: the head of a signature's runner with the launch of
    variant ``mode`` written in (``Backend.fused_launcher``, device backends),
    and the names it uses. It is the runner's own first lines, then a
    hand-over to ``other`` (the plain runner) for a call whose arrays take
    the other variant."""
    lines = _prologue("launch", n_args, extents, positions, hidden)
    test = _overlap_test(array_positions) if disjoint_ok else "False"
    if test not in ("True", "False"):
        lines += [f"    if {'not ' if mode else ''}({test}):",
                  "        return other(args)"]
    return lines, dict(helpers(kernel), other=other, disjoint=disjoint)


def too_large(extents, kernel: str) -> None:
    """``ValueError`` if the launch over ``extents`` has more iterations, or an
    extent, than an i64 holds (what made the pack or the native call fail)."""
    total = 1
    for e in extents:
        total *= e
    if total > MAX_CPU_LAUNCH:
        raise ValueError(f"Kernel '{kernel}': a launch of {total} iterations is larger "
                         f"than one CPU launch can index ({MAX_CPU_LAUNCH})")


def compile_runner(kernel: str, source: str, programs, program, result):
    """``run(args)`` from ``source`` (``generate``) for kernel ``kernel``."""
    scope = dict(helpers(kernel), rows_stream=rows_stream, disjoint=disjoint,
                 struct=struct, too_large=lambda extents: too_large(extents, kernel))
    scope.update(programs=programs, program=program, result=result)
    exec(compile(source, "<tack launcher>", "exec"), scope)
    return scope["run"]
