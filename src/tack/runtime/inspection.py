"""``tack.inspect``: the IR, source, optimized code or cost a call would run.

It runs the same pipeline as dispatch on a private copy, for the device the
call would run on, without launching and without filling the variant cache,
and refuses what a call with these arguments would refuse (a float or a
``// 0`` in the range, read-only or misaligned arrays, a launch that does not
fill whole workgroups). Unlike dispatch it does not translate errors.
"""

from __future__ import annotations

from ..ir.cost import iteration_cost
from ..ir.passes.workgroups import requires_full_workgroups
from ..ir.printer import format_function
from ..ir.verify import verify
from .debug import debug_enabled, hidden_arrays
from .device import get_default_device
from .creation import empty
from .depth import deep_recursion
from .dispatch import (DISJOINT, STREAMING, Variant, call_specs, check_writable,
                       epilogue_specs, placement, variant_mode)
from .expanding import expand_call
from .grid import launch_count
from . import values
from .kernel import Kernel

MODES = ("ir", "source", "optimized", "cost")


def _checked(name, fn, args, specs, backend, runtime):
    """``fn`` through the pipeline for the variant these arguments take (taking
    the extents in ``runtime`` at run time), with dispatch's checks of the
    result (read-only arrays it may write)."""
    from ..ir.passes.pipeline import VariantRequest, run_pipeline   # (see Kernel._lower)
    variant = variant_mode(backend, fn, args, specs)
    request = VariantRequest(specs, backend.supported_dtypes, backend.atomic_dtypes,
                             backend.class_name, variant >= DISJOINT,
                             backend.supports_workgroups, variant == STREAMING, runtime)
    optimized = run_pipeline(fn, request)
    check_writable(name, Variant(optimized, None), fn.params, args)
    return optimized


def inspect(kernel, *args, mode: str = "source") -> str:
    """Text for ``mode``: "ir", "source", "optimized" (CPU) or "cost"."""
    if not isinstance(kernel, Kernel):
        raise TypeError(f"Expected a @tack.kernel, got {type(kernel).__name__}")
    if mode not in MODES:
        raise ValueError(f"Unknown inspect mode: {mode!r}. Use 'ir', 'source', "
                         f"'optimized', or 'cost'.")
    with deep_recursion():     # it lowers and compiles, as a call does
        return _inspect(kernel, args, mode)


def _inspect(kernel, args, mode: str) -> str:
    debug = debug_enabled()
    args, expanded = expand_call(kernel, args)
    prepared = kernel.prepare(args, debug, expanded)
    lowered, runtime = prepared.lowered, prepared.baking.runtime
    args = values.flatten(args, values.counts(prepared.elements))
    template = lowered.kernel
    device = placement(kernel.name, args, get_default_device())
    if debug:  # show the bounds-checked code a debug launch runs
        args = tuple(args) + hidden_arrays(template, args, device)
    backend = device.backend
    specs, extents = call_specs(kernel.name, template, args)
    # the checks a launch makes with these arguments, as dispatch makes them
    optimized = _checked(kernel.name, template, args, specs, backend, runtime)
    if backend.supports_workgroups:
        launch_count(kernel.name, extents, requires_full_workgroups(optimized),
                     backend.max_launch, backend.api_name)
    if lowered.epilogue is not None:   # a returning kernel's call runs it too
        full, dtype, count = epilogue_specs(lowered, specs)
        scratch = empty(count, dtype, device=device)
        epilogue = _checked(kernel.name, lowered.epilogue, tuple(args) + (scratch,), full,
                            backend, runtime)
        backend.typed(epilogue)   # its type errors, which its build would raise
    if mode == "ir":  # before any backend's scalar packing
        from ..ir.passes.annotate import annotate_types
        return format_function(verify(annotate_types(optimized), "typed"))
    if mode == "cost":
        cost = iteration_cost(backend.typed(optimized))
        return (f"kernel {kernel.name}: per iteration {cost.flops:g} flops, "
                f"{cost.bytes:g} bytes\n")
    return backend.inspect_source(optimized, optimized=(mode == "optimized"))
