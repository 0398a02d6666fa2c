"""wrap: ``(i + k) % n`` over a loop ``i in [0, n)`` becomes a compare.

Periodic boundaries index ``a[(i + 1) % n]`` and ``a[(i - 1) % n]`` where
``i`` runs over ``range(n)``. With ``n`` known only at run time (an argument,
or a length read at run time) the remainder is a division per element,
which also keeps the loop from vectorizing. Inside the loop ``0 <= i < n``
(so ``n >= 1``), hence for a literal ``k`` with ``|k| <= n``:

* ``(i + k) % n`` is ``i + k - n`` if ``i + k >= n`` else ``i + k`` (``k >= 0``),
* ``(i - k) % n`` is ``i - k + n`` if ``i - k < 0`` else ``i - k`` (``k >= 0``),

which is what Python's ``%`` gives; C's spelling of the second,
``(i + n - k) % n``, is ``i + n - k - n`` if ``i + n - k >= n`` else itself.
``|k| <= 1`` always satisfies ``|k| <= n``; a larger ``k`` keeps the
remainder for arrays shorter than ``|k|`` (a test of ``n`` the loop does not
change), and only where the sum cannot overflow (see ``_fits``). On the CPU
a periodic difference over 4M f64 (``benchmarks/periodic.py``) ran in 2.8 ms
instead of 10.2 with a length read at run time, 3.2-3.5 instead of 12.4-12.7
with ``n`` an argument (Numba: 10.1-11.0). The pass rewrites the parallel loop's own
variables, when nothing assigns them, and only a divisor that is the
variable's extent: the same scalar parameter, or the hidden parameter that
holds an array's extent at run time; and likewise the variable of a
sequential ``for j in range(n)`` inside it (a row's columns) whose ``n`` is a
signed integer parameter (a length read at run time is one).

A divisor that is not the extent but keeps its value through the parallel
loop (``for i in range(len(a))`` with ``% n``, ``n`` an argument) is
versioned (``_versioned``): the compare form where a test of ``n``, the
extent and ``k``, the same in every iteration, says it holds, else the
remainder; LLVM unswitches the loop on it (4M f64: 3.4-3.9 ms a call
instead of 6.4). The test reads the extent, which ``versioned_extents``
tells ``resolve.shape_dependencies``.

A length baked into the variant reaches the pass as a number: a literal, or
a local such as ``n = len(x)`` assigned it once before the loop. It counts as
the extent only where the variant's key bakes that extent
(``VariantRequest.baked_extents``), so that every call running the variant
has that length, and not for a power of two, whose remainder LLVM makes a
mask (4M f64: 2.8 ms a call, against 4.4 ms with the compares). Other
constants are versioned like any divisor that is not the extent (LLVM's
multiplications for them ran 1.2-1.5x serial Numba's time for
``x[(i + 1) % n]``, the compares 0.6-0.7x: performance audit).
"""

from __future__ import annotations

from ... import types as T
from ..expressions import (Add, And, BoundsCheck, Cast, Const, DimSize, Ge, Gt, Le, Lt,
                           Mod, Name, Select, Sub)
from ..statements import Assign, Function, SeqFor
from ..traversal import rewrite_body, walk
from .names import assigned
from .resolve import extent_param


