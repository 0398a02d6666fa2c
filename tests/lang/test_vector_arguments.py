"""Vector and matrix values as kernel arguments (docs/language.md, "Vectors and
matrices"): a NumPy array of a vector's or matrix's shape, or a tuple or list
of numbers, is a value in the kernel. Checked against NumPy on fresh random
inputs at sizes 0, 1 and odd ones, element types kept (an f32 vector beside
f64 arrays stays f32), and the refusals.
"""

import collections
import enum
import re

import numpy as np
import pytest

import tack
from vector_values import F32, F64, SIZES, varr, vecs


@tack.kernel
def fall(pos, vel, g, dt):
    for i in range(len(pos)):
        vel[i] = vel[i] + g * dt
        pos[i] = pos[i] + vel[i] * dt


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("how", ["tack.vec3", "numpy", "tuple", "list"])
def test_a_vector_argument_acts_like_a_vector_local(rng, n, how):
    p, v = vecs(rng, n, (3,)), vecs(rng, n, (3,))
    g = rng.gen.uniform(-10, 10, 3).astype(np.float32)
    given = {"tack.vec3": tack.vec3(*g.tolist()), "numpy": g,
             "tuple": tuple(g.tolist()), "list": g.tolist()}[how]
    pos, vel = varr(p, tack.vec3()), varr(v, tack.vec3())
    fall(pos, vel, given, 0.25)
    want_v = v + g * np.float32(0.25)
    np.testing.assert_allclose(vel.numpy(), want_v, **F32, err_msg=repr(rng))
    np.testing.assert_allclose(pos.numpy(), p + want_v * np.float32(0.25), **F32,
                               err_msg=repr(rng))


@tack.kernel
def transform(pos, m, shift):
    for i in range(len(pos)):
        pos[i] = m @ pos[i] + shift


@pytest.mark.parametrize("n", SIZES)
def test_a_matrix_argument_from_numpy_or_nested_tuples(rng, n):
    p = vecs(rng, n, (3,), "float64")
    m = rng.gen.uniform(-2, 2, (3, 3))
    shift = rng.gen.uniform(-2, 2, 3)
    for given in (m, tuple(map(tuple, m.tolist())), m.tolist()):
        pos = varr(p, tack.vec3(dtype=tack.f64))
        transform(pos, given, shift)
        np.testing.assert_allclose(pos.numpy(), p @ m.T + shift, **F64, err_msg=repr(rng))


@tack.kernel
def components(out, g):
    for i in range(len(out)):
        out[i] = g.x + g[1] * 10.0 + g.z * 100.0


def test_the_element_type_is_the_arrays_dtype_beside_arrays_of_another(rng):
    """An f64 vector beside an f32 array keeps f64 (a Python float would take
    the kernel's default float, f32 here)."""
    g = np.array([1.0 + 2.0 ** -40, 2.0, 3.0])
    out = tack.zeros(3, tack.f64)
    components(out, g)
    np.testing.assert_array_equal(out.numpy(), np.full(3, g[0] + 20.0 + 300.0))
    ir = tack.inspect(components, out, g, mode="ir")
    assert ": f64" in ir and "f32" not in ir
    small = tack.zeros(3, tack.f32)
    components(small, g.astype(np.float32))
    assert "f64" not in tack.inspect(components, small, g.astype(np.float32), mode="ir")


@tack.kernel
def int_weights(out, w):
    for i in range(len(out)):
        out[i] = w[0] * i + w[1]


def test_integer_vectors_and_tuples_of_ints(rng):
    out = tack.zeros(5, tack.i64)
    int_weights(out, (3, -7))
    np.testing.assert_array_equal(out.numpy(), 3 * np.arange(5) - 7)
    int_weights(out, np.array([2**40, 1], np.int64))
    np.testing.assert_array_equal(out.numpy(), 2**40 * np.arange(5) + 1)


@tack.kernel
def int_matrix(out, m):
    for i in range(len(out)):
        out[i] = m[0, 0] + m[1, 0] * i


@pytest.mark.parametrize("kernel, good, bad", [
    (int_weights, (2**63, 1), (2**63, -1)),
    (int_weights, (2**64 - 1, 2**40), (2**64 - 1, -2**40)),
    (int_matrix, [[2**63, 1], [2, 0]], [[2**63, 1], [-1, 0]])])
def test_negative_components_beside_ones_past_i64_are_refused_on_warm_calls_too(
        kernel, good, bad):
    # both key as one vector of u64 and small ints; the negative one must not
    # reach the u64 runner (its packing failed with struct.error, or pyopencl's
    # std::bad_cast)
    out = tack.zeros(3, tack.u64)
    message = "do not fit one integer type (negative ones beside ones past " \
              "9223372036854775807)"
    for first in (bad, good, bad):
        if first is bad:
            with pytest.raises(TypeError, match=re.escape(message)):
                kernel(out, first)
        else:
            kernel(out, first)
    assert out.numpy()[0] == (good[1] if kernel is int_weights else good[0][0])


