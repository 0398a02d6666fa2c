"""Seeded generator of random kernels for fuzzing the frontend (issue 8).

``valid_program(rng)`` builds a random kernel in today's language together
with its inputs; every integer expression carries a sound interval, so the
generated programs never overflow, never divide by zero and never index out
of bounds, and the kernel must agree with ``reference.run_reference`` (the
same source run as plain Python on NumPy scalars). ``invalid_program(rng)``
inserts one rejected construct into a valid program and records the exact
``UnsupportedSyntaxError`` message it must raise.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

BOUND = 2 ** 30          # every int value stays strictly inside (-BOUND, BOUND)
FLITS = ("0.5", "1.5", "2.0", "0.25", "3.0", "0.75")


@dataclass
class Expr:
    text: str
    kind: str                 # "i" or "f"
    lo: int = 0
    hi: int = 0
    exact: bool = True        # float: no libm function inside (bit-exact)


@dataclass
class Program:
    source: str               # the whole module text
    kernel: str = "k"
    ftype: str = "f32"        # dtype of ``a``
    otype: str = "f32"        # dtype of ``outf``
    itype: str = "i32"
    n: int = 0
    shape2: tuple = (1, 1)
    m: int = 0
    s: float = 0.5
    ndindex: bool = False
    inexact: bool = False     # a libm function reaches the float output
    seed: int = 0
    # filled for invalid programs
    message: str = ""


def _paren(t):
    return f"({t})"


class _Gen:
    def __init__(self, rng: random.Random, ftype: str, itype: str):
        self.rng = rng
        self.ftype, self.itype = ftype, itype
        self.lines: list[str] = []
        self.scopes: list[list[Expr]] = [[]]   # visible temps (Expr with name as text)
        self.counter = 0
        self.inexact = False
        self.funcs: list[tuple[str, list[str], Expr]] = []  # name, param kinds, result
        self.in_func = False      # device function bodies see only their own names
        self.func_array = None
        self.wrap_a = False
        self.vec_dtype = ""
        self.nd = False           # an ndindex kernel: outputs written where j == 0

    # -- helpers ---------------------------------------------------------------
    def fresh(self, p):
        self.counter += 1
        return f"{p}{self.counter}"

    def visible(self, kind):
        return [e for s in self.scopes for e in s if e.kind == kind]

    def emit(self, depth, text):
        self.lines.append("    " * depth + text)

    # -- expressions -----------------------------------------------------------
    def ileaf(self):
        r = self.rng
        c = r.randrange(9)
        vis = self.visible("i")
        if c == 0 and vis:
            return r.choice(vis)
        if c == 1 or self.in_func:
            if self.in_func and vis and c % 2:
                return r.choice(vis)
            v = r.randint(-9, 9)
            return Expr(str(v) if v >= 0 else f"({v})", "i", v, v)
        if c == 2:
            return Expr("b[i]", "i", -100, 100)
        if c == 3:
            return Expr("m", "i", 0, 4)
        if c == 4:
            return Expr("c2[i % c2.shape[0], j % c2.shape[1]]", "i", -100, 100)
        if c == 5:
            fe = self.fexpr(2, exact=True)
            k = r.randint(2, 50)
            fn = r.choice(("int", "math.floor"))
            return Expr(f"({fn}({fe.text}) % {k})", "i", 0, k - 1)
        return Expr(r.choice(("i", "j")), "i", 0, 60)

    def fleaf(self, exact=False):
        r = self.rng
        c = r.randrange(7)
        vis = [e for e in self.visible("f") if e.exact or not exact]
        if c == 0 and vis:
            return r.choice(vis)
        if c == 1 and not self.in_func:
            return Expr("s", "f")
        if self.in_func and getattr(self, "func_array", None) and c >= 5:
            arr = self.func_array
            ie = self.iexpr(1)
            return Expr(self.wrap(f"{arr}[({ie.text}) % len({arr})]"), "f")
        if c == 2 or self.in_func:
            ie = self.iexpr(1)
            return Expr(f"float({ie.text})", "f")
        return Expr(self.wrap("a[i]" if c < 5 else "a[(i + j) % n]"), "f")

    def wrap(self, load):
        # With f32 ``a`` and an f64 default float, an f32 value would meet f64
        # values at joins (a local assigned both, ``x if c else y``, min/max,
        # device function returns), where the kernel converts to the joined
        # type and Python keeps each value's own type: read ``a`` as f64.
        return f"float({load})" if self.wrap_a else load

    def iexpr(self, depth):
        for _ in range(20):
            e = self._iexpr(depth)
            if -BOUND < e.lo <= e.hi < BOUND:
                return e
        return self.ileaf()

    def _iexpr(self, depth):
        r = self.rng
        if depth <= 0 or r.random() < 0.3:
            return self.ileaf()
        c = r.randrange(14)
        x = self.iexpr(depth - 1)
        if c <= 2:
            y = self.iexpr(depth - 1)
            op = "+-*"[c]
            if op == "+":
                lo, hi = x.lo + y.lo, x.hi + y.hi
            elif op == "-":
                lo, hi = x.lo - y.hi, x.hi - y.lo
            else:
                ps = [x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi]
                lo, hi = min(ps), max(ps)
            return Expr(f"({x.text} {op} {y.text})", "i", lo, hi)
        if c == 3:   # floor division by a nonzero divisor
            if r.random() < 0.5:
                k = r.choice([1, 2, 3, 7, -1, -2, -5])
                d = str(k) if k > 0 else f"({k})"
            else:
                k = r.randint(1, 9)
                d = f"({self.iexpr(depth - 1).text} % {k} + 1)"
            mag = max(abs(x.lo), abs(x.hi))
            return Expr(f"({x.text} // {d})", "i", -mag - 1, mag + 1)
        if c == 4:
            k = r.choice([2, 3, 5, 8, 13, -3, -7])
            if k > 0:
                return Expr(f"({x.text} % {k})", "i", 0, k - 1)
            return Expr(f"({x.text} % ({k}))", "i", k + 1, 0)
        if c == 5:
            e = r.randint(0, 3)
            mag = max(abs(x.lo), abs(x.hi)) ** e
            return Expr(f"({x.text} ** {e})", "i", -mag, mag)
        if c == 6:
            sft = r.randint(0, 5)
            if r.random() < 0.5:
                return Expr(f"({x.text} << {sft})", "i", x.lo << sft, x.hi << sft)
            return Expr(f"({x.text} >> {sft})", "i", x.lo >> sft, x.hi >> sft)
        if c == 7:
            y = self.iexpr(depth - 1)
            op = r.choice("&|^")
            bits = max(abs(x.lo), abs(x.hi), abs(y.lo), abs(y.hi)).bit_length() + 1
            return Expr(f"({x.text} {op} {y.text})", "i", -(1 << bits), 1 << bits)
        if c == 8:
            if r.random() < 0.5:
                return Expr(f"(~{x.text})", "i", -x.hi - 1, -x.lo - 1)
            return Expr(f"(-{x.text})", "i", -x.hi, -x.lo)
        if c == 9:
            y = self.iexpr(depth - 1)
            fn = r.choice(("min", "max"))
            return Expr(f"{fn}({x.text}, {y.text})", "i",
                        min(x.lo, y.lo), max(x.hi, y.hi))
        if c == 10:
            mag = max(abs(x.lo), abs(x.hi))
            return Expr(f"abs({x.text})", "i", 0, mag)
        if c == 11:
            return Expr(self.cond(depth - 1), "i", 0, 1)
        if c == 12:
            y = self.iexpr(depth - 1)
            return Expr(f"({x.text} if {self.cond(depth - 1)} else {y.text})", "i",
                        min(x.lo, y.lo), max(x.hi, y.hi))
        return self.call_func("i", depth) or x

    def fexpr(self, depth, exact=False):
        r = self.rng
        if depth <= 0 or r.random() < 0.3:
            return self.fleaf(exact)
        c = r.randrange(10)
        x = self.fexpr(depth - 1, exact)
        if c <= 3:
            op = "+-*/"[c]
            if r.random() < 0.3:
                y = Expr(r.choice(FLITS), "f")
            else:
                y = self.fexpr(depth - 1, exact)
            if op == "/":
                return Expr(f"({x.text} / ({y.text} * {y.text} + 1.0))", "f",
                            exact=x.exact and y.exact)
            return Expr(f"({x.text} {op} {y.text})", "f", exact=x.exact and y.exact)
        if c == 4:
            fn = r.choice(("min", "max"))
            y = self.fexpr(depth - 1, exact)
            return Expr(f"{fn}({x.text}, {y.text})", "f", exact=x.exact and y.exact)
        if c == 5:
            return Expr(f"abs({x.text})", "f", exact=x.exact)
        if c == 6:
            y = self.fexpr(depth - 1, exact)
            return Expr(f"({x.text} if {self.cond(depth - 1)} else {y.text})", "f",
                        exact=x.exact and y.exact)
        if c == 7 and not exact:
            fn = r.choice(("sqrt", "exp", "sin", "sqrt", "erf", "expm1", "log1p", "cbrt",
                           "tanh"))
            if fn == "sqrt":
                return Expr(f"math.sqrt(abs({x.text}))", "f", exact=x.exact)
            if fn == "log1p":
                return Expr(f"math.log1p(abs({x.text}))", "f", exact=False)
            arg = f"min(max({x.text}, -4.0), 4.0)"
            return Expr(f"math.{fn}({arg})", "f", exact=False)
        if c == 8:
            k = r.choice(("2.0", "1.5", "0.75"))
            if r.random() < 0.25:          # C's remainder: exact, the dividend's sign
                return Expr(f"math.fmod({x.text}, {k})", "f", exact=x.exact)
            op = r.choice(("//", "%"))
            return Expr(f"({x.text} {op} {k})", "f", exact=x.exact)
        if c == 9 and r.random() < 0.5:
            return self.vector_scalar(depth)
        return self.call_func("f", depth) or x

    # -- vector math (vec3 values reduced to a scalar) --------------------------
    def vector_scalar(self, depth):
        """A scalar from vec3 math: a dot product, a length, or a component."""
        r = self.rng
        v = self.vexpr(depth - 1)
        c = r.randrange(5)
        if c == 0:
            text = f"tack.dot({v}, {self.vexpr(depth - 1)})"
        elif c == 1:
            text = f"tack.length({v})"
        elif c == 2:
            text = f"({v}).{r.choice('xyz')}"
        elif c == 3:
            text = f"({v})[{r.randrange(3)}]"
        else:
            text = f"({v} @ {self.vexpr(depth - 1)})"
        return Expr(self.wrap(text), "f", exact=True)

    def vexpr(self, depth) -> str:
        r = self.rng
        if depth <= 0 or r.random() < 0.35:
            if r.random() < 0.3:
                return f"tack.vec3({self.fexpr(depth - 1, exact=True).text}{self.vec_dtype})"
            parts = [self.fexpr(depth - 1, exact=True).text for _ in range(3)]
            return f"tack.vec3({', '.join(parts)}{self.vec_dtype})"
        c = r.randrange(8)
        x = self.vexpr(depth - 1)
        if c <= 2:
            return f"({x} {'+-*'[c]} {self.vexpr(depth - 1)})"
        if c == 3:
            f = self.fexpr(depth - 1, exact=True).text
            return f"({x} * {f})" if r.random() < 0.5 else f"({f} * {x})"
        if c == 4:
            f = self.fexpr(depth - 1, exact=True).text
            return f"({x} / ({f} * {f} + 1.0))"
        if c == 5:
            return f"tack.cross({x}, {self.vexpr(depth - 1)})"
        if c == 6:
            return f"{r.choice(('min', 'max'))}({x}, {self.vexpr(depth - 1)})"
        return f"(-{x})" if r.random() < 0.5 else f"abs({x})"

    def cond(self, depth):
        r = self.rng
        c = r.randrange(6)
        if c <= 2 or depth <= 0:
            if r.random() < 0.6:
                x, y = self.iexpr(depth), self.iexpr(depth)
            else:
                x, y = self.fexpr(depth, exact=True), self.fexpr(depth, exact=True)
            op = r.choice(("<", "<=", ">", ">=", "==", "!="))
            if r.random() < 0.15:
                z = self.iexpr(depth) if x.kind == "i" else self.fexpr(depth, True)
                return f"({x.text} {op} {y.text} < {z.text})"
            return f"({x.text} {op} {y.text})"
        if c == 3:
            return f"(not {self.cond(depth - 1)})"
        op = r.choice(("and", "or"))
        return f"({self.cond(depth - 1)} {op} {self.cond(depth - 1)})"

    def call_func(self, kind, depth):
        arr = self.func_array if self.in_func else "a"
        cands = [f for f in self.funcs if f[2].kind == kind and (arr or "a" not in f[1])]
        if not cands:
            return None
        name, kinds, res = self.rng.choice(cands)
        args = []
        for k in kinds:
            if k == "a":
                args.append(arr)
            elif k == "i":
                e = self.iexpr(depth - 1)
                if e.lo < -1000 or e.hi > 1000:
                    e = Expr(f"({e.text} % 1000)", "i", 0, 999)
                args.append(e.text)
            else:
                args.append(self.fexpr(depth - 1, exact=True).text)
        return Expr(f"{name}({', '.join(args)})", kind, res.lo, res.hi, exact=res.exact)

    # -- statements ------------------------------------------------------------
    def block(self, depth, budget, loops, accs, trips, names=()):
        """Emit statements at ``depth``; ``loops``: enclosing sequential loops."""
        r = self.rng
        self.scopes.append(list(names))
        n = r.randint(1, budget)
        for k in range(n):
            c = r.randrange(10)
            if c <= 1 or depth > 5:
                self.assign(depth)
            elif c == 2 and r.random() < 0.2 and self.visible("i"):
                x, y = r.choice(self.visible("i")), self.iexpr(2)
                na, nb = self.fresh("t"), self.fresh("t")
                self.emit(depth, f"{na}, {nb} = {y.text}, {x.text}")
                self.scopes[-1] += [Expr(na, "i", y.lo, y.hi), Expr(nb, "i", x.lo, x.hi)]
            elif c == 2:
                self.reassign(depth)
            elif c == 3:
                self.acc_update(depth, accs, trips)
            elif c == 4:
                self.if_stmt(depth, budget, loops, accs, trips)
            elif c == 5:
                kk = self.fresh("k")
                if getattr(self, "mutables", False) and r.random() < 0.3:
                    kk = "v"    # a loop over a local that is also assigned elsewhere
                bound = r.choice(("3", "m", "1, 4", "2", "m + 1", "4, 0, -1", "0, 5, 2"))
                self.emit(depth, f"for {kk} in range({bound}):")
                self.block(depth + 1, max(1, budget - 1), loops + 1, accs, trips * 5,
                           [Expr(kk, "i", -1, 5)])
            elif c == 6:
                w = self.fresh("w")
                lim = r.randint(1, 4)
                self.emit(depth, f"{w} = 0")
                self.emit(depth, f"while {w} < {lim}:")
                self.emit(depth + 1, f"{w} += 1")
                self.scopes[-1].append(Expr(w, "i", 0, lim))
                self.block(depth + 1, max(1, budget - 1), loops + 1, accs, trips * lim)
            elif c == 7 and loops:
                self.jump(depth)
                break            # nothing may follow a break/continue
            elif c == 8 and depth == 2:
                if r.random() < 0.3:
                    self.emit(depth, f"if {self.cond(1)}:")
                    self.emit(depth + 1, "continue")
                else:
                    self.store(depth)
            else:
                self.store(depth)
        self.scopes.pop()

    def jump(self, depth):
        r = self.rng
        if r.random() < 0.5:
            self.emit(depth, r.choice(("break", "continue")))
        else:
            self.emit(depth, f"if {self.cond(1)}:")
            self.emit(depth + 1, r.choice(("break", "continue")))

    def assign(self, depth):
        r = self.rng
        name = self.fresh("t")
        if r.random() < 0.6:
            e = self.iexpr(3)
        else:
            e = self.fexpr(3)
            if not e.exact:
                self.inexact = True
        self.emit(depth, f"{name} = {e.text}")
        self.scopes[-1].append(Expr(name, e.kind, e.lo, e.hi, exact=e.exact))

    def reassign(self, depth):
        """Assign a mutable local: its type is the join of all these values."""
        if not getattr(self, "mutables", False):
            return self.assign(depth)
        if self.rng.random() < 0.6:
            e = self.iexpr(3)
            if e.lo < -1000 or e.hi > 1000:
                e = Expr(f"({e.text}) % 1000", "i", 0, 999)
            self.emit(depth, f"v = {e.text}")
        else:
            e = self.fexpr(3, exact=True)
            if self.rng.random() < 0.2:
                e = Expr(self.rng.choice(FLITS), "f")
            self.emit(depth, f"g = {e.text}")

    def reassign_param(self, depth):
        """Assign a device function's scalar parameter (a private copy)."""
        cand = self.scopes[1] if self.in_func else []   # the parameters' scope
        if not cand:
            return self.assign(depth)
        x = self.rng.choice(cand)
        if x.kind == "i":
            e = self.iexpr(2)
            if e.lo < -1000 or e.hi > 1000:
                e = Expr(f"({e.text}) % 1000", "i", 0, 999)
        else:
            e = self.fexpr(2, exact=True)
        self.emit(depth, f"{x.text} = {e.text}")

    def acc_update(self, depth, accs, trips):
        r = self.rng
        name, kind = r.choice(accs)
        if kind == "i":
            e = self.iexpr(2)
            lim = BOUND // (16 * trips)
            if e.lo < -lim or e.hi > lim:
                e = Expr(f"({e.text} % 100)", "i", 0, 99)
            op = r.choice(("+=", "-="))
        else:
            e = self.fexpr(2)
            if not e.exact:
                self.inexact = True
            op = r.choice(("+=", "-=", "+=", "*="))
            if op == "*=":
                e = Expr(r.choice(("0.5", "0.75", "1.5")), "f")
        self.emit(depth, f"{name} {op} {e.text}")

    def if_stmt(self, depth, budget, loops, accs, trips):
        self.emit(depth, f"if {self.cond(2)}:")
        self.block(depth + 1, max(1, budget - 1), loops, accs, trips)
        for _ in range(self.rng.randint(0, 2)):
            kw = "elif" if self.rng.random() < 0.6 else None
            if kw:
                self.emit(depth, f"elif {self.cond(2)}:")
                self.block(depth + 1, max(1, budget - 1), loops, accs, trips)
            else:
                self.emit(depth, "else:")
                self.block(depth + 1, max(1, budget - 1), loops, accs, trips)
                break

    def store(self, depth):
        if self.rng.random() < 0.5:
            e = self.fexpr(3)
            if not e.exact:
                self.inexact = True
            self.write(depth, f"outf[i % n] = {e.text}")
        else:
            e = self.iexpr(3)
            self.write(depth, f"outi[i % n] = {e.text}")

    def write(self, depth, statement):
        """An output write; under ndindex only the j == 0 iteration writes, since
        every j of one i meets the same element (a race on a GPU backend)."""
        if self.nd:
            self.emit(depth, "if j == 0:")
            depth += 1
        self.emit(depth, statement)

    # -- device functions ----------------------------------------------------------
    def device_function(self):
        r = self.rng
        name = self.fresh("f")
        kinds = [r.choice("if") for _ in range(r.randint(1, 3))]
        # parameter names that collide with the kernel's own names test renaming
        params = r.sample(["i", "n", "v", "g", "s", "m", "p0", "ai"], len(kinds))
        if r.random() < 0.4:    # an array parameter, aliasing the kernel's ``a``
            kinds.append("a")
            params.append("a" if r.random() < 0.5 else "arr")
        rkind = r.choice("if")
        saved_lines, self.lines = self.lines, []
        self.in_func = True
        self.scopes.append([Expr(p, k, -1000, 1000) for p, k in zip(params, kinds)
                            if k != "a"])
        self.func_array = params[-1] if kinds[-1] == "a" else None
        body_lines = []
        lo, hi = 0, 0
        results = []

        def ret(depth):
            if rkind == "i":
                e = self.iexpr(2)
                if e.lo < -10 ** 6 or e.hi > 10 ** 6:
                    e = Expr(f"({e.text} % 1000)", "i", 0, 999)
            else:
                e = self.fexpr(2, exact=True)
            results.append(e)
            self.emit(depth, f"return {e.text}")

        if self.func_array:
            self.emit(1, f"t{self.fresh('x')} = {self.func_array}[0]")
        else:
            self.emit(1, f"t{self.fresh('x')} = 1")
        def maybe_returns(depth, nest):
            """A block that may return early on some paths, or fall through."""
            self.scopes.append([])
            for _ in range(r.randint(1, 2)):
                c = r.randrange(4)
                if c == 0:
                    self.assign(depth)
                elif c == 1:
                    self.reassign_param(depth)
                else:
                    self.emit(depth, f"if {self.cond(1)}:")
                    if nest and r.random() < 0.5:
                        maybe_returns(depth + 1, nest - 1)
                    else:
                        ret(depth + 1)
                    if r.random() < 0.4:
                        self.emit(depth, "else:")
                        maybe_returns(depth + 1, nest - 1)
            if r.random() < 0.3:
                ret(depth)
            self.scopes.pop()

        for _ in range(r.randint(0, 2)):     # early returns
            self.emit(1, f"if {self.cond(1)}:")
            if r.random() < 0.5:
                maybe_returns(2, 2)
            else:
                self.scopes.append([])
                if r.random() < 0.5:
                    self.assign(2)
                ret(2)
                self.scopes.pop()
        if r.random() < 0.5:
            self.emit(1, f"if {self.cond(1)}:")
            ret(2)
            self.emit(1, "else:")
            self.scopes.append([])
            self.assign(2)
            ret(2)
            self.scopes.pop()
        else:
            self.assign(1)
            ret(1)
        body_lines, self.lines = self.lines, saved_lines
        self.in_func = False
        self.func_array = None
        self.scopes.pop()
        if rkind == "i":
            lo = min(e.lo for e in results)
            hi = max(e.hi for e in results)
        text = ["@tack.func", f"def {name}({', '.join(params)}):"] + body_lines
        self.funcs.append((name, kinds, Expr("", rkind, lo, hi)))
        return text


