"""``@tack.func``: device functions, inlined at each call site in a kernel."""

from __future__ import annotations

import types

from .source import Source, read_source


def _require_def(fn, decorator: str) -> None:
    if not isinstance(fn, types.FunctionType) or fn.__name__ == "<lambda>":
        raise TypeError(f"@tack.{decorator} decorates a function defined with def, "
                        f"not {type(fn).__name__}"
                        + (" (a lambda)" if getattr(fn, "__name__", "") == "<lambda>"
                           else ""))


class Func:
    """A device function: callable only from kernels, where it is inlined."""

    def __init__(self, fn):
        _require_def(fn, "func")
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn
        self.source: Source = read_source(fn, "Device function")

    @property
    def name(self) -> str:
        return self.fn.__name__

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"@tack.func '{self.name}' cannot be called from Python. Device "
            f"functions run inside kernels only: call it from a @tack.kernel.")

    def __repr__(self) -> str:
        return f"<tack.func {self.name}>"


def func(fn) -> Func:
    """Decorator: mark ``fn`` as a device function (see ``docs/language.md``)."""
    return Func(fn)
