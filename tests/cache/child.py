"""A new process for the cache tests: ``python child.py SPEC_JSON``.

SPEC: ``modules`` (folders to import from), ``calls``: ``[module, kernel,
dtype, n]`` each called once as ``kernel(a, out)`` on inputs drawn from
``seed`` (the parent draws the same ones), and optionally ``start_file``
(wait for it to exist, so several children start together), ``load_bundle``
and ``forbid_pickle``.
Prints one JSON line: the outputs (and returned values), the cache's stats,
the warnings and which of the compiler's modules (``COMPILER``) were loaded.
"""

import importlib
import json
import os
import sys
import time
import warnings

# The lowering, the variant passes and the code generators: a process whose
# kernels all come from the cache has no use for them.
COMPILER = ("tack.lang.lower.kernel", "tack.ir.passes.pipeline",
            "tack.codegen.llvm.module", "tack.codegen.c_family.emitter")


def inputs(seed, index, dtype, n):
    import numpy as np
    gen = np.random.default_rng([seed, index])
    if np.dtype(dtype).kind == "f":
        return gen.uniform(-8.0, 8.0, n).astype(dtype)
    info = np.iinfo(dtype)
    return gen.integers(max(info.min, -40), min(info.max, 40), n, endpoint=True,
                        dtype=dtype)


def forbid_pickle():
    """Make every pickle and unpickle entry point fail loudly."""
    import pickle
    import _pickle

    def refuse(*args, **kwargs):
        raise AssertionError("the kernel cache used pickle")
    for module in (pickle, _pickle):
        for name in ("loads", "load", "dumps", "dump", "Unpickler", "Pickler",
                     "_loads", "_load", "_dumps", "_dump"):
            if hasattr(module, name):
                setattr(module, name, refuse)
    sys.addaudithook(lambda event, args: event == "pickle.find_class" and refuse())


def main(spec):
    for folder in spec.get("modules", []):
        sys.path.insert(0, folder)
    import numpy as np
    import tack
    import tack.cache
    if spec.get("forbid_pickle"):
        forbid_pickle()
    if spec.get("start_file"):
        deadline = time.monotonic() + 120
        while not os.path.exists(spec["start_file"]):
            if time.monotonic() > deadline:
                sys.exit("no start signal within 120 s")
            time.sleep(0.005)
    outputs, values, loaded = [], [], None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if spec.get("load_bundle"):
            loaded = tack.cache.load_bundle()
        for index, (module, name, dtype, n) in enumerate(spec["calls"]):
            kernel = getattr(importlib.import_module(module), name)
            a = tack.array(inputs(spec["seed"], index, dtype, n))
            out = tack.array(np.zeros(n, dtype=dtype))
            returned = kernel(a, out)
            outputs.append(out.numpy().tolist())
            values.append(returned)
    print(json.dumps({
        "outputs": outputs, "values": values, "stats": tack.cache.stats(), "loaded": loaded,
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught
                     if issubclass(w.category, RuntimeWarning)],
        "compiler": [m for m in COMPILER if m in sys.modules],
    }))


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
