"""Scalar arguments on OpenCL: passed by value, their types declared to
pyopencl at the build (runtime/opencl/backend.py). Each launch must carry its
own values, whatever the previous launch passed, in the parameter's type;
checked against NumPy on the CPU backend's results."""

import numpy as np
import pytest

import tack


@tack.kernel
def affine(out, x, scale, shift):
    for i in range(len(out)):
        out[i] = scale * x[i] + shift


@tack.kernel
def offsets(out, base, step):
    for i in range(len(out)):
        out[i] = base + step * i


@tack.kernel
def countdown(out, start):
    for i in range(len(out)):
        v = start
        start = start - 1   # assigns the parameter: each work-item its own copy
        out[i] = v + start


@tack.kernel
def flag(out, on):
    for i in range(len(out)):
        out[i] = 1 if on else 2


@pytest.mark.parametrize("n", [0, 1, 257, 1001])
def test_float_scalars_change_from_launch_to_launch(opencl, rng, n):
    x = rng.values(tack.f32, n)
    device_x, out = tack.array(x, device=opencl), tack.zeros(n, tack.f32, device=opencl)
    for scale, shift in [(2.0, 0.5), (-0.0, 0.0), (3.0, -1.25), (3.0, -1.25), (0.0, -0.0)]:
        affine(out, device_x, scale, shift)
        expected = np.float32(scale) * x + np.float32(shift)
        np.testing.assert_array_equal(out.numpy(), expected, err_msg=f"{rng}")
        # the sign of a zero result comes from the scalars themselves
        if n and scale == 0.0:
            assert np.array_equal(np.signbit(out.numpy()), np.signbit(expected))


@pytest.mark.parametrize("dtype", [tack.i32, tack.i64, tack.u64, tack.f64])
def test_integer_and_double_scalars_keep_their_type(opencl, dtype):
    if dtype is tack.f64 and tack.f64 not in opencl.backend.supported_dtypes:
        pytest.skip("this OpenCL device has no fp64")
    base = {tack.i32: -7, tack.i64: -(2 ** 40), tack.u64: 2 ** 63 + 5,
            tack.f64: 1e300}[dtype]
    step = 3 if dtype is not tack.f64 else 1e290
    out = tack.zeros(5, dtype, device=opencl)
    offsets(out, base, step)
    cpu = tack.zeros(5, dtype)
    offsets(cpu, base, step)
    np.testing.assert_array_equal(out.numpy(), cpu.numpy())


def test_an_assigned_scalar_parameter_stays_per_work_item(opencl):
    out = tack.zeros(300, tack.i32, device=opencl)
    countdown(out, 10)
    np.testing.assert_array_equal(out.numpy(), np.full(300, 19, np.int32))


def test_bool_scalars(opencl):
    out = tack.zeros(4, tack.i32, device=opencl)
    flag(out, True)
    assert out.numpy().tolist() == [1, 1, 1, 1]
    flag(out, False)
    assert out.numpy().tolist() == [2, 2, 2, 2]
