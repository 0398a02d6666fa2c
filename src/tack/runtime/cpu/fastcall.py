"""Native functions called the way CPython calls its own builtins.

Every warm launch ends in one call of native code: a kernel's entry or the
thread pool's ``tack_pool_run`` on the CPU, the driver trampoline on CUDA and
HIP. Through a ctypes prototype that call costs about 0.3 us, most of the
warm launch of a small kernel: ctypes converts each argument through its type
object and builds the call with libffi. ``builtin(address, n_args, returns)``
makes the same call cost about 0.05 us.

It compiles (once per process for each argument count and return kind) a
small wrapper with CPython's ``METH_FASTCALL`` convention,

    PyObject *wrapper(PyObject *self, PyObject *const *args, Py_ssize_t nargs)

and makes a builtin function object of it with ``PyCFunction_NewEx``; the
object's ``self`` is the target's address, as a Python int. The wrapper checks
the count, converts each argument with ``PyLong_AsLongLong`` (so ints and
NumPy integers, as ctypes takes them), releases the GIL around the call as
ctypes does, and returns the target's ``i32`` result as an int, or None for a
``void`` target. Every argument travels as a 64-bit integer: pointers,
``int64_t`` values, nothing narrower.

On an interpreter that is not CPython the builtin is a ctypes prototype.
"""

from __future__ import annotations

import ctypes
import sys
import threading

from . import jit

METH_FASTCALL = 0x0080
_RETURNS = {"void": ("void", None), "i32": ("i32", ctypes.c_int)}
_lock = threading.Lock()
if sys.implementation.name == "cpython":
    # PyCFunction_NewEx(definition, self, module), through a prototype of Tack's
    # own (holding the GIL, as C API calls must) rather than by setting the
    # types of the shared ctypes.pythonapi entry
    _new_function = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object,
                                      ctypes.c_void_p)(("PyCFunction_NewEx", ctypes.pythonapi))


class _MethodDef(ctypes.Structure):
    """CPython's ``PyMethodDef``."""
    _fields_ = [("name", ctypes.c_char_p), ("method", ctypes.c_void_p),
                ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]


def builtin(address: int, n_args: int, returns: str = "void"):
    """A callable ``f(a1, ..., an)`` that calls the native function at
    ``address`` (``void`` or ``i32`` result, ``n_args`` 64-bit arguments)."""
    if returns not in _RETURNS:
        raise ValueError(f"fastcall targets return 'void' or 'i32', not {returns!r}")
    if sys.implementation.name != "cpython":
        prototype = ctypes.CFUNCTYPE(_RETURNS[returns][1], *[ctypes.c_int64] * n_args)
        return prototype(address)
    definition = _wrapper(n_args, returns)
    return _new_function(ctypes.addressof(definition), int(address), None)


# (n_args, returns) -> the wrapper's PyMethodDef. The builtins made from one
# point into it, so it is never freed.
_definitions: dict = {}


def _wrapper(n_args: int, returns: str) -> _MethodDef:
    """The compiled wrapper's ``PyMethodDef``, made on first use."""
    definition = _definitions.get((n_args, returns))
    if definition is None:
        with _lock:
            definition = _definitions.get((n_args, returns))
            if definition is None:
                _register_symbols()
                name = f"tack_fastcall_{n_args}_{returns}"
                text = _wrapper_ir(name, n_args, returns)
                address = jit.load(jit.compile_glue(text), name)
                definition = _MethodDef(name.encode(), address, METH_FASTCALL, None)
                _definitions[(n_args, returns)] = definition
    return definition


_SYMBOLS = ("PyLong_AsLongLong", "PyLong_AsVoidPtr", "PyLong_FromLongLong",
            "PyErr_Occurred", "PyErr_SetString", "PyEval_SaveThread",
            "PyEval_RestoreThread", "Py_IncRef")


