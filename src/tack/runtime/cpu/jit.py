"""Native compilation for the host CPU: O3 with llvmlite, object code, MCJIT.

A variant is compiled to object code (``compile_object``) and then loaded
into one process-wide MCJIT engine (``load``). Keeping the two steps apart
means a cached object file loads exactly like a fresh one.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import llvmlite.binding as llvm

from . import streaming

_lock = threading.Lock()


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


@lru_cache(maxsize=None)
def host() -> HostTarget:
    return HostTarget()


def optimized_module(text: str, streamed=()):
    """The module after O3, as llvmlite's ModuleRef; with ``streamed`` (the names
    of write-only arrays) its vector stores into them are non-temporal
    (``streaming.py``)."""
    target = host()
    module = target.parse(streaming.widen(text) if streamed else text)
    target.optimize(module)
    if streamed:
        marked, count = streaming.mark(str(module), streamed)
        if count:
            module = target.parse(marked)
    return module


def compile_object(text: str, streamed=()) -> bytes:
    """LLVM IR text to an object file for the host."""
    module = optimized_module(text, streamed)
    return host().machine.emit_object(module)


def compile_glue(text: str) -> bytes:
    """Hand-written straight-line IR to an object file, without optimization."""
    target = host()
    return target.glue_machine.emit_object(target.parse(text))


class _Engine:
    """One MCJIT engine for the process; object files are added to it."""

    def __init__(self):
        target = host()
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), target.machine)

    def load(self, obj: bytes, symbol: str) -> int:
        with _lock:
            self.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            self.engine.finalize_object()
            address = self.engine.get_function_address(symbol)
        if not address:
            raise RuntimeError(f"compilation failed: symbol {symbol} not found")
        return address


@lru_cache(maxsize=None)
def engine() -> _Engine:
    from . import printing
    printing.register()
    return _Engine()


def load(obj: bytes, symbol: str) -> int:
    return engine().load(obj, symbol)


@lru_cache(maxsize=None)
def null_entry() -> int:
    """A kernel entry that does nothing, for measuring launch overheads."""
    text = "define void @tack_null(i8* %p, i64 %s, i64 %e) {\n  ret void\n}\n"
    return load(compile_object(text), "tack_null")


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