@tack.kernel
def signed_weights(out, w):
    for i in range(len(out)):
        out[i] = w[0] * i + w[1]


def test_integer_values_of_any_signs_share_one_signature():
    # each sign pattern was a signature of its own (slow path per new pattern,
    # a runner each): only a component past i64 makes the signs matter
    out = tack.zeros(3, tack.i64)
    for w in [(1, -2), (-1, 2), (-3, -4), (5, 6)] * 2:
        signed_weights(out, w)
        assert out.numpy().tolist() == [w[1], w[0] + w[1], 2 * w[0] + w[1]]
    assert len(signed_weights._plain.table) == 1   # no public count of signatures


@tack.kernel
def matrix_sum(out, m):
    for i in range(len(out)):
        out[i] = m[0][0] + m[0][1] + m[1][0] + m[1][1]


@tack.kernel
def pair_sum(out, w):
    for i in range(len(out)):
        out[i] = w[0] + w[1]


Row = collections.namedtuple("Row", "a b")


class Size(enum.IntEnum):
    SMALL = 1
    BIG = 2**40
    NEGATIVE = -1


def test_a_values_key_reads_every_component_it_takes():
    # a namedtuple row, an IntEnum member and a bool are taken (or refused) by
    # what they hold: keyed by their class only, a warm call reused a runner
    # made for other numbers (a wrong sum, or struct.error), or ran a bool
    out = tack.zeros(1, tack.f64)
    for m, want in (((Row(1, 2), (3, 4)), 10.0), ((Row(1.5, 2.25), (3, 4)), 10.75),
                    ((Row(2**40, 2), (3, 4)), 2.0**40 + 9), ([[1, 2], Row(3, 4.5)], 10.5)):
        matrix_sum(out, m)
        assert out.numpy()[0] == want, m
    for w, want in (((1, 2), 3.0), ((Size.SMALL, 2), 3.0), ((Size.BIG, 2), 2.0**40 + 2)):
        pair_sum(out, w)
        assert out.numpy()[0] == want
    with pytest.raises(TypeError, match="the kernel uses it as an array"):
        pair_sum(out, (True, 2))          # after (1, 2): still refused
    pair_sum(tack.zeros(1, tack.u64), (Size.SMALL, 2**64 - 2))
    with pytest.raises(TypeError, match="do not fit one integer type"):
        pair_sum(tack.zeros(1, tack.u64), (Size.NEGATIVE, 2**64 - 1))


@tack.kernel
def with_copy(out, g):
    v = g
    for i in range(len(out)):
        v.x = v.x + 1.0
        out[i] = v.x + g.x


@tack.kernel
def returns_twice(out, g) -> tack.vec3:
    for i in range(len(out)):
        out[i] = g.y
    return g * 2.0


def test_a_copy_of_a_value_may_change_and_a_kernel_may_return_one(rng):
    g = rng.gen.uniform(-1, 1, 3).astype(np.float32)
    out = tack.zeros(4)
    with_copy(out, g)
    np.testing.assert_allclose(out.numpy(), np.full(4, (g[0] + 1) + g[0]), **F32)
    got = returns_twice(out, g)
    np.testing.assert_allclose(got, g * 2, **F32)
    np.testing.assert_allclose(out.numpy(), np.full(4, g[1]), **F32)


def test_warm_calls_with_new_values_of_one_type_compile_nothing(rng):
    p, v = vecs(rng, 9, (3,)), vecs(rng, 9, (3,))
    pos, vel = varr(p, tack.vec3()), varr(v, tack.vec3())
    fall(pos, vel, np.zeros(3, np.float32), 0.0)
    variants = len(fall._variants)   # no public count of compiled variants
    for step in range(5):
        g = rng.gen.uniform(-1, 1, 3).astype(np.float32)
        before = vel.numpy()
        fall(pos, vel, g, 1.0)
        np.testing.assert_allclose(vel.numpy(), before + g, **F32, err_msg=repr(rng))
    assert len(fall._variants) == variants


@tack.kernel
def writes_value(out, g):
    for i in range(len(out)):
        g.x = 1.0
        out[i] = g.x


@tack.kernel
def writes_numpy_array(out, w):
    for i in range(len(out)):
        w[i] = 1.0


@tack.func
def put(w, i, x):
    w[i] = x


@tack.func
def put_first(w, x):
    w[0] = x


@tack.func
def count_into(w, i):
    tack.atomic_add(w, i, 1.0)


@tack.kernel
def writes_through_a_function(out, w):
    for i in range(len(out)):
        put(w, i, 1.0)


@tack.kernel
def writes_first_through_a_function(out, w):
    for i in range(len(out)):
        put_first(w, 5.0)
        out[i] = w[0]


