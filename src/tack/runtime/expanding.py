"""Calls with ``@tack.device_class`` arguments: expanded on every call.

An instance's attributes may change between calls, so each call reads the
attributes the kernel references (:func:`tack.lang.device_class.classify`):
the classification and the constants' values select the expansion, and the
runtime scalars and arrays replace the instance in the flat argument tuple.
The flat tuple then goes through the ordinary signature table of its
expansion, so a repeated call costs the attribute reads plus one lookup.
The reads of a warm call are generated code (``fast_expander``) that checks
them against the latest classification and falls back to classifying (and
rebuilding the check) when anything changed.

Keys hold a class's serial number (``device_class.serial``), never the class
itself nor its ``id``, which a later class may reuse; its templates and
variants are dropped when the class is garbage collected.
"""

from __future__ import annotations

import threading
import weakref

from ..lang import device_class
from .array import Array
from .dispatch import signature_function
from .runners import Runners


class Expanding:
    """The runner recorded for a signature that has device-class arguments."""

    __slots__ = ("kernel", "default", "debug", "positions", "names", "table",
                 "shape_params", "display", "lock", "devices", "owner", "keys", "fast",
                 "rebuilds")

    def __init__(self, kernel, args, default, debug: bool):
        self.kernel = kernel
        self.default = default
        self.debug = debug
        self.names = [a.arg for a in kernel.source.tree.args.args]
        # An instance past the last parameter stays an (extra) argument: the
        # count, checked after expansion, rejects the call.
        self.positions = tuple(k for k, a in enumerate(args)
                               if device_class.is_instance(a) and k < len(self.names))
        # where the other arrays live: part of this runner's signature, so the
        # kernel's table can bound the runners on devices made with options
        self.devices = tuple(a.device for k, a in enumerate(args)
                             if k not in self.positions and isinstance(a, Array))
        self.table = Runners()     # bounded in devices made with options
        self.shape_params = frozenset()
        self.keys = {}   # flat argument count -> (shape_params, signature function)
        self.owner = f"Kernel '{kernel.name}'"   # messages name it
        self.display: dict = {}     # expansion key -> {synthetic name: "obj.attr"}
        self.lock = threading.Lock()  # table updates
        self.fast = None   # expand() for the latest classification (fast_expander)
        self.rebuilds = 0

    def signature(self, flat):
        """The flat arguments' signature, by a function made once per count and
        baked shapes (``dispatch.signature_function``). Each entry keeps the
        shapes it was made for: another thread's ``bind`` may change them
        between the read here and the store."""
        shapes = self.shape_params
        entry = self.keys.get(len(flat))
        if entry is None or entry[0] is not shapes:
            entry = self.keys[len(flat)] = (shapes, signature_function(len(flat), shapes))
        return entry[1](flat)

    def run(self, args):
        found = self.fast(args) if self.fast is not None else None
        flat, key = found if found is not None else self.expand(args)
        runner = self.table.get((key, self.signature(flat)))
        try:
            if runner is None:
                runner = self.bind(args, flat, key)
            return runner.run(flat)
        except (TypeError, ValueError, IndexError, NameError, RuntimeError) as exc:
            raise readable(exc, self.display.get(key)) from exc.__cause__

    def expand(self, args) -> tuple:
        """The flat arguments and the expansion key (spec stage 2's order): the
        other arguments, then for each instance from the last position down its
        array attributes and then its run-time scalars, each sorted by name."""
        flat = [a for k, a in enumerate(args) if k not in self.positions]
        key = []
        for k in reversed(self.positions):
            obj = args[k]
            cls = type(obj)
            values, _, where = references_of(self.kernel, cls, self.names[k])
            classified = device_class.classify(obj, values, self.names[k], self.owner,
                                               where)
            for group in ("array", "scalar"):
                flat.extend(getattr(obj, attr) for attr, kind, _ in classified
                            if kind == group)
            key.append((device_class.serial(cls), classified))
        # A call the fast path could not answer: the object changed (for good,
        # usually: a new constant, another scalar type), so it is rebuilt for
        # this call, a bounded number of times (objects that alternate would
        # rebuild it on every call).
        if self.rebuilds < MAX_REBUILDS:
            self.rebuilds += 1
            self.fast = fast_expander(self.positions, args, tuple(key))
        return tuple(flat), tuple(key)

    def bind(self, args, flat, key):
        expanded = expansion(self.kernel, self.positions, self.names, args, key)
        self.display[key] = expanded.display
        runner, shape_params, _ = self.kernel._bind(flat, self.default, self.debug,
                                                    expanded)
        if shape_params is None:   # made before its template changed: not kept
            return runner
        with self.lock:
            if not shape_params <= self.shape_params:
                self.shape_params = self.shape_params | shape_params
                self.table.clear()
            self.table.put((key, self.signature(flat)), runner)
        return runner


