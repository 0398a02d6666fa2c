"""Native functions as CPython builtins (runtime/cpu/fastcall.py): what every
warm launch ends in. The targets here are small JIT-compiled functions and
libc's ``usleep``, so values, errors and the GIL are checked end to end."""

import ctypes
import sys
import threading
import time

import numpy as np
import pytest

from tack.runtime.cpu import fastcall, jit

_IR = r"""
define i32 @test_fastcall_mix(i64 %a, i64 %b, i64 %c) {
  %ab = mul i64 %a, 1000
  %abc = add i64 %ab, %b
  %s = sub i64 %abc, %c
  %r = trunc i64 %s to i32
  ret i32 %r
}

define void @test_fastcall_store(i64 %address, i64 %value) {
  %p = inttoptr i64 %address to i64*
  store i64 %value, i64* %p
  ret void
}

define i32 @test_fastcall_none() {
  ret i32 -5
}
"""


@pytest.fixture(scope="module")
def targets():
    jit.load(jit.compile_object(_IR), "test_fastcall_mix")
    address = jit.engine().engine.get_function_address
    return (fastcall.builtin(address("test_fastcall_mix"), 3, "i32"),
            fastcall.builtin(address("test_fastcall_store"), 2),
            fastcall.builtin(address("test_fastcall_none"), 0, "i32"))


def test_arguments_and_i32_results_arrive_whole(targets):
    mix, _, none = targets
    assert mix(7, 8, 9) == 6999
    assert mix(-1, 0, 0) == -1000       # -1 is a value, not an error
    assert mix(0, -1, 0) == -1
    assert mix(0, 0, 2**31) == 2**31 - 2**32   # the result wraps as an i32 does
    assert mix(np.int64(3), np.uint8(4), True) == 3003   # anything with __index__
    assert none() == -5


def test_void_targets_return_none_and_keep_its_count(targets):
    _, store, _ = targets
    cell = ctypes.c_int64(0)
    before = sys.getrefcount(None)
    for value in range(-2, 1000):
        assert store(ctypes.addressof(cell), value) is None
    assert cell.value == 999
    assert abs(sys.getrefcount(None) - before) < 10


@pytest.mark.parametrize("args", [(1, 2), (1, 2, 3, 4), ()])
def test_a_wrong_count_is_a_type_error(targets, args):
    mix, _, _ = targets
    with pytest.raises(TypeError, match="^expected 3 arguments$"):
        mix(*args)


@pytest.mark.parametrize("bad, error", [(2.5, TypeError), ("1", TypeError),
                                        (None, TypeError), (2**64, OverflowError)])
def test_an_argument_that_is_not_a_64_bit_integer_raises(targets, bad, error):
    mix, store, _ = targets
    cell = ctypes.c_int64(11)
    with pytest.raises(error):
        mix(1, bad, 3)
    with pytest.raises(error):
        store(ctypes.addressof(cell), bad)   # nothing ran
    assert cell.value == 11


def test_only_void_and_i32_results_are_offered():
    with pytest.raises(ValueError, match="'void' or 'i32', not 'f64'"):
        fastcall.builtin(0, 1, "f64")


def test_the_gil_is_released_during_the_call():
    """Another Python thread runs while the native call sleeps."""
    libc = ctypes.CDLL(None)
    sleep = fastcall.builtin(ctypes.cast(libc.usleep, ctypes.c_void_p).value, 1, "i32")
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    thread = threading.Thread(target=tick)
    thread.start()
    time.sleep(0.01)
    start = time.perf_counter()
    assert sleep(300_000) == 0
    end = time.perf_counter()
    done.set()
    thread.join()
    assert end - start >= 0.3
    assert sum(start < t < end for t in ticks) >= 10


def test_other_interpreters_get_a_ctypes_prototype(targets, monkeypatch):
    address = jit.engine().engine.get_function_address("test_fastcall_mix")
    monkeypatch.setattr(sys.implementation, "name", "pypy")
    mix = fastcall.builtin(address, 3, "i32")
    assert isinstance(mix, ctypes._CFuncPtr)
    assert mix(7, 8, 9) == 6999