@tack.kernel
def counts_through_a_function(out, w):
    for i in range(len(out)):
        count_into(w, i)


@tack.kernel
def reads_its_length(out, w):
    for i in range(len(w)):
        out[i] = w[i]


@tack.kernel
def looks_up(out, w):
    for i in range(len(out)):
        out[i] = w[i % 3]


@tack.kernel
def writes_a_row_component(out, w):
    for i in range(len(out)):
        w[i].y = 1.0


def test_writing_a_component_of_a_value_is_refused():
    """The kernel has a copy: a write would never reach the caller's array."""
    out = tack.zeros(3)
    with pytest.raises(TypeError, match=re.escape(
            "assignment to a component of parameter 'g', a vec3 value: the kernel "
            "has a copy, and the caller's array would not change")):
        writes_value(out, (1.0, 2.0, 3.0))
    assert out.numpy().tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("kernel", [writes_numpy_array, writes_through_a_function,
                                    writes_first_through_a_function,
                                    counts_through_a_function, reads_its_length,
                                    looks_up])
def test_a_numpy_array_a_kernel_uses_as_only_an_array_can_be_must_be_wrapped(kernel):
    """A parameter the kernel, or a device function it passes it to, writes
    as an array, updates atomically or takes the length of is an array: three
    NumPy elements there are the Numba habit, not a vector."""
    with pytest.raises(TypeError, match=re.escape(
            f"Kernel '{kernel.name}': Unsupported argument type for parameter 'w': "
            f"numpy.ndarray; make it a tack.Array first: tack.asarray(a)")):
        kernel(tack.zeros(3), np.zeros(3, np.float32))


def test_a_numpy_matrix_whose_rows_a_kernel_writes_is_no_value():
    """``w[i].y = s`` writes an array of vectors: refused (as it was before
    values), never run on a copy whose writes are lost."""
    w = np.zeros((3, 3), np.float32)
    with pytest.raises(tack.UnsupportedSyntaxError, match=re.escape(
            "Kernel 'writes_a_row_component': unsupported component assignment into a "
            "scalar array")):
        writes_a_row_component(tack.zeros(3), w)
    assert not w.any()


@tack.kernel
def doubled(out, g):
    for i in range(len(out)):
        out[i] = g * 2.0


@pytest.mark.parametrize("arg", [np.zeros(5), np.zeros((3, 2)), (1.0, 2.0, 3.0, 4.0, 5.0),
                                 (1.0, "x", 2.0), np.array([True, False, True])])
def test_other_shapes_and_types_are_not_values(arg):
    """Only a vector's or matrix's shape of numbers is a value; anything else
    is refused as before, with the hint to make an array."""
    out = tack.zeros(3)
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'doubled': Unsupported argument type for parameter 'g'")):
        doubled(out, arg)


@pytest.mark.parametrize("element", [tack.vec3(), tack.mat33(dtype=tack.f64)])
@pytest.mark.parametrize("kernel, column", [("doubled", 18), ("component_x", 18)])
def test_an_array_of_vectors_for_a_value_is_an_argument_error(element, kernel, column):
    # Warp keeps a constant in a one-element wp.array; here the value is passed
    out = tack.zeros(3)
    g = tack.zeros(1, dtype=element)
    with pytest.raises(TypeError, match=re.escape(
            f"Kernel '{kernel}': parameter 'g' is used as a value, but the argument is an "
            f"array of {element} elements (pass the value itself: tack.{element.name}(...), "
            f"a tuple, or a NumPy array of its shape) at line 4, column {column}")):
        globals()[kernel](out, g)
    assert not out.numpy().any()


@tack.kernel
def component_x(out, g):
    for i in range(len(out)):
        out[i] = g.x


@pytest.mark.parametrize("arg", [np.zeros(5), 2.0, (1.0, "x", 2.0),
                                 np.array([True, False, True])])
def test_a_component_of_something_that_is_no_value_is_a_type_error(arg):
    out = tack.full(3, 7.0)
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'component_x': Unsupported argument type for parameter 'g', which "
            "the kernel uses as a vector ('g.x'): it was passed a number, or something "
            "that is no vector value; pass a NumPy array, tuple or list of 2 to 4 "
            "numbers at line")):
        component_x(out, arg)
    assert out.numpy().tolist() == [7.0, 7.0, 7.0]


@tack.kernel
def local_lengths(out):
    for i in range(len(out)):
        v = tack.vec4(1.0, 2.0, 3.0, 4.0)
        m = tack.mat22(1.0, 2.0, 3.0, 4.0)
        out[i] = len(v) * 10 + len(m)


def test_len_of_a_vector_or_matrix_local_is_its_component_or_row_count():
    out = tack.zeros(2, tack.i64)
    local_lengths(out)
    assert out.numpy().tolist() == [42, 42]
