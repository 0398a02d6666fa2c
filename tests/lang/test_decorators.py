"""``@tack.kernel`` and ``@tack.func`` at decoration, and device-only objects in Python.

Decoration reads the source (RuntimeError, with the OSError chained, when it
cannot) and rejects what is not a ``def``; it validates nothing else. Device
functions and intrinsics refuse to run from Python.
"""

import math
import re

import numpy as np
import pytest

import tack


@tack.func
def documented(x):
    """Adds one."""
    return x + 1.0


@tack.kernel
def k_documented(a):
    """Adds one to each element."""
    for i in range(len(a)):
        a[i] = documented(a[i])


def test_decorated_objects_keep_the_function_identity():
    assert isinstance(documented, tack.Func)
    assert documented.name == documented.__name__ == "documented"
    assert documented.__doc__ == "Adds one."
    assert documented.__wrapped__(1.0) == 2.0
    assert repr(documented) == "<tack.func documented>"
    assert isinstance(k_documented, tack.Kernel)
    assert k_documented.name == "k_documented"
    assert k_documented.__doc__ == "Adds one to each element."
    assert repr(k_documented) == "<tack.kernel k_documented>"


def test_docstrings_are_not_statements(rng):
    data = rng.floats(5)
    a = tack.array(data)
    k_documented(a)
    np.testing.assert_allclose(a.numpy(), data + 1.0, rtol=1e-6,
                               err_msg=f"seed={rng.seed}")


@pytest.mark.parametrize("args", [(), (1.0,), (1.0, 2.0)])
def test_device_function_called_from_python(args):
    message = ("@tack.func 'documented' cannot be called from Python. Device "
               "functions run inside kernels only: call it from a @tack.kernel.")
    with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
        documented(*args)


@pytest.mark.parametrize("name", ["atomic_add", "atomic_sub", "atomic_min",
                                  "atomic_max"])
def test_atomics_called_from_python(name):
    a = tack.zeros(2, tack.f32)
    message = f"tack.{name}() can only be called inside a @tack.kernel or @tack.func"
    with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$"):
        getattr(tack, name)(a, 0, 1.0)
    np.testing.assert_array_equal(a.numpy(), np.zeros(2, np.float32))


def test_ndindex_from_python_iterates_like_numpy():
    assert list(tack.ndindex(2, 3)) == list(np.ndindex(2, 3))


@pytest.mark.parametrize("decorator, word", [(tack.func, "func"),
                                             (tack.kernel, "kernel")])
def test_lambda_rejected_at_decoration(decorator, word):
    message = (f"@tack.{word} decorates a function defined with def, not function "
               f"(a lambda)")
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        decorator(lambda x: x)


@pytest.mark.parametrize("decorator, word", [(tack.func, "func"),
                                             (tack.kernel, "kernel")])
@pytest.mark.parametrize("obj, kind", [(math.sqrt, "builtin_function_or_method"),
                                       (np.float32, "type"), (3, "int")])
def test_non_function_rejected_at_decoration(decorator, word, obj, kind):
    message = f"@tack.{word} decorates a function defined with def, not {kind}"
    with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
        decorator(obj)


_EXEC_SOURCE = """
def from_exec(a):
    for i in range(len(a)):
        a[i] = 1.0
"""


@pytest.mark.parametrize("decorator, kind", [(tack.func, "device function"),
                                             (tack.kernel, "kernel")])
def test_unreadable_source_at_decoration(decorator, kind):
    namespace = {}
    exec(_EXEC_SOURCE, namespace)
    message = (f"Cannot read the source of {kind} 'from_exec'. Tack compiles kernels "
               f"and device functions from their source text, so they must be "
               f"defined in a file (a module or script), not with exec(), in an "
               f"interactive prompt or with python -c.")
    with pytest.raises(RuntimeError, match=f"^{re.escape(message)}$") as info:
        decorator(namespace["from_exec"])
    assert type(info.value) is RuntimeError
    assert isinstance(info.value.__cause__, OSError)


def test_kernel_and_func_decoration_are_independent(rng):
    """One function can be both a device function and (separately) a kernel."""
    def fill(a):
        for i in range(len(a)):
            a[i] = 4.0
    as_kernel = tack.kernel(fill)
    as_func = tack.func(fill)
    a = tack.array(rng.floats(3))
    as_kernel(a)
    np.testing.assert_array_equal(a.numpy(), np.full(3, 4.0, np.float32))
    with pytest.raises(RuntimeError, match=re.escape("@tack.func 'fill' cannot be "
                                                     "called from Python.")):
        as_func(a)
