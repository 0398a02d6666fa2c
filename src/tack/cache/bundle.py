"""Bundles: every entry of one Tack version in one file, read once and broadcast.

Format: ``TACKBDL\\x01`` | u64 header length | header (JSON: the versions and
an index of ``[key, kind, offset, length, sha256]``) | the entries, each a
whole entry file as ``store.py`` writes it.

``load_bundle(comm=...)`` is collective: rank 0 reads and verifies the file,
broadcasts its size (-1 when it cannot be used), then the bytes in chunks (so
bundles over 2 GiB work), as buffers, never pickled objects; every rank fills
its in-memory cache from the same bytes. A failure on rank 0, of any kind,
reaches every rank as the same outcome: no entries, kernels compile, one
warning (on rank 0). Each rank holds the bundle once: the file is read into
the buffer that is broadcast, and the entries are views of it (a lookup
copies the one entry it uses).

``pack(since=...)`` packs only the entries used (written, or hit outside read
mode: the LRU stamp) since a moment, such as the start of a warm-up run, so
that a bundle need not carry every entry the directory ever held.
"""

from __future__ import annotations

import hashlib
import json
import numbers
import os
import struct

from . import settings as S
from . import store
from .core import cache, versions

MAGIC = b"TACKBDL\x01"
_SIZE = struct.Struct("<Q")
CHUNK = 1 << 28   # bytes per broadcast message


def bundle_path(directory: str) -> str:
    return os.path.join(directory, f"bundle-{versions()['tack']}.tackb")


def is_bundle_name(name: str) -> bool:
    return name.startswith("bundle-") and name.endswith(".tackb")


def pack(directory=None, *, since=None) -> tuple:
    """Write this Tack version's entries into one bundle; returns (path, count).

    ``since``: a POSIX time (``time.time()``); only entries used at or after it
    go in (their modification time, which a write or a hit outside read mode
    sets), give or take ``CLOCK_MARGIN`` seconds: file times come from a
    coarser clock than ``time.time()`` (here up to 7 ms behind it), or from
    a file server's. A ``since`` that no entry was used after is a
    ``ValueError`` (and no bundle is written: a warm-up that used none, run
    in read mode or against another directory, must not replace a good
    bundle with an empty one). ``OSError`` if the bundle could not be
    written: unlike an entry's, this write is what the caller asked for."""
    if since is not None:
        if isinstance(since, bool) or not isinstance(since, numbers.Real):
            raise TypeError(f"pack() takes a POSIX time (a number) for since, not "
                            f"{type(since).__name__}")
        since = float(since)        # a NumPy number too
    root = os.fsdecode(os.fspath(directory or S.current().directory))
    version_dir = os.path.join(root, versions()["tack"])
    index, blobs, offset = [], [], 0
    names = sorted(os.listdir(version_dir)) if os.path.isdir(version_dir) else []
    for name in names:
        key, dot, kind = name.partition(".")
        if not dot or "." + kind not in store.ENTRY_SUFFIXES:
            continue
        path = os.path.join(version_dir, name)
        if since is not None and not _used_since(path, since):
            continue
        data = store.read_file(path)
        if data is None or store.decode_entry(data, dict(versions(), kind=kind,
                                                         key=key)) is None:
            continue  # damaged entries stay out of the bundle
        index.append([key, kind, offset, len(data), hashlib.sha256(data).hexdigest()])
        blobs.append(data)
        offset += len(data)
    if since is not None and not index:
        raise ValueError(f"pack(): no entry of {version_dir} was used since {since} "
                         f"(a warm-up in read mode, or with another TACK_CACHE_DIR?); "
                         f"the bundle was not written")
    header = json.dumps(dict(versions(), index=index), sort_keys=True).encode()
    path = bundle_path(root)
    store.publish(path, MAGIC + _SIZE.pack(len(header)) + header + b"".join(blobs))
    return path, len(index)


CLOCK_MARGIN = 1.0   # seconds: see pack()


def _used_since(path: str, since: float) -> bool:
    try:
        return os.stat(path).st_mtime >= since - CLOCK_MARGIN
    except OSError:
        return False    # gone (pruned meanwhile): not packed


