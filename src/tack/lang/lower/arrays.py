"""Which names a function uses as arrays, and with how many indices.

Arrays are never values in the kernel language: a name is an array when it is
subscripted, measured (``len``, ``.shape``), the target of an atomic, or passed
where a device function takes an array. Lowering needs this before any types
are known, to alias array arguments of device functions and to linearize
multi-dimensional indices.
"""

from __future__ import annotations

import ast

from ..bindings import CallBindings, Intrinsic
from ..func import Func
from ..validate import unsupported

_ATOMICS = {"tack.atomic_add", "tack.atomic_sub", "tack.atomic_min", "tack.atomic_max"}


def _index_count(index: ast.expr) -> int:
    return len(index.elts) if isinstance(index, ast.Tuple) else 1


class Conflict:
    """A name subscripted with two index counts: an error if it is an array
    (a vector or matrix local may be indexed both ways: ``m[r]``, ``m[r, c]``)."""

    def __init__(self, error):
        self.error = error


def chained_index(node: ast.Subscript, parameter: bool = True) -> str:
    """What ``unsupported`` says of ``a[i][j]`` (or ``a[i][j][k]``) on an array
    of scalars (Numba's spelling of ``a[i, j]``): kernels index all dimensions
    at once. A local or shared array (``parameter`` false) has one dimension."""
    parts, root = [], node
    while isinstance(root, ast.Subscript):
        parts.append(ast.unparse(root.slice))
        root = root.value
    name, parts = ast.unparse(root), parts[::-1]
    if not parameter:
        return (f"chained indexing {ast.unparse(node)} (a local or shared array has one "
                f"index: {name}[{parts[0]}])")
    return (f"chained indexing {ast.unparse(node)} (an array is indexed with all its "
            f"indices at once: {name}[{', '.join(parts)}]; for components, make it an "
            f"array of vectors, with dtype=tack.vec3())")


