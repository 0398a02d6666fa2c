"""asyncio forms of waiting: ``tack.sync_async()`` and ``Array.numpy_async()``.

A backend with queued launches returns a marker from ``async_marker()`` and
the wait runs in a worker thread, off the event loop; a backend whose
launches complete before returning (the CPU) returns None and is waited on
inline.
"""

from __future__ import annotations

import asyncio

from .device import known_devices


async def _wait(backend) -> None:
    marker = backend.async_marker()
    if marker is None:
        backend.synchronize()
        return
    await asyncio.get_running_loop().run_in_executor(None, marker.wait)


async def sync_async() -> None:
    """Wait for the launches made before the call, on every device; a failed
    queued launch raises here, after the other devices were waited for."""
    errors = []
    for dev in known_devices():
        try:
            await _wait(dev.backend)
        except Exception as exc:  # re-raised once every device was waited for
            errors.append(exc)
    if errors:
        raise errors[0]


async def numpy_async(array):
    """``array.numpy()`` after waiting off the event loop."""
    await _wait(array.device.backend)
    return array.numpy()
