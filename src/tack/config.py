"""Every ``TACK_*`` environment variable, parsed in one place.

Values are read when asked for (a backend reads its variables when it is
constructed), and a bad value raises ``ValueError`` naming the variable.
"""

from __future__ import annotations

import math
import operator
import os

_OFF = {"", "0", "false", "no", "off"}


def env_flag(name: str) -> bool:
    """A boolean flag: unset, empty, 0, false, no, off (any case) are off."""
    return os.environ.get(name, "").strip().lower() not in _OFF


def env_int(name: str, default=None):
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None


def env_float(name: str, default=None):
    """A finite number of 0 or more (NaN would make every comparison false)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None
    if not 0 <= value < math.inf:
        raise ValueError(f"{name} must be a finite number of 0 or more, got {raw!r}")
    return value


# The most CPU worker threads a device takes: a pool past it is a typo (the
# pool makes its threads at the first launch, and runs out of memory first).
MAX_CPU_THREADS = 4096


def cpu_threads(explicit=None) -> int:
    """``num_threads=`` if given, else ``TACK_CPU_THREADS``, else the CPU count."""
    name = "num_threads"
    if explicit is None:
        explicit, name = env_int("TACK_CPU_THREADS"), "TACK_CPU_THREADS"
    elif isinstance(explicit, bool) or not hasattr(type(explicit), "__index__"):
        raise ValueError(f"num_threads must be an integer, got {explicit!r}")
    else:
        explicit = operator.index(explicit)   # NumPy integers too, as in shapes
    if explicit is None:
        explicit = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else (os.cpu_count() or 1)
    elif explicit > MAX_CPU_THREADS:
        raise ValueError(f"{name} must be at most {MAX_CPU_THREADS}, got {explicit}")
    return max(1, explicit)


def cpu_pool_kind() -> str:
    """``python`` for the ThreadPoolExecutor fan-out."""
    raw = os.environ.get("TACK_CPU_POOL", "").strip().lower()
    if raw in ("python", "0", "off", "no", "false"):
        return "python"
    if raw in ("", "native", "jit"):
        return "native"
    raise ValueError(f"TACK_CPU_POOL must be 'python', 'native' or unset, got {raw!r}")


def cpu_policy() -> None:
    raw = os.environ.get("TACK_CPU_POLICY", "").strip()
    if raw not in ("", "v2"):
        raise ValueError(f"TACK_CPU_POLICY={raw!r} is not a threading policy: the "
                         f"only policy is v2 (leave the variable unset)")
