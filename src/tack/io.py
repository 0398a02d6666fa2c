"""Checkpoint and restart of block-decomposed arrays in one HDF5 file (h5py).

``save(path, blocks, values, attrs)`` writes every block's named arrays, and
``load(path, blocks)`` reads them back onto the blocks' ranks and devices.
The file is keyed by global block id, so a run may restart on another number
of ranks as long as it makes the same number of blocks (the usual way to
rebalance: many blocks, assigned to whatever ranks there are). Both calls are
collective, and agree like every call of ``tack.communication``: a mistake
found on one rank raises on every rank, before the file or any array changes.

Rank 0 does all the file's I/O, since the h5py wheels on PyPI are built
without MPI: the other ranks send it their arrays (one message per array,
received and written one at a time, so rank 0 holds one other block's array
at once), and ``load`` sends each rank its blocks' arrays the same way. A
checkpoint is written to a partial file of its own beside ``path`` and renamed
to ``path`` only when complete, so a job killed while writing keeps its
previous checkpoint, and a load (which opens the file once) reads one
checkpoint whole even while another job's save replaces it.

The layout, readable by any HDF5 tool::

    /                     attributes tack_checkpoint (format 1), block_count
    /attrs                the attributes given to save (numbers, strings, arrays)
    /blocks/<gid>/<name>  one dataset per array: the array's NumPy form (a vector
                          or matrix array has its components as trailing
                          dimensions), attribute tack_dtype ("f32", "vec3(f32)")
"""

from __future__ import annotations

import hashlib
import math
import os
import secrets
import stat

import numpy as np

from . import types as T
from .communication import transport
from .communication.errors import (fault, require_dict, require_every_local,
                                   require_named_arrays, the_blocks)
from .communication.world import TAG_IO

SAVE, LOAD = "tack.io.save()", "tack.io.load()"
FORMAT = 1
_ATTRS_HOLD = ("attrs hold bools, ints, floats, strings, NumPy scalars and NumPy arrays "
               "of numbers")
_NOTHING = np.empty(0, np.uint8)   # what a rank sends in place of an array after an error


def save(path, blocks, values: dict, attrs: dict = None) -> None:
    """Write the arrays of every block of the world to the HDF5 file ``path``.

    Args:
        path: the file (a ``str`` or ``os.PathLike``); an existing file is
            replaced once the new one is complete.
        blocks: the :class:`tack.Blocks` the arrays belong to.
        values: ``{gid: {name: Array}}`` for every block of this rank; names are
            non-empty strings without ``/``, and blocks may hold different names.
        attrs: optional ``{name: value}`` stored with the checkpoint (the step,
            the time, parameters): bools, ints, floats, strings, NumPy scalars
            or NumPy arrays of numbers; the same on every rank.
    """
    world = blocks.world
    found, error = fault(_check_save, path, blocks, values, attrs)
    manifest, attrs = found if error is None else (None, None)
    world.agree(SAVE, error, [the_blocks(blocks, SAVE), _the_path(path, SAVE),
                              (None if error else _spelling(attrs), ValueError,
                               f"{SAVE}: attrs", _show)])
    manifests = world.alltoall([manifest if r == 0 else None for r in range(world.size)])
    target = partial = out = scratch = None
    if world.rank == 0:     # the file, and room for the largest message
        named, error = fault(_partial, path)
        if error is None:
            target, partial = named
            started, error = fault(_start_file, partial, blocks.count, attrs, manifests)
            out, scratch = started or (None, None)
    try:
        world.agree(SAVE, error)
        if world.rank == 0:
            error = _write(out, scratch, world, values, manifests)
            _, problem = fault(out.close)
            error = error or problem
        else:
            error = _send_arrays(world, manifest, values)
        world.agree(SAVE, error)    # every rank's arrays reached the file: replace
        if world.rank == 0:
            _, error = fault(_replace, partial, target)
        world.agree(SAVE, error)
    finally:
        if out:
            out.close()
        if partial is not None and os.path.exists(partial):   # this save's own name
            os.remove(partial)


