"""Every damaged-entry shape is a miss, with one CacheWarning, then a rebuild that
replaces the entry; the kernel's results stay correct (spec 000: "a damaged or
unloadable entry is ignored")."""

from __future__ import annotations

import os
import re
import shutil
import struct
import sys
import threading
import warnings

import numpy as np
import pytest

import tack
from tack.cache import CacheWarning


@pytest.fixture(scope="module")
def pristine(tmp_path_factory, kernels):
    """The affine kernel's two entries (template and f64 variant), built once."""
    directory = tmp_path_factory.mktemp("pristine")
    os.chmod(directory, 0o700)
    tack.cache.configure(directory=directory, mode="write")
    try:
        a = tack.arange(4, dtype=tack.f64)
        kernels.fresh(kernels.affine)(a, tack.zeros(4, dtype=tack.f64))
    finally:
        tack.cache.configure()
    folder = os.path.join(directory, tack.__version__)
    return {name.rsplit(".", 1)[1]: os.path.join(folder, name)
            for name in os.listdir(folder)}


def truncated(where):
    """Cut the entry at a random offset inside its header, payload or checksum."""
    def damage(data, gen, tools):
        (head,) = struct.unpack_from("<I", data, 8)
        spans = {"header": (9, 12 + head), "payload": (20 + head, len(data) - 32),
                 "checksum": (len(data) - 32, len(data))}
        low, high = spans[where]
        return data[:int(gen.integers(low, high))]
    return damage


def flipped(data, gen, tools):
    position = int(gen.integers(0, len(data)))
    return data[:position] + bytes([data[position] ^ 0xFF]) + data[position + 1:]


def with_header(**changes):
    def damage(data, gen, tools):
        header, payload = tools.read_entry(data)
        return tools.make_entry(dict(header, **changes), payload)
    return damage


def header_length_past_end(data, gen, tools):
    return data[:8] + struct.pack("<I", 1 << 31) + data[12:]


def payload_length_past_end(data, gen, tools):
    (head,) = struct.unpack_from("<I", data, 8)
    return data[:12 + head] + struct.pack("<Q", 1 << 40) + data[20 + head:]


def header_not_an_object(data, gen, tools):
    return tools.make_entry([1, 2, 3], tools.read_entry(data)[1])


def header_nested_too_deep(data, gen, tools):
    """A checksum-valid entry whose header JSON nests past the recursion limit."""
    import hashlib
    head = b"[" * 100_000 + b"]" * 100_000
    payload = tools.read_entry(data)[1]
    return (data[:8] + struct.pack("<I", len(head)) + head + struct.pack("<Q", len(payload))
            + payload + hashlib.sha256(head + payload).digest())


LOOKUP_SHAPES = {
    "zero length": lambda data, gen, tools: b"",
    "truncated in the header": truncated("header"),
    "truncated in the payload": truncated("payload"),
    "truncated in the checksum": truncated("checksum"),
    "a flipped byte": flipped,
    "a trailing byte": lambda data, gen, tools: data + b"\0",
    "another entry format": with_header(format=999),
    "another Tack version": with_header(tack="0.0.0-other"),
    "another LLVM": with_header(llvm="1.0"),
    "another key": with_header(key="0" * 64),
    "header length past the end": header_length_past_end,
    "payload length past the end": payload_length_past_end,
    "a header that is not an object": header_not_an_object,
    "a header nested past the recursion limit": header_nested_too_deep,
}


def call_fresh(kernels, n, seed):
    gen = np.random.default_rng(seed)
    host = gen.uniform(-5, 5, n)
    out = tack.zeros(n, dtype=tack.f64)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kernels.fresh(kernels.affine)(tack.array(host), out)
    np.testing.assert_array_equal(out.numpy(), host * 3 + 1, err_msg=f"seed={seed}")
    return [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]


def install(pristine, cache_dir):
    folder = os.path.join(cache_dir, tack.__version__)
    os.makedirs(folder, mode=0o700)
    paths = {}
    for kind, path in pristine.items():
        paths[kind] = os.path.join(folder, os.path.basename(path))
        shutil.copyfile(path, paths[kind])
    return paths


def check_rebuilt(kernels, path, seed, tools):
    with open(path, "rb") as f:
        tools.read_entry(f.read())          # a whole, valid entry again
    tack.cache.reset_stats()
    assert call_fresh(kernels, 3, seed) == []
    assert tack.cache.stats() == {"hits": 2, "misses": 0, "writes": 0}


@pytest.mark.parametrize("kind", ["ir", "variant"])
@pytest.mark.parametrize("shape", list(LOOKUP_SHAPES))
def test_a_damaged_entry_is_a_miss_then_rebuilt(shape, kind, pristine, cache_dir,
                                                kernels, seed, tools):
    paths = install(pristine, cache_dir)
    with open(paths[kind], "rb") as f:
        data = f.read()
    damaged = LOOKUP_SHAPES[shape](data, np.random.default_rng(seed), tools)
    assert damaged != data
    with open(paths[kind], "wb") as f:
        f.write(damaged)
    messages = call_fresh(kernels, 1 + seed % 40, seed)
    assert messages == [f"Tack's kernel cache ignored a damaged or foreign entry "
                        f"({paths[kind]}); the kernel is compiled again"], seed
    assert tack.cache.stats() == {"hits": 1, "misses": 1, "writes": 1}, seed
    check_rebuilt(kernels, paths[kind], seed, tools)