def _range_preamble(g: _Gen) -> str:
    """Integer locals assigned before the parallel loop (from themselves, from
    names assigned again later, some inside an ``if``) and a loop extent over
    them, kept within ``[0, n]`` so the body's ``i % n`` stays defined: the
    extent must count what the names hold when the loop starts, as in Python."""
    r = g.rng
    readable = ["n", "m"]

    def expr(depth):
        if depth == 0 or r.random() < 0.3:
            return r.choice(readable + [str(r.randint(0, 3))])
        op = r.choice(("+", "-", "*"))
        right = str(r.randint(0, 3)) if op == "*" else expr(depth - 1)
        return f"({expr(depth - 1)} {op} {right})"
    for _ in range(r.randint(1, 4)):
        target = r.choice(("p0", "p1", "p2"))
        value = expr(2)
        if r.random() < 0.25:   # its value at the loop depends on the branch
            g.emit(1, "if s > 0.0:")
            g.emit(2, f"{target} = {value}")
            if target in readable:
                readable.remove(target)
        else:
            g.emit(1, f"{target} = {value}")
            if target not in readable:
                readable.append(target)
    return f"min(n, max(0, {expr(2)}))"


def valid_program(rng: random.Random, seed: int = 0) -> Program:
    ftype = rng.choice(("f32", "f64"))
    itype = rng.choice(("i32", "i64"))
    g = _Gen(rng, ftype, itype)
    otype = ftype if rng.random() < 0.7 else rng.choice(("f32", "f64"))
    g.wrap_a = ftype == "f32" and otype == "f64"
    # Vectors in the default float type, so no f32 value meets f64 ones.
    g.vec_dtype = ", dtype=tack.f64" if "f64" in (ftype, otype) else ""
    funcs = []
    for _ in range(rng.randint(0, 2)):
        funcs += g.device_function() + [""]
    nd = g.nd = rng.random() < 0.4
    g.lines = []
    g.emit(1, "n = len(a)")
    extent = _range_preamble(g) if rng.random() < 0.5 else "n"
    if nd:
        g.emit(1, f"for i, j in tack.ndindex({extent}, c2.shape[1]):")
    else:
        g.emit(1, f"for i in range({extent}):")
        g.emit(2, "j = i % c2.shape[1]")
    g.emit(2, "ai = tack.i64(0)")
    g.emit(2, "af = float(0)")
    g.emit(2, "v = 0")
    g.emit(2, "g = float(0)")
    g.mutables = True
    g.block(2, 5, 0, [("ai", "i"), ("af", "f")], 1,
            [Expr("v", "i", -1000, 1000), Expr("g", "f")])
    g.write(2, "outi[i % n] += ai")
    g.write(2, "outf[i % n] += af")
    body = g.lines
    src = ["import math", "", "import tack", "", ""] + funcs + [
        "@tack.kernel", "def k(a, b, c2, outf, outi, m, s):"] + body + [""]
    n = rng.choice((0, 1, 2, 3, 5, 7, 16, 33))
    return Program("\n".join(src), ftype=ftype, otype=otype, itype=itype, n=n,
                   shape2=(rng.randint(1, 4), rng.randint(1, 4)), m=rng.randint(0, 4),
                   s=rng.choice((0.5, -1.25, 2.0, 0.0)), ndindex=nd,
                   inexact=g.inexact, seed=seed)


