"""What a called name refers to, found statically (CallBindings).

A bare name is looked up in the closure, then the module globals, then the
builtins; an attribute only through module objects. Names the function binds
itself (parameters, assignments, loop targets) shadow all of those.
"""

import math
import math as m
import re
import types
from math import sqrt
from math import sqrt as root

import numpy as np
import pytest

import tack
import tack as tk


@tack.func
def offset(x):
    return x + 1.0


@tack.func
def scale(x):
    return x * 3.0


alias_of_scale = scale


# A module object holding device functions, like ``import helpers``; attribute
# chains through modules resolve, anything else does not.
helpers = types.ModuleType("helpers")
helpers.offset = offset
helpers.inner = types.ModuleType("helpers.inner")
helpers.inner.scale = scale


class Holder:
    method = scale


holder = Holder()


def _assert_close(actual, expected, seed, rtol=1e-6):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=1e-6,
                               err_msg=f"seed={seed}")


# -- module globals and module attributes ----------------------------------------------

@tack.kernel
def k_globals_and_modules(a, b):
    for i in range(len(a)):
        x = offset(a[i]) + alias_of_scale(a[i])
        y = helpers.offset(x) + helpers.inner.scale(x)
        z = math.sqrt(abs(y)) + sqrt(abs(x)) + root(2.0) + m.floor(y) + math.pi
        b[i] = tk.f32(z) + tack.f32(m.e)


@pytest.mark.parametrize("n", [0, 1, 7, 33])
def test_globals_and_module_attributes(n, rng):
    a = rng.floats(n, np.float64)
    b = tack.zeros(n, tack.f32)
    k_globals_and_modules(tack.array(a), b)
    x = (a + 1.0) + a * 3.0
    y = (x + 1.0) + x * 3.0
    z = np.sqrt(abs(y)) + np.sqrt(abs(x)) + np.sqrt(2.0) + np.floor(y) + np.pi
    _assert_close(b.numpy(), z.astype(np.float32) + np.float32(np.e), rng.seed)


@tack.kernel
def k_tack_alias(a, counter):
    for i, j in tk.ndindex(a.shape[0], a.shape[1]):
        a[i, j] = tk.f32(i * 10 + j)
        tk.atomic_add(counter, 0, 1)


@pytest.mark.parametrize("shape", [(0, 2), (1, 1), (3, 5)])
def test_import_tack_as_alias(shape):
    a = tack.zeros(shape, tack.f32)
    counter = tack.zeros(1, tack.i32)
    k_tack_alias(a, counter)
    i, j = np.indices(shape)
    np.testing.assert_array_equal(a.numpy(), (i * 10 + j).astype(np.float32))
    assert counter.numpy()[0] == shape[0] * shape[1]


@tack.kernel
def k_late_bound(a):
    for i in range(len(a)):
        a[i] = defined_later(a[i])


@tack.func
def defined_later(x):
    return x - 5.0


def test_global_defined_after_the_kernel(rng):
    """Names resolve at the first call, not at decoration."""
    data = rng.floats(6)
    a = tack.array(data)
    k_late_bound(a)
    _assert_close(a.numpy(), data - 5.0, rng.seed)


# -- closures --------------------------------------------------------------------------

def _make_closure_kernels():
    @tack.func
    def offset(x):  # shadows the module's offset for kernels defined here
        return x + 100.0

    @tack.func
    def min(x, y):  # noqa: A001  (shadows the builtin for kernels defined here)
        return x - y

    @tack.func
    def twice_offset(x):
        return offset(offset(x))

    @tack.kernel
    def k_closure(a, b, c):
        for i in range(len(a)):
            b[i] = offset(a[i]) + scale(a[i])
            c[i] = min(a[i], 1.0) + twice_offset(0.0)

    return k_closure


k_closure = _make_closure_kernels()


@pytest.mark.parametrize("n", [0, 1, 7])
def test_closure_cells_come_before_globals_and_builtins(n, rng):
    a = rng.floats(n)
    b = tack.zeros(n, tack.f32)
    c = tack.zeros(n, tack.f32)
    k_closure(tack.array(a), b, c)
    _assert_close(b.numpy(), (a + 100.0) + a * 3.0, rng.seed)
    _assert_close(c.numpy(), (a - 1.0) + 200.0, rng.seed)


# -- names the function binds shadow outer bindings ------------------------------------

@tack.kernel
def k_parameter_shadows(a, scale):
    for i in range(len(a)):
        a[i] = a[i] * scale + offset(0.0)


@tack.kernel
def k_local_shadows(a):
    for i in range(len(a)):
        sqrt = a[i] * 2.0
        offset_ = offset(sqrt)
        a[i] = sqrt + offset_


@tack.kernel
def k_call_local(a):
    for i in range(len(a)):
        sqrt = 2.0
        a[i] = sqrt(a[i])


@tack.kernel
def k_call_parameter(a, scale):
    for i in range(len(a)):
        a[i] = scale(a[i])


@tack.kernel
def k_loop_target_shadows(a):
    for i in range(len(a)):
        for offset in range(2):
            a[i] = a[i] + offset


def test_parameter_shadows_global_function(rng):
    data = rng.floats(5)
    a = tack.array(data)
    k_parameter_shadows(a, 0.5)
    _assert_close(a.numpy(), data * 0.5 + 1.0, rng.seed)


def test_local_shadows_imported_function(rng):
    data = rng.floats(5)
    a = tack.array(data)
    k_local_shadows(a)
    _assert_close(a.numpy(), data * 2.0 + (data * 2.0 + 1.0), rng.seed)


def test_loop_target_shadows_global_function(rng):
    data = rng.floats(5)
    a = tack.array(data)
    k_loop_target_shadows(a)
    _assert_close(a.numpy(), data + 1.0, rng.seed)


@pytest.mark.parametrize("kernel, args, callee, column", [
    (k_call_local, (), "sqrt", 16),
    (k_call_parameter, (2.0,), "scale", 16),
], ids=["local", "parameter"])
def test_calling_a_bound_local_is_rejected(kernel, args, callee, column, rng):
    data = rng.floats(3)
    a = tack.array(data)
    line = 5 if kernel is k_call_local else 4
    message = (f"Kernel '{kernel.name}': unsupported call to '{callee}' (not a "
               f"statically bound @tack.func or a supported kernel intrinsic) at line "
               f"{line}, column {column}")
    with pytest.raises(tack.UnsupportedSyntaxError, match=f"^{re.escape(message)}"):
        kernel(a, *args)
    np.testing.assert_array_equal(a.numpy(), data, err_msg=f"seed={rng.seed}")


# -- attributes resolve through modules only -------------------------------------------

@tack.kernel
def k_attribute_of_object(a):
    for i in range(len(a)):
        a[i] = holder.method(a[i])


@tack.kernel
def k_missing_module_attribute(a):
    for i in range(len(a)):
        a[i] = helpers.missing(a[i])


@pytest.mark.parametrize("kernel, spelled", [
    (k_attribute_of_object, "holder.method"),
    (k_missing_module_attribute, "helpers.missing"),
], ids=["object", "missing"])
def test_attribute_not_through_a_module(kernel, spelled, rng):
    data = rng.floats(3)
    a = tack.array(data)
    message = (f"Kernel '{kernel.name}': unsupported call to '{spelled}' (not a "
               f"statically bound @tack.func or a supported kernel intrinsic) at line "
               f"4, column 16")
    with pytest.raises(tack.UnsupportedSyntaxError, match=f"^{re.escape(message)}"):
        kernel(a)
    np.testing.assert_array_equal(a.numpy(), data, err_msg=f"seed={rng.seed}")
