"""The C-family generator: one emitter, with a small target class per dialect.

``CEmitter`` (``emitter.py``) turns typed, packed IR into C source; a
``CTarget`` subclass (``targets.py``: OpenCL, CUDA, HIP) says only what
differs: qualifiers, thread-index spelling, type names, conversions, math and
atomic spellings.

The package itself imports nothing: ``runtime/print_buffer.py`` reads the
print layout from ``prints`` at ``import tack``, and the emitter loads with a
GPU backend. Import names from their modules.
"""
