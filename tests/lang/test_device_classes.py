"""Issue #8: ``@tack.device_class`` instances passed to kernels (docs/language.md,
"Device classes").

Each row of the attribute table is checked against NumPy (class constants,
shadowing instance numbers, run-time scalars, instance arrays, methods that
call methods and return early), then what keys the compiled variants (there
is no public count of compiled variants, so ``kernel._variants`` is read where
the docs promise that something does or does not recompile), classes of one
name, garbage collection, and the ``ValueError`` rows, which must leave every
array untouched. f32 results: rtol=1e-5, atol=1e-5.
"""

import gc
import re

import numpy as np
import pytest

import tack

SIZES = [0, 1, 7, 33]
F32 = dict(rtol=1e-5, atol=1e-5)


@tack.device_class
class Spring:
    k = 2.0                          # class constant
    offset = 1                       # class constant (int)

    def __init__(self, rest, anchors):
        self.rest = rest             # run-time scalar
        self.anchors = anchors       # instance array
        self._hidden = 1.0
        self.label = "spring"
        self.gravity = (0.0, -9.8, 0.0)          # a vector value: refused
        self.weights = np.ones(3, np.float32)    # NumPy data: refused

    def plain(self, x):
        return x

    @tack.func
    def stretch(self, x, i):
        return x - self.anchors[i] - self.rest

    @tack.func
    def force(self, x, i):
        d = self.stretch(x, i)                   # a method calling a method
        if d > 3.0:                              # early returns
            return -self.k * 3.0 + self.offset
        if d < -3.0:
            return self.k * 3.0 + self.offset
        return -self.k * d + self.offset


@tack.kernel
def apply(spring, x, f):
    for i in range(len(x)):
        f[i] = spring.force(x[i], i)


def spring_ref(x, anchors, rest, k, offset):
    d = (x - anchors - np.float32(rest)).astype(np.float32)
    k = np.float32(k)
    return np.where(d > 3, -k * 3 + offset, np.where(d < -3, k * 3 + offset, -k * d + offset))


@pytest.mark.parametrize("n", SIZES)
def test_constants_scalars_arrays_and_methods(n, rng):
    x, anchors = rng.floats(n, low=-6, high=6), rng.floats(n)
    rest = float(rng.gen.uniform(-1, 1))
    spring = Spring(rest, tack.array(anchors))
    f = tack.zeros(n)
    apply(spring, tack.array(x), f)
    np.testing.assert_allclose(f.numpy(), spring_ref(x, anchors, rest, 2.0, 1), **F32,
                               err_msg=f"seed={rng.seed} rest={rest}")


@tack.kernel
def apply_twice(spring, x, f):
    for i in range(len(x)):
        f[i] = spring.force(x[i], i) + spring.rest * spring.k


def test_changes_between_calls_recompile_only_for_constants(rng):
    n = 9
    x, anchors = rng.floats(n, low=-6, high=6), rng.floats(n)
    xa, f = tack.array(x), tack.zeros(n)
    spring = Spring(0.25, tack.array(anchors))
    msg = f"seed={rng.seed}"

    def check(rest, k, offset=1):
        apply_twice(spring, xa, f)
        expected = spring_ref(x, anchors, rest, k, offset) + np.float32(rest) * np.float32(k)
        np.testing.assert_allclose(f.numpy(), expected, **F32, err_msg=f"{msg} rest={rest} k={k}")
        # no public count of compiled variants: the docs promise which changes compile
        return len(apply_twice._variants)

    first = check(0.25, 2.0)
    assert check(0.25, 2.0) == first
    spring.rest = -0.75                          # run-time scalar: same variant
    assert check(-0.75, 2.0) == first
    spring.k = 3.0                               # shadows the class constant: a new variant
    assert check(-0.75, 3.0) == first + 1
    spring.k = 2.0                               # the class's value again: compiled before
    assert check(-0.75, 2.0) == first + 1
    del spring.k                                 # the class constant itself
    assert check(-0.75, 2.0) == first + 1
    spring.anchors = tack.array(rng.floats(n))   # a new array of the same dtype and rank
    anchors = spring.anchors.numpy()
    assert check(-0.75, 2.0) == first + 1
    spring.offset = 4                            # an int constant shadowed
    assert check(-0.75, 2.0, 4) == first + 2


