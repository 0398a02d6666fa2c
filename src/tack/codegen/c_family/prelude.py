"""C helper functions with Python's semantics, emitted only when a kernel uses them.

They mirror ``codegen/llvm/helpers.py``: integer ``//`` and ``%`` floor (a
zero divisor gives 0, ``MIN // -1`` wraps), float ``//`` and ``%`` follow
CPython, integer ``**`` squares and multiplies, shifts past the width give 0
(or the sign), and ``min``/``max`` keep Python's "first wins" rule.
"""

from __future__ import annotations

from ... import types as T


def _int_floordiv(t, u, signed, n):
    if not signed:
        return f"static inline {t} tack_floordiv_{n}({t} a, {t} b) {{ return b == 0 ? 0 : a / b; }}\n"
    return (f"static inline {t} tack_floordiv_{n}({t} a, {t} b) {{\n"
            f"  if (b == 0) return 0;\n"
            f"  if (b == -1) return ({t})(0 - ({u})a);\n"
            f"  {t} q = a / b, r = a % b;\n"
            f"  return (r != 0 && ((r ^ b) < 0)) ? q - 1 : q;\n}}\n")


def _int_mod(t, u, signed, n):
    if not signed:
        return f"static inline {t} tack_mod_{n}({t} a, {t} b) {{ return b == 0 ? 0 : a % b; }}\n"
    return (f"static inline {t} tack_mod_{n}({t} a, {t} b) {{\n"
            f"  if (b == 0 || b == -1) return 0;\n"
            f"  {t} r = a % b;\n"
            f"  return (r != 0 && ((r ^ b) < 0)) ? ({t})(r + b) : r;\n}}\n")


def _float_floordiv(t, u, signed, n):
    return (f"static inline {t} tack_floordiv_{n}({t} a, {t} b) {{\n"
            f"  {t} m = fmod(a, b), d = (a - m) / b;\n"
            f"  if (m != 0) {{ if ((b < 0) != (m < 0)) d -= 1; }}\n"
            f"  if (d != 0) {{ {t} f = floor(d); if (d - f > ({t})0.5) f += 1; return f; }}\n"
            f"  return copysign(({t})0, a / b);\n}}\n")


def _float_mod(t, u, signed, n):
    return (f"static inline {t} tack_mod_{n}({t} a, {t} b) {{\n"
            f"  {t} m = fmod(a, b);\n"
            f"  if (m != 0) {{ if ((b < 0) != (m < 0)) m += b; }}\n"
            f"  else m = copysign(({t})0, b);\n"
            f"  return m;\n}}\n")


def _int_pow(t, u, signed, n):
    negative = ("  if (e < 0) return b == 1 ? 1 : (b == -1 ? ((e & 1) ? -1 : 1) : 0);\n"
                if signed else "")
    return (f"static inline {t} tack_ipow_{n}({t} b, {t} e) {{\n{negative}"
            f"  {u} r = 1, p = ({u})b, n = ({u})e;\n"
            f"  while (n) {{ if (n & 1) r *= p; p *= p; n >>= 1; }}\n"
            f"  return ({t})r;\n}}\n")


def _min(t, u, signed, n):
    return f"static inline {t} tack_min_{n}({t} a, {t} b) {{ return b < a ? b : a; }}\n"


def _max(t, u, signed, n):
    return f"static inline {t} tack_max_{n}({t} a, {t} b) {{ return a < b ? b : a; }}\n"


def _abs(t, u, signed, n):
    return f"static inline {t} tack_abs_{n}({t} a) {{ return a < 0 ? ({t})(0 - ({u})a) : a; }}\n"


def _shl(t, u, signed, n, bits):
    return (f"static inline {t} tack_shl_{n}({t} a, {t} n) {{ return ({u})n < {bits}u ? "
            f"({t})(({u})a << n) : 0; }}\n")


def _shr(t, u, signed, n, bits):
    fill = f"(a < 0 ? ({t})-1 : 0)" if signed else "0"
    return (f"static inline {t} tack_shr_{n}({t} a, {t} n) {{ return ({u})n < {bits}u ? "
            f"({t})(a >> n) : {fill}; }}\n")


_BUILDERS = {"floordiv": (_int_floordiv, _float_floordiv), "mod": (_int_mod, _float_mod),
             "ipow": (_int_pow, None), "min": (_min, _min), "max": (_max, _max),
             "abs": (_abs, None)}


class Prelude:
    """Collects the helpers one kernel needs, each once, in first-use order."""

    def __init__(self, target):
        self.target = target
        self.parts: dict = {}

    def helper(self, name: str, dtype) -> str:
        key = f"tack_{name}_{dtype.name}"
        if key not in self.parts:
            self.parts[key] = self._text(name, dtype)
        return key

    def _text(self, name, dtype) -> str:
        t = self.target.type(dtype)
        # the unsigned type helpers wrap in: 32 bits at least, as C computes
        # narrower ones in a signed int (where 16-bit products overflow)
        u = self.target.type(T.scalar_type(f"u{max(dtype.bits, 32)}")) if dtype.is_int else t
        if name in ("shl", "shr"):
            builder = _shl if name == "shl" else _shr
            text = builder(t, u, dtype.is_signed, dtype.name, dtype.bits)
        else:
            integer, floating = _BUILDERS[name]
            text = (floating if dtype.is_float else integer)(t, u, dtype.is_signed,
                                                             dtype.name)
        return text.replace("static inline", self.target.helper_prefix)

    def add_text(self, key: str, text: str) -> None:
        self.parts.setdefault(key, text)

    def text(self) -> str:
        return "".join(self.parts.values())


def bounds_check(target, dims: int) -> tuple:
    """(name, C text) of debug mode's check of a ``dims``-dimensional access:
    the flat index when every index is inside its extent (compared unsigned, so
    a negative one is outside), else -1 after counting the violation in
    ``errors`` = [count, site, index, dimension, extent]; the access whose
    count was the first records the rest (the first failing dimension), as the
    CPU backend does (``codegen/llvm/expressions.py``)."""
    name = f"tack_check_{dims}"
    t, space = target.index_type, target.global_space
    u = target.type(T.u64)
    params = "".join(f", {t} i{d}, {t} e{d}" for d in range(dims))
    inside = " && ".join(f"({u})i{d} < ({u})e{d}" for d in range(dims))
    flat = "i0"
    for d in range(1, dims):
        flat = f"({flat}) * e{d} + i{d}"
    first_out = "".join(f"  {'if' if d == 0 else 'else if'} (!(({u})i{d} < ({u})e{d})) "
                        f"{{ dim = {d}; index = i{d}; extent = e{d}; }}\n"
                        for d in range(dims))
    count = target.atomic("add", T.i64, "&errors[0]", "1")
    text = (f"static inline {t} {name}({space} {t}* errors, {t} site{params}) {{\n"
            f"  if ({inside}) return {flat};\n"
            f"  {t} dim = 0, index = i0, extent = e0;\n"
            f"{first_out}"
            f"  if ({count} == 0) {{\n"
            f"    errors[1] = site; errors[2] = index; errors[3] = dim; errors[4] = extent;\n"
            f"  }}\n"
            f"  return -1;\n}}\n")
    return name, text.replace("static inline", target.helper_prefix)
