"""Native compilation for the host CPU: O3 with llvmlite, object code, MCJIT.

A variant is compiled to object code (``compile_object``) and then loaded
into one process-wide MCJIT engine (``load``). Keeping the two steps apart
means a cached object file loads exactly like a fresh one.

Threads: the host target and the engine are made once, under a lock (two
engines made by racing first calls took turns owning, and freeing, one target
machine: a crash, or a kernel running another's code); LLVM's optimization
and code generation on the shared target machines run one at a time
(``_compile_lock``), and the engine's loads under ``_lock``.
"""

from __future__ import annotations

import struct
import sys
import threading

import llvmlite.binding as llvm

from . import streaming

_lock = threading.Lock()           # the engine's object loads
_compile_lock = threading.RLock()  # optimization and emission on the shared machines
_make_lock = threading.RLock()     # the first host() and engine() (engine() makes host())


class HostTarget:
    """The host's triple, CPU, features and a target machine at O3."""

    def __init__(self):
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        self.triple = llvm.get_process_triple()
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        target = llvm.Target.from_triple(self.triple)
        self.machine = target.create_target_machine(
            cpu=self.cpu, features=self.features, opt=3, reloc="default",
            codemodel="jitdefault")
        # glue code (call wrappers, trampolines): straight-line IR that gains
        # nothing from optimization, emitted in a third of the time
        self.glue_machine = target.create_target_machine(
            cpu=self.cpu, features=self.features, opt=0, reloc="default",
            codemodel="jitdefault")
        self.data_layout = str(self.machine.target_data)

    def optimize(self, module) -> None:
        """The O3 pipeline with loop and SLP vectorization (no fast-math)."""
        options = llvm.create_pipeline_tuning_options(speed_level=3)
        options.loop_vectorization = True
        options.slp_vectorization = True
        builder = llvm.create_pass_builder(self.machine, options)
        builder.getModulePassManager().run(module, builder)

    def parse(self, text: str):
        module = llvm.parse_assembly(text)
        module.triple = self.triple
        module.data_layout = self.data_layout
        module.verify()
        return module


def _once(make):
    """``make()``'s result, made by the first caller only (the others wait)."""
    made = []

    def get():
        if not made:
            with _make_lock:
                if not made:
                    made.append(make())
        return made[0]
    get.__doc__ = make.__doc__
    return get


@_once
def host() -> HostTarget:
    """The process's host target (made once)."""
    return HostTarget()


def optimized_module(text: str, streamed=()):
    """The module after O3, as llvmlite's ModuleRef; with ``streamed`` (the names
    of write-only arrays) its vector stores into them are non-temporal
    (``streaming.py``), or None where streaming would not pay
    (``streaming.pays``)."""
    target = host()
    with _compile_lock:
        module = target.parse(streaming.widen(text) if streamed else text)
        target.optimize(module)
        if streamed:
            marked, count = streaming.mark(str(module), streamed)
            if not streaming.pays(marked, count):
                return None
            module = target.parse(marked)
        return module


def compile_object(text: str, streamed=()):
    """LLVM IR text to an object file for the host (None as ``optimized_module``)."""
    with _compile_lock:
        module = optimized_module(text, streamed)
        return None if module is None else host().machine.emit_object(module)


def compile_glue(text: str) -> bytes:
    """Hand-written straight-line IR to an object file, without optimization."""
    target = host()
    with _compile_lock:
        return target.glue_machine.emit_object(target.parse(text))


class _Engine:
    """One MCJIT engine for the process; object files are added to it."""

    def __init__(self):
        target = host()
        # a target machine of its own: the engine owns (and frees) the one it gets
        machine = llvm.Target.from_triple(target.triple).create_target_machine(
            cpu=target.cpu, features=target.features, opt=3, reloc="default",
            codemodel="jitdefault")
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)

    def load(self, obj: bytes, symbol: str) -> int:
        check_object(obj)
        with _lock:
            self.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            self.engine.finalize_object()
            address = self.engine.get_function_address(symbol)
        if not address:
            raise RuntimeError(f"compilation failed: symbol {symbol} not found")
        return address

    def address(self, symbol: str) -> int:
        """The address of a symbol loaded earlier (0 if none)."""
        with _lock:
            return self.engine.get_function_address(symbol)


def check_object(obj: bytes) -> None:
    """Raise ``ValueError`` where an ELF64 object's section headers, or a section
    they describe, lie past its end (a truncated object: MCJIT would read past
    it and crash the process), or where Linux's object is no ELF64 one. Other
    systems' formats pass unchecked."""
    if obj[:5] != b"\x7fELF\x02" or len(obj) < 64:
        if obj[:4] == b"\x7fELF" or sys.platform.startswith("linux"):
            raise ValueError("the object code is not a whole ELF64 object")
        return
    order = "<" if obj[5] == 1 else ">"
    table, = struct.unpack_from(order + "Q", obj, 0x28)
    entry, count = struct.unpack_from(order + "HH", obj, 0x3A)
    if entry < 64 or table + entry * count > len(obj):
        raise ValueError(f"the object code is truncated ({len(obj)} bytes; its "
                         f"section headers end at {table + entry * count})")
    for k in range(count):
        kind, = struct.unpack_from(order + "I", obj, table + k * entry + 4)
        offset, size = struct.unpack_from(order + "QQ", obj, table + k * entry + 0x18)
        if kind != 8 and offset + size > len(obj):      # 8: SHT_NOBITS (.bss)
            raise ValueError(f"the object code is truncated ({len(obj)} bytes; "
                             f"section {k} ends at {offset + size})")


@_once
def engine() -> _Engine:
    """The process's MCJIT engine (made once)."""
    from . import printing
    printing.register()
    return _Engine()


def load(obj: bytes, symbol: str) -> int:
    return engine().load(obj, symbol)


@_once
def null_entry() -> int:
    """A kernel entry that does nothing, for measuring launch overheads."""
    text = "define void @tack_null(i8* %p, i64 %s, i64 %e) {\n  ret void\n}\n"
    return load(compile_glue(text), "tack_null")   # O3 of nothing took 12 ms


def typical_seconds(run, repeats: int = 41) -> float:
    """The lower-quartile wall time of ``run()`` after a warm-up call: robust
    to the preemptions of a busy machine, which only ever add time."""
    import time
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 4]
