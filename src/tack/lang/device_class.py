"""``@tack.device_class``: objects whose numbers, arrays and methods kernels use.

An instance passed to a kernel is expanded before any IR exists (spec stage
3a). The kernel's syntax tree, and each method it reaches, is rewritten on a
copy:

* ``obj.n`` for a number defined on the class itself (or an instance number
  shadowing one) becomes a literal: a compile-time constant, part of the key;
* ``obj.n`` for any other instance number becomes a synthetic scalar
  parameter, and ``obj.a`` for an instance ``tack.Array`` a synthetic array
  parameter; the instance's parameter is replaced by these, in order;
* ``obj.m(...)`` for a ``@tack.func`` method becomes a call of a copy of the
  method with ``self`` removed and its own ``self.`` references rewritten the
  same way.

Only attributes the kernel reaches are expanded. A reference to anything else
(a private name, an attribute of another type, a missing one, a method that is
not a ``@tack.func``) raises ``ValueError`` at the first dispatch.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
import itertools
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from ..errors import UnsupportedSyntaxError
from ..runtime.array import Array
from .dependencies import reachable_functions, source_key
from .func import Func
from .names import names_in


def device_class(cls):
    """Class decorator: instances may be passed to kernels, which read their
    arrays and numbers and call their ``@tack.func`` methods (the language guide,
    "Device classes")."""
    if not isinstance(cls, type):
        raise TypeError(f"@tack.device_class decorates a class, not {type(cls).__name__}")
    cls._device_class = True
    return cls


def is_instance(value) -> bool:
    return getattr(type(value), "_device_class", False) is True


_serials = itertools.count(1)
_serial_lock = threading.Lock()


def serial(cls) -> int:
    """The number that stands for ``cls`` in every key of compiled code: given
    once per class object (a subclass gets its own) and never again, so a
    class made after another was collected, at the same address, never finds
    the other's code (an ``id`` could be reused). It is kept in the class as
    ``(number, weak reference to the class)``: a class made from another's
    namespace (``type(name, bases, dict(C.__dict__))``) carries the other's,
    which does not refer to it, and gets its own."""
    entry = cls.__dict__.get("_tack_serial")
    if entry is None or entry[1]() is not cls:
        with _serial_lock:
            entry = cls.__dict__.get("_tack_serial")
            if entry is None or entry[1]() is not cls:
                entry = (next(_serials), weakref.ref(cls))
                cls._tack_serial = entry
    return entry[0]


def methods_of(cls) -> dict:
    """``{name: Func}`` for the class's ``@tack.func`` methods (inherited too)."""
    found = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if isinstance(value, Func):
                found[name] = value
            elif name in found:
                del found[name]
    return found


_NUMBERS = (int, float, np.integer, np.floating)


def _is_number(value) -> bool:
    return isinstance(value, _NUMBERS)


# -- what a kernel references --------------------------------------------------------------
def references(cls, tree: ast.FunctionDef, name: str, where) -> tuple:
    """The attributes of the object called ``name`` in ``tree`` that it reads as
    values, and the methods it reaches, transitively through methods: two sorted
    tuples, and ``{attribute: (node, method name or None)}`` for each value
    read's first use.
    ``where(message, node, type, method)`` makes the error for a bad reference
    at ``node``, in the kernel (``method`` None) or in that method's source."""
    methods = methods_of(cls)
    values, called, first = set(), set(), {}
    pending = [(tree, name, None)]
    while pending:
        node, obj, owner = pending.pop()
        _check_bare_use(cls, node, obj, owner, where)
        for attr, is_call, at in _attribute_uses(node, obj):
            if isinstance(at.ctx, ast.Store):   # also the target of +=
                raise where(f"unsupported assignment to '{obj}.{attr}': a kernel reads "
                            f"a device-class object's attributes, it does not set "
                            f"them (store into an array attribute's elements, "
                            f"{obj}.a[i] = ...)", at, UnsupportedSyntaxError, owner)
            if is_call:
                if attr not in methods:
                    raise where(f"'{obj}.{attr}()' is not a @tack.func method of "
                                f"device class '{cls.__name__}'", at, ValueError, owner)
                if attr not in called:
                    called.add(attr)
                    method = methods[attr].source.tree
                    pending.append((method, _self_name(method, cls, attr), attr))
            else:
                if attr in methods:
                    raise where(f"method '{obj}.{attr}' of device class "
                                f"'{cls.__name__}' used as a value (call it)", at,
                                ValueError, owner)
                values.add(attr)
                first.setdefault(attr, (at, owner))
    return tuple(sorted(values)), tuple(sorted(called)), first


