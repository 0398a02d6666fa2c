"""Streaming stores: the vector stores into write-only arrays bypass the caches.

A kernel that only writes an array (``ir.access.write_only_params``) makes the
cache fetch every line it stores to before overwriting it ("write-allocate"),
and the array then pushes other data out of the caches: on a 5-point stencil
a third of the memory traffic. Non-temporal stores skip both. They lose where
the array would have stayed in the caches for its next reader, so dispatch
takes the streaming variant only for disjoint arrays whose write-only ones
hold at least ``CPUBackend.streaming_bytes`` (``TACK_CPU_STREAM_BYTES``,
64 MiB unless set: docs/pipeline.md has the measurements behind it).

Three steps make the variant:

- ``widen`` (before O3) asks for 512-bit vectors where the CPU has them, so
  that one store writes one whole 64-byte line;
- the code generator peels the innermost loop until a streamed store's
  address is 64-byte aligned (``codegen/llvm/peel.py``): X86 has aligned
  non-temporal vector stores only, and lowers an unaligned one to 8-byte
  ``movnti`` stores of its elements, which cost more than they save;
- ``mark`` (after O3, once LLVM has vectorized the loops: a scalar store
  marked before vectorization keeps the loop from being vectorized) finds
  the vector stores whose ``!alias.scope`` is the one LLVM's inliner made
  for a write-only parameter of ``tack.body`` (named ``"tack.body: %name"``)
  and whose alignment covers the whole vector, adds ``!nontemporal``, and
  puts a ``fence seq_cst`` (``mfence``) before each return of the function,
  since non-temporal stores are weakly ordered and the pool's completion
  must see them. Unaligned vector stores (the peeled head) and scalar stores
  (loop remainders) stay ordinary.

Where the result would not pay (``pays``), the variant is built from the
ordinary code instead: no store became non-temporal (a loop LLVM left
scalar, such as one dividing integers, would only pay for the peel), or the
loop became predicated vector code (masked loads and stores: an ``if`` at a
stencil's borders), which the ordinary variant runs as a plain loop, a
2-D stencil with such an ``if`` 1.65x as fast.
"""

from __future__ import annotations

import re

_SCOPE = re.compile(r'^(!\d+) = distinct !\{!\d+, !\d+, !"tack\.body: %([\w.]+)"\}$', re.M)
_LIST = re.compile(r'^(!\d+) = !\{(!\d+)\}$', re.M)
_STORE = re.compile(r'^(\s*store <(\d+) x ([^>]+)> [^\n]*, align (\d+)[^\n]*!alias\.scope (!\d+)[^\n]*)$',
                    re.M)
_BYTES = {"i8": 1, "i16": 2, "half": 2, "bfloat": 2, "i32": 4, "float": 4, "i64": 8, "double": 8}
_NUMBERED = re.compile(r"^!(\d+) = ", re.M)
_HEADER = re.compile(r'^(define [^\n]*\))(\s*\{)$', re.M)
_DEFINE = re.compile(r'^define [^\n]*\{\n.*?^\}$', re.M | re.S)
_BLOCK = re.compile(r'^(?=[\w.$-]+:)', re.M)   # before each basic block's label


def widen(ir: str) -> str:
    """``ir`` with every function preferring 512-bit vectors (a preference: a
    CPU without AVX-512 keeps its widest)."""
    return _HEADER.sub(r'\1 "prefer-vector-width"="512"\2', ir)


def pays(marked: str, count: int) -> bool:
    """Whether the streaming variant ``marked`` (``count`` stores marked) is worth
    its peel: see the module doc. Masked loads or stores in a block that streams
    are predicated code; elsewhere (the peeled head's) they are not."""
    if not count:
        return False
    return not any("!nontemporal" in block and "@llvm.masked." in block
                   for block in _BLOCK.split(marked))


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
        text, lanes, element, align, scope = match.groups()
        if scope not in lists or int(align) < int(lanes) * _BYTES.get(element, 1 << 30):
            return text
        count += 1
        return f"{text}, !nontemporal {node}"

    def function(match):
        body = _STORE.sub(store, match.group(0))
        if f"!nontemporal {node}" not in body:
            return body
        return re.sub(r"^(\s*)ret void$", r"\1fence seq_cst\n\1ret void", body, flags=re.M)

    ir = _DEFINE.sub(function, ir)
    if not count:
        return ir, 0
    return ir + f"\n{node} = !{{i32 1}}\n", count
