"""What the CUDA context and the HIP device have in common: bracketing."""

from __future__ import annotations

from contextlib import contextmanager


class Bracketing:
    """A device model with ``enter()`` (make this device current if its rules
    say so; return what to restore, or None) and ``leave(previous)``; ``with
    x.active():`` brackets one operation with them."""

    @contextmanager
    def active(self):
        previous = self.enter()
        try:
            yield
        finally:
            self.leave(previous)
