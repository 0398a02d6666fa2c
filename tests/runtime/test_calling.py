"""Spec 003, Calling a kernel: argument kinds, scalar typing, rejected calls.

Scalar types are observed through what a kernel computes with them: ``v * 2``
wraps at 32 bits for an i32 scalar, and a float scalar stored into an f64
array keeps or loses binary64 precision.
"""

from __future__ import annotations

import enum
import re
import warnings
import threading

import numpy as np
import pytest

import tack


@tack.kernel
def store(out, value):
    for i in range(len(out)):
        out[i] = value


@tack.kernel
def store_twice(out, value):
    for i in range(len(out)):
        out[i] = value * 2


@tack.kernel
def scaled(ref, out, x):
    for i in range(len(out)):
        out[i] = x * 1e9


@tack.kernel
def total(a, acc) -> float:
    for i in range(len(a)):
        tack.atomic_add(acc, 0, a[i])
    return acc[0]


@tack.kernel
def count(a, acc) -> int:
    for i in range(len(a)):
        tack.atomic_add(acc, 0, 1)
    return acc[0]


# -- int, bool and NumPy integers: i32 if it fits, else i64, else u64 ---------------------------

class _Level(enum.IntEnum):
    HIGH = 2 ** 31


@pytest.mark.parametrize("value,expected", [
    (2 ** 30, -(2 ** 31)),                  # i32: the doubling wraps
    (-(2 ** 31), 0),                        # i32
    (2 ** 31 - 1, -2),                      # i32
    (2 ** 31, 2 ** 32),                     # i64
    (-(2 ** 31) - 1, -(2 ** 32) - 2),       # i64
    (np.int64(2 ** 30), -(2 ** 31)),        # NumPy integers go by value, not dtype
    (np.uint64(2 ** 40), 2 ** 41),
    (np.int8(-3), -6),
    (True, 2), (False, 0),                  # bool is an int
    (_Level.HIGH, 2 ** 32),                 # so is an IntEnum (i64 here)
])
def test_integer_scalars_take_the_smallest_fitting_type(value, expected):
    out = tack.zeros(3, tack.i64)
    store_twice(out, value)
    assert out.numpy().tolist() == [expected] * 3


def test_integers_past_i64_are_u64():
    out = tack.zeros(2, tack.u64)
    store(out, 2 ** 64 - 1)
    assert out[0] == 2 ** 64 - 1
    store_twice(out, 2 ** 63 + 5)
    assert out[1] == 10  # u64 arithmetic wraps modulo 2**64
    store(out, np.uint64(2 ** 63))
    assert out[0] == 2 ** 63


@pytest.mark.parametrize("value", [2 ** 64, -(2 ** 63) - 1, 10 ** 30])
def test_integers_outside_64_bits_raise_type_error(value):
    out = tack.zeros(2, tack.i64)
    with pytest.raises(TypeError, match=re.escape(
            f"Kernel 'store': integer {value} is outside the 64-bit range")):
        store(out, value)
    assert not out.numpy().any()


# -- float and NumPy floating: f64 with an f64 array, else f32 --------------------------------------

F32_THIRD = int(np.float32(1 / 3) * np.float32(1e9))   # 333333344
F64_THIRD = int(1 / 3 * 1e9)                               # 333333333


@pytest.mark.parametrize("ref,x,expected", [
    (tack.f32, 1 / 3, F32_THIRD),
    (tack.i32, 1 / 3, F32_THIRD),             # only integer arrays: f32
    (tack.f64, 1 / 3, F64_THIRD),
    (tack.f32, np.float64(1 / 3), F32_THIRD),  # NumPy float64 with f32 arrays: f32
    (tack.f64, np.float32(1 / 3), int(float(np.float32(1 / 3)) * 1e9)),
], ids=["f32", "i32", "f64", "np.float64-beside-f32", "np.float32-beside-f64"])
def test_float_scalars_are_f64_only_beside_an_f64_array(ref, x, expected):
    out = tack.zeros(1, tack.i64)
    scaled(tack.zeros(1, ref), out, x)
    assert out[0] == expected


