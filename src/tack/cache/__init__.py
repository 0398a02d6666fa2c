"""``tack.cache``: the disk cache of IR templates and compiled variants, and bundles.

See ``docs/cache.md``. The functions here mirror ``python -m tack.cache``.
"""

from __future__ import annotations

import os

from . import settings as _settings
from .bundle import load_bundle, pack
from .core import cache as _cache
from .store import CacheWarning
from . import store as _store


def configure(directory=None, mode=None, max_size=None) -> None:
    """Set the directory, mode and size limit for this process, over
    TACK_CACHE_DIR, TACK_CACHE and TACK_CACHE_SIZE (None: the environment's).
    Takes effect at the next kernel compiled."""
    _settings.configure(directory, mode, max_size)
    _cache()._usable.clear()
    _cache()._next_prune_check = 0.0  # a newly configured directory is looked at at once


def settings() -> tuple:
    """(directory, mode, MPI rank or None) as they apply now."""
    current = _settings.current()
    return current.directory, current.mode, _settings.mpi_rank()


def size_limit():
    """The size limit in bytes, or None for no limit."""
    return _settings.current().max_size


def prune(directory=None, max_size=None) -> tuple:
    """Delete least recently used entries (every Tack version) until they take at
    most 90% of ``max_size`` (default: the size limit), and abandoned temporary
    files; bundles are kept. Returns (files removed, bytes left)."""
    current = _settings.current()
    limit = current.max_size if max_size is None else _settings.parse_size(
        max_size, "max_size")
    return _store.prune(os.fsdecode(os.fspath(directory or current.directory)), limit)


def clear(directory=None, all_versions=False) -> int:
    """Delete this Tack version's entries and bundle, or every version's; returns
    the number of files removed. Only names the cache makes are touched."""
    from .bundle import bundle_path, is_bundle_name
    from .core import versions
    root = os.fsdecode(os.fspath(directory or _settings.current().directory))
    removed = 0
    version = versions()["tack"]
    for path, _, _ in _store.entry_files(root):
        if all_versions or os.path.basename(os.path.dirname(path)) == version:
            removed += _remove(path)
    names = os.listdir(root) if os.path.isdir(root) else []
    for name in names:
        path = os.path.join(root, name)
        if is_bundle_name(name) and (all_versions or path == bundle_path(root)):
            removed += _remove(path)
    _cache().memory.clear()
    return removed


def _remove(path: str) -> int:
    try:
        os.remove(path)
        return 1
    except OSError:
        return 0


def describe(directory=None) -> dict:
    """The settings, entry count and size, and the bundle, as a dict."""
    from .bundle import bundle_path
    current = _settings.current()
    root = os.fsdecode(os.fspath(directory or current.directory))
    entries = _store.entry_files(root)
    bundle = bundle_path(root)
    return {
        "directory": root, "mode": current.mode, "max_size": current.max_size,
        "rank": _settings.mpi_rank(), "entries": len(entries),
        "bytes": sum(size for _, size, _ in entries),
        "bundle": bundle if os.path.exists(bundle) else None,
        "bundle_entries_loaded": len(_cache().memory),
    }


def stats() -> dict:
    """Hit, miss and write counters of this process."""
    return dict(_cache().stats)


def reset_stats() -> None:
    """Zero this process's hit, miss and write counters (see :func:`stats`)."""
    for name in _cache().stats:
        _cache().stats[name] = 0


__all__ = ["configure", "settings", "size_limit", "load_bundle", "pack", "prune",
           "clear", "describe", "stats", "reset_stats", "CacheWarning"]
