"""``@tack.kernel``: the Kernel object, its IR templates and its variants.

Tiers (spec 000): an IR template is lowered once per lowering specialization
(plain or debug; lock-free read, one build under a lock); variants are
compiled once per variant key; a call whose signature was seen before goes
straight to its :class:`Bound`. ``Kernel.__call__`` is the one place errors
are translated.
"""

from __future__ import annotations

import threading

from ..cache import kernels as disk
from ..errors import PerformanceWarning, UnsupportedSyntaxError, warn_at_caller
from ..ir.passes.pipeline import VariantRequest, run_pipeline
from ..ir.passes.resolve import shape_dependencies
from ..ir.verify import verify
from ..lang import device_class
from ..lang.func import _require_def
from ..lang.lower.kernel import lower_kernel, validate_kernel
from ..lang.source import read_source
from . import debug as _debug
from . import record as _record
from .device import get_default_device, warm
from .dispatch import (DISJOINT, STREAMING, Bound, ResultReader, Variant, call_specs,
                       check_writable, element_spec, placement, signature_function,
                       variant_mode)
from .expanding import Expanding
from .runners import Runners

_transform_lock = threading.RLock()


# Variants of one template that differ only in baked extents before a
# PerformanceWarning (Kernel._count_extent_variant).
EXTENT_VARIANTS = 8


