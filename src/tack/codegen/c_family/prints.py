"""``print()`` on the C-family backends: records in a buffer, formatted on the host.

A GPU kernel cannot call into Python, so a kernel that prints gets one more
array parameter, ``__tack_print__``: ``HEADER`` words ([words reserved,
records dropped]) and then ``CAPACITY`` words of records. Each ``print``
evaluates its values, reserves ``1 + n`` words with one atomic add and, when
they fit, writes ``[statement, bits of value 1, ..., bits of value n]``; a
record that does not fit counts as dropped (its statement number is still
written when its first word fits, so the host sees where the records end). The statement numbers index
``print_statements(fn)``, which also holds the string labels and the value
types, so the host (``runtime/print_buffer.py``) formats each line with
Python's ``str``, as the CPU backend's ``print`` does.

Value bits: a signed integer sign-extended to 64 bits, an unsigned one
zero-extended, an f32 its 32-bit pattern, an f64 its 64-bit pattern.
"""

from __future__ import annotations

from ... import types as T
from ...ir import expressions as E
from ...ir import statements as S
from ...ir.traversal import walk

PRINT_BUFFER = "__tack_print__"
HEADER = 2
CAPACITY = 1 << 16


def print_statements(fn: S.Function) -> tuple:
    """The kernel's print statements in preorder: record ``k`` is statement ``k``."""
    return tuple(node for s in fn.body for node in walk(s) if isinstance(node, S.Print))


def with_print_buffer(fn: S.Function) -> S.Function:
    """``fn`` with the print buffer as its last parameter, if it prints (and
    does not have it already)."""
    if not print_statements(fn) or (fn.params and fn.params[-1].name == PRINT_BUFFER):
        return fn
    buffer = S.Param(PRINT_BUFFER, dtype=T.u64, is_array=True, ndim=1, span=fn.span)
    return fn.replace(params=fn.params + (buffer,))


def value_kind(dtype) -> str:
    """How the host decodes a value's bits: ``i`` signed, ``u`` unsigned, ``f``
    an f32 pattern, ``d`` an f64 pattern (the CPU's letters, see
    ``runtime/cpu/printing.py``)."""
    if dtype.is_float:
        return "f" if dtype.bits == 32 else "d"
    return "i" if dtype.is_signed else "u"


def emit_print(s: S.Print, em, statement: int, c) -> None:
    """The C of one print statement; ``c`` spells an expression."""
    target, word = em.target, em.type(T.u64)
    values = []
    for arg in s.args:
        if isinstance(arg, E.Str):
            continue
        held = em.temp(word, "p")        # evaluated in order, before the reservation
        em.emit(f"{held} = {_bits(arg, c(arg, em), target, word)};")
        values.append(held)
    buffer = em.name(PRINT_BUFFER)
    at = em.temp(word, "rec")
    reserve = target.atomic("add", T.u64, f"&{buffer}[0]", f"({word}){1 + len(values)}")
    drop = target.atomic("add", T.u64, f"&{buffer}[1]", f"({word})1")
    em.emit(f"{at} = {reserve};")
    em.emit(f"if ({at} + {1 + len(values)} <= {CAPACITY}) {{")
    em.depth += 1
    em.emit(f"{buffer}[{HEADER} + {at}] = {statement};")
    for k, held in enumerate(values, 1):
        em.emit(f"{buffer}[{HEADER + k} + {at}] = {held};")
    em.depth -= 1
    em.emit("} else {")   # the host stops at a record that runs past the end
    em.emit(f"  if ({at} < {CAPACITY}) {buffer}[{HEADER} + {at}] = {statement};")
    em.emit(f"  (void)({drop});")
    em.emit("}")


def _bits(arg, text: str, target, word: str) -> str:
    dtype = arg.dtype
    if dtype.is_float:
        return f"({word}){target.float_bits(dtype, text)}"
    if dtype.is_signed:
        return f"({word})({target.type(T.i64)})({text})"
    return f"({word})({text})"