def chain_root(node):
    """The name ``node`` indexes when it is ``a[i][j]``, ``a[i][j][k]``, ...
    (two subscripts or more), else None."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Subscript)):
        return None
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def ndim_of(uses: dict, name: str) -> int:
    """The index count recorded for ``name``; raises a recorded conflict."""
    ndim = uses[name]
    if isinstance(ndim, Conflict):
        raise ndim.error
    return ndim


class _Uses:
    def __init__(self, source):
        self.source = source
        self.ndim: dict = {}
        # names used as only an array can be (len, .shape, atomics, three or
        # more indices); a name that is only subscripted with one or two
        # indices may be a vector or matrix value instead
        self.definite: set = set()
        self.chained: dict = {}    # name -> a use a[i][j], which a conflict names
        # names used as arrays more than vector or matrix values are: stored
        # into (a[i] = x, a[i] += x, a[i].x = s) or indexed with a variable
        self.stored: set = set()

    def record(self, name: str, ndim, node, definite: bool = True) -> None:
        if definite:
            self.definite.add(name)
        known = self.ndim.get(name, 0)
        if isinstance(known, Conflict) or isinstance(ndim, Conflict):
            self.ndim[name] = known if isinstance(known, Conflict) else ndim
            return
        if known and ndim and known != ndim:
            chained = self.chained.get(name)
            message = chained_index(chained) if chained is not None else \
                f"indexing of array '{name}' with both {known} and {ndim} indices"
            self.ndim[name] = Conflict(unsupported(self.source, message, chained or node))
            return
        self.ndim[name] = ndim or known


def _literal_index(index: ast.expr) -> bool:
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return all(isinstance(p, ast.Constant) and type(p.value) is int for p in parts)


def written_arrays(source, tree: ast.FunctionDef, bindings: CallBindings) -> frozenset:
    """The names the kernel (or a device function it calls, for the names it
    passes) uses as arrays rather than vector or matrix values: stores into
    (``a[i] = x``, ``a[i].x = s``), an index that is not a literal (a lookup
    table's ``w[i]``), atomics, ``len``, ``.shape``, three or more indices.
    Where a NumPy array or a tuple is passed for one, it is meant as an
    array, not a vector value."""
    uses = _array_uses(source, tree, bindings)
    return frozenset(uses.definite | uses.stored)


def array_uses(source, tree: ast.FunctionDef, bindings: CallBindings,
               _active=None) -> dict[str, int]:
    """``{name: number of indices}`` for every name used as an array (0: unknown)."""
    return _array_uses(source, tree, bindings, _active).ndim


def _array_uses(source, tree: ast.FunctionDef, bindings: CallBindings,
                _active=None) -> _Uses:
    uses = _Uses(source)
    for node in ast.walk(tree):     # outer nodes first: a whole chain is kept
        root = chain_root(node)
        if root is not None:
            uses.chained.setdefault(root, node)
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            count = _index_count(node.slice)
            uses.record(node.value.id, count, node, definite=count > 2)
            if isinstance(node.ctx, ast.Store) or not _literal_index(node.slice):
                uses.stored.add(node.value.id)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Subscript)
              and isinstance(node.value.value, ast.Name)):   # a[i].x = s
            uses.stored.add(node.value.value.id)
        elif (isinstance(node, ast.Attribute) and node.attr == "shape"
              and isinstance(node.value, ast.Name)):
            uses.record(node.value.id, 0, node)
        elif _unpacked_shape(node):   # n, m = a.shape: the rank is the name count
            uses.record(node.value.value.id, len(node.targets[0].elts), node)
        elif isinstance(node, ast.Call):
            _record_call(uses, node, bindings, _active)
    return uses


def _unpacked_shape(node) -> bool:
    """Whether ``node`` is ``n, m, ... = a.shape``."""
    return (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Tuple)
            and isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
            and isinstance(node.value.value, ast.Name))


def _record_call(uses: _Uses, call: ast.Call, bindings: CallBindings,
                 active=None) -> None:
    target = bindings.resolve(call.func)
    args = call.args
    if isinstance(target, Intrinsic):
        if target.name == "builtins.len" and args and isinstance(args[0], ast.Name):
            uses.record(args[0].id, 0, call)
        elif target.name in _ATOMICS and len(args) == 3 and isinstance(args[0], ast.Name):
            uses.record(args[0].id, _index_count(args[1]), call)
    elif isinstance(target, Func):
        params, definite, stored = _func_arrays(target, active)
        names = [a.arg for a in target.source.tree.args.args]
        for name, arg in zip(names, args):
            if name in params and isinstance(arg, ast.Name):
                uses.record(arg.id, params[name], call, definite=name in definite)
                if name in stored:
                    uses.stored.add(arg.id)


def func_array_params(func: Func) -> dict[str, int]:
    """The parameters of a device function used as arrays, ``{name: number of
    indices}`` (or a ``Conflict``, see ``ndim_of``). One that is only
    subscripted with one or two indices (not in :func:`func_definite_arrays`)
    is an array when the call passes an array name, and a vector or matrix
    value otherwise."""
    return _func_arrays(func)[0]


def func_definite_arrays(func: Func) -> frozenset:
    """The parameters of a device function that only an array can be passed to."""
    return _func_arrays(func)[1]


def _func_arrays(func: Func, _active=None) -> tuple:
    """(func_array_params, func_definite_arrays, the parameters stored into
    as arrays), memoized on the Func."""
    cached = getattr(func, "_arrays", None)
    if cached is not None:
        return cached
    active = _active if _active is not None else {}  # Func -> answer is complete
    if func in active:
        # A recursive cycle (inlining rejects it): end it here, and cache no
        # answer that depended on this partial one.
        active.update(dict.fromkeys(active, False))
        return {}, frozenset(), frozenset()
    active[func] = True
    tree = func.source.tree
    bindings = CallBindings(func.fn, tree, getattr(func, "_extra", None))
    uses = _array_uses(func.source, tree, bindings, active)
    params = {a.arg for a in tree.args.args}
    definite = frozenset(uses.definite & params)
    # A conflict is an error once the parameter is bound to an array (ndim_of
    # raises it then): a matrix value is indexed both ways.
    result = ({name: ndim_of(uses.ndim, name) if name in definite else uses.ndim[name]
               for name in uses.ndim if name in params}, definite,
              frozenset(uses.stored & params))
    if active.pop(func):
        func._arrays = result
    return result