def fast_expander(positions, args, key):
    """``expand`` for calls whose objects classify as in ``key``, as generated
    code: ``(flat, key)``, or None for a call it cannot vouch for (then
    ``expand`` classifies). It checks, per object, the class (by its serial
    number), each array
    attribute's type, each run-time scalar's type (int, float, or the type it
    had when classified), and each compile-time constant by identity, in the
    instance and in the class (another object may be another value), so any
    call it answers classifies as ``key`` does. None for an object without an
    instance dict (``__slots__``): ``expand`` classifies those."""
    scope = {"Array": Array, "MISSING": _MISSING}
    lines = ["def fast(args):", f"    if len(args) != {len(args)}: return None"]
    flat = [f"args[{k}]" for k in range(len(args)) if k not in positions]
    for k, (_, classified) in zip(reversed(positions), key):
        obj = args[k]
        own, on_class = vars(obj) if hasattr(obj, "__dict__") else None, vars(type(obj))
        if own is None:   # __slots__: no instance dict to read; expand() classifies
            return None
        # the class's own (number, weak reference) entry, by identity: one made
        # from its namespace carries it too, but gets its own number at the
        # signature (device_class.serial), before this runs
        scope[f"serial{k}"] = vars(type(obj)).get("_tack_serial")
        lines += [f"    o{k} = args[{k}]",
                  f"    if type(o{k}).__dict__.get('_tack_serial') is not serial{k}: "
                  f"return None",
                  f"    d{k}, c{k} = o{k}.__dict__, type(o{k}).__dict__"]
        for m, (attr, kind, _) in enumerate(classified):
            name = f"v{k}_{m}"
            scope[f"{name}_class"] = on_class.get(attr, _MISSING)
            lines.append(f"    if c{k}.get({attr!r}, MISSING) is not {name}_class: "
                         f"return None")
            if kind == "const":
                scope[f"{name}_own"] = own.get(attr, _MISSING)
                lines.append(f"    if d{k}.get({attr!r}, MISSING) is not {name}_own: "
                             f"return None")
                continue
            lines.append(f"    {name} = d{k}.get({attr!r}, MISSING)")
            if kind == "array":
                lines.append(f"    if type({name}) is not Array: return None")
            else:
                scope[f"{name}_types"] = frozenset({int, float, type(own[attr])})
                lines.append(f"    if type({name}) not in {name}_types: return None")
        for group in ("array", "scalar"):
            flat += [f"v{k}_{m}" for m, (_, kind, _) in enumerate(classified)
                     if kind == group]
    scope["KEY"] = key
    lines.append(f"    return ({''.join(v + ', ' for v in flat)}), KEY")
    exec("\n".join(lines), scope)   # noqa: S102 - generated from names and positions
    return scope["fast"]


_MISSING = object()
MAX_REBUILDS = 8   # fast expanders one Expanding builds (see expand)


def expansion(kernel, positions, names, args, key):
    """The rewritten kernel for the instances in ``args`` (classified in ``key``)."""
    plan = []
    for k, (_, classified) in zip(reversed(positions), key):
        cls = type(args[k])
        _, called, _ = references_of(kernel, cls, names[k])
        methods = device_class.methods_of(cls)
        plan.append((names[k], cls, classified, {m: methods[m] for m in called}))
        watch_class(kernel, cls)
    return device_class.expand(kernel.source, plan, key)


def expand_call(kernel, args) -> tuple:
    """``(flat arguments, Expanded or None)`` for one call (tack.inspect uses it)."""
    if not any(device_class.is_instance(a) for a in args):
        return tuple(args), None
    runner = Expanding(kernel, args, None, False)
    flat, key = runner.expand(args)
    return flat, expansion(kernel, runner.positions, runner.names, args, key)


def _where(node) -> str:
    return f"at line {node.lineno}, column {node.col_offset + 1}"


def readable(exc, display):
    """``exc`` again, with synthetic parameter names spelled ``obj.attr``."""
    if not display:
        return exc
    message = str(exc)
    for name, spelled in display.items():
        message = message.replace(name, spelled)
    if message == str(exc):
        return exc
    new = type(exc)(message)
    for note in getattr(exc, "__notes__", ()):
        new.add_note(note)
    return new.with_traceback(exc.__traceback__)


def references_of(kernel, cls, param: str) -> tuple:
    """What the kernel reads of the object passed as ``param`` (memoized):
    values, methods, and the position of each value's first use."""
    cache = kernel._references
    found = cache.get((device_class.serial(cls), param))
    if found is None:
        source = kernel.source

        def where(message, node, exc_type, method=None):
            at = source.where(node) if method is None else \
                f"in method '{method}' {_where(node)}"
            return exc_type(f"Kernel '{kernel.name}': {message} {at}")
        values, called, first = device_class.references(cls, source.tree, param, where)
        positions = {attr: source.where(node) if method is None else
                     f"in method '{method}' {_where(node)}"
                     for attr, (node, method) in first.items()}
        found = cache[(device_class.serial(cls), param)] = (values, called, positions)
    return found


def watch_class(kernel, cls) -> None:
    """Drop what ``kernel`` compiled for ``cls`` once the class is collected."""
    number = device_class.serial(cls)
    watched = kernel._watched
    if number in watched:
        return
    watched.add(number)
    ref = weakref.ref(kernel)
    weakref.finalize(cls, _drop, ref, number)


def _drop(ref, number: int) -> None:
    """The finalizer of a collected class: frees what was compiled for it.
    Only memory depends on it (keys hold the class's serial number, never
    reused), so it takes no lock (it may run in any thread, at any
    allocation): each table is read whole in one step (``tuple(d)``, while
    other threads may add entries) and its entries popped."""
    kernel = ref()
    if kernel is None:
        return
    for fast in kernel._fast:   # first: no runner for the class is left to find
        fast.clear()
    kernel._watched.discard(number)
    for key in tuple(kernel._references):
        if key[0] == number:
            kernel._references.pop(key, None)
    for key in tuple(kernel._templates):
        if _mentions(key[2], number):
            kernel._templates.pop(key, None)
    for key in tuple(kernel._variants):
        if _mentions(key[1][2], number):
            kernel._variants.pop(key, None)


def _mentions(expansion_key, number: int) -> bool:
    return expansion_key is not None and any(c == number for c, _ in expansion_key)
