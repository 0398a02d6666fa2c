"""A higher recursion limit while Tack compiles a kernel.

Lowering, the passes and code generation recurse once or more per level of
an expression's nesting, and ``a + b + c + ...`` nests one level per term:
with Python's default limit of 1,000 frames, a sum of about 190 terms failed
(``RecursionError``). While any thread compiles, the limit is at least
``LIMIT``, enough for every expression Python itself compiles (a sum of
1,800 terms compiled, in a thread too, in 8 s; Python refuses to compile a
module with 3,000); the limit the process had comes back when the last
compile ends (unless someone changed it meanwhile).
"""

from __future__ import annotations

import sys
import threading
from contextlib import contextmanager

LIMIT = 12_000

_lock = threading.Lock()
_compiling = 0      # threads inside deep_recursion()
_saved = None       # the limit before the first of them raised it


@contextmanager
def deep_recursion():
    global _compiling, _saved
    with _lock:
        if _compiling == 0:
            _saved = sys.getrecursionlimit()
            if _saved < LIMIT:
                sys.setrecursionlimit(LIMIT)
        _compiling += 1
    try:
        yield
    finally:
        with _lock:
            _compiling -= 1
            if _compiling == 0 and _saved < LIMIT and sys.getrecursionlimit() == LIMIT:
                sys.setrecursionlimit(_saved)


NESTED_TOO_DEEPLY = ("an expression is nested too deeply to compile (Python's recursion "
                     "limit; a sum of some 2,000 terms reaches it): split it into "
                     "several assignments")