# -- what a call returns -----------------------------------------------------------------------

def test_a_call_returns_none_or_the_annotated_return_value(rng):
    host = rng.gen.integers(-100, 100, 1001).astype(np.float64)
    assert store(tack.zeros(3), 1.0) is None
    value = total(tack.array(host), tack.zeros(1, tack.f64))
    assert type(value) is float and value == float(host.sum()), rng
    n = count(tack.array(host), tack.zeros(1, tack.i64))
    assert type(n) is int and n == 1001


# -- rejected calls -------------------------------------------------------------------------------

@pytest.mark.parametrize("value,name", [
    ("1", "str"), (None, "NoneType"), (1 + 2j, "complex"),
    ([1], "list; a vector or matrix value is a NumPy array of 2 to 4 numbers, or 2x2 "
          "to 4x4 of them, or a tuple or list of those shapes"),
    ((1,), "tuple; a vector or matrix value is a NumPy array of 2 to 4 numbers, or 2x2 "
           "to 4x4 of them, or a tuple or list of those shapes"),
    (np.zeros(5), "numpy.ndarray; the kernel uses it as a number, or as a vector or "
                  "matrix value, which is a NumPy array of 2 to 4 numbers, or 2x2 to 4x4 "
                  "of them, or a tuple or list of those shapes (this one has shape (5,) "
                  "and dtype float64)"),
    (np.zeros(()), "numpy.ndarray; the kernel uses it as a number: pass a.item()"),
    (np.bool_(True), "numpy.bool"),
    (np.complex64(1), "numpy.complex64"), (tack.f32, "tack.types.ScalarType"), ({}, "dict"),
    (object(), "object"),
])
def test_unsupported_argument_types_raise_type_error(value, name):
    out = tack.full(2, 7, tack.i32)
    with pytest.raises(TypeError, match=re.escape(
            f"Kernel 'store': Unsupported argument type for parameter 'value': {name}")
            + "$") as info:
        store(out, value)
    assert str(info.value).count("Kernel 'store'") == 1
    assert out.numpy().tolist() == [7, 7]


def test_a_numpy_array_for_an_array_parameter_says_how_to_wrap_it():
    with pytest.raises(TypeError, match=re.escape(
            "Kernel 'store': Unsupported argument type for parameter 'out': "
            "numpy.ndarray; make it a tack.Array first: tack.asarray(a) (a copy on the "
            "default device), or tack.from_dlpack(a) (no copy on the CPU)") + "$"):
        store(np.zeros(3, np.int32), 1)


@pytest.mark.parametrize("value, name", [([0, 0, 0], "list"), ((0, 0), "tuple")])
def test_a_list_for_an_array_parameter_says_how_to_make_an_array(value, name):
    with pytest.raises(TypeError, match=re.escape(
            f"Kernel 'store': Unsupported argument type for parameter 'out': {name}; the "
            f"kernel uses it as an array: make it a tack.Array first: tack.asarray(a)")
            + "$"):
        store(value, 1)


def test_keyword_arguments_are_rejected():
    out = tack.full(2, 7, tack.i32)
    with pytest.raises(RuntimeError, match=re.escape(
            "Kernel 'store' failed on CPUBackend: Keyword arguments not supported in "
            "kernels")) as info:
        store(out, value=1)
    assert isinstance(info.value.__cause__, NotImplementedError)
    with pytest.raises(RuntimeError, match=re.escape("Keyword arguments not supported")):
        store(out=out, value=1)
    assert out.numpy().tolist() == [7, 7]


@pytest.mark.parametrize("args", [(), ("out",), ("out", 1, 2)])
def test_a_wrong_argument_count_raises_type_error(args):
    out = tack.full(2, 7, tack.i32)
    args = tuple(out if a == "out" else a for a in args)
    with pytest.raises(TypeError, match=re.escape(
            f"Kernel 'store' expects 2 arguments, got {len(args)}")):
        store(*args)
    assert out.numpy().tolist() == [7, 7]


