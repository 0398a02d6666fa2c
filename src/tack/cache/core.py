"""The process's kernel cache: lookups and stores of IR templates and variants.

Keys are SHA-256 content hashes (see ``kernels.py``); values are entry files
(``store.py``). A bundle loaded into the process (``bundle.py``) answers
first. Modes: ``write`` reads and writes the directory; ``read`` only reads
it (it does not even refresh the entries' last-use times); ``bundle``
answers from the loaded bundle, reads the directory only on rank 0 (or
without MPI), and writes there only on rank 0; ``off`` does nothing.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import struct
import sys
import threading
import time

from . import settings as S
from . import store

PRUNE_CHECK_SECONDS = 60.0   # how often a storing process looks at the cache's size

FORMAT = 1
_META = struct.Struct("<I")


@functools.lru_cache(maxsize=None)
def versions() -> dict:
    """What every entry must match: formats, versions, and the compiler itself."""
    import llvmlite.binding as llvm
    from .. import __version__
    return {"format": FORMAT, "tack": __version__,
            "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
            "llvm": ".".join(map(str, llvm.llvm_version_info)),
            "compiler": compiler_fingerprint()}


def compiler_fingerprint() -> str:
    """A hash of Tack's own source files, so a changed compiler never reuses
    entries made by another build with the same version number."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                digest.update(os.path.relpath(path, root).encode())
                with open(path, "rb") as f:
                    digest.update(f.read())
    return digest.hexdigest()[:16]


class KernelCache:
    def __init__(self):
        self._lock = threading.Lock()
        self.memory: dict = {}        # key -> whole entry (a view), from bundles
        self.stats = {"hits": 0, "misses": 0, "writes": 0}
        self._usable: dict = {}       # directory -> bool
        self._next_prune_check = 0.0  # time.monotonic() of the next size check

    # -- where entries live -----------------------------------------------------------
    def settings(self) -> S.Settings:
        return S.current()

    def version_directory(self, directory: str) -> str:
        return os.path.join(directory, versions()["tack"])

    def _directory_ok(self, settings: S.Settings) -> bool:
        known = self._usable.get(settings.directory)
        if known is None:
            known = store.usable_directory(
                settings.directory, create=settings.mode in ("write", "bundle"),
                inner=self.version_directory(settings.directory))
            self._usable[settings.directory] = known
        return known

    def _reads_files(self, settings) -> bool:
        if settings.mode == "off":
            return False
        if settings.mode == "bundle" and S.mpi_rank() not in (None, 0):
            return False
        return self._directory_ok(settings)

    def _writes_files(self, settings) -> bool:
        if settings.mode not in ("write", "bundle"):
            return False
        if settings.mode == "bundle" and S.mpi_rank() not in (None, 0):
            return False
        return self._directory_ok(settings)   # checked (and warned about) once

    def _path(self, settings, key: str, kind: str) -> str:
        return os.path.join(self.version_directory(settings.directory), f"{key}.{kind}")

    # -- lookups ------------------------------------------------------------------
    def lookup(self, kind: str, key: str, decode=None, failure: str = ""):
        """The payload stored for (kind, key), or None (a miss).

        ``decode``: a function of the payload whose result is returned instead;
        where it raises, the entry is a miss too, warned of as ``failure`` (what
        could not be done) with the entry's place and the error."""
        settings = self.settings()
        if settings.mode == "off":
            return None
        expected = dict(versions(), kind=kind, key=key)
        data = self.memory.get(key)
        if data is not None:    # a view of the bundle's one buffer: this entry's bytes
            data = bytes(data)
        source = "bundle"
        path = None
        if data is None and self._reads_files(settings):
            path = self._path(settings, key, kind)
            data = store.read_file(path)
            source = path
        if data is None:
            self._count("misses")
            return None
        decoded = store.decode_entry(data, expected)
        if decoded is None:
            store.warn(f"Tack's kernel cache ignored a damaged or foreign entry "
                       f"({source}); the kernel is compiled again")
            self._count("misses")
            return None
        payload = decoded[1]
        if decode is not None:
            try:
                payload = decode(payload)
            except Exception as exc:    # an entry that does not decode is a miss
                store.warn(f"Tack's kernel cache {failure} ({source}: {exc}); the "
                           f"kernel is compiled again")
                self._count("misses")
                return None
        if path is not None and settings.mode != "read":
            store.touch(path)   # the LRU stamp; read mode changes nothing
        self._count("hits")
        return payload

    def store(self, kind: str, key: str, payload: bytes) -> None:
        settings = self.settings()
        if settings.mode == "off" or not self._writes_files(settings):
            return
        header = dict(versions(), kind=kind, key=key)
        if store.write_atomic(self._path(settings, key, kind),
                              store.encode_entry(header, payload)):
            self._count("writes")
            self._maybe_prune(settings)

    def _maybe_prune(self, settings) -> None:
        """Past the size limit, prune: the size is looked at on the first store
        and then at most every PRUNE_CHECK_SECONDS, and a directory is pruned at
        most once an hour (``store.prune_due``, asked only when past the limit,
        so a look that finds nothing to do does not use up the hour)."""
        now = time.monotonic()
        if settings.max_size is None or now < self._next_prune_check:
            return
        self._next_prune_check = now + PRUNE_CHECK_SECONDS
        directory = settings.directory
        if (store.entries_size(directory) > settings.max_size
                and store.prune_due(directory)):
            store.prune(directory, settings.max_size, only_past_limit=True)

    def _count(self, name: str) -> None:
        with self._lock:
            self.stats[name] += 1


_cache = KernelCache()


def cache() -> KernelCache:
    return _cache


# -- payload codecs ---------------------------------------------------------------

def pack_payload(meta: dict, blob: bytes = b"") -> bytes:
    head = json.dumps(meta, sort_keys=True).encode()
    return _META.pack(len(head)) + head + blob


def unpack_payload(payload: bytes):
    (size,) = _META.unpack_from(payload, 0)
    return json.loads(payload[4:4 + size]), payload[4 + size:]