def _check_bare_use(cls, tree, obj: str, owner, where) -> None:
    """Refuse a use of ``obj`` other than ``obj.attr``: passed to a function
    (not supported), or used as a value: an array or a number, which the
    kernel's parameter (``owner`` None) then expects of its argument."""
    bases = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    passed = {id(a) for n in ast.walk(tree) if isinstance(n, ast.Call)
              for a in n.args + [k.value for k in n.keywords]}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and node.id == obj and id(node) not in bases):
            continue
        if id(node) in passed:
            raise where(f"the device-class object '{obj}' is passed to a function, "
                        f"which is not supported: pass its attributes, or call its "
                        f"methods ({obj}.m(...))", node, ValueError, owner)
        if owner is None:
            raise where(f"parameter '{obj}' is used as a value (an array or a number), "
                        f"but the argument is a {cls.__name__} object, which a kernel "
                        f"uses only through its attributes and methods ({obj}.x, "
                        f"{obj}.m(...))", node, TypeError, owner)
        raise where(f"the device-class object '{obj}' is used as a value; a kernel "
                    f"uses only its attributes and methods ({obj}.x, {obj}.m(...))",
                    node, ValueError, owner)


def _self_name(tree: ast.FunctionDef, cls, attr: str) -> str:
    if not tree.args.args:
        raise ValueError(f"method '{attr}' of device class '{cls.__name__}' takes no "
                         f"'self' parameter")
    return tree.args.args[0].arg


def _attribute_uses(tree, obj: str):
    calls = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == obj):
            yield node.attr, id(node) in calls, node


# -- classifying the referenced attributes of one instance -------------------------------------
def classify(obj, attrs, param: str, owner: str, where=None) -> tuple:
    """``((attr, kind, value key), ...)`` for this instance, ``kind`` one of
    "const", "scalar", "array"; ``ValueError`` (prefixed with ``owner``, and
    ending with ``where[attr]``, a position) for an unusable attribute."""
    try:
        return _classify(obj, attrs, param, owner)
    except _Unusable as exc:
        at = f" {where[exc.attr]}" if where and exc.attr in where else ""
        raise ValueError(f"{exc.args[0]}{at}") from None


class _Unusable(Exception):
    def __init__(self, attr, message):
        super().__init__(message)
        self.attr = attr


def _classify(obj, attrs, param: str, owner: str) -> tuple:
    # Every call runs this: messages are built only when they are raised.
    cls = type(obj)
    own = vars(obj) if hasattr(obj, "__dict__") else {}
    on_class_dict = vars(cls)
    out = []
    for attr in attrs:
        if attr.startswith("_"):
            raise _Unusable(attr, f"{owner}: '{param}.{attr}': private attributes of "
                                  f"device class '{cls.__name__}' are not visible in "
                                  f"kernels")
        on_class = attr in on_class_dict and isinstance(on_class_dict[attr], _NUMBERS)
        if attr in own:
            value = own[attr]
        elif on_class:
            value = on_class_dict[attr]
        else:
            raise _Unusable(attr, f"{owner}: '{param}.{attr}' is not a number or array "
                                  f"attribute of this device class '{cls.__name__}' "
                                  f"instance")
        if type(value) is Array:
            out.append((attr, "array", None))
        elif isinstance(value, _NUMBERS):
            out.append((attr, "const", _constant_key(value)) if on_class
                       else (attr, "scalar", None))
        else:
            raise _Unusable(attr, f"{owner}: '{param}.{attr}' of device class "
                                  f"'{cls.__name__}' is {_describe(value)}; a device "
                                  f"class's attributes are numbers and tack.Arrays "
                                  f"({_attribute_hint(value)})")
    return tuple(out)


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return "a NumPy array"
    kind = type(value).__name__
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def _attribute_hint(value) -> str:
    vector = "pass a vector or matrix value as a kernel argument, or keep its " \
             "components as numbers"
    if isinstance(value, np.ndarray):
        return f"wrap an array of data with tack.asarray(...); {vector}"
    return vector