def load(path, blocks) -> tuple:
    """Read a checkpoint written by :func:`save` onto ``blocks``.

    Args:
        path: the file.
        blocks: a :class:`tack.Blocks` with as many blocks as the checkpoint,
            assigned to the ranks in any way.

    Returns:
        ``(values, attrs)``: ``{gid: {name: Array}}`` for every block of this
        rank, each array on its block's device with the element type it was
        saved with, and the checkpoint's attrs (NumPy scalars as Python
        numbers).
    """
    world = blocks.world
    opened, error = fault(_open_checkpoint if world.rank == 0 else _check_path, path, LOAD)
    f, found = opened or (None, None)
    try:    # rank 0 reads the file it opened (a save replacing it cannot mix two)
        world.agree(LOAD, error, [the_blocks(blocks, LOAD), _the_path(path, LOAD)])
        count, manifest, attrs = world.alltoall(_shares(blocks, found))[0]
        if count != blocks.count:
            raise ValueError(f"{LOAD}: the checkpoint holds {count} blocks and the "
                             f"Blocks {blocks.count}; restart with as many blocks as were "
                             f"saved (they may sit on any number of ranks)")
        # every rank's buffers first (rank 0's scratch holds any other rank's
        # array): a rank that cannot allocate them fails the call before a
        # message moves
        landings, error = fault(_landings, blocks, manifest,
                                found[1] if world.rank == 0 else None)
        world.agree(LOAD, error)
        host, scratch = landings
        if world.rank == 0:   # the whole manifest, every rank's share
            error = _read_and_send(f, blocks, found[1], host, scratch)
        else:
            _receive_blocks(world, blocks, manifest, host)
        world.agree(LOAD, error)
    finally:
        if f is not None:
            f.close()
    values = {}
    for gid in blocks.local:
        device = blocks.device(gid)
        values[gid] = {name: transport.wrap(raw, 0, T.from_type_name(dtype), shape, device,
                                            address)
                       for (name, (dtype, shape)), (raw, address, _) in zip(
                           manifest[gid].items(), host[gid])}
    return values, attrs


def _shares(blocks, found) -> list:
    """Per rank, what rank 0 tells it of the checkpoint ``found`` (``(block count,
    manifest, attrs)``): the count, its blocks' part of the manifest, the attrs;
    None from the other ranks."""
    if found is None:
        return [None] * blocks.world.size
    count, manifest, attrs = found
    return [(count, {gid: manifest.get(gid, {}) for gid in range(
        blocks.first_of(r), blocks.first_of(r + 1))}, attrs)
        for r in range(blocks.world.size)]


# -- checks ---------------------------------------------------------------------------

def _h5py():
    try:
        import h5py
    except ImportError:
        raise ImportError("tack.io needs h5py: pip install 'tack-hpc[io]' "
                          "(or pip install h5py)") from None
    return h5py


def _the_path(path, call: str) -> tuple:
    """The agreement field of the path: every rank names the same file."""
    return (_file_name(path), ValueError, f"{call}: the path")


def _name(path) -> str:
    """The file name a ``str`` or ``os.PathLike`` (of ``str`` or ``bytes``) gives."""
    return os.fsdecode(os.fspath(path))


def _file_name(path):
    """``_name(path)``, or None where ``path`` gives no file name (the check of
    every rank's path raises then; this must not, being an agreement's field)."""
    if not isinstance(path, (str, os.PathLike)):
        return None
    try:
        return _name(path)
    except TypeError:           # an os.PathLike whose __fspath__ gives no str or bytes
        return None


def _check_path(path, call: str) -> None:
    if _file_name(path) is None:
        raise TypeError(f"{call} takes a file path (str or os.PathLike), not "
                        f"{type(path).__name__}")
    if "\0" in _name(path):     # HDF5 would cut the name there
        raise ValueError(f"{call}: the path {_name(path)!r} holds a NUL character")
    _h5py()


def _partial(path) -> tuple:
    """Rank 0: ``(target, partial)``: the file a save replaces (a symbolic link's
    target, so the link stays) and a name of its own to write first, beside it
    (the target's name cut to 48 characters, so that it stays a valid name)."""
    target = os.path.realpath(_name(path))
    head, name = os.path.split(target)
    return target, os.path.join(head, f"{name[:48]}.{os.getpid()}-{secrets.token_hex(4)}"
                                      f".partial")


