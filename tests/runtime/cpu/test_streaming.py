"""Streaming stores on the CPU (runtime/cpu/streaming.py).

A disjoint call whose write-only arrays hold at least the backend's
``streaming_bytes`` takes a variant whose vector stores into them are
non-temporal, fenced before the chunk returns. Results must not depend on
it: every case is checked against NumPy, across sizes (0, 1, odd, fanned
out), element types, and the calls that must keep ordinary stores (small
arrays, arrays the kernel also reads, aliased arguments).
"""

import re

import numpy as np
import pytest

import tack


@tack.kernel
def smooth(u, out):
    for i in range(1, len(u) - 1):
        out[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1]


@tack.kernel
def scale_into(x, y, a):
    for i, j in tack.ndindex(x.shape[0], x.shape[1]):
        y[i, j] = x[i, j] * a


@tack.kernel
def accumulate(x, y):
    for i in range(len(x)):
        y[i] = y[i] + x[i]


def _device(threshold: int):
    """A CPU device of its own whose streaming threshold is ``threshold`` bytes,
    made the default (a CPU launch runs on the default device)."""
    dev = tack.device("cpu", num_threads=2)
    dev.backend.streaming_bytes = threshold
    tack.set_default_device(dev)   # restored by the conftest fixture
    return dev


def _smooth_reference(u):
    want = np.zeros_like(u)
    if len(u) > 2:
        want[1:-1] = (np.float32(0.25) * u[:-2] + np.float32(0.5) * u[1:-1]
                      + np.float32(0.25) * u[2:])
    return want


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1001, 65537, 1 << 20])
def test_a_streamed_array_stored_from_two_places_matches_numpy(rng, n):
    dev = _device(0)
    x = rng.values(tack.f64, n) if n else np.zeros(0)
    x = np.abs(x) % 1.0
    out = tack.zeros(n, tack.f64, device=dev)
    select_two_stores(tack.array(x, device=dev), out)
    np.testing.assert_array_equal(out.numpy(), np.where(x < 0.5, x * 2.0, 1.0 - x))


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1001, 65537, 1 << 20])
def test_streaming_variant_matches_numpy(rng, n):
    dev = _device(0)   # every disjoint call streams
    u = rng.gen.standard_normal(n).astype(np.float32)
    a, out = tack.array(u, device=dev), tack.zeros(n, device=dev)
    smooth(a, out)
    np.testing.assert_allclose(out.numpy(), _smooth_reference(u), rtol=1e-6, atol=1e-6,
                               err_msg=repr(rng))


@pytest.mark.parametrize("dtype", [tack.f32, tack.f64, tack.i32, tack.i16, tack.u8,
                                   tack.i64])
def test_streaming_stores_of_every_width(rng, dtype):
    dev = _device(0)
    x = rng.values(dtype, 301 * 67).reshape(301, 67)
    a, y = tack.array(x, device=dev), tack.zeros((301, 67), dtype, device=dev)
    scale_into(a, y, 1)
    np.testing.assert_array_equal(y.numpy(), x, err_msg=repr(rng))


def test_large_write_only_arrays_get_nontemporal_stores():
    dev = _device(1 << 16)
    big, small = tack.zeros(1 << 15, device=dev), tack.zeros(100, device=dev)
    streamed = tack.inspect(smooth, big, tack.zeros(1 << 15, device=dev),
                            mode="optimized")
    assert "!nontemporal" in streamed and "fence seq_cst" in streamed
    plain = tack.inspect(smooth, small, tack.zeros(100, device=dev), mode="optimized")
    assert "!nontemporal" not in plain and "fence seq_cst" not in plain


def test_arrays_that_are_read_or_aliased_keep_ordinary_stores(rng):
    dev = _device(0)
    n = 1 << 15
    x = rng.gen.standard_normal(n).astype(np.float32)
    a, y = tack.array(x, device=dev), tack.array(x, device=dev)
    assert "!nontemporal" not in tack.inspect(accumulate, a, y, mode="optimized")
    accumulate(a, y)
    np.testing.assert_array_equal(y.numpy(), x + x, err_msg=repr(rng))
    assert "!nontemporal" not in tack.inspect(smooth, a, a, mode="optimized")
    smooth(a, a)   # aliased: the ordinary variant, in place
    assert np.isfinite(a.numpy()).all()


def test_the_threshold_picks_the_variant_at_each_call(rng):
    dev = _device(4 * 5000)
    for n in (4999, 5000, 5001, 10, 20000):
        u = rng.gen.standard_normal(n).astype(np.float32)
        a, out = tack.array(u, device=dev), tack.zeros(n, device=dev)
        smooth(a, out)
        np.testing.assert_allclose(out.numpy(), _smooth_reference(u), rtol=1e-6,
                                   atol=1e-6, err_msg=f"n={n} {rng!r}")