def test_a_class_constant_is_a_literal(rng):
    n = 5
    x, anchors = rng.floats(n, low=-6, high=6), rng.floats(n)
    spring = Spring(0.5, tack.array(anchors))
    spring.k = 1.5
    source = tack.inspect(apply, spring, tack.array(x), tack.zeros(n), mode="ir")
    assert "1.5" in source, source
    f = tack.zeros(n)
    apply(spring, tack.array(x), f)
    np.testing.assert_allclose(f.numpy(), spring_ref(x, anchors, 0.5, 1.5, 1), **F32,
                               err_msg=f"seed={rng.seed}")


def test_every_change_between_warm_calls_is_seen(rng):
    """A warm call reuses the first call's reading of the object only while the
    class, the attribute kinds and the constants are what they were: each
    change below is seen by the next call."""
    n = 6
    x, anchors = rng.floats(n, low=-6, high=6), rng.floats(n)
    xa, f = tack.array(x), tack.zeros(n)
    spring = Spring(0.25, tack.array(anchors))

    def check(rest, k, offset=1, obj=spring):
        apply(obj, xa, f)
        np.testing.assert_allclose(f.numpy(), spring_ref(x, anchors, rest, k, offset),
                                   **F32, err_msg=f"seed={rng.seed} rest={rest} k={k}")

    check(0.25, 2.0)
    check(0.25, 2.0)
    Spring.k = 3.5   # the class constant itself
    try:
        check(0.25, 3.5)
    finally:
        Spring.k = 2.0
    check(0.25, 2.0)
    for rest in (1, np.float32(-0.5), True, np.int16(2), 0.75):   # a scalar's type
        spring.rest = rest
        check(float(rest), 2.0)
    spring.offset = np.int64(3)   # a constant shadowed by a NumPy number
    check(0.75, 2.0, 3)
    del spring.offset

    class Stiff(Spring):   # a subclass: another class, its own constants
        k, offset = 0.5, 1
    stiff = tack.device_class(Stiff)(0.75, spring.anchors)
    check(0.75, 0.5, obj=stiff)
    check(0.75, 2.0)
    spring.anchors = 1.0   # an array attribute that is no longer an array
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'apply': parameter 'spring.anchors' is used as an array, but the "
            "argument is a f32 scalar")):
        apply(spring, xa, f)


# -- two classes named alike; garbage collection ---------------------------------------------

def make_scaler(factor):
    @tack.device_class
    class Scaler:
        scale = factor

        @tack.func
        def apply(self, x):
            return x * self.scale

    return Scaler


def make_shifter():
    @tack.device_class
    class Scaler:               # the same name, another class
        def __init__(self):
            self.scale = 10.0

        @tack.func
        def apply(self, x):
            return x + self.scale

    return Scaler


@tack.kernel
def use_scaler(s, x, out):
    for i in range(len(x)):
        out[i] = s.apply(x[i])


def test_two_classes_with_one_name_do_not_share_variants(rng):
    n = 7
    x = rng.floats(n)
    xa, out = tack.array(x), tack.zeros(n)
    use_scaler(make_scaler(3.0)(), xa, out)
    np.testing.assert_allclose(out.numpy(), x * 3, **F32, err_msg=f"seed={rng.seed}")
    use_scaler(make_shifter()(), xa, out)
    np.testing.assert_allclose(out.numpy(), x + 10, **F32, err_msg=f"seed={rng.seed}")
    use_scaler(make_scaler(-2.0)(), xa, out)
    np.testing.assert_allclose(out.numpy(), x * -2, **F32, err_msg=f"seed={rng.seed}")


