"""What the vector and matrix tests share (tests/lang/test_vectors.py and
test_vector_functions.py): sizes, tolerances and random inputs.

Tolerances: f32 results rtol=1e-5, atol=1e-5 (inputs in [-4, 4]); f64
results rtol=1e-12; integer-valued floats are compared exactly.
"""

import tack

SIZES = [0, 1, 7, 33]
F32 = dict(rtol=1e-5, atol=1e-5)
F64 = dict(rtol=1e-12, atol=1e-12)


def vecs(rng, n, shape, dtype="float32", low=-4.0, high=4.0):
    """Random host storage ``(n, *shape)`` of ``dtype``."""
    return rng.gen.uniform(low, high, (n, *shape)).astype(dtype)


def varr(data, element):
    """``data`` as a Tack array of vector or matrix ``element``s."""
    return tack.array(data, dtype=element)
