"""Running generated programs: import the kernel from a file, check it.

``check_valid`` compares a kernel's outputs with ``reference.run_reference``:
integer outputs must be identical; float outputs bit-identical (NaN equal to
NaN) unless a libm function (``math.exp``, ``math.sin``) reaches them, and
then within a relative and absolute 1e-3 (f32) / 1e-9 (f64) (about 2^13
ulp of f32 and 2^43 ulp of f64 at magnitude 1: libm results may differ by an
ulp or two and later cancellation amplifies that). ``check_invalid``
asserts the exact ``UnsupportedSyntaxError`` message.
"""

from __future__ import annotations

import importlib.util
import itertools
import os

import numpy as np

import tack

from .reference import run_reference

_COUNTER = itertools.count()
TOL = {"f32": 1e-3, "f64": 1e-9}


def load(source: str, directory: str):
    """Write ``source`` to a new file in ``directory`` and import it."""
    name = f"tack_fuzz_{os.getpid()}_{next(_COUNTER)}"
    path = os.path.join(directory, name + ".py")
    with open(path, "w") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def inputs(p, seed: int):
    rng = np.random.default_rng(seed)
    a = (rng.integers(-16, 17, p.n) / 8).astype(p.ftype_np)
    b = rng.integers(-100, 101, p.n).astype(p.itype_np)
    c2 = rng.integers(-100, 101, p.shape2).astype(p.itype_np)
    outf = (rng.integers(-8, 9, p.n) / 4).astype(p.otype_np)
    outi = rng.integers(-50, 51, p.n).astype(p.itype_np)
    return a, b, c2, outf, outi


def check_valid(p, directory: str, seed: int) -> str | None:
    """None if the kernel agrees with the reference, else a description."""
    try:
        kernel = load(p.source, directory).k
    except Exception as exc:  # noqa: BLE001 - any exception is a finding
        return f"{type(exc).__name__}: {exc}"
    return check_kernel(kernel, p.source, p, seed)


def check_kernel(kernel, source: str, p, seed: int) -> str | None:
    """Run ``kernel`` (whose module text is ``source``) and the reference on the
    inputs drawn from ``seed``; None if they agree, else a description."""
    floats = {"f32": np.float32, "f64": np.float64}
    p.ftype_np, p.otype_np = floats[p.ftype], floats[p.otype]
    p.itype_np = {"i32": np.int32, "i64": np.int64}[p.itype]
    default = "f64" if "f64" in (p.ftype, p.otype) else "f32"   # the default float type
    host = inputs(p, seed)
    ref = [x.copy() for x in host]
    run_reference(source, default, ref + [np.int32(p.m), floats[default](p.s)])
    try:
        dev = [tack.array(x) for x in host]
        kernel(*dev, p.m, p.s)
        got = [x.numpy() for x in dev]
    except Exception as exc:  # noqa: BLE001 - any exception is a finding
        return f"{type(exc).__name__}: {exc} (input seed {seed})"
    if not np.array_equal(got[4], ref[4]):
        return f"outi differs (input seed {seed}): got {got[4]}, expected {ref[4]}"
    if p.inexact:
        tol = TOL["f64" if p.ftype == p.otype == "f64" else "f32"]
        ok = np.allclose(got[3], ref[3], rtol=tol, atol=tol, equal_nan=True)
    else:
        ok = np.array_equal(got[3], ref[3], equal_nan=True)
    if not ok:
        return f"outf differs (input seed {seed}): got {got[3]!r}, expected {ref[3]!r}"
    return None


def check_invalid(p, directory: str) -> str | None:
    """None if calling the kernel raises exactly the expected error."""
    try:
        kernel = load(p.source, directory).k
        a = tack.zeros(3, dtype=tack.f32)
        b = tack.zeros(3, dtype=tack.i32)
        c2 = tack.zeros((2, 2), dtype=tack.i32)
        kernel(a, b, c2, tack.zeros(3, dtype=tack.f32), tack.zeros(3, dtype=tack.i32), 1, 0.5)
    except Exception as exc:  # noqa: BLE001 - the exact type is checked below
        if type(exc) is tack.UnsupportedSyntaxError and str(exc) == p.message:
            return None
        return f"expected UnsupportedSyntaxError({p.message!r}), got {type(exc).__name__}: {exc}"
    return f"expected UnsupportedSyntaxError({p.message!r}), nothing raised"