def test_rejections_also_after_the_signature_is_warm():
    out = tack.full(2, 7, tack.i32)
    store(out, 3)
    store(out, 3)
    with pytest.raises(TypeError, match=re.escape("Unsupported argument type")):
        store(out, "3")
    with pytest.raises(TypeError, match=re.escape("expects 2 arguments, got 1")):
        store(out)
    with pytest.raises(TypeError, match=re.escape("outside the 64-bit range")):
        store(out, 2 ** 64)
    assert out.numpy().tolist() == [3, 3]


@tack.kernel
def advect_rows(pos, dt):
    for i in range(pos.shape[0]):
        pos[i, 0] = pos[i, 0] + dt * pos[i, 1]   # pos.shape[1], the row length, is baked


def test_a_variant_serves_every_extent_it_does_not_bake(rng):
    """A particle count that changes every step compiles nothing new; another
    row length does, and each gets its own right answer."""
    variants = len(advect_rows._variants)
    for n, width in [(5, 2), (6, 2), (1, 2), (0, 2), (9, 2), (4, 3), (7, 3), (3, 2)]:
        host = rng.values(tack.f64, n * width).reshape(n, width)
        pos = tack.array(host)
        advect_rows(pos, 0.5)
        want = host.copy()
        want[:, 0] = host[:, 0] + 0.5 * host[:, 1]
        np.testing.assert_array_equal(pos.numpy(), want, err_msg=repr(rng))
    assert len(advect_rows._variants) == variants + 2   # rows of 2, rows of 3


@tack.kernel
def add_thirteen(out, a, b, c, d, e, f, g, h, i, j, k, m):
    for n in range(len(out)):
        out[n] = a[n] + b[n] + c[n] + d[n] + e[n] + f[n] + g[n] + h[n] + i[n] + j[n] + \
            k[n] + m[n]


def test_many_arrays_are_told_apart_by_their_sorted_ranges(rng):
    """Past a dozen arrays the overlap test sorts their byte ranges: an out
    that is also an input (or overlaps one) takes the aliased variant."""
    modes = lambda: {key[2][2] for key in add_thirteen._variants}  # noqa: E731
    inputs = [tack.array(rng.values(tack.f64, 8)) for _ in range(12)]
    want = sum(x.numpy() for x in inputs)
    out = tack.zeros(8, tack.f64)
    add_thirteen(out, *inputs)
    np.testing.assert_allclose(out.numpy(), want, err_msg=repr(rng))
    assert modes() == {1}                               # disjoint
    add_thirteen(inputs[5], *inputs)                    # out is an input: aliased
    np.testing.assert_allclose(inputs[5].numpy(), want, err_msg=repr(rng))
    assert 0 in modes()


class _Tagged(tack.Array):
    """An Array subclass (no public constructor makes one; __class__ can)."""
    __slots__ = ()


def test_arrays_of_a_subclass_are_checked_on_warm_calls_too():
    cpu = tack.device("cpu")
    out = tack.full(2, 7, tack.i32, device=cpu)
    out.__class__ = _Tagged
    store(out, 3)                                  # warm for a writable subclass array
    held = np.zeros(2, np.int32)
    read_only = tack.array_from_ptr(held, (2,), tack.i32, device=cpu)
    read_only.__class__ = _Tagged
    with pytest.raises(ValueError, match=re.escape(
            "parameter 'out' may be written, but its array is read-only")):
        store(read_only, 5)
    assert held.tolist() == [0, 0] and out.numpy().tolist() == [3, 3]


# -- concurrency ----------------------------------------------------------------------------------

def _on_four_threads(step, rounds: int) -> list:
    """``step(k, round_)`` for each round on each of four threads at once: the
    problems it returns (None for none) and the exceptions it raises."""
    errors = []

    def worker(k):
        try:
            for round_ in range(rounds):
                problem = step(k, round_)
                if problem is not None:
                    errors.append(problem)
        except Exception as exc:  # reported by the caller
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return errors


def test_concurrent_calls_use_their_own_arguments():
    outs = [tack.zeros(1000, tack.i64) for _ in range(4)]

    def step(k, round_):
        store(outs[k], k * 1000 + round_)
        if outs[k].min() != outs[k].max() or outs[k][0] != k * 1000 + round_:
            return (k, round_, outs[k][0])
        return None
    assert _on_four_threads(step, 50) == []
    assert [o[0] for o in outs] == [k * 1000 + 49 for k in range(4)]