PAYLOADS = {
    "an empty payload": b"",
    "metadata without its fields": struct.pack("<I", 2) + b"{}",
    "metadata that is not JSON": struct.pack("<I", 3) + b"{x}",
    "an unknown IR node": struct.pack("<I", 38) + b'{"ir": {"node": "Nope"}, "kernel": {}}',
}


@pytest.mark.parametrize("kind", ["ir", "variant"])
@pytest.mark.parametrize("payload", list(PAYLOADS))
def test_an_intact_entry_whose_payload_does_not_decode_is_a_miss(
        payload, kind, pristine, cache_dir, kernels, seed, tools):
    """The checksum holds but the content is not a template or variant."""
    paths = install(pristine, cache_dir)
    with open(paths[kind], "rb") as f:
        header, _ = tools.read_entry(f.read())
    with open(paths[kind], "wb") as f:
        f.write(tools.make_entry(header, PAYLOADS[payload]))
    messages = call_fresh(kernels, 1 + seed % 40, seed)
    start = {"ir": "Tack's kernel cache ignored an unreadable IR entry (",
             "variant": "Tack's kernel cache could not load a compiled variant ("}[kind]
    assert len(messages) == 1 and messages[0].startswith(start + paths[kind] + ": "), \
        messages
    assert messages[0].endswith("; the kernel is compiled again"), messages
    # a miss, like a damaged entry; the rebuilt entry replaces the bad one
    assert tack.cache.stats() == {"hits": 1, "misses": 1, "writes": 1}, seed
    check_rebuilt(kernels, paths[kind], seed, tools)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="checks ELF objects")
@pytest.mark.parametrize("cut", ["nothing", "its first half", "all but 8 bytes"])
def test_a_variant_whose_object_code_is_cut_is_a_miss(cut, pristine, cache_dir, kernels,
                                                      seed, tools):
    """Intact metadata and checksum, the object code cut short: loading it would
    have MCJIT read past its end (a crash); it is checked first."""
    paths = install(pristine, cache_dir)
    with open(paths["variant"], "rb") as f:
        header, payload = tools.read_entry(f.read())
    (size,) = struct.unpack_from("<I", payload, 0)
    blob = payload[4 + size:]
    keep = {"nothing": 0, "its first half": len(blob) // 2, "all but 8 bytes": len(blob) - 8}
    with open(paths["variant"], "wb") as f:
        f.write(tools.make_entry(header, payload[:4 + size] + blob[:keep[cut]]))
    messages = call_fresh(kernels, 1 + seed % 40, seed)
    assert len(messages) == 1, messages
    assert re.fullmatch(r"Tack's kernel cache could not load a compiled variant \(" +
                        re.escape(paths["variant"]) + r": the object code is (not a whole "
                        r"ELF64 object|truncated \(.*\))\); the kernel is compiled again",
                        messages[0]), messages
    assert tack.cache.stats() == {"hits": 1, "misses": 1, "writes": 1}, seed
    check_rebuilt(kernels, paths["variant"], seed, tools)


def test_a_fifo_where_an_entry_should_be_is_a_miss(pristine, cache_dir, kernels, seed,
                                                    tools):
    """Opening a FIFO waits for a writer: the lookup must not open it."""
    paths = install(pristine, cache_dir)
    os.remove(paths["variant"])
    os.mkfifo(paths["variant"], 0o600)
    timer = threading.Timer(10.0, lambda: os.close(os.open(paths["variant"], os.O_RDWR)))
    timer.start()   # unblocks a reader that waits, so the test fails instead of hanging
    try:
        messages = call_fresh(kernels, 7, seed)
    finally:
        timer.cancel()
    assert len(messages) == 1, messages
    assert re.fullmatch(r"Tack's kernel cache could not read .*\.variant: "
                        r"\[Errno 22\] not a regular file", messages[0])
    assert tack.cache.stats() == {"hits": 1, "misses": 1, "writes": 1}
    check_rebuilt(kernels, paths["variant"], seed, tools)   # the FIFO was replaced


def test_an_entry_that_cannot_be_read_is_a_miss(pristine, cache_dir, kernels, seed):
    """A directory where the variant should be: not readable, not replaceable."""
    paths = install(pristine, cache_dir)
    os.remove(paths["variant"])
    os.mkdir(paths["variant"])
    messages = call_fresh(kernels, 7, seed)
    assert len(messages) == 2, messages
    assert re.fullmatch(r"Tack's kernel cache could not read .*\.variant: .*", messages[0])
    assert re.fullmatch(r"Tack's kernel cache could not write .*\.variant: .*",
                        messages[1])
    assert tack.cache.stats() == {"hits": 1, "misses": 1, "writes": 0}
    assert [n for n in os.listdir(os.path.dirname(paths["variant"]))
            if n.startswith(".")] == []   # the failed write left no temporary