def _replace(partial: str, target: str) -> None:
    """Rank 0: put the complete ``partial`` file in ``target``'s place, on disk
    before the rename (so that a crash of the node cannot leave a checkpoint
    the rename made visible with its data unwritten), with the permissions of
    the file it replaces."""
    descriptor = os.open(partial, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    try:
        os.chmod(partial, stat.S_IMODE(os.stat(target).st_mode))
    except FileNotFoundError:   # the first save of this path
        pass
    os.replace(partial, target)


def _check_save(path, blocks, values, attrs) -> tuple:
    """``(manifest, attrs)``: ``{gid: {name: (dtype name, shape)}}`` of this rank's
    arrays, and the attrs as a dict (checked)."""
    _check_path(path, SAVE)
    require_dict(SAVE, "the values", values)
    require_every_local(blocks, SAVE, "the values", values)
    manifest = {}
    for gid in blocks.local:
        named = require_named_arrays(blocks, SAVE, f"the arrays of block {gid}", gid,
                                     values[gid])
        for name in named:
            _check_name(name, f"array name {name!r} of block {gid}")
        manifest[gid] = {name: (T.type_name(a.dtype), a.shape) for name, a in named.items()}
    given = {} if attrs is None else require_dict(SAVE, "attrs", attrs)
    attrs = {}
    for name, value in given.items():
        if not isinstance(name, str):
            raise TypeError(f"{SAVE}: attrs names are strings, not {type(name).__name__}")
        _check_name(name, f"attrs name {name!r}")
        attrs[name] = _attr(name, value)
    return manifest, attrs


def _check_name(name: str, what: str) -> None:
    if not name or "/" in name or name in (".", "..") or not _plain(name):
        raise ValueError(f"{SAVE}: {what} cannot name an HDF5 object: names are "
                         f"non-empty strings without '/' or NUL, other than '.' and "
                         f"'..', that UTF-8 can encode")


def _plain(text: str) -> bool:
    """Whether HDF5 stores ``text`` as it is: no NUL, and UTF-8 encodes it."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return "\0" not in text


def _attr(name: str, value):
    """The value save stores for ``attrs[name]`` (a NumPy string as ``str``),
    refused where HDF5 would not give it back."""
    if isinstance(value, str):
        if not _plain(value):
            raise ValueError(f"{SAVE}: attrs[{name!r}] holds a NUL character or one "
                             f"UTF-8 cannot encode, which HDF5 does not store")
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool) and \
            not -2**63 <= value < 2**64:
        raise ValueError(f"{SAVE}: attrs[{name!r}] = {value} does not fit in 64 bits")
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, (np.generic, np.ndarray)) and value.dtype.kind in "biuf" and \
            value.dtype.itemsize <= 8:      # not long double
        return value
    raise TypeError(f"{SAVE}: attrs[{name!r}] is a {type(value).__name__}; {_ATTRS_HOLD}")


def _spelling(attrs: dict) -> tuple:
    """The attrs spelled, equal on ranks that give equal attrs (an array by its
    type, shape and a digest of its bytes)."""
    return tuple(sorted((k, _spell(v)) for k, v in attrs.items()))


def _spell(value) -> str:
    if isinstance(value, np.ndarray):
        digest = hashlib.sha256(np.ascontiguousarray(value).data).hexdigest()[:16]
        return f"{value.dtype}{list(value.shape)} array, sha256 {digest}"
    text = f"{type(value).__name__} {value!r}"
    if len(text) > 80:
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        text = f"{text[:40]}... ({len(text)} characters, sha256 {digest})"
    return text


def _show(spelling: tuple) -> str:
    """An attrs spelling in the message of attrs that differ between ranks."""
    return "{" + ", ".join(f"{k!r}: {v}" for k, v in spelling) + "}"


# -- save -----------------------------------------------------------------------------

def _send_arrays(world, manifest, values):
    """This rank's arrays to rank 0, one at a time in manifest order (an empty
    message for each after one that cannot be read); returns that error."""
    error = None
    for gid, named in manifest.items():
        for name in named:
            host = _NOTHING
            if error is None:
                host, error = fault(_host, values[gid][name])
            world.isend(_NOTHING if error else host, 0, TAG_IO).Wait()
    return error


def _host(a) -> np.ndarray:
    """``a``'s values on the host, contiguous: a view of host memory where
    that is cheaper than a copy (``transport.host_values``)."""
    return np.asarray(transport.host_values(a), order="C")


def _start_file(partial: str, count: int, attrs: dict, manifests) -> tuple:
    """Rank 0: ``(file, scratch)``: the checkpoint ``partial`` opened with its
    attributes written, and a host buffer that holds the largest array another
    rank sends."""
    largest = max((_nbytes(dtype, shape) for m in manifests[1:]
                   for named in m.values() for dtype, shape in named.values()), default=0)
    scratch = np.empty(largest, np.uint8)
    out = _h5py().File(partial, "w")
    try:
        out.attrs["tack_checkpoint"] = FORMAT
        out.attrs["block_count"] = count
        group = out.create_group("attrs", track_order=True)
        for name, value in attrs.items():
            group.attrs[name] = value
        out.create_group("blocks")
    except BaseException:
        out.close()
        raise
    return out, scratch


def _write(out, scratch, world, values, manifests):
    """Rank 0: every rank's arrays written to ``out``, its own from ``values``,
    the others' received into ``scratch`` one at a time; returns the error that
    stopped it, or None. It receives every message whatever happens, so that no
    rank is left sending."""
    error = None
    for rank, manifest in enumerate(manifests):
        for gid, named in manifest.items():
            for name, (dtype, shape) in named.items():
                if rank == 0:
                    data, problem = fault(_host, values[gid][name])
                    error = error or problem
                else:
                    data = _view(scratch, dtype, shape)
                    _receive(world, data, rank)
                if error is None:
                    _, error = fault(_dataset, out, gid, name, dtype, data)
    return error


def _nbytes(dtype: str, shape: tuple) -> int:
    element = T.from_type_name(dtype)
    return math.prod(shape) * element.itemsize


def _view(raw: np.ndarray, dtype: str, shape: tuple) -> np.ndarray:
    """The first bytes of ``raw`` as an array of element type ``dtype`` and ``shape``
    in its NumPy form (components last)."""
    element = T.from_type_name(dtype)
    scalar = T.scalar_of(element)
    return raw[:_nbytes(dtype, shape)].view(scalar.numpy).reshape(
        shape + T.element_shape(element))


def _receive(world, buffer, rank: int) -> None:
    world.irecv(buffer, rank, TAG_IO).Wait()


def _dataset(out, gid: int, name: str, dtype: str, data) -> None:
    group = out["blocks"].get(str(gid))
    if group is None:   # names in the order save was given them
        group = out["blocks"].create_group(str(gid), track_order=True)
    dataset = group.create_dataset(name, data=data)
    dataset.attrs["tack_dtype"] = dtype


# -- load -----------------------------------------------------------------------------

def _open_checkpoint(path, call: str) -> tuple:
    """Rank 0: ``(file, (block count, {gid: {name: (dtype name, shape)}}, attrs))``:
    the checkpoint opened for reading, and what it holds."""
    _check_path(path, call)
    f = _h5py().File(_name(path), "r")
    try:
        return f, _read_manifest(f, _name(path))
    except BaseException:
        f.close()
        raise


def _read_manifest(f, name: str) -> tuple:
    """What the checkpoint ``f`` (the file ``name``) holds: its block count, the
    element type and shape of every block's arrays (blocks without any left
    out), and the attrs."""
    h5py = _h5py()
    if not _whole(f.attrs.get("tack_checkpoint"), FORMAT):
        raise ValueError(f"{LOAD}: {name!r} is not a Tack checkpoint (format {FORMAT}): "
                         f"its root has no tack_checkpoint attribute of that value")
    count = f.attrs.get("block_count")
    if not _whole(count):
        raise ValueError(f"{LOAD}: {name!r} has no block_count attribute of a block "
                         f"count: {count!r}")
    count = int(count)
    manifest, groups, attrs = {}, f.get("blocks"), f.get("attrs")
    if not isinstance(groups, h5py.Group) or not isinstance(attrs, h5py.Group):
        raise ValueError(f"{LOAD}: {name!r} lacks the groups /blocks and /attrs of a "
                         f"Tack checkpoint")
    # h5py's iterators hold its lock until they finish: raise only after one has
    # (an iterator left behind is finished in another thread, which fails)
    for key, group in list(groups.items()):
        if not (key.isascii() and key.isdigit() and key == str(int(key)) and
                int(key) < count):
            raise ValueError(f"{LOAD}: {name!r} has a group blocks/{key}, not a block "
                             f"id below its block_count {count}")
        if not isinstance(group, h5py.Group):
            raise ValueError(f"{LOAD}: {name!r} holds blocks/{key}, which is not a group")
        manifest[int(key)] = {n: _entry(d, f"/blocks/{key}/{n}")
                              for n, d in list(group.items())}
    return count, manifest, {k: _python(k, v) for k, v in list(attrs.attrs.items())}


def _whole(value, equal=None) -> bool:
    """Whether an attribute is an integer (0 or more, or ``equal``)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) \
        and (value >= 0 if equal is None else value == equal)


