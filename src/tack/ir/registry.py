"""Class-keyed registries: one per analysis and one per code-generation target.

``Registry.register(*classes)`` decorates a handler; ``lookup(cls)`` follows
the class's MRO, so a handler for a base class (``MathUnary``) serves every
subclass that has none of its own. Registering a class twice is an error, and
looking up a class nobody handles raises ``NotImplementedError`` naming it.
"""

from __future__ import annotations

from typing import Callable


class Registry:
    def __init__(self, name: str):
        self.name = name
        self._handlers: dict[type, Callable] = {}
        self._resolved: dict[type, Callable] = {}

    def register(self, *classes: type):
        def decorate(handler: Callable) -> Callable:
            for cls in classes:
                if cls in self._handlers:
                    raise RuntimeError(
                        f"{self.name}: {cls.__name__} is already registered")
                self._handlers[cls] = handler
            self._resolved.clear()
            return handler
        return decorate

    def lookup(self, cls: type) -> Callable:
        try:
            return self._resolved[cls]
        except KeyError:
            pass
        for base in cls.__mro__:
            handler = self._handlers.get(base)
            if handler is not None:
                self._resolved[cls] = handler
                return handler
        raise NotImplementedError(f"{self.name} does not support {cls.__name__}")

    def __call__(self, node, *args, **kwargs):
        return self.lookup(type(node))(node, *args, **kwargs)