def _register_symbols() -> None:
    """Tell the JIT where the interpreter's functions and objects are."""
    import llvmlite.binding as llvm
    api = ctypes.pythonapi
    for symbol in _SYMBOLS:
        llvm.add_symbol(symbol, ctypes.cast(getattr(api, symbol), ctypes.c_void_p).value)
    error = ctypes.c_void_p.in_dll(api, "PyExc_TypeError")
    llvm.add_symbol("PyExc_TypeError", ctypes.addressof(error))
    llvm.add_symbol("_Py_NoneStruct", id(None))


def _wrapper_ir(name: str, n_args: int, returns: str) -> str:
    """LLVM IR of the ``METH_FASTCALL`` wrapper (see module doc)."""
    message = f"expected {n_args} arguments\00"
    arguments = ", ".join(f"i64 %a{k}" for k in range(n_args))
    lines = [
        "declare i64 @PyLong_AsLongLong(i8*)",
        "declare i8* @PyLong_AsVoidPtr(i8*)",
        "declare i8* @PyLong_FromLongLong(i64)",
        "declare i8* @PyErr_Occurred()",
        "declare void @PyErr_SetString(i8*, i8*)",
        "declare i8* @PyEval_SaveThread()",
        "declare void @PyEval_RestoreThread(i8*)",
        "declare void @Py_IncRef(i8*)",
        "@PyExc_TypeError = external global i8*",
        "@_Py_NoneStruct = external global i8",
        f"@message = private constant [{len(message)} x i8] c\"{message[:-1]}\\00\"",
        "",
        f"define i8* @{name}(i8* %self, i8** %args, i64 %nargs) {{",
        "entry:",
        f"  %count_ok = icmp eq i64 %nargs, {n_args}",
        "  br i1 %count_ok, label %convert, label %wrong_count",
        "wrong_count:",
        "  %type_error = load i8*, i8** @PyExc_TypeError",
        f"  %text = getelementptr [{len(message)} x i8], [{len(message)} x i8]* @message, "
        "i64 0, i64 0",
        "  call void @PyErr_SetString(i8* %type_error, i8* %text)",
        "  ret i8* null",
        "convert:",
        "  %target = call i8* @PyLong_AsVoidPtr(i8* %self)",
    ]
    flags = ["false"]
    for k in range(n_args):
        lines += [f"  %p{k} = getelementptr i8*, i8** %args, i64 {k}",
                  f"  %o{k} = load i8*, i8** %p{k}",
                  f"  %a{k} = call i64 @PyLong_AsLongLong(i8* %o{k})",
                  f"  %m{k} = icmp eq i64 %a{k}, -1",
                  f"  %f{k} = or i1 {flags[-1]}, %m{k}"]
        flags.append(f"%f{k}")
    # -1 is also a valid value: only PyErr_Occurred tells a failed conversion
    lines += [f"  br i1 {flags[-1]}, label %check, label %call",
              "check:",
              "  %error = call i8* @PyErr_Occurred()",
              "  %failed = icmp ne i8* %error, null",
              "  br i1 %failed, label %fail, label %call",
              "fail:",
              "  ret i8* null",
              "call:",
              "  %state = call i8* @PyEval_SaveThread()"]
    result_type = _RETURNS[returns][0]
    lines += [f"  %fn = bitcast i8* %target to {result_type} ({', '.join(['i64'] * n_args)})*",
              f"  {'%r = ' if returns == 'i32' else ''}call {result_type} %fn({arguments})",
              "  call void @PyEval_RestoreThread(i8* %state)"]
    if returns == "i32":
        lines += ["  %wide = sext i32 %r to i64",
                  "  %result = call i8* @PyLong_FromLongLong(i64 %wide)",
                  "  ret i8* %result"]
    else:
        lines += ["  call void @Py_IncRef(i8* @_Py_NoneStruct)",
                  "  ret i8* @_Py_NoneStruct"]
    lines.append("}")
    return "\n".join(lines) + "\n"