@tack.kernel
def use_collected(s, x, out):
    for i in range(len(x)):
        out[i] = s.apply(x[i])


def test_a_collected_class_drops_its_variants(rng):
    x = rng.floats(4)
    out = tack.zeros(4)
    cls = make_scaler(5.0)
    use_collected(cls(), tack.array(x), out)
    np.testing.assert_allclose(out.numpy(), x * 5, **F32, err_msg=f"seed={rng.seed}")
    # internal tables: there is no public view of compiled variants
    assert len(use_collected._variants) == 1
    assert len(use_collected._templates) == 1
    del cls
    gc.collect()
    assert len(use_collected._variants) == 0
    assert len(use_collected._templates) == 0
    use_collected(make_shifter()(), tack.array(x), out)
    np.testing.assert_allclose(out.numpy(), x + 10, **F32, err_msg=f"seed={rng.seed}")


def make_multiplier(factor):
    """A class per call, alike in everything but its method's body."""
    if factor == 2.0:
        @tack.device_class
        class Times:
            @tack.func
            def apply(self, x):
                return x * 2.0
    else:
        @tack.device_class
        class Times:
            @tack.func
            def apply(self, x):
                return x * 3.0
    return Times


def test_a_new_class_at_a_collected_class_s_address_gets_its_own_code(rng, monkeypatch):
    """Compiled code is keyed by a number each class gets once, not by its
    ``id``, which a new class at a collected one's address shares: with the
    finalizer that frees a collected class's code kept from running (as a
    finalizer raising while another thread adds to the tables did), a new
    class still never runs another's code."""
    import tack.runtime.expanding as expanding
    monkeypatch.setattr(expanding, "_drop", lambda *args: None)
    x = rng.floats(5)
    xa, out = tack.array(x), tack.zeros(5)
    ids = set()
    for k in range(40):
        factor = 2.0 if k % 2 else 3.0
        cls = make_multiplier(factor)
        ids.add(id(cls))
        use_collected(cls(), xa, out)
        np.testing.assert_allclose(out.numpy(), x * factor, **F32,
                                   err_msg=f"class {k} seed={rng.seed}")
        del cls
        gc.collect()
    assert len(ids) < 40   # addresses were reused, or the test proves nothing


# -- vectors through a device class ------------------------------------------------------------

@tack.device_class
class Frame:
    def __init__(self, origin, axes):
        self.origin = origin         # a vec3 array
        self.axes = axes             # a mat33 array

    @tack.func
    def to_local(self, p, i):
        return self.axes[i] @ (p - self.origin[i])


@tack.kernel
def use_frame(frame, p, out):
    for i in range(len(p)):
        out[i] = frame.to_local(p[i], i)


@pytest.mark.parametrize("n", [0, 1, 7])
def test_vector_arrays_and_values_in_a_device_class(n, rng):
    p = rng.gen.uniform(-4, 4, (n, 3)).astype(np.float32)
    origin = rng.gen.uniform(-4, 4, (n, 3)).astype(np.float32)
    axes = rng.gen.uniform(-1, 1, (n, 3, 3)).astype(np.float32)
    frame = Frame(tack.array(origin, dtype=tack.vec3()), tack.array(axes, dtype=tack.mat33()))
    out = tack.zeros(n, tack.vec3())
    use_frame(frame, tack.array(p, dtype=tack.vec3()), out)
    np.testing.assert_allclose(out.numpy(), np.einsum("nij,nj->ni", axes, p - origin),
                               rtol=1e-5, atol=1e-4, err_msg=f"seed={rng.seed}")


# -- errors: ValueError at the first call, before anything runs ------------------------------

@tack.kernel
def e_plain_method(spring, x, f):
    for i in range(len(x)):
        f[i] = spring.plain(x[i])