def parse(data) -> dict:
    """``{key: entry}`` of a bundle (bytes or a buffer), each entry a read-only
    view of ``data``; ``ValueError`` saying why it is unusable."""
    data = memoryview(data).cast("B").toreadonly()
    if data[:8] != MAGIC:
        raise ValueError("not a Tack bundle")
    try:
        (size,) = _SIZE.unpack_from(data, 8)
        header = json.loads(bytes(data[16:16 + size]))
    except (struct.error, ValueError, RecursionError) as exc:   # deep JSON nesting
        raise ValueError(f"damaged header ({type(exc).__name__}: {exc})") from None
    if not isinstance(header, dict):
        raise ValueError("damaged header (not a JSON object)")
    mine = versions()
    foreign = [k for k in mine if header.get(k) != mine[k]]
    if foreign:
        raise ValueError(f"made by another version ({', '.join(foreign)} differ)")
    blob = data[16 + size:]
    index = header.get("index")
    if not isinstance(index, list):
        raise ValueError("damaged index (missing, or not a list)")
    entries = {}
    try:
        for item in index:
            if not (isinstance(item, list) and len(item) == 5):
                raise TypeError("an entry is not [key, kind, offset, length, digest]")
            key, kind, offset, length, digest = item
            if offset < 0 or length < 0 or offset + length > len(blob):
                raise ValueError("an index entry points past the end of the file")
            piece = blob[offset:offset + length]
            if hashlib.sha256(piece).hexdigest() != digest:
                raise ValueError(f"entry {key}.{kind} is damaged")
            entries[key] = piece
    except (TypeError, AttributeError) as exc:   # an index of the wrong shape
        raise ValueError(f"damaged index ({exc})") from None
    return entries


def _read(path: str):
    """The bundle's bytes, as a writable NumPy byte array (the buffer a
    collective load broadcasts), if it and its directory pass the cache's
    trust rule (its code is executed); else ``ValueError`` (or ``OSError``)
    saying why."""
    import numpy as np
    reason = store.unsafe_reason(os.path.dirname(os.path.abspath(path)))
    if reason:
        raise ValueError(f"its directory is not trusted: {reason}")
    with store.open_regular(path) as f:
        status = os.fstat(f.fileno())
        reason = store.owner_reason(status)
        if reason:
            raise ValueError(f"the file is not trusted: {reason}")
        data = np.empty(status.st_size, np.uint8)
        if f.readinto(data) != status.st_size or f.read(1):
            raise ValueError("the file changed while it was read")
        return data


def load_bundle(path=None, comm=None) -> int:
    """Load a bundle (default: the cache directory's, for this version) into the
    process; collective over ``comm`` when given. Returns the number of entries."""
    path = os.fsdecode(os.fspath(path or bundle_path(S.current().directory)))
    if comm is None:
        try:
            entries = parse(_read(path))
        except (OSError, ValueError) as exc:
            store.warn(f"Tack's kernel bundle {path} is not used: {exc}; kernels "
                       f"compile instead")
            return 0
        return _install(entries)
    if not all(callable(getattr(comm, name, None)) for name in ("Get_rank", "Bcast")):
        raise TypeError(f"load_bundle() takes an mpi4py communicator for comm, not "
                        f"{type(comm).__name__}")
    return _load_collective(path, comm)


def _install(entries: dict) -> int:
    cache().memory.update(entries)
    return len(entries)


def _load_collective(path: str, comm) -> int:
    import numpy as np
    rank = comm.Get_rank()
    data, entries, reason = b"", None, ""
    if rank == 0:
        try:
            data = _read(path)
            entries = parse(data)
        except Exception as exc:  # anything: the other ranks wait for the size
            reason, entries = str(exc), None
    # Buffers only (no pickled objects): the size, -1 when rank 0 cannot use it.
    size = np.array([len(data) if entries is not None else -1], np.int64)
    comm.Bcast(size, root=0)
    size = int(size[0])
    if size < 0:
        if rank == 0:
            store.warn(f"Tack's kernel bundle {path} is not used: {reason}; kernels "
                       f"compile instead")
        return 0
    buffer = data if rank == 0 else np.empty(size, np.uint8)
    for start in range(0, size, CHUNK):
        comm.Bcast(buffer[start:start + CHUNK], root=0)
    if rank != 0:
        try:
            entries = parse(buffer)
        except ValueError as exc:  # this rank runs another Tack, Python or LLVM
            store.warn(f"Tack's kernel bundle {path} is not used on rank {rank}: "
                       f"{exc}; kernels compile instead")
            return 0
    return _install(entries)
