"""Cache settings: directory, mode and size limit, from the environment or configure().

Read when first needed (the first kernel compiled) and after ``configure``.
Bad values raise ``ValueError`` naming the variable.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from typing import Optional

MODES = ("write", "read", "bundle", "off")
_OFF = ("off", "0", "false", "no", "none")
_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
DEFAULT_SIZE = 1 << 30


def parse_mode(value: str, source: str = "TACK_CACHE") -> str:
    if not isinstance(value, str):
        raise TypeError(f"{source} takes write, read, bundle or off, not "
                        f"{type(value).__name__}")
    text = value.strip().lower()
    if text in _OFF:
        return "off"
    if text in MODES:
        return text
    raise ValueError(f"{source}={value!r}: use write, read, bundle or off")


def parse_size(value, source: str = "TACK_CACHE_SIZE") -> Optional[int]:
    """Bytes, a size such as ``500M`` or ``2G`` (binary units), or ``unlimited``."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{source} must not be negative, got {value}")
        return value
    text = str(value).strip().upper()
    if text in ("UNLIMITED", "NONE", "INF"):
        return None
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(I?B)?", text)
    if not match:
        raise ValueError(f"{source}={value!r}: use bytes, a size such as 500M or 2G, "
                         f"or unlimited")
    return int(float(match.group(1)) * _UNITS[match.group(2)])


def default_directory() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                            ".cache")
    return os.path.join(base, "tack")


def under_mpi() -> bool:
    """True when a launcher started this process as one of several MPI ranks."""
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS",
                 "SLURM_NTASKS"):
        value = os.environ.get(name)
        if value and (name == "PMIX_RANK" or value.isdigit() and int(value) > 1):
            return True
    return False


def mpi_rank() -> Optional[int]:
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"):
        value = os.environ.get(name)
        if value and value.isdigit():
            return int(value)
    return None


@dataclass(frozen=True)
class Settings:
    directory: str
    mode: str
    max_size: Optional[int]


_overrides: dict = {}
_lock = threading.Lock()
_current: Optional[Settings] = None


def configure(directory=None, mode=None, max_size=None) -> None:
    """Override the environment for this process (None: keep the environment's)."""
    global _current
    checked = {}
    if directory is not None:
        checked["directory"] = os.fsdecode(os.fspath(directory))   # bytes paths too
    if mode is not None:
        checked["mode"] = parse_mode(mode, "mode")
    if max_size is not None:
        checked["max_size"] = parse_size(max_size, "max_size")
    with _lock:
        _overrides.clear()
        _overrides.update(checked)
        _current = None


def current() -> Settings:
    global _current
    found = _current
    if found is None:
        with _lock:
            found = _current = _read()
    return found


def _read() -> Settings:
    directory = _overrides.get("directory") or os.environ.get("TACK_CACHE_DIR") \
        or default_directory()
    if "mode" in _overrides:
        mode = _overrides["mode"]
    else:
        raw = os.environ.get("TACK_CACHE")
        mode = parse_mode(raw) if raw is not None and raw.strip() else (
            "bundle" if under_mpi() else "write")
    if "max_size" in _overrides:
        size = _overrides["max_size"]
    else:
        raw = os.environ.get("TACK_CACHE_SIZE", "").strip()
        size = parse_size(raw) if raw else DEFAULT_SIZE
    return Settings(os.path.abspath(directory), mode, size)


def reset() -> None:
    """Forget the settings read so far (tests use this after changing the env)."""
    global _current
    with _lock:
        _current = None
