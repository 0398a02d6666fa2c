"""tack.algorithms.compact (docs/algorithms.md, "compact"): the kept elements
in order, against NumPy's boolean indexing on fresh random inputs, at sizes 0,
1, odd ones and past one scan chunk; element types kept; the refusals."""

import re
import secrets

import numpy as np
import pytest

import tack
import tack.algorithms as A

SEED = secrets.randbits(32)
SIZES = [0, 1, 7, 65537, 200_003]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8])
@pytest.mark.parametrize("flag_type", [np.int32, np.uint8, np.int64])
def test_compact_keeps_the_flagged_elements_in_order(n, dtype, flag_type):
    rng = np.random.default_rng(SEED)
    values = (rng.random(n) * 200).astype(dtype)
    flags = rng.integers(0, 3, n).astype(flag_type) * rng.integers(0, 2, n).astype(flag_type)
    given = tack.array(values)
    kept = A.compact(given, tack.array(flags))
    assert kept.dtype == given.dtype and kept.device == given.device
    np.testing.assert_array_equal(kept.numpy(), values[flags != 0], f"seed {SEED}")


def test_compact_of_vector_elements_and_all_or_nothing():
    rng = np.random.default_rng(SEED)
    n = 1001
    pos = rng.standard_normal((n, 3)).astype(np.float32)
    inside = (np.abs(pos) < 1).all(axis=1).astype(np.int32)
    kept = A.compact(tack.array(pos, dtype=tack.vec3()), tack.array(inside))
    assert kept.dtype == tack.vec3()
    np.testing.assert_array_equal(kept.numpy(), pos[inside != 0], f"seed {SEED}")
    everything = A.compact(tack.array(pos[:, 0]), tack.ones(n, tack.i32))
    np.testing.assert_array_equal(everything.numpy(), pos[:, 0])
    assert A.compact(tack.array(pos[:, 0]), tack.zeros(n, tack.i32)).size == 0


@pytest.mark.parametrize("values, flags, error, message", [
    (np.zeros(3), np.ones(4, np.int32), ValueError,
     "compact() needs a flag per value: 3 values, 4 flags"),
    (np.zeros(3), np.ones(3, np.float32), TypeError,
     "compact() takes integer flags (i8 to u64: 1 keeps an element, 0 drops it), not f32"),
    (np.zeros((2, 2)), np.ones(4, np.int32), ValueError,
     "compact() takes a one-dimensional array for values, got shape (2, 2)"),
])
def test_compact_refusals(values, flags, error, message):
    with pytest.raises(error, match=re.escape(message)):
        A.compact(tack.array(values), tack.array(flags))


def test_compact_takes_tack_arrays():
    with pytest.raises(TypeError, match=re.escape("compact()")):
        A.compact(np.zeros(3), tack.ones(3, tack.i32))