def _constant_key(value):
    """The value with its type and exact bits: 1, 1.0 and True differ."""
    if isinstance(value, float) or hasattr(value, "dtype") and value.dtype.kind == "f":
        return ("float", float(value).hex())
    return (type(value).__name__, int(value))


def constant_value(key):
    kind, text = key
    return float.fromhex(text) if kind == "float" else int(text)


# -- the rewrite ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Expanded:
    """A kernel's source rewritten for the device-class arguments of one call."""

    source: object          # the rewritten Source of the kernel
    extra: dict             # synthetic name -> Func (rewritten methods)
    params: tuple           # the kernel's parameter names after expansion
    key: tuple              # what selects this expansion in this process
    disk_key: str           # the same, stable across processes (for the disk cache)
    display: dict           # synthetic parameter -> "obj.attr", for messages


class _Rewriter(ast.NodeTransformer):
    """Replaces ``obj.attr`` and ``obj.method(...)`` for one object name."""

    def __init__(self, obj: str, table: dict, methods: dict, method_args: dict):
        self.obj = obj
        self.table = table              # attr -> ast node factory
        self.methods = methods          # method name -> synthetic name
        self.method_args = method_args  # method name -> synthetic parameters it takes

    def visit_Call(self, node: ast.Call):
        func = node.func
        if (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id == self.obj and func.attr in self.methods):
            extra = [ast.copy_location(ast.Name(n, ast.Load()), node)
                     for n in self.method_args[func.attr]]
            new = ast.Call(ast.copy_location(ast.Name(self.methods[func.attr], ast.Load()),
                                             func),
                           [self.visit(a) for a in node.args] + extra,
                           [self.visit(k) for k in node.keywords])
            return ast.copy_location(new, node)
        return self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute):
        if (isinstance(node.value, ast.Name) and node.value.id == self.obj
                and node.attr in self.table):
            return ast.copy_location(self.table[node.attr](), node)
        return self.generic_visit(node)


def expand(source, plan, key) -> Expanded:
    """Rewrite ``source`` (a kernel's) for ``plan``: ``[(param, cls, classified,
    methods)]`` for each device-class parameter, the last parameter first (see
    :func:`classify`). The instances' parameters are removed and each one's
    synthetic parameters appended in plan order: arrays, then scalars, each
    group sorted by attribute name (spec stage 2)."""
    tree = copy.deepcopy(source.tree)
    used = set(names_in(tree))
    for _, cls, _, methods in plan:
        for m in methods.values():
            used |= names_in(m.source.tree)
    fresh = _Fresh(used)
    params = [a.arg for a in tree.args.args]
    removed = {param for param, _, _, _ in plan}
    originals = [a for a in source.tree.args.args if a.arg not in removed]
    params = [p for p in params if p not in removed]
    extra, display = {}, {}
    for param, cls, classified, methods in plan:
        table, synthetic = _table(param, classified, fresh)
        method_names = {m: fresh(f"{cls.__name__}_{m}") for m in methods}
        method_args = _method_parameters(cls, methods, synthetic)
        for m, func in methods.items():
            extra[method_names[m]] = _method_copy(func, cls, m, table, method_names,
                                                  method_args, extra)
        tree = _Rewriter(param, table, method_names, method_args).visit(tree)
        display.update({name: f"{param}.{attr}" for attr, name in synthetic.items()})
        kinds = {attr: kind for attr, kind, _ in classified}
        params += [synthetic[a] for a in sorted(synthetic) if kinds[a] == "array"]
        params += [synthetic[a] for a in sorted(synthetic) if kinds[a] == "scalar"]
    tree.args.args = [ast.arg(p) for p in params]
    last = source.tree.args.args[-1] if source.tree.args.args else source.tree
    for a, original in zip(tree.args.args, originals + [last] * len(params)):
        ast.copy_location(a, original)
    ast.fix_missing_locations(tree)
    rewritten = dataclasses.replace(source, tree=tree)
    return Expanded(rewritten, extra, tuple(params), key, _disk_key(plan), display)


