"""``@tack.kernel``: the Kernel object, its IR templates and its variants.

Tiers (spec 000): an IR template is lowered once per lowering specialization
(plain or debug; lock-free read, one build under a lock); variants are
compiled once per variant key; a call whose signature was seen before goes
straight to its :class:`Bound`. ``Kernel.__call__`` is the one place errors
are translated.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

from ..cache import kernels as disk
from ..errors import UnsupportedSyntaxError
from ..ir.passes.resolve import shape_dependencies
from ..ir.verify import verify
from ..lang import device_class
from ..lang.func import _require_def
from ..lang.bindings import CallBindings
from ..lang.lower.arrays import written_arrays
from ..lang.source import read_source
from . import debug as _debug
from . import values
from . import record as _record
from .device import get_default_device, warm
from .depth import NESTED_TOO_DEEPLY, deep_recursion
from .dispatch import (DISJOINT, STREAMING, Bound, ResultReader, Variant, call_specs,
                       check_writable, element_spec, placement, signature_function,
                       variant_mode)
from .expanding import Expanding
from .runners import Runners

_transform_lock = threading.RLock()


# Variants of one template that differ only in the values of baked extents
# before those that differ are taken at run time (Kernel._note_extents).
EXTENT_VARIANTS = 4


class Baking(NamedTuple):
    """Which extents a template's new variants take at run time (``runtime``:
    ``(parameter, dim)``) and the ``(position, dim)`` of those they bake in
    (``params``: what their signatures key on). Replaced whole, never edited,
    so a reader sees one consistent pair."""

    runtime: frozenset
    params: frozenset


class Template:
    """One lowering specialization of a kernel (spec stage 2): debug or not,
    its vector and matrix array parameters, and its device-class expansion."""

    __slots__ = ("key", "debug", "elements", "expanded", "lowered", "ir_key",
                 "shape_deps", "baking", "history")

    def __init__(self, key, debug: bool, elements: tuple, expanded):
        self.key = key
        self.debug = debug
        self.elements = elements      # ((position, array ndim, element type), ...)
        self.expanded = expanded      # device_class.Expanded or None
        self.lowered = None
        self.ir_key = None
        self.shape_deps: dict = {}   # parameter -> dims its bodies read
        self.baking = Baking(frozenset(), frozenset())
        self.history: dict = {}   # variant key less baked values -> those values seen

    def baked_dims(self, name: str, runtime=None) -> tuple:
        """The dims of parameter ``name`` whose extents variants bake in."""
        runtime = self.baking.runtime if runtime is None else runtime
        return tuple(d for d in self.shape_deps.get(name, ()) if (name, d) not in runtime)

    def rebake(self, runtime: frozenset) -> None:
        """Take the extents in ``runtime`` at run time from now on."""
        params = [p.name for p in self.lowered.kernel.params]
        self.baking = Baking(runtime, frozenset(
            (k, d) for k, name in enumerate(params) for d in self.baked_dims(name, runtime)))


class FastPath:
    """Signature -> runner for one debug flag. ``shape_params`` is the union of
    the baked extents, ``(position, dim)``, of every template reached so far;
    when it grows
    the table is emptied, since older signatures left those shapes out. ``key``
    computes a call's signature (None for a call with the wrong count, which
    then takes the slow path and its error).

    ``add`` runs under a lock: a runner stored with the old ``key`` after the
    table was emptied would answer a call whose baked shapes differ. A warm call
    reads ``key`` and ``table`` without it: a signature made by the old
    ``key`` matches nothing the new one stores.

    A signature's runner is made under one default device. ``table`` holds
    the latest; one made under another default that it displaced moves to
    ``others``, keyed by that default's slot and the signature, where a call
    under that default finds it (``find``): calls alternating between two
    defaults (``with a:`` then ``with b:``) stay off the slow path.

    Both tables keep the runners of a few devices made with options only
    (``runners.py``)."""

    __slots__ = ("table", "others", "shape_params", "n_args", "key", "lock")

    def __init__(self, n_args: int):
        self.table = Runners()
        self.others = Runners()
        self.shape_params = frozenset()
        self.n_args = n_args
        self.key = signature_function(n_args, self.shape_params)
        self.lock = threading.Lock()

    def add(self, args, shape_params, runner, bound=None) -> None:
        """Store ``runner`` (whose Bound is ``bound``) for this call's signature,
        unless its template has moved extents to run time since it was made:
        checked under the lock ``reset`` takes after the move, so a runner is
        either refused here or emptied there."""
        with self.lock:
            if bound is not None and bound.runtime is not bound.template.baking.runtime:
                return   # (rebake replaces baking whole: a new runtime set with it)
            if not shape_params <= self.shape_params:
                self.shape_params = self.shape_params | shape_params
                self.key = signature_function(self.n_args, self.shape_params)
                self.clear()
            key = self.key(args)
            old = self.table.get(key)
            if old is not None and old.default is not runner.default:
                self.others.put((old.default.slot, key), old)
            self.table.put(key, runner)

    def find(self, args, default):
        """The runner of this call's signature made under ``default``, or None."""
        key = self.key(args)
        runner = self.table.get(key)
        if runner is not None and runner.default is default:
            return runner
        return self.others.get((default.slot, key))

    def clear(self) -> None:
        """Forget every runner (also from a finalizer: see ``Runners``)."""
        self.table.clear()
        self.others.clear()

    def reset(self) -> None:
        """Forget every runner and baked shape: a template now bakes fewer
        (the runners stored since key on what they need again)."""
        with self.lock:
            self.shape_params = frozenset()
            self.key = signature_function(self.n_args, self.shape_params)
            self.clear()