@tack.kernel
def e_method_value(spring, x, f):
    for i in range(len(x)):
        m = spring.force
        f[i] = x[i]


@tack.kernel
def e_private(spring, x, f):
    for i in range(len(x)):
        f[i] = spring._hidden


@tack.kernel
def e_missing(spring, x, f):
    for i in range(len(x)):
        f[i] = spring.nothing


@tack.kernel
def e_string(spring, x, f):
    for i in range(len(x)):
        f[i] = spring.label


@tack.kernel
def e_vector_value(spring, x, f):
    for i in range(len(x)):
        f[i] = spring.gravity[1]


@tack.kernel
def e_numpy_data(spring, x, f):
    for i in range(len(x)):
        f[i] = spring.weights[i]


ERRORS = [
    (e_plain_method, "Kernel 'e_plain_method': 'spring.plain()' is not a @tack.func method of "
                     "device class 'Spring' at line 4, column 16"),
    (e_method_value, "Kernel 'e_method_value': method 'spring.force' of device class 'Spring' "
                     "used as a value (call it) at line 4, column 13"),
    (e_private, "Kernel 'e_private': 'spring._hidden': private attributes of device class "
                "'Spring' are not visible in kernels at line 4, column 16"),
    (e_missing, "Kernel 'e_missing': 'spring.nothing' is not a number or array attribute of "
                "this device class 'Spring' instance at line 4, column 16"),
    (e_string, "Kernel 'e_string': 'spring.label' of device class 'Spring' is a str; a device "
               "class's attributes are numbers and tack.Arrays (pass a vector or matrix value "
               "as a kernel argument, or keep its components as numbers) at line 4, "
               "column 16"),
    (e_vector_value, "Kernel 'e_vector_value': 'spring.gravity' of device class 'Spring' is "
                     "a tuple; a device class's attributes are numbers and tack.Arrays (pass "
                     "a vector or matrix value as a kernel argument, or keep its components "
                     "as numbers) at line 4, column 16"),
    (e_numpy_data, "Kernel 'e_numpy_data': 'spring.weights' of device class 'Spring' is a "
                   "NumPy array; a device class's attributes are numbers and tack.Arrays "
                   "(wrap an array of data with tack.asarray(...); pass a vector or matrix "
                   "value as a kernel argument, or keep its components as numbers) at line "
                   "4, column 16"),
]


@pytest.mark.parametrize("kernel, message", ERRORS, ids=[e[0].name for e in ERRORS])
def test_errors_are_value_errors_before_anything_runs(kernel, message, rng):
    x = rng.floats(5)
    f = tack.full(5, 7.0)
    anchors = tack.array(rng.floats(5))
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        kernel(Spring(0.5, anchors), tack.array(x), f)
    np.testing.assert_array_equal(f.numpy(), np.full(5, 7.0, np.float32))


@tack.kernel
def e_set_scalar(spring, x, f):
    for i in range(len(x)):
        spring.rest = 100.0
        f[i] = spring.force(x[i], i)


@tack.kernel
def e_add_constant(spring, x, f):
    for i in range(len(x)):
        spring.k += 1.0
        f[i] = spring.force(x[i], i)


@tack.func
def through(s, x, i):
    return s.force(x, i)


@tack.kernel
def e_passed_to_a_function(spring, x, f):
    for i in range(len(x)):
        f[i] = through(spring, x[i], i)


@tack.device_class
class Counter:
    def __init__(self, s):
        self.s = s

    @tack.func
    def bump(self):
        self.s += 1.0
        return self.s


@tack.kernel
def e_method_sets(c, f):
    for i in range(len(f)):
        f[i] = c.bump()


def test_an_error_in_a_method_names_the_method_and_its_line():
    # it gave the method's line as the kernel's
    with pytest.raises(tack.UnsupportedSyntaxError, match=re.escape(
            "unsupported assignment to 'self.s': a kernel reads a device-class object's "
            "attributes, it does not set them (store into an array attribute's "
            "elements, self.a[i] = ...) in method 'bump' at line 3, column 5")):
        e_method_sets(Counter(1.0), tack.zeros(2))