@tack.kernel
def scaled_first(a, scale) -> float:
    for i in range(len(a)):
        a[i] = a[i] + 0.0
    return a[0] * scale


def test_concurrent_returns_are_each_their_own():
    """Each thread reads its own result element (made once per thread)."""
    arrays = [tack.full(3, float(k + 1), tack.f64) for k in range(4)]

    def step(k, round_):
        got = scaled_first(arrays[k], float(round_))
        return None if got == (k + 1) * round_ else (k, round_, got)
    assert _on_four_threads(step, 200) == []


# -- the return epilogue's own stores and atomics are checked too ------------------

@tack.func
def set_first(v):
    v[0] = 42.0
    return 1.0


@tack.kernel
def k_return_stores(a, b) -> float:
    for i in range(len(b)):
        b[i] = 1.0
    return set_first(a)


@tack.kernel
def k_return_atomic(a, b) -> int:
    for i in range(len(b)):
        b[i] = 1.0
    return tack.atomic_add(a, 0, 1)


@pytest.mark.parametrize("kernel, dtype", [(k_return_stores, np.float32),
                                           (k_return_atomic, np.int32)])
def test_a_read_only_array_the_return_writes_is_refused_before_anything_runs(kernel, dtype):
    host = np.zeros(4, dtype)
    read_only = tack.array_from_ptr(host, (4,), tack.f32 if dtype == np.float32 else tack.i32)
    b = tack.zeros(4)
    with pytest.raises(ValueError, match=f"Kernel '{kernel.__name__}': parameter 'a' may "
                                         "be written, but its array is read-only"):
        kernel(read_only, b)
    np.testing.assert_array_equal(host, 0)
    np.testing.assert_array_equal(b.numpy(), 0)   # the loop did not run either


def _misaligned_i32(raw: np.ndarray):
    """Four i32 elements two bytes past an 8-byte boundary inside ``raw``."""
    base = raw.ctypes.data
    return tack.array_from_ptr(base + (8 - base % 8) % 8 + 2, (4,), tack.i32,
                               writable=True)


MISALIGNED = "parameter 'a' is an atomic target, but its array is not aligned"


def test_a_misaligned_atomic_target_in_the_return_is_refused():
    raw = np.zeros(64, np.uint8)
    with pytest.raises(ValueError, match=MISALIGNED):
        k_return_atomic(_misaligned_i32(raw), tack.zeros(4))


@tack.kernel
def k_count_into(a, b):
    for i in range(len(b)):
        tack.atomic_add(a, 0, 1)


def test_inspect_refuses_read_only_and_misaligned_arrays_as_a_call_does():
    read_only = tack.array_from_ptr(np.zeros(4, np.int32), (4,), tack.i32)
    with pytest.raises(ValueError, match="parameter 'a' may be written, but its array is "
                                         "read-only"):
        tack.inspect(k_count_into, read_only, tack.zeros(4))
    raw = np.zeros(64, np.uint8)
    with pytest.raises(ValueError, match=MISALIGNED):
        tack.inspect(k_count_into, _misaligned_i32(raw), tack.zeros(4))


@tack.kernel
def k_return_bits(a) -> int:
    for i in range(len(a)):
        a[i] = 1.0
    return a[0] & 1


def test_inspect_refuses_what_the_return_epilogue_of_a_call_refuses():
    # The epilogue is a kernel of its own; inspect checked only the loop's.
    read_only = tack.array_from_ptr(np.zeros(4, np.int32), (4,), tack.i32)
    raw = np.zeros(64, np.uint8)
    cases = [((k_return_atomic, read_only, tack.zeros(4)), ValueError,
              "parameter 'a' may be written, but its array is read-only"),
             ((k_return_atomic, _misaligned_i32(raw), tack.zeros(4)), ValueError,
              MISALIGNED),
             ((k_return_atomic, tack.zeros(4, tack.i8), tack.zeros(4)), TypeError,
              "tack.atomic_add on 'a' of dtype i8 is not supported"),
             ((k_return_bits, tack.zeros(4)), TypeError, "bit operation on a float")]
    for (kernel, *args), error, message in cases:
        with pytest.raises(error, match=re.escape(message)):
            kernel(*args)
        with pytest.raises(error, match=re.escape(message)):
            tack.inspect(kernel, *args, mode="ir")
    assert "parallel for" in tack.inspect(k_return_atomic, tack.zeros(4, tack.i32),
                                          tack.zeros(4), mode="ir")