def wrap_modulo(fn: Function, shapes=None, baked_extents=frozenset()) -> Function:
    """``fn`` with its remainders by loop extents in compare form; ``shapes``
    (each array parameter's shape) and ``baked_extents`` (the ``(array, dim)``
    the variant's key bakes: only those are the same on every call that runs
    it) say which extents are known numbers."""
    loop = fn.parallel_for
    counts = assigned(fn.body)
    constants = _constant_locals(fn, loop, counts)
    baked = {(name, d): extent for name, shape in (shapes or {}).items()
             for d, extent in enumerate(shape) if (name, d) in baked_extents}
    params = {p.name: p.dtype for p in fn.params if not p.is_array}
    # scalar parameters whose join with the i64 loop variable is i64
    wide = {name for name, t in params.items()
            if t.is_int and (t.is_signed or t.bits < 64)}
    extents = {v: e for v, e in zip(loop.vars, loop.extents) if v not in counts}
    # what the body reads for the extents: the divisors a remainder may be versioned on
    in_body = {v: _extent_in_body(e, baked, params, counts) for v, e in extents.items()}
    invariant = _invariant_divisors(loop, params, wide)

    def in_parallel_loop(node):
        if not isinstance(node, Mod):
            return node
        found = _offset(node.lhs, extents, node.rhs)
        if found is None:
            return node
        extent = extents[found[0]]
        value = _constant_value(node.rhs, constants)
        if value is not None:
            if not (0 < value < 1 << 62 and value & (value - 1)):
                return node             # by a power of two: a mask, faster
            if not (isinstance(extent, DimSize) and
                    baked.get((extent.array, extent.dim)) == value):
                return _versioned(node, found[1], in_body[found[0]])
            k, plus_n = found[1]        # a baked length: the extent's, in this variant
            return _wrapped(node, k, plus_n, guarded=False) if abs(k) <= value else node
        if not _is_extent(node.rhs, extent, counts, wide):
            if invariant(node.rhs):
                return _versioned(node, found[1], in_body[found[0]])
            return node
        offset, dtype = found[1], _type_of(node.rhs, params)
        if abs(offset[0]) <= _largest(dtype) and \
                _fits(offset, dtype != T.i64 or _is_length(node.rhs)):
            return _wrapped(node, *offset)
        return node

    def sequential(node):
        """A ``for j in range(n)`` (``n`` a signed integer parameter) of its own:
        its remainders by ``n``. Its ``j`` has ``n``'s type, where ``j + k``
        could overflow but for an array's length (see ``_fits``)."""
        if not (isinstance(node, SeqFor) and counts.get(node.var) == 1 and
                _is_int(node.start, 0) and _is_int(node.step, 1) and
                isinstance(node.stop, Name) and node.stop.id not in counts and
                params.get(node.stop.id) in _SIGNED):
            return node
        stop = node.stop

        def visit(e):
            if isinstance(e, Mod) and _core(e.rhs) == stop:
                found = _offset(e.lhs, {node.var: stop}, stop)
                if found is not None and _fits(found[1], _is_length(stop)):
                    return _wrapped(e, *found[1])
            return e
        return node.replace(body=rewrite_body(node.body, visit))

    body = []
    for s in fn.body:
        if s is loop:
            inner = rewrite_body(s.body, sequential)
            s = s.replace(body=rewrite_body(inner, in_parallel_loop) if extents else inner)
        body.append(s)
    return fn.replace(body=tuple(body))


_SIGNED = (T.i8, T.i16, T.i32, T.i64)


def _constant_locals(fn: Function, loop, counts) -> dict:
    """Locals assigned an integer literal once, before the parallel loop (``n =
    len(x)`` where the variant baked the length)."""
    found = {}
    for s in fn.body:
        if s is loop:
            break
        if isinstance(s, Assign) and counts.get(s.target) == 1 and \
                isinstance(s.value, Const) and type(s.value.value) is int:
            found[s.target] = s.value.value
    return found


def _constant_value(divisor, constants):
    """The integer a divisor is known to be, or None."""
    divisor = _core(divisor)
    if isinstance(divisor, Const) and type(divisor.value) is int:
        return divisor.value
    if isinstance(divisor, Name):
        return constants.get(divisor.id)
    return None


def _fits(offset, bounded: bool) -> bool:
    """Whether ``i + k`` (and ``i + n + k``) cannot overflow, so that the compare
    form gives what the remainder of the same sum gives: always for ``|k| <= 1``
    (``-1 <= i + k <= n``); otherwise only where ``n`` is ``bounded``, an array's
    length (far below 2**62) or narrower than the i64 the sum is computed in
    (an i64 argument near 2**63, with a loop that breaks early, overflowed)."""
    k, plus_n = offset
    return (abs(k) <= 1 and not plus_n) or bounded


def _is_length(divisor) -> bool:
    """Whether ``divisor`` is the hidden parameter of an array's extent (named
    by ``resolve.extent_param``)."""
    return isinstance(divisor, Name) and divisor.id.startswith("__tack_shape")