# -- invalid programs ---------------------------------------------------------------
# (statement lines, construct named in the message, column offset of the
#  reported node within the first line, relative to the indentation)
_INVALID = [
    (["assert s > 0"], "Assert", 0),
    (["with s:", "    pass"], "With", 0),
    (["try:", "    pass", "except ValueError:", "    pass"], "Try", 0),
    (["raise ValueError"], "Raise", 0),
    (["import os"], "Import", 0),
    (["from os import path"], "ImportFrom", 0),
    (["global gz"], "Global", 0),
    (["zz = 1", "del zz"], "Delete", 0),   # reported on the second line
    (["zz = lambda: 0"], "Lambda", 5),
    (["zz = [1, 2]"], "List", 5),
    (["zz = {1: 2}"], "Dict", 5),
    (["zz = {1, 2}"], "Set", 5),
    (["zz = [q for q in range(3)]"], "ListComp", 5),
    (["zz = {q for q in range(3)}"], "SetComp", 5),
    (["zz = {q: q for q in range(3)}"], "DictComp", 5),
    (["zz = sum(q for q in range(3))"], "GeneratorExp", 8),
    (["zz = b[0:1]"], "Slice", 7),
    (["zz = s in s"], "In", 5),
    (["zz = s not in s"], "NotIn", 5),
    (["zz = s is s"], "Is", 5),
    (["zz = s is not s"], "IsNot", 5),
    (["zz = f\"{s}\""], "JoinedStr", 5),
    (["zz = (yy := 3)"], "NamedExpr", 6),
    (["zz = min(s, s, key=s)"], "keyword argument", 19),
    (["zz = 'abc'"], "constant 'abc'", 5),
    (["zz = None"], "constant None", 5),
    (["zz = 2j"], "constant 2j", 5),
    (["zz: int = 1"], "AnnAssign", 0),
    (["s + 1"], "expression statement (BinOp)", 0),
    (["def g():", "    pass"], "nested function definition (FunctionDef)", 0),
    (["class C:", "    pass"], "ClassDef", 0),
    (["zz = (1, *b)"], "Starred", 9),
    (["zz = b[()]"], "array access without an index", 5),
]