def test_passing_an_instance_to_a_device_function_is_refused(rng):
    f = tack.full(5, 7.0)
    message = ("Kernel 'e_passed_to_a_function': the device-class object 'spring' is "
               "passed to a function, which is not supported: pass its attributes, or "
               "call its methods (spring.m(...)) at line 4, column 24")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        e_passed_to_a_function(Spring(0.5, tack.array(rng.floats(5))),
                               tack.array(rng.floats(5)), f)
    np.testing.assert_array_equal(f.numpy(), np.full(5, 7.0, np.float32))


@pytest.mark.parametrize("kernel, attr", [(e_set_scalar, "rest"), (e_add_constant, "k")])
def test_assigning_an_attribute_is_refused(kernel, attr, rng):
    # the instance's number became a private copy without a word; the class's
    # constant gave "unsupported assignment to Constant"
    f = tack.full(5, 7.0)
    with pytest.raises(tack.UnsupportedSyntaxError, match=re.escape(
            f"Kernel '{kernel.name}': unsupported assignment to 'spring.{attr}': a kernel "
            f"reads a device-class object's attributes, it does not set them (store into "
            f"an array attribute's elements, spring.a[i] = ...) at line 4, column 9")):
        kernel(Spring(0.5, tack.array(rng.floats(5))), tack.array(rng.floats(5)), f)
    np.testing.assert_array_equal(f.numpy(), np.full(5, 7.0, np.float32))


def test_an_attribute_that_becomes_unusable_is_an_error_at_that_call(rng):
    n = 5
    x = rng.floats(n)
    f = tack.zeros(n)
    spring = Spring(0.5, tack.array(rng.floats(n)))
    apply(spring, tack.array(x), f)
    before = f.numpy().copy()
    spring.rest = "far"
    message = ("Kernel 'apply': 'spring.rest' of device class 'Spring' is a str; a device "
               "class's attributes are numbers and tack.Arrays (pass a vector or matrix "
               "value as a kernel argument, or keep its components as numbers) in method "
               "'stretch' at line 3, column 34")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        apply(spring, tack.array(x + 1), f)
    np.testing.assert_array_equal(f.numpy(), before, err_msg=f"seed={rng.seed}")


@tack.kernel
def apply_past_end(spring, x, f):
    for i in range(len(x)):
        f[i] = spring.force(x[i], i + 1)


def test_debug_mode_checks_a_device_class_array(rng):
    n = 6
    x = tack.array(rng.floats(n))
    spring = Spring(0.5, tack.array(rng.floats(n)))
    f = tack.zeros(n)
    tack.set_debug(True)
    try:
        apply(spring, x, f)                       # in bounds: runs
        with pytest.raises(IndexError, match=re.escape("index 6 is out of bounds (extent 6)")):
            apply_past_end(spring, x, f)
    finally:
        tack.set_debug(False)


@tack.device_class
class Weights:
    def __init__(self, scale, bias, table, lookup):
        self.scale = scale           # run-time scalars: after the arrays, by name
        self.bias = bias
        self.table = table           # arrays: first, by name
        self.lookup = lookup


@tack.kernel
def two_instances(first, x, second, out):
    for i in range(len(x)):
        out[i] = (first.table[i] * first.scale + first.bias + second.lookup[i]
                  + second.table[i] * second.scale)