def _type_of(divisor, params):
    """The type of a divisor ``_is_extent`` accepted (a parameter's, or a
    conversion's)."""
    return divisor.to if isinstance(divisor, Cast) else params[divisor.id]


def _largest(dtype) -> int:
    """The largest value of an integer type: the guard ``n >= |k|`` compares
    in ``n``'s type, where a larger ``|k|`` would wrap."""
    return (1 << (dtype.bits - 1 if dtype.is_signed else dtype.bits)) - 1


def _is_int(e, value: int) -> bool:
    return isinstance(e, Const) and type(e.value) is int and e.value == value


def _offset(e, extents, divisor):
    """``(variable, (k, plus_n))`` when ``e`` is a loop variable plus literal
    integers (``k``, their sum), and ``plus_n`` when it adds ``divisor`` once
    too (C's ``(i + n - 1) % n``, with ``k <= 0``); None otherwise, and for an
    offset past ``2**31``."""
    terms = []
    _terms(e, 1, terms)
    variables = [t for sign, t in terms if isinstance(t, Name) and t.id in extents
                 and sign == 1]
    ns = [t for sign, t in terms if sign == 1 and _core(t) == _core(divisor)]
    constants = [sign * t.value for sign, t in terms
                 if isinstance(t, Const) and type(t.value) is int]
    if len(variables) != 1 or len(ns) > 1 or \
            len(terms) != 1 + len(ns) + len(constants):
        return None
    k = sum(constants)
    if abs(k) > 1 << 31 or (ns and k > 0):   # i + n + k with k > 0 passes 2n
        return None
    return variables[0].id, (k, bool(ns))


def _terms(e, sign: int, out: list) -> None:
    """The signed terms of a sum."""
    if isinstance(e, Add):
        _terms(e.lhs, sign, out)
        _terms(e.rhs, sign, out)
    elif isinstance(e, Sub):
        _terms(e.lhs, sign, out)
        _terms(e.rhs, -sign, out)
    else:
        out.append((sign, e))


def _core(e):
    """``e`` without a conversion to i64 (an i32 argument's widening)."""
    if isinstance(e, Cast) and e.to == T.i64:
        return e.operand
    return e


def _is_extent(divisor, extent, counts, wide) -> bool:
    """Whether ``divisor`` is the loop extent ``extent``, read unchanged, so
    that the remainder is an i64's (``wide``: the integer parameters whose
    join with i64 is i64; the hidden extents are i64)."""
    extent = _core(extent)
    if isinstance(extent, DimSize):
        return isinstance(divisor, Name) and divisor.id == extent_param(extent.array,
                                                                        extent.dim)
    i64 = (isinstance(divisor, Cast) and divisor.to == T.i64) or \
        (isinstance(divisor, Name) and divisor.id in wide)
    return i64 and isinstance(extent, Name) and extent.id not in counts and \
        _core(divisor) == extent


def _extent_in_body(extent, baked, params, counts):
    """The expression the loop's body may read for ``extent``: the baked number,
    the hidden parameter of a length read at run time, a scalar parameter (an
    extent is evaluated on the host, so nothing else); None where the body has
    none (a length read at run time that nothing in the body reads)."""
    if isinstance(extent, DimSize):
        value = baked.get((extent.array, extent.dim))
        if value is not None:
            return Const(value, dtype=T.i64)
        name = extent_param(extent.array, extent.dim)
        return Name(name, dtype=T.i64) if name in params else None
    core = _core(extent)
    if isinstance(core, Const) or (isinstance(core, Name) and core.id in params and
                                   core.id not in counts):
        return extent
    return None


def versioned_extents(fn: Function, loop) -> set:
    """The ``(array, dim)`` extents of the parallel loop ``loop`` of ``fn`` (a
    kernel as lowered) that ``_versioned`` will test: those of the variables in
    a remainder ``(i + k) % n`` by a divisor it versions (``_versionable``).
    They are the body's to read (``resolve.shape_dependencies``), baked or held
    by a hidden parameter. None in a debug template (its accesses are
    ``BoundsCheck``s): it reads every extent at run time and is never versioned."""
    changing = assigned(loop.body)
    extents = {v: e for v, e in zip(loop.vars, loop.extents)
               if isinstance(e, DimSize) and v not in changing}
    params = {p.name for p in fn.params if not p.is_array}
    found = set()
    if not extents:
        return found
    for stmt in loop.body:
        for node in walk(stmt):
            if isinstance(node, BoundsCheck):
                return set()
            if isinstance(node, Mod) and _versionable(node.rhs, params, changing):
                offset = _offset(node.lhs, extents, node.rhs)
                if offset is not None and not offset[1][1]:     # not C's i + n - k
                    extent = extents[offset[0]]
                    found.add((extent.array, extent.dim))
    return found