def invalid_program(rng: random.Random, seed: int = 0) -> Program:
    """A valid program with one rejected construct inserted."""
    for _ in range(50):
        p = valid_program(rng, seed)
        lines = p.source.split("\n")
        # the kernel, or one of the device functions
        kline = lines.index(next(t for t in lines if t.startswith("def k(")))
        kernel_text = "\n".join(lines[kline:])
        heads = [k for k, t in enumerate(lines) if t.startswith("def ")
                 and (k == kline or t[4:t.index("(") + 1] in kernel_text)]
        h = rng.choice(heads)
        end = next((k for k in range(h + 1, len(lines)) if not lines[k].startswith(" ")),
                   len(lines))
        is_kernel = lines[h].startswith("def k(")
        cands = []
        for pos in range(h + 1, end):
            prev = lines[pos - 1].strip()
            if prev in ("break", "continue") or prev.startswith("return"):
                continue
            ind = len(lines[pos]) - len(lines[pos].lstrip())
            if lines[pos].lstrip().startswith(("elif", "else")):
                continue
            if is_kernel and ind == 4 and pos > h + 2:
                continue      # nothing after the parallel loop header but its body
            cands.append((pos, ind))
        if not cands:
            continue
        if rng.random() < 0.05:   # default parameter value
            lines[h] = lines[h].replace("):", ", zz=1):", 1)
            construct, line, col = "default parameter value", 2, 1
        else:
            pos, ind = rng.choice(cands)
            pool = _INVALID if is_kernel else [x for x in _INVALID if "b[" not in x[0][0]]
            stmt, construct, off = rng.choice(pool)
            new = [" " * ind + t for t in stmt]
            lines[pos:pos] = new
            line = pos - (h - 1) + 1 + (1 if construct == "Delete" else 0)
            col = ind + off + 1
        name = lines[h][4:lines[h].index("(")]
        kind = "Kernel" if is_kernel else "Device function"
        p.source = "\n".join(lines)
        p.message = f"{kind} '{name}': unsupported {construct} at line {line}, column {col}"
        return p
    raise AssertionError("no insertion point")