# -- peeling for alignment (codegen/llvm/peel.py) -----------------------------

@tack.kernel
def stencil(u, out):
    for i, j in tack.ndindex(u.shape[0] - 2, u.shape[1] - 2):
        out[i + 1, j + 1] = 0.25 * (u[i, j + 1] + u[i + 2, j + 1] + u[i + 1, j] + u[i + 1, j + 2])


@tack.kernel
def every_other(x, out):
    for i in range(len(x)):
        out[2 * i] = x[i]       # grows by two per step: no peel


@tack.kernel
def through_locals(x, out, shift):
    for i in range(len(x)):
        k = i + shift
        if x[i] > 0.0:
            k = k + 0           # assigned twice: not a plain function of i
        out[k] = x[i]
        m = shift + i
        out[m + len(x)] = -x[i]  # assigned once, before the store: peeled


_NT_STORE = re.compile(r"store <(\d+) x (\w+)> .*, align (\d+).*!nontemporal")


def _nontemporal_stores(text):
    return [(int(lanes), kind, int(align)) for lanes, kind, align in _NT_STORE.findall(text)]


@tack.kernel
def select_two_stores(x, out):
    for i in range(len(x)):
        if x[i] < 0.5:
            out[i] = x[i] * 2.0
        else:
            out[i] = 1.0 - x[i]


@tack.kernel
def threshold_image(a, out, t):
    for i, j in tack.ndindex(a.shape[0], a.shape[1]):
        if a[i, j] > t:
            out[i, j] = a[i, j]
        else:
            out[i, j] = 0.0


@pytest.mark.parametrize("kernel, shape", [(smooth, (5000,)), (stencil, (20, 1026)),
                                           (select_two_stores, (5000,)),
                                           (threshold_image, (20, 1026))])
def test_streamed_vector_stores_are_whole_and_aligned(kernel, shape):
    """Also for an array stored from two places: only the peeled store had the
    aligned base, and LLVM's overlap check between the two sent the whole
    loop to its scalar copy, with no non-temporal store at all."""
    dev = _device(0)
    args = (tack.zeros(shape, device=dev), tack.zeros(shape, device=dev))
    args += (0.5,) * (kernel is threshold_image)
    text = tack.inspect(kernel, *args, mode="optimized")
    assert "vector.memcheck" not in text
    stores = _nontemporal_stores(text)
    assert stores, "the streaming variant has no non-temporal vector store"
    for lanes, kind, align in stores:   # an unaligned one would become movnti stores
        assert align >= lanes * (8 if kind == "double" else 4)


@pytest.mark.parametrize("width, streams", [(3, False), (8, False), (100, False),
                                            (16, True), (48, True), (1024, True)])
def test_rows_that_split_cache_lines_keep_cached_stores(rng, width, streams):
    """A streaming store filling part of a line, at each row's ends, cost far
    more than it saved (an (n, 8) f32 loop ran 70 times as long): a loop of
    several dimensions streams only rows of whole aligned lines, or long ones."""
    dev = _device(0)
    x = rng.values(tack.f32, 64 * width).reshape(64, width)
    a, y = tack.array(x, device=dev), tack.zeros((64, width), device=dev)
    text = tack.inspect(scale_into, a, y, 2.0, mode="optimized")
    assert ("!nontemporal" in text) is streams
    scale_into(a, y, 2.0)
    np.testing.assert_array_equal(y.numpy(), x * np.float32(2.0), err_msg=repr(rng))


@tack.kernel
def bordered(u, out):
    for i, j in tack.ndindex(u.shape[0], u.shape[1]):
        if i == 0 or j == 0 or i == u.shape[0] - 1 or j == u.shape[1] - 1:
            out[i, j] = 0.0
        else:
            out[i, j] = u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]


@tack.kernel
def divided(a, out, d):
    for i in range(len(a)):
        out[i] = a[i] // d + a[i] % d


@pytest.mark.parametrize("kernel", [bordered, divided], ids=lambda k: k.name)
def test_streaming_that_would_not_pay_runs_the_ordinary_code(kernel, rng):
    """A loop that stays scalar (integer division) gets no non-temporal store, and
    a stencil with an ``if`` at its borders became masked vector code (1.65x
    its ordinary variant's time): both run the disjoint variant's code."""
    if kernel is bordered:
        x, args = rng.values(tack.f64, 40 * 1030).reshape(40, 1030), ()
        want = np.zeros_like(x)
        want[1:-1, 1:-1] = x[:-2, 1:-1] + x[2:, 1:-1] + x[1:-1, :-2] + x[1:-1, 2:]
    else:
        x, args = rng.values(tack.i64, 5001), (7,)
        want = x // 7 + x % 7
    dev = _device(0)
    a, out = tack.array(x, device=dev), tack.zeros(x.shape, x.dtype, device=dev)
    text = tack.inspect(kernel, a, out, *args, mode="optimized")
    assert "!nontemporal" not in text and "fence seq_cst" not in text
    _device(1 << 60)
    assert text == tack.inspect(kernel, a, out, *args, mode="optimized")  # the same code
    _device(0)
    kernel(a, out, *args)
    np.testing.assert_array_equal(out.numpy(), want, err_msg=repr(rng))


