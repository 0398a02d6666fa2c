"""The C-family generator: one emitter, with a small target class per dialect.

``CEmitter`` turns typed, packed IR into C source; a ``CTarget`` subclass
(``OpenCLTarget``; CUDA and HIP later) says only what differs: qualifiers,
thread-index spelling, type names, conversions, math and atomic spellings.
"""

from .emitter import CEmitter, generate_c_source
from .targets import CTarget, OpenCLTarget

__all__ = ["CEmitter", "CTarget", "OpenCLTarget", "generate_c_source"]