@tack.kernel
def k_count_past_i64(out, n):
    for i in range(n * 4 + 3):
        tack.atomic_add(out, 0, 1)


@tack.kernel
def k_grid_past_i64(out, n):
    for i, j in tack.ndindex(n, n):
        tack.atomic_add(out, 0, 1)


@pytest.mark.parametrize("kernel, n, total", [
    (k_count_past_i64, 2**62, 2**64 + 3),     # the count did not fit the native call
    (k_count_past_i64, 2**63, 2**65 + 3),
    (k_grid_past_i64, 2**40, 2**80)])         # each extent fits; the product wrapped
def test_a_launch_count_past_i64_is_a_value_error(kernel, n, total):
    out = tack.zeros(1, tack.i64, device="cpu")
    with pytest.raises(ValueError, match=re.escape(
            f"Kernel '{kernel.name}': a launch of {total} iterations is larger than one CPU launch can index "
            f"({2**63 - 1})")):
        kernel(out, n)
    assert out.numpy()[0] == 0


# -- extents that keep changing: taken at run time ---------------------------------------

@tack.kernel
def next_or_zero(a, out):
    for i in range(len(out)):
        out[i] = a[i + 1] if i + 1 < len(a) else 0.0   # len(a) in the body: baked


def _ir(kernel, *args) -> str:
    return tack.inspect(kernel, *args, mode="ir")


def test_a_length_that_keeps_changing_stops_compiling(rng):
    """``kernel(a[:n])`` with ``len(a)`` in the body and a new ``n`` every step:
    the first lengths compile variants with the length baked in, then the
    length is read at run time and no new length compiles anything."""
    host = rng.values(tack.f64, 41)
    a, out = tack.array(host), tack.zeros(41, tack.f64)
    lengths = [10, 11, 12, 13, 14, 0, 1, 2, 3, 17, 41, 40, 39, 10]
    counts = []
    for n in lengths:
        next_or_zero(a[:n], out[:n])
        np.testing.assert_array_equal(out.numpy()[:n], np.append(host[1:n], 0.0)[:n],
                                      err_msg=f"n={n} {rng!r}")
        counts.append(len(next_or_zero._variants))
    assert counts[:4] == [1, 2, 3, 4]   # baked: one variant per length
    assert counts[4:] == [5] * 10       # then one variant for every length
    assert "__tack_shape0_a" in _ir(next_or_zero, a[:7], out[:7])


@tack.kernel
def count_and_size(a, out) -> int:
    for i in range(len(a)):
        tack.atomic_add(out, 0, 1)
    return len(a) * 100 + len(out)


def test_a_returned_length_is_read_at_run_time_too(rng):
    out = tack.zeros(3, tack.i64)
    for n in [5, 6, 7, 8, 9, 10, 0, 1, 33]:
        a = tack.zeros(n, tack.f32)
        out.fill(0)
        assert count_and_size(a, out[:1 + n % 3]) == n * 100 + 1 + n % 3
        assert out.numpy()[0] == n
    assert len(count_and_size._variants) <= 2 * (4 + 1)   # kernel and return epilogue


def test_changing_lengths_from_threads_give_every_thread_its_own_answer(rng):
    """Threads calling with their own lengths while the kernel goes over to
    run-time lengths: every answer is the one for that call's length."""
    host = rng.values(tack.f64, 300)
    failures = []

    @tack.kernel
    def tail_sum(a, out):
        for i in range(len(out)):
            out[i] = a[len(a) - 1] + i

    def work(seed):
        a = tack.array(host)
        out = tack.zeros(4, tack.f64)
        for step in range(40):
            n = 1 + (seed * 37 + step * 11) % 299
            tail_sum(a[:n], out)
            if not np.array_equal(out.numpy(), host[n - 1] + np.arange(4)):
                failures.append((seed, n))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []


def test_calls_alternating_between_two_default_devices_keep_both_runners(rng, monkeypatch):
    """``with one:`` then ``with two:`` around calls of one signature: each
    default keeps the runner made under it (the second used to replace the
    first, so every call took the slow path)."""
    one, two = tack.device("cpu", num_threads=1), tack.device("cpu", num_threads=2)
    host = rng.values(tack.f64, 33)
    x, out = tack.array(host), tack.zeros(33, tack.f64)

    @tack.kernel
    def doubled(x, out):
        for i in range(len(x)):
            out[i] = 2.0 * x[i]

    made = []   # the slow path's runs (no public count of them)
    original = tack.runtime.kernel.Kernel._resolve
    monkeypatch.setattr(tack.runtime.kernel.Kernel, "_resolve",
                        lambda self, *a, **k: made.append(1) or original(self, *a, **k))
    for step in range(6):
        out.fill(0)
        with (one if step % 2 else two):
            doubled(x, out)
        np.testing.assert_array_equal(out.numpy(), 2.0 * host, err_msg=repr(rng))
    assert len(made) == 2   # one runner per default, then none


def test_a_runner_made_before_lengths_move_to_run_time_is_not_stored_after(rng,
                                                                            monkeypatch):
    """Thread A binds a runner under the old baking and stores it only after
    the main thread's fourth length moved the length to run time: it must
    not be stored (the table would key on the length again, and every new
    length take the slow path). The interleaving is forced (internals)."""
    from tack.runtime import kernel as K

    @tack.kernel
    def scale(pos, out):
        for i in range(len(pos)):
            out[i] = pos[i] * len(pos)

    host = rng.values(tack.f32, 500)
    pos, out = tack.array(host), tack.zeros(500, tack.f32)
    for n in (10, 11, 12):
        scale(pos[:n], out[:n])
    original = K.FastPath.add
    go, parked = threading.Event(), threading.Event()

    def add(self, args, shape_params, runner, bound=None):
        if threading.current_thread().name == "A":
            parked.set()
            go.wait(30)
        return original(self, args, shape_params, runner, bound)

    monkeypatch.setattr(K.FastPath, "add", add)
    scale._plain.clear()
    thread = threading.Thread(target=lambda: scale(pos[:12], out[:12]), name="A")
    thread.start()
    assert parked.wait(30)
    scale(pos[:13], out[:13])       # the fourth length: moved to run time
    go.set()
    thread.join()
    assert scale._plain.shape_params == frozenset()   # keys on no length
    for n in (100, 257, 3):
        scale(pos[:n], out[:n])
        np.testing.assert_allclose(out.numpy()[:n], host[:n] * np.float32(n), rtol=1e-6)


def test_lengths_moved_to_run_time_move_in_every_specialization(rng):
    """Two lowering specializations of one kernel (an f32 and an f64 vector
    value) share the dispatch table: once one reads the length at run time,
    the other, made later and called with one length, must not key the
    table on the length again (every new length took the slow path)."""
    @tack.kernel
    def push(pos, out, g):
        for i in range(len(pos)):
            out[i] = pos[i] + g[0] * len(pos)

    host = rng.values(tack.f32, 400)
    pos, out = tack.array(host), tack.zeros(400, tack.f32)
    for n in (10, 11, 12, 13, 14):
        push(pos[:n], out[:n], (1.0, 0.0))
    push(pos[:64], out[:64], np.array([2.0, 0.0]))   # another specialization
    assert push._plain.shape_params == frozenset()
    variants = len(push._variants)
    for n in (100, 200, 300):
        push(pos[:n], out[:n], (1.0, 0.0))
        np.testing.assert_allclose(out.numpy()[:n], host[:n] + np.float32(n), rtol=1e-6)
    assert len(push._variants) == variants
