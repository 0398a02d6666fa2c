"""Float ``x ** k`` for a literal integer ``k``, as the CPU backend computes it.

The CPU backend multiplies out a literal integer exponent from -16 to 16
(``codegen/llvm/powers.py`` explains the arithmetic; LLVM itself folds
``-1``, ``0``, ``1`` and ``2`` into ``1 / x``, ``1``, ``x`` and ``x * x``).
A C ``pow`` call differs from those products in the last bit for some
inputs, so the C-family targets spell the same operations, in the same
order, as one helper per type and exponent: with contraction off (every
target compiles with it off) and IEEE ``fma`` and division, the bits are the
CPU's. An f32 power is multiplied in double, which an OpenCL device without
``cl_khr_fp64`` lacks: there the helper calls ``pow``.
"""

from __future__ import annotations

from ... import types as T
from ...ir import expressions as E
from ..llvm.powers import MAX_EXPONENT, chain   # the CPU's products, in order



def literal_exponent(node):
    """``k`` when ``node`` is a float constant with an integer value within
    ``MAX_EXPONENT``, else None."""
    if not isinstance(node, E.Const):
        return None
    value = node.value
    if not isinstance(value, (int, float)) or value != value or value % 1:
        return None
    k = int(value)
    return k if abs(k) <= MAX_EXPONENT else None


def power_helper(target, dtype, k: int) -> tuple:
    """``(name, C text)`` of ``x ** k`` for an f32 or f64 ``x``."""
    t = target.type(dtype)
    name = f"tack_powk_{dtype.name}_{'m' if k < 0 else ''}{abs(k)}"
    lines = _Lines()
    if k in (-1, 0, 1, 2):
        result = {-1: f"({t})1 / x", 0: f"({t})1", 1: "x", 2: "x * x"}[k]
    elif dtype.bits == 32:
        result = _f32(lines, k)
    else:
        result = _f64(lines, k, target)
    body = "".join(f"  {line}\n" for line in lines.text) + f"  return {result};\n"
    if dtype.bits == 32 and k not in (-1, 0, 1, 2) and target.name == "OpenCL":
        body = (f"#ifdef cl_khr_fp64\n{body}#else\n"
                f"  return pow(x, ({t}){k});\n#endif\n")
    text = f"static inline {t} {name}({t} x) {{\n{body}}}\n"
    return name, text.replace("static inline", target.helper_prefix)


class _Lines:
    """Straight-line C: each operation assigned to a fresh variable."""

    def __init__(self):
        self.text, self.count = [], 0

    def let(self, c_type: str, value: str) -> str:
        self.count += 1
        name = f"v{self.count}"
        self.text.append(f"{c_type} {name} = {value};")
        return name


def _f32(lines, k: int) -> str:
    """In double, rounded once to float."""
    wide = lines.let("double", "(double)x")
    base = lines.let("double", f"1.0 / {wide}") if k < 0 else wide
    product = chain(abs(k), base, lambda a, b: lines.let("double", f"{a} * {b}"))
    return f"(float){product}"


def _f64(lines, k: int, target) -> str:
    """Two-term products, unless the plain chain gives zero, inf or NaN (a
    magnitude up to the largest double is finite: no INFINITY macro, which
    NVRTC does not define)."""
    def times(a, b):
        return lines.let("double", f"{a} * {b}")

    plain = chain(abs(k), lines.let("double", "1.0 / x") if k < 0 else "x", times)
    fma = target.math("fma", T.f64)
    pair = chain(abs(k), _reciprocal(lines, fma) if k < 0 else ("x", None),
                  lambda p, q: _two_product(lines, p, q, fma))
    precise = lines.let("double", f"{pair[0]} + {pair[1]}")
    magnitude = lines.let("double", f"{target.math('fabs', T.f64)}({plain})")
    usable = f"({magnitude} <= 1.7976931348623157e308 && {magnitude} != 0.0)"
    return f"{usable} ? {precise} : {plain}"


def _two_product(lines, p, q, fma):
    (ph, pl), (qh, ql) = p, q
    head = lines.let("double", f"{ph} * {qh}")
    error = lines.let("double", f"{fma}({ph}, {qh}, -{head})")
    cross = [lines.let("double", f"{u} * {v}")
             for u, v in ((ph, ql), (pl, qh)) if u is not None and v is not None]
    if len(cross) == 2:
        error = lines.let("double", f"{error} + ({cross[0]} + {cross[1]})")
    elif cross:
        error = lines.let("double", f"{error} + {cross[0]}")
    return head, error


def _reciprocal(lines, fma):
    q = lines.let("double", "1.0 / x")
    residual = lines.let("double", f"{fma}(-{q}, x, 1.0)")
    return q, lines.let("double", f"{residual} / x")
