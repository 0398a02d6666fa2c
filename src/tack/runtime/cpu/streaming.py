"""Streaming stores: the vector stores into write-only arrays bypass the caches.

A kernel that only writes an array (``dispatch.write_only_params``) makes the
cache fetch every line it stores to before overwriting it, and then evict it
again: on many CPUs a third of a 5-point stencil's memory traffic.
Non-temporal stores skip that. They can pay off only when the array does not
fit in the caches anyway, so dispatch takes the streaming variant only for
disjoint arrays whose write-only ones hold at least
``CPUBackend.streaming_bytes`` (``TACK_CPU_STREAM_BYTES``).

They are opt-in: with ``TACK_CPU_STREAM_BYTES`` unset no call streams. On
this project's 2-core VM (a Xeon reporting a 480 MiB L3), measured with the
variants taking turns in one process, a 5-point stencil on f32 ran at 25.6
GB/s streaming against 26.2 GB/s with ordinary stores at 4096x4096 (128 MB
of arrays), and at 24.2 against 25.4 GB/s at 12288x12288 (1.2 GB). Set the
variable on machines where write-allocate traffic costs more.

The marking runs on the optimized module, after LLVM has vectorized the
loops (a scalar store marked before vectorization keeps the loop from being
vectorized at 4-byte alignment). It finds the vector stores whose
``!alias.scope`` is the one LLVM's inliner made for a write-only parameter of
``tack.body`` (named ``"tack.body: %name"``), adds ``!nontemporal``, and puts
a ``fence seq_cst`` (``mfence``) before each return of the function, since
non-temporal stores are weakly ordered and the pool's completion must see
them. Scalar stores (loop remainders) stay as they are; X86 lowers a vector
store that is not 32-byte aligned to ``movnti`` stores of its elements.
"""

from __future__ import annotations

import re

_SCOPE = re.compile(r'^(!\d+) = distinct !\{!\d+, !\d+, !"tack\.body: %([\w.]+)"\}$', re.M)
_LIST = re.compile(r'^(!\d+) = !\{(!\d+)\}$', re.M)
_STORE = re.compile(r'^(\s*store <\d+ x [^>]+> [^\n]*!alias\.scope (!\d+)[^\n]*)$', re.M)
_NUMBERED = re.compile(r"^!(\d+) = ", re.M)
_DEFINE = re.compile(r'^define [^\n]*\{\n.*?^\}$', re.M | re.S)


def mark(ir: str, names) -> tuple:
    """``(ir, count)``: ``ir`` with its vector stores into the arrays ``names``
    made non-temporal (and fenced), and how many stores were marked."""
    scopes = {node: name for node, name in _SCOPE.findall(ir) if name in set(names)}
    lists = {node: scopes[inner] for node, inner in _LIST.findall(ir) if inner in scopes}
    if not lists:
        return ir, 0
    node = f"!{1 + max(int(n) for n in _NUMBERED.findall(ir))}"
    count = 0

    def store(match):
        nonlocal count
        if match.group(2) not in lists:
            return match.group(1)
        count += 1
        return f"{match.group(1)}, !nontemporal {node}"

    def function(match):
        body = _STORE.sub(store, match.group(0))
        if f"!nontemporal {node}" not in body:
            return body
        return re.sub(r"^(\s*)ret void$", r"\1fence seq_cst\n\1ret void", body, flags=re.M)

    ir = _DEFINE.sub(function, ir)
    if not count:
        return ir, 0
    return ir + f"\n{node} = !{{i32 1}}\n", count