def _guarded(dtype, n, offset):
    """A length-``n`` view ``offset`` elements into a buffer of sentinels."""
    buffer = np.full(n + 40, 7, dtype)
    return buffer, buffer[offset:offset + n]


@pytest.mark.parametrize("n", [0, 1, 2, 15, 17, 63, 1001])
def test_every_start_offset_of_a_streamed_output(rng, n):
    dev = _device(0)
    u = rng.gen.standard_normal(n).astype(np.float32)
    for offset in range(17):   # each start within a 64-byte line, and past it
        buffer, view = _guarded(np.float32, n, offset)
        out = tack.from_dlpack(view)
        smooth(tack.array(u, device=dev), out)
        want = _smooth_reference(u)
        if n:
            want[0] = want[-1] = 7   # the ends are not written
        np.testing.assert_allclose(view, want, rtol=1e-6, atol=1e-6,
                                   err_msg=f"offset {offset} {rng!r}")
        assert (buffer[:offset] == 7).all() and (buffer[offset + n:] == 7).all()


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("shape", [(3, 3), (9, 20), (33, 65), (130, 257)])
def test_peeled_stencil_matches_numpy_in_every_chunking(monkeypatch, rng, threads, shape):
    monkeypatch.setenv("TACK_CPU_MARGIN", "0")   # every launch of 2+ rows fans out
    dev = tack.device("cpu", num_threads=threads)
    dev.backend.streaming_bytes = 0
    tack.set_default_device(dev)
    u = rng.gen.standard_normal(shape).astype(np.float64)
    for offset in (0, 1, 5):
        buffer, view = _guarded(np.float64, shape[0] * shape[1], offset)
        out = tack.from_dlpack(view.reshape(shape))
        stencil(tack.array(u, device=dev), out)
        got = view.reshape(shape)[1:-1, 1:-1]
        want = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"offset {offset} {rng!r}")
        assert (buffer[:offset] == 7).all() and (buffer[offset + view.size:] == 7).all()


def test_stores_that_do_not_step_by_one_stay_correct(rng):
    dev = _device(0)
    n = 1001
    x = rng.gen.standard_normal(n).astype(np.float32)
    out = tack.zeros(2 * n, device=dev)
    every_other(tack.array(x, device=dev), out)
    want = np.zeros(2 * n, np.float32)
    want[::2] = x
    np.testing.assert_array_equal(out.numpy(), want, err_msg=repr(rng))

    out = tack.zeros(2 * n + 3, device=dev)
    through_locals(tack.array(x, device=dev), out, 3)
    want = np.zeros(2 * n + 3, np.float32)
    want[3:n + 3] = x
    want[n + 3:] = -x
    np.testing.assert_array_equal(out.numpy(), want, err_msg=repr(rng))


def test_a_misaligned_output_streams_correctly(rng):
    dev = _device(0)
    n = 999
    u = rng.gen.standard_normal(n).astype(np.float32)
    raw = np.zeros(4 * n + 1, np.uint8)
    view = raw[1:].view(np.float32)       # an address that is not a multiple of 4
    try:
        out = tack.from_dlpack(view)
    except (ValueError, TypeError, BufferError) as exc:
        pytest.skip(f"misaligned arrays are refused at import: {exc}")
    smooth(tack.array(u, device=dev), out)
    np.testing.assert_allclose(view[1:-1], _smooth_reference(u)[1:-1], rtol=1e-6,
                               atol=1e-6, err_msg=repr(rng))


@tack.kernel
def with_scratch(x, out):
    for i in range(len(x)):
        scratch = tack.local_array(4, tack.f32)   # written, never read: not a parameter
        scratch[0] = x[i]
        out[i] = x[i] * 2.0


@pytest.mark.parametrize("threshold", [0, 1 << 62])
def test_a_write_only_local_array_is_not_streamed(rng, threshold):
    dev = _device(threshold)
    x = rng.gen.standard_normal(1001).astype(np.float32)
    out = tack.zeros(1001, device=dev)
    with_scratch(tack.array(x, device=dev), out)
    np.testing.assert_array_equal(out.numpy(), x * np.float32(2), err_msg=repr(rng))