class Template:
    """One lowering specialization of a kernel (spec stage 2): debug or not,
    its vector and matrix array parameters, and its device-class expansion."""

    __slots__ = ("key", "debug", "elements", "expanded", "lowered", "ir_key",
                 "shape_params", "shape_deps", "extent_variants", "extent_warned")

    def __init__(self, key, debug: bool, elements: tuple, expanded):
        self.key = key
        self.debug = debug
        self.elements = elements      # ((position, array ndim, element type), ...)
        self.expanded = expanded      # device_class.Expanded or None
        self.lowered = None
        self.ir_key = None
        self.shape_params = frozenset()
        self.shape_deps: dict = {}
        self.extent_variants: dict = {}   # variant key less the lengths -> count
        self.extent_warned = False


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

    The table keeps the runners of a few devices made with options only
    (``runners.py``)."""

    __slots__ = ("table", "shape_params", "n_args", "key", "lock")

    def __init__(self, n_args: int):
        self.table = Runners()
        self.shape_params = frozenset()
        self.n_args = n_args
        self.key = signature_function(n_args, self.shape_params)
        self.lock = threading.Lock()

    def add(self, args, shape_params, runner) -> None:
        with self.lock:
            if not shape_params <= self.shape_params:
                self.shape_params = self.shape_params | shape_params
                self.key = signature_function(self.n_args, self.shape_params)
                self.table.clear()
            self.table.put(self.key(args), runner)


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
        self._references: dict = {}   # (class id, parameter) -> what the kernel reads
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
        if lowered is None:
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
            deps.update(shape_dependencies(lowered.epilogue))
        params = [p.name for p in lowered.kernel.params]
        template.ir_key = key
        template.shape_deps = deps
        # (position, dim) of each extent a variant bakes in: only those select it
        template.shape_params = frozenset((k, d) for k, n in enumerate(params)
                                          if n in deps for d in deps[n])
        template.lowered = lowered

    # -- tier 2: variants ----------------------------------------------------------
    def _variant(self, backend, specs, mode: int, epilogue: bool,
                 template: Template) -> Variant:
        """The variant for ``mode`` (dispatch.ALIASED, DISJOINT or STREAMING)."""
        lowered = template.lowered
        function = lowered.epilogue if epilogue else lowered.kernel
        key = self._variant_key(backend, template, function, specs, mode, epilogue)
        found = self._variants.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self._variants.get(key)
            if found is None:
                found = self._build_variant(backend, template, function, specs,
                                            mode, key)
                self._variants[key] = found
                self._count_extent_variant(template, key)
        return found

    def _count_extent_variant(self, template: Template, key) -> None:
        """Warn once per template when the EXTENT_VARIANTS-th variant differs
        from others only in the length (``.shape[0]``) of a parameter the body
        reads: a length that changes every step (``kernel(pos[:n])`` with
        ``len(pos)`` in the body) compiles every step. Row lengths (a fixed
        set of grids) and parameters Tack names itself (``__...``: textures,
        device-class attributes) do not count."""
        target, _, (epilogue, parts, mode) = key
        if epilogue or template.extent_warned:   # (a return's variant: with its kernel's)
            return
        params = [p.name for p in template.lowered.kernel.params]   # the parts' order
        lengths = [k for k, p in enumerate(params) if 0 in
                   template.shape_deps.get(p, ()) and not p.startswith("__")]
        if not lengths:
            return
        # the variant with each watched length left out
        group = (target, mode, tuple(
            part[:3] + ((part[3][1:] if k in lengths else part[3]),)
            for k, part in enumerate(parts)))
        count = template.extent_variants.get(group, 0) + 1
        template.extent_variants[group] = count
        if count < EXTENT_VARIANTS:
            return
        template.extent_warned = True
        names = ", ".join(f"len({params[k]})" for k in lengths)
        warn_at_caller(PerformanceWarning(
            f"Kernel '{self.name}' has {count} variants that differ only in lengths "
            f"its body reads ({names}): each new length compiles the kernel again. "
            f"Pass a length that changes as an argument and use it in the body, or "
            f"read the length only in the parallel loop's range, which does not "
            f"compile again"))

    def _variant_key(self, backend, template, function, specs, mode, epilogue):
        parts = []
        for param, spec in zip(function.params, specs):
            dims = template.shape_deps.get(param.name, ())
            baked = tuple(spec.shape[d] for d in dims if d < len(spec.shape)) if dims \
                else None
            ndim = len(spec.shape) if spec.is_array else None
            parts.append((spec.dtype, spec.category, ndim, baked))
        # ((target, memory domain), template, what the variant itself depends on):
        # the disk cache keys the last part under the template's own stable key and
        # the target. The memory domain keeps two identical GPUs apart: a program is
        # loaded into one device's context. The mode is 0/1 for aliased/disjoint
        # (the keys False/True had) or 2 for streaming.
        return ((backend.cache_target(), backend.memory_domain), template.key,
                (epilogue, tuple(parts), int(mode)))

    def _build_variant(self, backend, template, function, specs, mode,
                       key) -> Variant:
        """From the disk cache when it has this variant, else compiled (and stored)."""
        disk_key = None
        if template.ir_key and disk.enabled() and hasattr(backend, "artifact"):
            disk_key = disk.variant_key(template.ir_key, key[2], backend.cache_target())
            cached = disk.load_variant(disk_key, backend)
            if cached is not None:
                return Variant(*cached)
        request = VariantRequest(specs, backend.supported_dtypes, backend.atomic_dtypes,
                                 backend.class_name, mode >= DISJOINT,
                                 backend.supports_workgroups, mode == STREAMING)
        optimized = run_pipeline(function, request)
        if _record.enabled():
            _record.record(optimized)
        program = backend.build(optimized)
        if disk_key:
            disk.store_variant(disk_key, optimized, program, backend)
        return Variant(optimized, program)

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
        if runner is None:   # another thread may have bound it since
            fast = self._plain
            runner = fast.table.get(fast.key(args))
        if runner is None or runner.default is not default:
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
        bound, template = self._bind(args, default, debug)
        self._fast[debug].add(args, template.shape_params, bound)
        return bound

    def prepare(self, args, debug: bool, expanded=None) -> Template:
        """The template for (already expanded) ``args``; checks the count."""
        source = self.source if expanded is None else expanded.source
        count = len(source.tree.args.args)
        if len(args) != count:
            validate_kernel(source)   # its syntax errors come first
            raise TypeError(f"Kernel '{self.name}' expects {count} arguments, "
                            f"got {len(args)}")
        return self._template(debug, element_spec(args), expanded)

    def _bind(self, args, default, debug: bool, expanded=None):
        """A Bound for expanded ``args`` (debug mode adds the hidden arrays)."""
        template = self.prepare(args, debug, expanded)
        lowered = template.lowered
        device = placement(self.name, args, default)
        user_args = args
        if debug:
            args = tuple(args) + _debug.hidden_arrays(lowered.kernel, args, device)
        params = lowered.kernel.params
        specs, _ = call_specs(self.name, lowered.kernel, args)
        result = None
        if lowered.epilogue is not None:
            result = ResultReader(self, device, specs, template)
        bound = Bound(self, device, default, specs, template, result=result)
        # the variant this call takes (the runner would pick the same one)
        mode = variant_mode(device.backend, lowered.kernel, args, specs)
        check_writable(self.name, bound.program(mode).variant, params, args)
        if result is not None:
            result.check_writable(args)   # the epilogue may store and run atomics too
        if debug:   # after the build, which finds an index count past the rank first
            _debug.check_shape_reads(self.name, lowered.kernel, user_args)
            return _debug.Checked(self.name, bound, lowered, device, len(user_args)), template
        return bound, template

    def _debug_call(self, args):
        """Debug mode: the bounds-checked template; IndexError after the launch."""
        default = get_default_device()
        fast = self._fast[1]
        runner = fast.table.get(fast.key(args))
        if runner is None or runner.default is not default:
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
        message = str(exc)
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
