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
checkpoint is written to ``<path>.partial`` and renamed to ``path`` only when
complete, so a job killed while writing keeps its previous checkpoint.

The layout, readable by any HDF5 tool::

    /                     attributes tack_checkpoint (format 1), block_count
    /attrs                the attributes given to save (numbers, strings, arrays)
    /blocks/<gid>/<name>  one dataset per array: the array's NumPy form (a vector
                          or matrix array has its components as trailing
                          dimensions), attribute tack_dtype ("f32", "vec3(f32)")
"""

from __future__ import annotations

import math
import os

import numpy as np

from . import types as T
from .communication import transport
from .communication.errors import (fault, require_dict, require_every_local,
                                   require_named_arrays, the_blocks)
from .communication.world import TAG_IO

SAVE, LOAD = "tack.io.save()", "tack.io.load()"
FORMAT = 1
_ATTR_TYPES = (bool, int, float, str, np.generic, np.ndarray)
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
                               f"{SAVE}: attrs")])
    manifests = world.alltoall([manifest if r == 0 else None for r in range(world.size)])
    partial = os.fspath(path) + ".partial"
    out = scratch = None
    if world.rank == 0:     # the file, and room for the largest message
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
            _, error = fault(os.replace, partial, path)
        world.agree(SAVE, error)
    finally:
        if out:
            out.close()
        if world.rank == 0 and os.path.exists(partial):
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
    found, error = (fault(_read_manifest, path) if world.rank == 0
                    else fault(_check_path, path, LOAD))
    world.agree(LOAD, error, [the_blocks(blocks, LOAD), _the_path(path, LOAD)])
    count, manifest, attrs = world.alltoall(_shares(blocks, found))[0]
    if count != blocks.count:
        raise ValueError(f"{LOAD}: the checkpoint holds {count} blocks and the Blocks "
                         f"{blocks.count}; restart with as many blocks as were saved "
                         f"(they may sit on any number of ranks)")
    # every rank's buffers first (rank 0's scratch holds any other rank's array):
    # a rank that cannot allocate them fails the call before a message moves
    landings, error = fault(_landings, blocks, manifest,
                            found[1] if world.rank == 0 else None)
    world.agree(LOAD, error)
    host, scratch = landings
    if world.rank == 0:   # the whole manifest, every rank's share
        error = _read_and_send(os.fspath(path), blocks, found[1], host, scratch)
    else:
        _receive_blocks(world, blocks, manifest, host)
    world.agree(LOAD, error)
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
    value = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
    return (value, ValueError, f"{call}: the path")


def _check_path(path, call: str) -> None:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{call} takes a file path (str or os.PathLike), not "
                        f"{type(path).__name__}")
    _h5py()


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
    attrs = {} if attrs is None else require_dict(SAVE, "attrs", attrs)
    for name, value in attrs.items():
        if not isinstance(name, str):
            raise TypeError(f"{SAVE}: attrs names are strings, not {type(name).__name__}")
        _check_name(name, f"attrs name {name!r}")
        if not isinstance(value, _ATTR_TYPES) or \
                (isinstance(value, np.ndarray) and value.dtype.kind not in "biuf"):
            raise TypeError(f"{SAVE}: attrs[{name!r}] is a {type(value).__name__}; "
                            f"attrs hold bools, ints, floats, strings, NumPy scalars and "
                            f"NumPy arrays of numbers")
    return manifest, attrs


def _check_name(name: str, what: str) -> None:
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"{SAVE}: {what} cannot name an HDF5 object: names are "
                         f"non-empty strings without '/', other than '.' and '..'")


def _spelling(attrs: dict) -> str:
    """The attrs as one string, equal on ranks that give equal attrs."""
    return repr(sorted((k, type(v).__name__, v.tolist() if isinstance(v, np.ndarray) else v)
                       for k, v in attrs.items()))


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

def _read_manifest(path) -> tuple:
    """Rank 0: ``(block count, {gid: {name: (dtype name, shape)}}, attrs)``."""
    _check_path(path, LOAD)
    with _h5py().File(os.fspath(path), "r") as f:
        if f.attrs.get("tack_checkpoint") != FORMAT:
            raise ValueError(f"{LOAD}: {os.fspath(path)!r} is not a Tack checkpoint "
                             f"(format {FORMAT}): its root has no tack_checkpoint "
                             f"attribute of that value")
        count = int(f.attrs["block_count"])
        manifest = {gid: {} for gid in range(count)}
        for key, group in f["blocks"].items():
            if not (key.isdigit() and int(key) < count):
                raise ValueError(f"{LOAD}: {os.fspath(path)!r} has a group blocks/{key}, "
                                 f"not a block id below its block_count {count}")
            manifest[int(key)] = {name: _entry(d) for name, d in group.items()}
        attrs = {k: _python(v) for k, v in f["attrs"].attrs.items()}
    return count, manifest, attrs


def _entry(dataset) -> tuple:
    """``(dtype name, shape)`` of the array a dataset holds."""
    try:
        dtype = dataset.attrs["tack_dtype"]
        dtype = dtype.decode() if isinstance(dtype, bytes) else str(dtype)
        element = T.from_type_name(dtype)
    except (KeyError, ValueError, TypeError):
        raise ValueError(f"{LOAD}: the dataset {dataset.name} has no tack_dtype "
                         f"attribute naming a Tack element type") from None
    components = T.element_shape(element)
    if dataset.dtype != T.scalar_of(element).numpy or \
            dataset.shape[dataset.ndim - len(components):] != components:
        raise ValueError(f"{LOAD}: the dataset {dataset.name} holds {dataset.dtype} of "
                         f"the shape {dataset.shape}, which is no array of {dtype}")
    nbytes, stored = dataset.size * dataset.dtype.itemsize, dataset.id.get_storage_size()
    if dataset.chunks is None and stored != nbytes:   # save writes whole datasets
        raise ValueError(f"{LOAD}: the dataset {dataset.name} of the shape "
                         f"{dataset.shape} stores {stored} bytes, not its {nbytes}")
    return dtype, dataset.shape[:dataset.ndim - len(components)]


def _python(value):
    """An attribute as save was given it: NumPy scalars as Python numbers."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _read_and_send(path: str, blocks, manifest, mine, scratch):
    """Rank 0: its blocks' arrays read into their landings ``mine``, every other
    rank's read into ``scratch`` and sent, in manifest order (empty messages
    after an error); returns the error, or None."""
    world, error = blocks.world, None
    f, error = fault(_h5py().File, path, "r")
    for gid in range(blocks.count):
        rank = blocks.rank_of(gid)
        for k, (name, (dtype, shape)) in enumerate(manifest[gid].items()):
            data = mine[gid][k][2] if rank == 0 else _view(scratch, dtype, shape)
            if error is None:
                _, error = fault(_read, f, gid, name, data)
            if rank:
                world.isend(_NOTHING if error else data, rank, TAG_IO).Wait()
    if f is not None:
        f.close()
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
