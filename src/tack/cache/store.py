"""Cache entries on disk: the safety check, the entry format, atomic writes, pruning.

Layout: ``<directory>/<tack version>/<key>.ir`` and ``<key>.variant``, plus
``<directory>/bundle-<tack version>.tackb``. An entry file is

    magic (8 bytes) | u32 header length | header (JSON) | u64 payload length |
    payload | SHA-256 of header and payload (32 bytes)

The header names the kind, the key and the versions it was made with. Any
file that does not parse, verify and match is a miss (with a warning), never
an error. Writes go to a temporary file in the same directory, are fsync'ed
and then renamed over the entry, so readers see a whole entry or none, with
any number of writers.

Trust boundary: compiled code in the cache is executed. A directory is only
used when it belongs to the current user, is writable by nobody else, and is
not reached through a symbolic link; otherwise the cache is off for the
process, with a ``RuntimeWarning``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import struct
import tempfile
import threading
import time
import warnings

MAGIC = b"TACKENT\x01"
_HEAD = struct.Struct("<I")
_SIZE = struct.Struct("<Q")
PRUNE_INTERVAL = 3600.0
PRUNE_STAMP = "last-prune"
ENTRY_SUFFIXES = (".ir", ".variant")
# The only names pruning and clearing touch: a SHA-256 key and an entry suffix.
ENTRY_NAME = re.compile(r"[0-9a-f]{64}\.(ir|variant)")
TEMP_PREFIX = ".tmp-"


class CacheWarning(RuntimeWarning):
    """A cache problem that Tack worked around (a miss, an unusable directory)."""


def warn(message: str) -> None:
    warnings.warn(message, CacheWarning, stacklevel=3)


# -- the directory -----------------------------------------------------------------

def unsafe_reason(path: str):
    """Why ``path`` may not hold code Tack executes, or None (OSError if missing)."""
    absolute = os.path.abspath(path)
    if absolute.startswith("//"):   # POSIX keeps two leading slashes; Linux reads one
        absolute = "/" + absolute.lstrip("/")
    if os.path.realpath(path) != absolute:
        return "it is reached through a symbolic link"
    return owner_reason(os.stat(path))


def owner_reason(info: os.stat_result):
    """Why a file or directory with this ``stat`` is not trusted, or None."""
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return "it belongs to another user"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "other users can write to it"
    return None


def usable_directory(path: str, create: bool, inner: str = None) -> bool:
    """True when ``path``, and ``inner`` below it if it exists (the version
    directory that holds the entries), may hold executable cache entries
    (see module doc)."""
    try:
        if not os.path.isdir(path):
            if not create:
                return False
            make_private_directories(path)
        reason = unsafe_reason(path)
        if reason is None and inner is not None and os.path.lexists(inner):
            reason, path = unsafe_reason(inner), inner
    except OSError as exc:
        warn(f"Tack's kernel cache is off: cannot use {path}: {exc}")
        return False
    if reason:
        warn(f"Tack's kernel cache is off: {path} is not used because {reason}")
        return False
    return True


# -- entries ---------------------------------------------------------------------

def encode_entry(header: dict, payload: bytes) -> bytes:
    head = json.dumps(header, sort_keys=True).encode()
    digest = hashlib.sha256(head + payload).digest()
    return MAGIC + _HEAD.pack(len(head)) + head + _SIZE.pack(len(payload)) + payload + digest


def decode_entry(data: bytes, expected: dict):
    """(header, payload) if ``data`` is a whole, intact entry matching ``expected``
    (every key of ``expected`` equal in the header); else ``None``."""
    try:
        if data[:8] != MAGIC:
            return None
        (head_len,) = _HEAD.unpack_from(data, 8)
        head_end = 12 + head_len
        (size,) = _SIZE.unpack_from(data, head_end)
        start = head_end + 8
        payload = data[start:start + size]
        digest = data[start + size:start + size + 32]
        if len(payload) != size or len(digest) != 32 or len(data) != start + size + 32:
            return None
        head = data[12:head_end]
        if hashlib.sha256(head + payload).digest() != digest:
            return None
        header = json.loads(head)
    except (struct.error, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(header, dict):
        return None
    if any(header.get(k) != v for k, v in expected.items()):
        return None
    return header, payload


def open_regular(path: str):
    """``open(path, "rb")`` for a regular file; anything else (a FIFO, whose
    open would wait for a writer forever, a device, a directory) is an
    ``OSError`` instead."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_file(path: str):
    """The bytes of the entry at ``path``, or None: missing, unreadable, or
    not trusted (another user's file, or one others can write to, may hold
    code nobody here compiled; the checksum does not stop that)."""
    try:
        with open_regular(path) as f:
            reason = owner_reason(os.fstat(f.fileno()))
            if reason is None:
                return f.read()
    except FileNotFoundError:
        return None
    except OSError as exc:
        warn(f"Tack's kernel cache could not read {path}: {exc}")
        return None
    warn(f"Tack's kernel cache ignores {path}: {reason}")
    return None


