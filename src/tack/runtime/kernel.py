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
from ..errors import UnsupportedSyntaxError
from ..ir.passes.pipeline import VariantRequest, run_pipeline
from ..ir.passes.resolve import shape_dependencies
from ..ir.verify import verify
from ..lang.func import _require_def
from ..lang.lower.kernel import lower_kernel
from ..lang.source import read_source
from . import debug as _debug
from . import record as _record
from .device import get_default_device
from .dispatch import (Bound, ResultReader, Variant, arrays_disjoint,
                       check_extent_types, check_writable, classify, placement,
                       signature)
from .host_eval import extent_evaluator

_transform_lock = threading.RLock()


class Template:
    """One lowering specialization of a kernel: its IR and what depends on it."""

    __slots__ = ("debug", "lowered", "ir_key", "shape_params", "shape_deps", "fast")

    def __init__(self, debug: bool):
        self.debug = debug
        self.lowered = None
        self.ir_key = None
        self.shape_params = frozenset()
        self.shape_deps: dict = {}
        self.fast: dict = {}   # call signature -> Bound


class Kernel:
    """A compiled-on-demand kernel; call it like the Python function."""

    def __init__(self, fn):
        _require_def(fn, "kernel")
        self.fn = fn
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.source = read_source(fn, "Kernel")
        self._templates = (Template(False), Template(True))
        self._plain = self._templates[0]
        self._variants: dict = {}
        self._lock = threading.RLock()

    @property
    def name(self) -> str:
        return self.fn.__name__

    def __repr__(self) -> str:
        return f"<tack.kernel {self.name}>"

    # -- tier 1: IR templates ---------------------------------------------------------
    def get_ir(self, debug: bool = False):
        """The lowered, verified IR (and return epilogue) for one specialization."""
        template = self._templates[debug]
        if template.lowered is None:
            with _transform_lock:
                if template.lowered is None:
                    self._lower(template)
        return template.lowered

    def _lower(self, template: Template) -> None:
        specialization = ("debug",) if template.debug else ()
        key = disk.ir_key(self, specialization) if disk.enabled() else None
        lowered = disk.load_template(key) if key else None
        if lowered is None:
            lowered = lower_kernel(self.source, self.fn, template.debug)
            verify(lowered.kernel, "lowered")
            if lowered.epilogue is not None:
                verify(lowered.epilogue, "lowered")
            if key:
                disk.store_template(key, lowered)
        deps = dict(shape_dependencies(lowered.kernel))
        if lowered.epilogue is not None:
            deps.update(shape_dependencies(lowered.epilogue))
        names = [p.name for p in lowered.kernel.params]
        template.ir_key = key
        template.shape_deps = deps
        template.shape_params = frozenset(k for k, n in enumerate(names) if n in deps)
        template.lowered = lowered

    # -- tier 2: variants ----------------------------------------------------------
    def _variant(self, backend, specs, disjoint: bool, epilogue: bool,
                 debug: bool = False) -> Variant:
        template = self._templates[debug]
        lowered = self.get_ir(debug)
        function = lowered.epilogue if epilogue else lowered.kernel
        key = self._variant_key(backend, template, function, specs, disjoint, epilogue)
        found = self._variants.get(key)
        if found is not None:
            return found
        with self._lock:
            found = self._variants.get(key)
            if found is None:
                found = self._build_variant(backend, template, function, specs,
                                            disjoint, key)
                self._variants[key] = found
        return found

    def _variant_key(self, backend, template, function, specs, disjoint, epilogue):
        parts = []
        for param, spec in zip(function.params, specs):
            baked = spec.shape if param.name in template.shape_deps else None
            ndim = len(spec.shape) if spec.is_array else None
            parts.append((spec.dtype, spec.category, ndim, baked))
        return (backend.cache_target(), template.debug, epilogue, tuple(parts), disjoint)

    def _build_variant(self, backend, template, function, specs, disjoint,
                       key) -> Variant:
        """From the disk cache when it has this variant, else compiled (and stored)."""
        disk_key = None
        if template.ir_key and disk.enabled() and hasattr(backend, "artifact"):
            disk_key = disk.variant_key(template.ir_key, key, backend.cache_target())
            cached = disk.load_variant(disk_key, backend)
            if cached is not None:
                return Variant(*cached)
        request = VariantRequest(specs, backend.supported_dtypes, backend.atomic_dtypes,
                                 backend.class_name, disjoint,
                             backend.supports_workgroups)
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
            if _debug.state.enabled:
                return self._debug_call(args)
            default = get_default_device()
            plain = self._plain
            bound = plain.fast.get(signature(args, plain.shape_params))
            if bound is None or bound.default is not default:
                bound = self._resolve(args, default, plain)
            return bound.run(args)
        except UnsupportedSyntaxError:
            raise
        except TypeError as exc:
            raise self._prefixed(exc) from exc
        except RuntimeError as exc:
            raise self._failed(exc, args) from exc

    def _resolve(self, args, default, template: Template, hidden: int = 0) -> Bound:
        """The slow path: classify, check, build or find the variant, record a Bound.

        ``hidden`` counts trailing arguments the caller added (debug mode's).
        """
        lowered = self.get_ir(template.debug)
        params = lowered.kernel.params
        if len(args) != len(params):
            raise TypeError(f"Kernel '{self.name}' expects {len(params) - hidden} "
                            f"arguments, got {len(args) - hidden}")
        device = placement(self.name, args, default)
        specs = classify(self.name, params, args)
        check_extent_types(self.name, lowered.kernel, specs)
        positions = {p.name: k for k, p in enumerate(params)}
        for extent in lowered.kernel.parallel_for.extents:
            extent_evaluator(extent, positions)(args)  # raises what a bad range raises
        result = None
        if lowered.epilogue is not None:
            result = ResultReader(self, device, specs, lowered.epilogue,
                                  lowered.result_type, lowered.result_kind,
                                  template.debug)
        bound = Bound(self, device, default, specs, lowered.kernel, result=result,
                      debug=template.debug)
        disjoint = device.backend.specialize_disjoint and arrays_disjoint(
            [a for a, s in zip(args, specs) if s.is_array])
        check_writable(self.name, bound.program(disjoint).variant, params, args)
        template.fast[signature(args, template.shape_params)] = bound
        return bound

    def _debug_call(self, args):
        """Debug mode: the bounds-checked template; IndexError after the launch."""
        template = self._templates[True]
        lowered = self.get_ir(True)
        default = get_default_device()
        device = placement(self.name, args, default)
        errors, extents = _debug.hidden_arrays(lowered.kernel, args, device)
        full = tuple(args) + (errors, extents)
        bound = template.fast.get(signature(full, template.shape_params))
        if bound is None or bound.default is not default:
            bound = self._resolve(full, default, template, hidden=2)
        value = bound.run(full)
        _debug.report(self.name, lowered.sites, errors)
        return value

    # -- error translation (spec stage 1) ----------------------------------------------
    def _prefixed(self, exc: TypeError) -> TypeError:
        message = str(exc)
        if (message.startswith(f"Kernel '{self.name}'")
                or f"(inlined into kernel '{self.name}')" in message):
            return TypeError(message)
        return TypeError(f"Kernel '{self.name}': {message}")

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