def _entry(dataset, where: str) -> tuple:
    """``(dtype name, shape)`` of the array a dataset holds."""
    if not isinstance(dataset, _h5py().Dataset) or dataset.shape is None:
        raise ValueError(f"{LOAD}: {where} is not a dataset (of a shape)")
    try:
        dtype = dataset.attrs["tack_dtype"]
        dtype = dtype.decode() if isinstance(dtype, bytes) else str(dtype)
        element = T.from_type_name(dtype)
    except (KeyError, ValueError, TypeError):
        raise ValueError(f"{LOAD}: the dataset {where} has no tack_dtype "
                         f"attribute naming a Tack element type") from None
    components = T.element_shape(element)
    if dataset.dtype != T.scalar_of(element).numpy or \
            dataset.shape[dataset.ndim - len(components):] != components:
        raise ValueError(f"{LOAD}: the dataset {where} holds {dataset.dtype} of "
                         f"the shape {dataset.shape}, which is no array of {dtype}")
    _check_written(dataset, where)
    return dtype, dataset.shape[:dataset.ndim - len(components)]


def _check_written(dataset, where: str) -> None:
    """Refuse a dataset whose data was never (wholly) written: a damaged file
    may claim terabytes in a few bytes, which load would allocate."""
    if dataset.chunks is None:    # save writes contiguous datasets, whole
        nbytes, stored = dataset.size * dataset.dtype.itemsize, dataset.id.get_storage_size()
        if stored != nbytes:
            raise ValueError(f"{LOAD}: the dataset {where} of the shape "
                             f"{dataset.shape} stores {stored} bytes, not its {nbytes}")
        return
    chunks = math.prod(-(-n // c) for n, c in zip(dataset.shape, dataset.chunks))
    written = dataset.id.get_num_chunks()
    if written != chunks:
        raise ValueError(f"{LOAD}: the dataset {where} of the shape {dataset.shape} "
                         f"has {written} of its {chunks} chunks written")


def _python(name: str, value):
    """An attribute as save was given it: NumPy scalars as Python numbers;
    refused if it is none of the values save stores."""
    if isinstance(value, bytes):
        value = value.decode(errors="replace")
    if isinstance(value, np.generic) and value.dtype.kind in "biuf" and \
            value.dtype.itemsize <= 8:
        value = value.item()
    if isinstance(value, (bool, int, float, str)) or (
            isinstance(value, np.ndarray) and value.dtype.kind in "biuf" and
            value.dtype.itemsize <= 8):
        return value
    raise ValueError(f"{LOAD}: the attribute {name!r} of /attrs holds a "
                     f"{type(value).__name__}, which is none of the values save stores")


def _read_and_send(f, blocks, manifest, mine, scratch):
    """Rank 0: its blocks' arrays read from the file ``f`` into their landings
    ``mine``, every other rank's read into ``scratch`` and sent, in manifest
    order (empty messages after an error); returns the error, or None."""
    world, error = blocks.world, None
    for gid in range(blocks.count):
        rank = blocks.rank_of(gid)
        for k, (name, (dtype, shape)) in enumerate(manifest.get(gid, {}).items()):
            data = mine[gid][k][2] if rank == 0 else _view(scratch, dtype, shape)
            if error is None:
                _, error = fault(_read, f, gid, name, data)
            if rank:
                world.isend(_NOTHING if error else data, rank, TAG_IO).Wait()
    return error


def _read(f, gid: int, name: str, into: np.ndarray) -> None:
    dataset = f[f"blocks/{gid}/{name}"]
    if dataset.shape != into.shape:
        raise ValueError(f"{LOAD}: the dataset blocks/{gid}/{name} has the shape "
                         f"{dataset.shape}, not {into.shape} as its tack_dtype says")
    if into.size:
        dataset.read_direct(into)


def _landing(dtype: str, shape: tuple) -> tuple:
    """``(raw, address, values)``: a new aligned host buffer for an array of
    element type ``dtype`` and ``shape`` (which the array will wrap where its
    device addresses host memory), and its NumPy view of the array's form."""
    element = T.from_type_name(dtype)
    scalar, full = T.scalar_of(element), shape + T.element_shape(element)
    raw, address = transport.new_buffer_at(math.prod(full) * scalar.itemsize)
    return raw, address, raw.view(scalar.numpy).reshape(full)


def _landings(blocks, manifest, whole) -> tuple:
    """``({gid: [_landing per array]}, scratch)`` for this rank's blocks; on rank
    0 (given the ``whole`` manifest) ``scratch`` holds the largest array of
    another rank."""
    host = {gid: [_landing(dtype, shape) for dtype, shape in manifest[gid].values()]
            for gid in blocks.local}
    largest = 0 if whole is None else max(
        (_nbytes(dtype, shape) for gid, named in whole.items()
         if gid not in blocks.local for dtype, shape in named.values()), default=0)
    return host, np.empty(largest, np.uint8)


def _receive_blocks(world, blocks, manifest, host) -> None:
    """A rank's blocks' arrays from rank 0 into their landings, in manifest order."""
    for gid in blocks.local:
        for landing in host[gid]:
            _receive(world, landing[2], 0)
