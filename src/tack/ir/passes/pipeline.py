"""The variant pipeline: an explicit, ordered list of named passes (spec stage 5).

Each step is ``(name, function, verification stage or None)``; the verifier
runs after every step that names a stage. ``trace``, when given, is called as
``trace(step_name, fn)`` after each step (for debugging and tests).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..statements import Function
from ..verify import verify
from .atomics import check_atomic_support
from .check_types import check_dispatch_types
from .infer import check_arguments, infer_param_types
from .local_arrays import check_local_arrays
from .localize import localize_outer_scalars
from .optimize import propagate_copies
from .resolve import resolve, shape_dependencies
from .workgroups import check_workgroups
from .wrap import wrap_modulo


@dataclass(frozen=True)
class VariantRequest:
    """Everything the passes may know of one call: types, shapes, the backend."""

    specs: tuple            # ArgSpec per parameter
    supported_dtypes: frozenset
    atomic_dtypes: frozenset
    backend_name: str
    disjoint: bool = False
    supports_workgroups: bool = False
    streaming: bool = False   # stores into write-only arrays bypass the cache (CPU)
    runtime_extents: frozenset = frozenset()   # (array, dim) read at run time
    # (array, dim) whose extents the variant's key bakes (the body reads them
    # and they are not read at run time); run_pipeline fills it from the template
    baked_extents: frozenset = frozenset()

    def shapes(self, fn: Function) -> dict:
        return {p.name: s.shape for p, s in zip(fn.params, self.specs) if s.is_array}


PIPELINE = (
    ("resolve", lambda fn, rq: resolve(check_arguments(fn, rq.specs), rq.shapes(fn),
                                         rq.runtime_extents),
     "resolved"),
    ("infer", lambda fn, rq: infer_param_types(fn, rq.specs), "inferred"),
    ("check_types", lambda fn, rq: check_dispatch_types(
        fn, rq.supported_dtypes, rq.backend_name), None),
    ("localize", lambda fn, rq: localize_outer_scalars(fn), "localized"),
    ("atomics", lambda fn, rq: check_atomic_support(
        fn, rq.atomic_dtypes, rq.backend_name), None),
    ("workgroups", lambda fn, rq: check_workgroups(
        fn, rq.supports_workgroups, rq.backend_name), None),
    ("local_arrays", lambda fn, rq: check_local_arrays(fn), None),
    ("optimize", lambda fn, rq: propagate_copies(fn), "optimized"),
    ("wrap", lambda fn, rq: wrap_modulo(fn, rq.shapes(fn), rq.baked_extents), "optimized"),
    ("record", lambda fn, rq: fn.replace(disjoint=rq.disjoint, streaming=rq.streaming),
     None),
)


def run_pipeline(template: Function, request: VariantRequest, trace=None) -> Function:
    """The optimized IR of one variant; the template is never modified."""
    baked = frozenset((name, d) for name, dims in shape_dependencies(template).items()
                      for d in dims) - request.runtime_extents
    request = replace(request, baked_extents=baked)
    fn = template
    for name, step, stage in PIPELINE:
        fn = step(fn, request)
        if stage is not None:
            verify(fn, stage)
        if trace is not None:
            trace(name, fn)
    return fn