def _disk_key(plan) -> str:
    """The plan in stable terms: class names, classification, and each method's
    source and position with those of every @tack.func it reaches (an edit to
    any of them must make a new disk-cache key)."""
    return repr([(param, cls.__module__, cls.__qualname__, classified,
                  [(m, _source_key(f), [_source_key(g) for g in
                                        reachable_functions(f.fn, f.source)])
                   for m, f in sorted(methods.items())])
                 for param, cls, classified, methods in plan])


def _source_key(func) -> tuple:
    return source_key(func.fn, func.source)


def _table(param: str, classified, fresh) -> tuple:
    """``(attr -> replacement factory, {attr: synthetic parameter name})``."""
    table, synthetic = {}, {}
    for attr, kind, key in classified:
        if kind == "const":
            value = constant_value(key)
            table[attr] = lambda value=value: ast.Constant(value)
        else:
            name = synthetic[attr] = fresh(f"{param}_{attr}")
            table[attr] = lambda name=name: ast.Name(name, ast.Load())
    return table, synthetic


def _method_parameters(cls, methods: dict, synthetic: dict) -> dict:
    """The synthetic parameters each method takes: those of the attributes it
    reads, itself or through the methods it calls (in a fixed order)."""
    reads, calls = {}, {}
    for m, func in methods.items():
        tree = func.source.tree
        uses = list(_attribute_uses(tree, _self_name(tree, cls, m)))
        reads[m] = {a for a, is_call, _ in uses if not is_call}
        calls[m] = {a for a, is_call, _ in uses if is_call}
    changed = True
    while changed:
        changed = False
        for m in methods:
            for callee in calls[m]:
                if not reads[callee] <= reads[m]:
                    reads[m] |= reads[callee]
                    changed = True
    return {m: [synthetic[a] for a in sorted(reads[m]) if a in synthetic] for m in methods}


def _method_copy(func: Func, cls, name: str, table: dict, method_names: dict,
                 method_args: dict, extra: dict) -> Func:
    """A Func for ``func`` with ``self`` replaced by the synthetic parameters it
    needs, and its ``self.`` uses rewritten."""
    tree = copy.deepcopy(func.source.tree)
    self_name = _self_name(tree, cls, name)
    added = [ast.copy_location(ast.arg(n), tree) for n in method_args[name]]
    tree.args.args = tree.args.args[1:] + added
    tree = _Rewriter(self_name, table, method_names, method_args).visit(tree)
    ast.fix_missing_locations(tree)
    copy_ = Func.__new__(Func)
    copy_.fn = func.fn
    copy_.__name__ = func.__name__
    copy_.__doc__ = func.__doc__
    copy_.__wrapped__ = func.fn
    copy_.source = dataclasses.replace(func.source, tree=tree)
    copy_._extra = extra   # its calls of other rewritten methods resolve here
    return copy_


class _Fresh:
    def __init__(self, used):
        self.used = set(used)

    def __call__(self, base: str) -> str:
        k = 0
        while True:
            k += 1
            name = f"__{base}_{k}__"
            if name not in self.used:
                self.used.add(name)
                return name
