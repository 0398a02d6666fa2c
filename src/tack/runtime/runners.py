"""Signature tables of runners, bounded in the devices made with options.

A runner holds its device, and so the device's thread pool. A program that
makes a device per task (``tack.device("cpu", num_threads=...)`` is a new
device on every call) would keep every one of them alive through the tables
of the kernels they ran. A :class:`Runners` table keeps the runners of at most
``OPTIONED_RUNNERS`` such devices (all of each one's signatures), dropping
the oldest device's; runners on the shared devices (``tack.device("cpu")``
and the like) are kept for good.
"""

from __future__ import annotations

from .device import is_shared

OPTIONED_RUNNERS = 4


class Runners(dict):
    """key -> runner. Warm calls read it with ``dict.get``; ``put`` and ``clear``
    are called under the owner's lock, but for the ``clear`` of a collected
    device class's finalizer (``expanding._drop``), which may come between
    any two steps of a ``put``."""

    __slots__ = ("optioned",)

    def __init__(self):
        super().__init__()
        # device made with options -> the keys of its runners; oldest device first
        self.optioned: dict = {}

    def put(self, key, runner) -> None:
        self[key] = runner
        for device in runner_devices(runner):
            if not is_shared(device):
                keys = self.optioned.pop(device, [])
                if key not in keys:
                    keys.append(key)
                self.optioned[device] = keys   # now the newest
        while len(self.optioned) > OPTIONED_RUNNERS:
            oldest = next(iter(self.optioned), None)   # None: a finalizer's clear
            for old in self.optioned.pop(oldest, ()):
                self.pop(old, None)

    def clear(self) -> None:
        super().clear()
        self.optioned.clear()


def runner_devices(runner) -> tuple:
    """The devices a runner holds: where it runs (for an ``Expanding``, where its
    signature's arrays live) and the default it was made under."""
    held = getattr(runner, "devices", None) or (getattr(runner, "device", None),)
    return tuple(d for d in (*held, runner.default) if d is not None)