def test_expansion_order_follows_stage_two(rng):
    # Spec 000 stage 2: instances removed; then, from the last instance down,
    # its arrays and then its scalars, each sorted by attribute name (only the
    # attributes the kernel reads: first.lookup and second.bias are not).
    n = 5
    x = tack.array(rng.floats(n))
    out = tack.zeros(n)
    first = Weights(2.0, 0.5, tack.array(rng.floats(n)), tack.array(rng.floats(n)))
    second = Weights(3.0, 0.25, tack.array(rng.floats(n)), tack.array(rng.floats(n)))
    header = tack.inspect(two_instances, first, x, second, out, mode="ir").splitlines()[0]
    params = [p.split(":")[0].strip() for p in header.split("(", 1)[1].split(")")[0].split(",")]
    assert params[:2] == ["x", "out"], header
    spelled = [p.strip("_").rsplit("_", 1)[0] for p in params[2:]]
    assert spelled == ["second_lookup", "second_table", "second_scale",
                       "first_table", "first_bias", "first_scale"], header
    two_instances(first, x, second, out)
    expected = (first.table.numpy() * np.float32(2.0) + np.float32(0.5)
                + second.lookup.numpy() + second.table.numpy() * np.float32(3.0))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6, err_msg=f"seed={rng.seed}")


@tack.kernel
def apply_two(x, spring, f, other):
    for i in range(len(x)):
        f[i] = spring.force(x[i], i) + other.rest


def test_a_wrong_argument_count_is_a_type_error_every_time():
    x, f = tack.zeros(3), tack.zeros(3)
    spring, other = Spring(0.5, tack.zeros(3)), Spring(0.0, tack.zeros(3))
    # too few: the count of the kernel as written; too many: counted after
    # expanding the instances (each becomes its attributes)
    calls = [((x, spring, f), "expects 4 arguments, got 3"),
             ((x, f), "expects 4 arguments, got 2"),
             ((x, spring, f, other, 5), "expects 5 arguments, got 6")]
    for _ in range(2):   # the same errors once the kernel has run
        for args, message in calls:
            with pytest.raises(TypeError, match=re.escape(f"Kernel 'apply_two' {message}")):
                apply_two(*args)
        apply_two(x, spring, f, other)
    with pytest.raises(TypeError, match=re.escape("Kernel 'apply' expects 3 arguments, got 2")):
        apply(x, f)


@tack.device_class
class Ring:
    def __init__(self, values):
        self.values = values   # an instance array whose length the method reads

    @tack.func
    def after(self, i):
        return self.values[(i + 1) % len(self.values)]


@tack.kernel
def ring_after(ring, out):
    for i in range(len(out)):
        out[i] = ring.after(i)


def test_an_attribute_length_that_keeps_changing_stops_compiling(rng):
    """The length of an instance array read in a method is baked in for the
    first lengths and then read at run time: a new length compiles nothing."""
    counts = []
    for n in [5, 8, 13, 21, 34, 1, 2, 3, 55]:
        values = rng.floats(n)
        out = tack.zeros(n)
        ring_after(Ring(tack.array(values)), out)
        np.testing.assert_array_equal(out.numpy(), np.roll(values, -1),
                                      err_msg=f"n={n} seed={rng.seed}")
        counts.append(len(ring_after._variants))
    assert counts[4:] == [5] * 5, counts


@tack.device_class
class Doubler:
    @tack.func
    def apply(self, x):
        return x * 2.0


def test_a_class_made_from_another_s_namespace_gets_its_own_code(rng):
    """``type(name, bases, dict(C.__dict__))`` carries C's entries, its serial
    number's among them: the copy still gets a number of its own."""
    x = rng.floats(4)
    out = tack.zeros(4)
    use_collected(Doubler(), tack.array(x), out)
    np.testing.assert_allclose(out.numpy(), x * 2, **F32, err_msg=f"seed={rng.seed}")

    @tack.func
    def apply(self, x):
        return x * 200.0

    namespace = {k: v for k, v in Doubler.__dict__.items()
                 if k not in ("__dict__", "__weakref__")}
    assert "_tack_serial" in namespace
    copy = type("Copy", Doubler.__bases__, {**namespace, "apply": apply})
    use_collected(copy(), tack.array(x), out)
    np.testing.assert_allclose(out.numpy(), x * 200, **F32, err_msg=f"seed={rng.seed}")
