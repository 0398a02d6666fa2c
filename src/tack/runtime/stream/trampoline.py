"""One short foreign call per GPU launch: a compiled trampoline into the driver.

``cuLaunchKernel`` (CUDA) and ``hipModuleLaunchKernel`` (HIP) take eleven
arguments, and ctypes converts each of them on every call: about 0.6 us a
launch on the VMs Tack was measured on, a tenth of a warm launch. All but the
grid size are the same from one launch of a variant to the next, so they go
into a ``Job`` once, and the launch calls ``tack_stream_launch(job, blocks)``,
a few lines of LLVM IR compiled for the host by the CPU backend's JIT, which
loads them and calls the driver's function through its address:

    result = job.launch(job.function, blocks, 1, 1, job.block, 1, 1,
                        0, job.stream, job.params, NULL)

Both drivers' functions have that signature (handles and pointers, then
unsigned ints, then handles and pointers) and return their status as an int.
``tack_stream_launch`` itself is called as a Python builtin
(``cpu/fastcall.py``): about 70 ns a launch, against 480 ns for a ctypes call
of the driver's function with its eleven arguments.
A launch function that is not a C function (the tests' fake drivers, or a
library that could not be loaded by name) is called from Python as before.
"""

from __future__ import annotations

import ctypes
import threading

_IR = r"""
%Job = type { i8*, i8*, i8*, i8*, i32 }   ; launch, function, stream, params, block

define i32 @tack_stream_launch(i8* %raw, i64 %blocks) {
entry:
  %job = bitcast i8* %raw to %Job*
  %lp = getelementptr %Job, %Job* %job, i32 0, i32 0
  %launch = load i8*, i8** %lp
  %fp = getelementptr %Job, %Job* %job, i32 0, i32 1
  %function = load i8*, i8** %fp
  %sp = getelementptr %Job, %Job* %job, i32 0, i32 2
  %stream = load i8*, i8** %sp
  %pp = getelementptr %Job, %Job* %job, i32 0, i32 3
  %params = load i8*, i8** %pp
  %bp = getelementptr %Job, %Job* %job, i32 0, i32 4
  %block = load i32, i32* %bp
  %grid = trunc i64 %blocks to i32
  %fn = bitcast i8* %launch to i32 (i8*, i32, i32, i32, i32, i32, i32, i32, i8*, i8*, i8*)*
  %result = call i32 %fn(i8* %function, i32 %grid, i32 1, i32 1, i32 %block, i32 1,
                         i32 1, i32 0, i8* %stream, i8* %params, i8* null)
  ret i32 %result
}
"""


class Job(ctypes.Structure):
    """The arguments of a variant's launches that do not change."""
    _fields_ = [("launch", ctypes.c_void_p), ("function", ctypes.c_void_p),
                ("stream", ctypes.c_void_p), ("params", ctypes.c_void_p),
                ("block", ctypes.c_uint32)]


_compiled = None
_lock = threading.Lock()


def _fire():
    """The compiled ``tack_stream_launch`` as a Python builtin, once per process
    (``cpu/fastcall.py``: a call costs far less than through ctypes)."""
    global _compiled
    if _compiled is None:
        with _lock:
            if _compiled is None:
                from ..cpu import fastcall, jit
                address = jit.load(jit.compile_glue(_IR), "tack_stream_launch")
                _compiled = fastcall.builtin(address, 2, "i32")
    return _compiled


def _address(handle) -> int:
    """A handle or pointer as an integer (ctypes ``c_void_p`` objects, cuda-python
    and hip-python handles, ints)."""
    value = handle.value if isinstance(handle, ctypes.c_void_p) else int(handle)
    return value or 0


def bind(launch, function, stream, params, block: int) -> tuple:
    """``(fire, job, owner)``: ``fire(job, blocks)`` launches ``blocks`` blocks
    of ``block`` threads and returns the driver's status; ``owner`` keeps
    ``job`` valid. ``launch`` is the driver's launch function as
    ``Backend.launch_function`` gives it."""
    if not isinstance(launch, ctypes._CFuncPtr):
        def fire(job, blocks):
            return launch(function, blocks, 1, 1, block, 1, 1, 0, stream, params, None)
        return fire, None, None
    job = Job(ctypes.cast(launch, ctypes.c_void_p).value, _address(function),
              _address(stream), _address(params), block)
    return _fire(), ctypes.addressof(job), job