class Kernel:
    """A compiled-on-demand kernel; call it like the Python function."""

    checked = True   # debug mode checks it (Tack's own kernels: library_kernel)

    def __init__(self, fn):
        _require_def(fn, "kernel")
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.source = read_source(fn, "Kernel")
        self._templates: dict = {}
        n_args = len(self.source.tree.args.args)
        self._plain = FastPath(n_args)   # _fast[0], one attribute load on the warm path
        self._fast = (self._plain, FastPath(n_args))     # plain, debug
        self._variants: dict = {}
        self._lock = threading.RLock()
        self._references: dict = {}   # (class serial, parameter) -> what the kernel reads
        self._moved = frozenset()     # (parameter, dim) extents read at run time
        self._watched: set = set()    # ids of device classes with a finalizer

    @property
    def name(self) -> str:
        return self.fn.__name__

    def __repr__(self) -> str:
        return f"<tack.kernel {self.name}>"

    # -- tier 1: IR templates ---------------------------------------------------------
    def get_ir(self, debug: bool = False):
        """The lowered, verified IR (and return epilogue) of the plain template."""
        return self._template(debug).lowered

    def _template(self, debug: bool, elements: tuple = (), expanded=None) -> Template:
        key = (debug, elements, expanded.key if expanded is not None else None)
        template = self._templates.get(key)   # only lowered templates are stored
        if template is None:
            with _transform_lock:
                template = self._templates.get(key)
                if template is None:
                    template = Template(key, debug, elements, expanded)
                    with deep_recursion():
                        self._lower(template)
                    self._templates[key] = template
        return template

    def _lower(self, template: Template) -> None:
        expanded = template.expanded
        source = self.source if expanded is None else expanded.source
        names = [a.arg for a in source.tree.args.args]
        specialization = (("debug",) if template.debug else ()) + tuple(
            (names[k], ndim, repr(dtype)) for k, ndim, dtype in template.elements)
        if expanded is not None:
            specialization += (expanded.disk_key,)
        key = disk.ir_key(self, specialization) if disk.enabled() else None
        lowered = disk.load_template(key) if key else None
        if lowered is None:     # (the lowering loads with the first kernel lowered)
            from ..lang.lower.kernel import lower_kernel
            elements = {names[k]: (ndim, dtype) for k, ndim, dtype in template.elements}
            lowered = lower_kernel(source, self.fn, template.debug, elements,
                                   expanded.extra if expanded is not None else None)
            verify(lowered.kernel, "lowered")
            if lowered.epilogue is not None:
                verify(lowered.epilogue, "lowered")
            if key:
                disk.store_template(key, lowered)
        deps = dict(shape_dependencies(lowered.kernel))
        if lowered.epilogue is not None:
            for name, dims in shape_dependencies(lowered.epilogue).items():
                deps[name] = tuple(sorted(set(deps.get(name, ())) | set(dims)))
        template.ir_key = key
        template.shape_deps = deps
        template.lowered = lowered
        # every extent the bodies read, baked at first, but those the kernel
        # already reads at run time (another template saw them change)
        template.rebake(frozenset((name, d) for name, d in self._moved
                                  if d in deps.get(name, ())))

    # -- tier 2: variants ----------------------------------------------------------
    def _variant(self, backend, specs, mode: int, epilogue: bool,
                 template: Template, runtime: frozenset) -> Variant:
        """The variant for ``mode`` (dispatch.ALIASED, DISJOINT or STREAMING)
        that takes the extents in ``runtime`` at run time and bakes the rest."""
        lowered = template.lowered
        function = lowered.epilogue if epilogue else lowered.kernel
        key = self._variant_key(backend, template, function, specs, mode, epilogue,
                                runtime)
        found = self._variants.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self._variants.get(key)
            if found is None:
                with deep_recursion():
                    found = self._build_variant(backend, template, function, specs,
                                                mode, key, runtime)
                self._variants[key] = found
                self._note_extents(template, key)
        return found

    def _note_extents(self, template: Template, key) -> None:
        """After a new variant: when EXTENT_VARIANTS variants differ only in
        the values of baked extents (``kernel(pos[:n])`` with ``len(pos)`` in the
        body and a new ``n`` every step), the extents that differ are taken at
        run time from then on, so the next value compiles nothing. Up to three
        sizes (the levels of a grid hierarchy) keep their baked variants."""
        target, _, (epilogue, parts, mode, runtime) = key
        if runtime != tuple(sorted(template.baking.runtime)):
            return   # a variant of an older baking, built for a runner made before
        group = (target, epilogue, mode, tuple(part[:3] for part in parts))
        seen = template.history.setdefault(group, set())
        seen.add(tuple(part[3] for part in parts))
        if len(seen) < EXTENT_VARIANTS:
            return
        params = (template.lowered.epilogue if epilogue else template.lowered.kernel).params
        varying = set()
        for k, baked in enumerate(zip(*seen)):   # each parameter's baked values
            dims = template.baked_dims(params[k].name)
            varying |= {(params[k].name, d) for j, d in enumerate(dims)
                        if len({v[j] for v in baked}) > 1}
        template.history.clear()
        self._moved |= varying
        # every template of the kernel that reads those extents moves them too:
        # the dispatch table is shared, and one that still baked them would
        # key every signature on them again
        for other in list(self._templates.values()):
            moved = {(name, d) for name, d in varying
                     if d in other.shape_deps.get(name, ())} - other.baking.runtime
            if moved or other is template:
                other.rebake(other.baking.runtime | moved)
        self._fast[template.debug].reset()

    def _variant_key(self, backend, template, function, specs, mode, epilogue,
                     runtime):
        parts = []
        for param, spec in zip(function.params, specs):
            dims = template.baked_dims(param.name, runtime)
            baked = tuple(spec.shape[d] for d in dims if d < len(spec.shape))
            ndim = len(spec.shape) if spec.is_array else None
            parts.append((spec.dtype, spec.category, ndim, baked))
        # ((target, memory domain), template, what the variant itself depends on):
        # the disk cache keys the last part under the template's own stable key and
        # the target. The memory domain keeps two identical GPUs apart: a program is
        # loaded into one device's context. The mode is 0/1 for aliased/disjoint
        # (the keys False/True had) or 2 for streaming.
        return ((backend.cache_target(), backend.memory_domain), template.key,
                (epilogue, tuple(parts), int(mode), tuple(sorted(runtime))))

    def _build_variant(self, backend, template, function, specs, mode,
                       key, runtime) -> Variant:
        """From the disk cache when it has this variant, else compiled (and stored)."""
        disk_key = None
        if template.ir_key and disk.enabled() and hasattr(backend, "artifact"):
            disk_key = disk.variant_key(template.ir_key, key[2], backend.cache_target())
            cached = disk.load_variant(disk_key, backend)
            if cached is not None:
                return cached
        from ..ir.passes.pipeline import VariantRequest, run_pipeline   # (see _lower)
        request = VariantRequest(specs, backend.supported_dtypes, backend.atomic_dtypes,
                                 backend.class_name, mode >= DISJOINT,
                                 backend.supports_workgroups, mode == STREAMING,
                                 runtime)
        optimized = run_pipeline(function, request)
        if _record.enabled():
            _record.record(optimized)
        variant = Variant(optimized, backend.build(optimized))
        if disk_key:
            disk.store_variant(disk_key, variant, backend)
        return variant

    # -- tier 3: dispatch ----------------------------------------------------------
    def __call__(self, *args, **kwargs):
        try:
            if kwargs:
                raise NotImplementedError("Keyword arguments not supported in kernels")
            fast = self._plain
            runner = fast.table.get(fast.key(args))
            if runner is None or runner.default is not warm.device:
                return self._call(args, runner)
            return runner.run(args)
        except UnsupportedSyntaxError:
            raise
        except TypeError as exc:
            raise self._prefixed(exc) from exc
        except RuntimeError as exc:
            raise self._failed(exc, args) from exc

    def _call(self, args, runner):
        """A call the warm path left (see ``device.WarmDefault``): a new
        signature, a `with device:` block open somewhere, or debug mode.
        ``runner`` is what the warm path found for the signature (or None)."""
        if _debug.state.enabled and self.checked:
            return self._debug_call(args)
        default = get_default_device()
        if runner is None or runner.default is not default:
            # another thread may have bound it since, or made it under another default
            runner = self._plain.find(args, default)
            if runner is None:
                runner = self._resolve(args, default)
        return runner.run(args)

    def _resolve(self, args, default, debug: bool = False):
        """The slow path: a runner for this call's signature, recorded for the next."""
        n_args = self._plain.n_args
        if len(args) >= n_args and any(device_class.is_instance(a) for a in args):
            runner = Expanding(self, args, default, debug)
            if len(args) == n_args:   # else it raises the count error, after expanding
                self._fast[debug].add(args, frozenset(), runner)
            return runner
        runner, shape_params, bound = self._bind(args, default, debug)
        if shape_params is not None:
            self._fast[debug].add(args, shape_params, runner, bound)
        return runner

    def prepare(self, args, debug: bool, expanded=None) -> Template:
        """The template for (already expanded) ``args``; checks the count."""
        source = self.source if expanded is None else expanded.source
        count = len(source.tree.args.args)
        if len(args) != count:
            from ..lang.lower.kernel import validate_kernel
            validate_kernel(source)   # its syntax errors come first
            raise TypeError(f"Kernel '{self.name}' expects {count} arguments, "
                            f"got {len(args)}")
        arrays = frozenset()
        if any(values.is_value(a) for a in args):   # which of them the body uses as arrays
            written = written_arrays(source, source.tree, CallBindings(
                self.fn, source.tree, expanded.extra if expanded is not None else None))
            arrays = frozenset(k for k, a in enumerate(source.tree.args.args)
                               if a.arg in written)
        return self._template(debug, element_spec(args, arrays), expanded)

    def _bind(self, args, default, debug: bool, expanded=None):
        """``(runner, shape_params, bound)``: a runner for expanded ``args`` (a
        Bound; with debug mode's hidden arrays, a ``Checked``; with vector
        values, a ``Flattening`` around it), the baked extents its signature
        keys on, and the Bound. ``shape_params`` is None for a runner made
        just before its template took more extents at run time (another
        thread's variant): it runs this call, and the next makes a runner of
        the new kind instead (``FastPath.add`` checks again, under its lock)."""
        template = self.prepare(args, debug, expanded)
        given, counts = args, values.counts(template.elements)
        if counts:   # vector and matrix values: the kernel takes their components
            args = values.flatten(args, counts)
        lowered = template.lowered
        device = placement(self.name, args, default)
        user_args = args
        if debug:
            args = tuple(args) + _debug.hidden_arrays(lowered.kernel, args, device)
        params = lowered.kernel.params
        specs, _ = call_specs(self.name, lowered.kernel, args)
        result, baking = None, template.baking   # one baking for both functions
        if lowered.epilogue is not None:
            result = ResultReader(self, device, specs, template, baking)
        bound = Bound(self, device, default, specs, template, result=result, baking=baking)
        # the variant this call takes (the runner would pick the same one)
        mode = variant_mode(device.backend, lowered.kernel, args, specs)
        check_writable(self.name, bound.program(mode).variant, params, args)
        if result is not None:
            result.check_writable(args)   # the epilogue may store and run atomics too
        current = baking is template.baking
        shape_params = bound.shape_params if current else None
        runner = bound
        if debug:   # after the build, which finds an index count past the rank first
            _debug.check_shape_reads(self.name, lowered.kernel, user_args)
            runner = _debug.Checked(self.name, bound, lowered, device, len(user_args))
        if counts:
            runner = values.Flattening(runner, given, counts)
            if shape_params is not None:   # flat positions -> the arguments'
                starts = values.flat_positions(counts, len(given))
                argument = {start: k for k, start in enumerate(starts)}
                shape_params = frozenset((argument[p], d) for p, d in shape_params)
        return runner, shape_params, bound

    def _debug_call(self, args):
        """Debug mode: the bounds-checked template; IndexError after the launch."""
        default = get_default_device()
        runner = self._fast[1].find(args, default)
        if runner is None:
            runner = self._resolve(args, default, debug=True)
        return runner.run(args)

    # -- error translation (spec stage 1) ----------------------------------------------
    def _prefixed(self, exc: TypeError) -> TypeError:
        message = str(exc)
        if not (message.startswith(f"Kernel '{self.name}'")
                or f"(inlined into kernel '{self.name}')" in message):
            message = f"Kernel '{self.name}': {message}"
        new = TypeError(message)
        for note in getattr(exc, "__notes__", ()):   # the source line and caret
            new.add_note(note)
        return new

    def _failed(self, exc: RuntimeError, args) -> RuntimeError:
        message = NESTED_TOO_DEEPLY if isinstance(exc, RecursionError) else str(exc)
        for prefix in (f"Kernel '{self.name}': ", f"Kernel '{self.name}' "):
            if message.startswith(prefix):
                message = message[len(prefix):]
                break
        if "compilation failed" in message:
            lines = [ln.strip() for ln in message.splitlines() if "error" in ln]
            message = "failed to compile: " + "; ".join(lines or [message])
        try:
            backend = placement(self.name, args, get_default_device()).backend.class_name
        except Exception:  # the backend itself failed to start
            backend = "its backend"
        return RuntimeError(f"Kernel '{self.name}' failed on {backend}: {message}")


def kernel(fn) -> Kernel:
    """Decorator: compile ``fn`` as a Tack kernel (see ``docs/language.md``)."""
    return Kernel(fn)


def library_kernel(fn) -> Kernel:
    """Decorator for Tack's own kernels (host operations, algorithms, the
    communication layer): debug mode checks the user's kernels, and these run
    as they are, at full speed, their accesses being in bounds by construction."""
    compiled = Kernel(fn)
    compiled.checked = False
    return compiled