def _versionable(divisor, params, changing) -> bool:
    """A divisor ``_versioned`` takes: a scalar parameter the loop does not assign
    (or its conversion), an array's extent, or an integer literal in ``[1, 2**62)``
    that is not a power of two (whose remainder LLVM makes a mask)."""
    core = _core(divisor)
    if isinstance(core, Const):
        value = core.value
        return type(value) is int and 0 < value < 1 << 62 and value & (value - 1) != 0
    if isinstance(core, DimSize):       # another extent: a hidden parameter, or baked
        return True
    return isinstance(core, Name) and core.id in params and core.id not in changing


def _invariant_divisors(loop, params, wide):
    """Whether a divisor keeps its value through the parallel loop, as an integer
    whose join with the i64 loop variable is i64: a scalar parameter the loop
    does not assign, converted to i64 or in ``wide`` (locals have no types yet)."""
    changing = set(assigned(loop.body)) | set(loop.vars)

    def invariant(divisor) -> bool:
        core = _core(divisor)
        if not isinstance(core, Name) or core.id in changing or core.id not in params:
            return False
        return core is not divisor or core.id in wide
    return invariant


def _versioned(node: Mod, offset, extent):
    """``x % n`` with ``x = i + k`` for a loop ``i in [0, E)`` and an ``n`` that is
    not ``E`` but keeps its value through the loop: the compare form where a test
    of ``n``, ``E`` and ``k`` says that every ``x`` of the loop lies within one
    ``n`` of ``[0, n)``, else the remainder. The test does not change in the
    loop, so LLVM makes two loops of it (the first vectorizes). Without
    overflow: ``E + k <= 2n`` as ``E - n <= n - k`` (``n > 0``, ``0 <= k <= 2**31``);
    ``k < 0``: ``n >= -k`` and ``E + k <= n``."""
    k, plus_n = offset
    if plus_n or extent is None:
        return node
    x, n = node.lhs, node.rhs
    e, wide_n = _as_i64(extent), _as_i64(n)      # the test's arithmetic in i64
    if k >= 0:
        test = And(Gt(wide_n, Const(0, dtype=T.i64)),
                   Le(Sub(e, wide_n), Sub(wide_n, Const(k, dtype=T.i64))))
        fast = Select(Ge(x, n), Sub(x, n), x)
    else:
        test = And(Ge(wide_n, Const(-k, dtype=T.i64)),
                   Le(Add(e, Const(k, dtype=T.i64)), wide_n))
        fast = Select(Lt(x, Const(0)), Add(x, n), x)
    return Select(test, fast, node)


def _as_i64(e):
    if isinstance(e, Const):
        return Const(e.value, dtype=T.i64)
    if (isinstance(e, Cast) and e.to == T.i64) or _is_length(e):
        return e
    return Cast(e, to=T.i64)


def _wrapped(node: Mod, k: int, plus_n: bool, guarded: bool = True):
    """The compare form of ``node``, ``x % n`` with ``x = i + k`` (or ``i + n + k``,
    ``k <= 0``, when ``plus_n``), which keeps the remainder for ``n < |k|`` where
    ``|k| > 1`` (unless not ``guarded``: ``n >= |k|`` is known)."""
    x, n = node.lhs, node.rhs
    if k == 0 and not plus_n:
        return x
    if k > 0 or plus_n:     # x in [0, 2n)
        fast = Select(Ge(x, n), Sub(x, n), x)
    else:                   # x in [-n, n)
        fast = Select(Lt(x, Const(0)), Add(x, n), x)
    return Select(Ge(n, Const(abs(k))), fast, node) if abs(k) > 1 and guarded else fast