_unwritable: set = set()   # directories whose write failure was reported
_unwritable_lock = threading.Lock()


def _write_failed(directory: str, message: str) -> None:
    """Warn about a failed write, once per directory and process: a read-only
    cache directory would otherwise warn for every new kernel."""
    with _unwritable_lock:
        if directory in _unwritable:
            return
        _unwritable.add(directory)
    warn(f"{message} (later failed writes there are not reported)")


def write_atomic(path: str, data: bytes) -> bool:
    """Publish ``data`` at ``path`` atomically; whether it worked. A failure
    warns once per directory (``_write_failed``): automatic writes of entries
    must never stop a kernel."""
    try:
        publish(path, data)
    except OSError as exc:
        _write_failed(os.path.dirname(path), exc.strerror or str(exc))
        return False
    return True


def make_private_directories(directory: str) -> None:
    """``os.makedirs`` with mode 0700 at every level it creates (``makedirs``
    gives the mode to the last one only: a cache directory removed during a
    run came back as 0777 less the umask, which later processes refuse)."""
    if os.path.isdir(directory):
        return
    parent = os.path.dirname(directory)
    if parent and parent != directory:
        make_private_directories(parent)
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass


def publish(path: str, data: bytes) -> None:
    """Write ``data`` to a temporary file, fsync it and rename it to ``path``;
    ``OSError`` saying what failed (the temporary is removed)."""
    directory = os.path.dirname(path)
    try:
        make_private_directories(directory)
        fd, temp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=directory)
    except OSError as exc:   # the strerror: the temporary's random name is no help
        raise OSError(exc.errno, f"Tack's kernel cache could not write in {directory}: "
                                 f"{exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, 0o600)
        os.replace(temp, path)
    except OSError as exc:
        _remove_quietly(temp)
        raise OSError(exc.errno, f"Tack's kernel cache could not write {path}: {exc}") \
            from None


def touch(path: str) -> None:
    """Record a use: the entry's modification time is the cache's LRU stamp."""
    try:
        os.utime(path)
    except OSError:
        pass  # a read-only cache still serves hits


def _remove_quietly(path: str) -> bool:
    """Delete ``path``; whether it went (a read-only cache, a directory
    named like an entry or another process's delete leave it, or gone)."""
    try:
        os.remove(path)
    except OSError:
        return False
    return True


# -- pruning -----------------------------------------------------------------------

def entry_files(directory: str):
    """(path, size, last use) of every entry of every Tack version: files named
    like an entry, one level down (other files are never the cache's)."""
    found = []
    try:
        versions = os.listdir(directory)
    except OSError:
        return found
    for version in versions:
        sub = os.path.join(directory, version)
        try:
            names = os.listdir(sub) if os.path.isdir(sub) else []
        except OSError:
            continue
        for name in names:
            if ENTRY_NAME.fullmatch(name):
                path = os.path.join(sub, name)
                try:
                    info = os.stat(path)
                except OSError:
                    continue
                found.append((path, info.st_size, info.st_mtime))
    return found


def abandoned_temporaries(directory: str, older_than: float = 3600.0):
    """Temporary files a killed writer left, where writers put them: in the
    directory and in its version directories (never deeper)."""
    now = time.time()
    folders = [directory]
    try:
        folders += [os.path.join(directory, name) for name in os.listdir(directory)]
    except OSError:
        return
    for folder in folders:
        try:
            names = os.listdir(folder) if os.path.isdir(folder) else []
        except OSError:
            continue
        for name in names:
            if name.startswith(TEMP_PREFIX):
                path = os.path.join(folder, name)
                try:
                    if now - os.stat(path).st_mtime > older_than:
                        yield path
                except OSError:
                    continue


def prune(directory: str, max_size, only_past_limit: bool = False) -> tuple:
    """Delete least recently used entries until they take at most 90% of
    ``max_size``, and abandoned temporary files; returns (removed, bytes left).
    With ``only_past_limit`` (automatic pruning), entries are only deleted
    when they take more than ``max_size``."""
    removed = sum(_remove_quietly(path) for path in abandoned_temporaries(directory))
    entries = sorted(entry_files(directory), key=lambda e: e[2])
    total = sum(size for _, size, _ in entries)
    if max_size is not None and not (only_past_limit and total <= max_size):
        budget = int(max_size * 0.9)
        for path, size, _ in entries:
            if total <= budget:
                break
            if _remove_quietly(path):
                removed += 1
            if not os.path.lexists(path):   # gone, if not by this call
                total -= size
    return removed, total


def entries_size(directory: str) -> int:
    """Bytes the entries of every Tack version take."""
    return sum(size for _, size, _ in entry_files(directory))


def prune_due(directory: str) -> bool:
    """True at most once an hour per directory (a stamp file records the last)."""
    stamp = os.path.join(directory, PRUNE_STAMP)
    try:
        if time.time() - os.stat(stamp).st_mtime < PRUNE_INTERVAL:
            return False
    except FileNotFoundError:
        pass
    except OSError:
        return False
    write_atomic(stamp, b"")
    return True
