"""``per_function``: an analysis of a whole function, worked out once per function.

IR functions are immutable, so what an analysis finds in one never changes.
Dispatch and the passes ask the same questions of one function several times
(its shape dependencies, its write-only arrays, the names it reads): on a
disk-cache hit of a large kernel those walks took as long as decoding it.
Functions are keyed by identity, not by their (deep) hash: each entry holds
its function, so an id cannot be reused while the entry lives, and only the
last ``SIZE`` functions of each analysis are kept. The results are shared:
callers must not change them.
"""

from __future__ import annotations

import functools
from collections import OrderedDict

SIZE = 64


def per_function(analysis):
    """``analysis(fn)``, remembered for the last ``SIZE`` functions it was asked of."""
    found: OrderedDict = OrderedDict()

    @functools.wraps(analysis)
    def remembered(fn):
        entry = found.get(id(fn))
        if entry is not None and entry[0] is fn:
            return entry[1]
        value = analysis(fn)
        found[id(fn)] = (fn, value)
        while len(found) > SIZE:
            try:
                found.popitem(last=False)
            except KeyError:     # another thread emptied it first
                break
        return value
    return remembered
