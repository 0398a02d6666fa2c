"""Cache keys and codecs for the two kinds of entry: IR templates and variants.

``.ir``: the lowered, verified template, keyed by the kernel's source, the
source of every device function it can reach, where each of those sources
sits (file, first line, indent: the IR carries source positions for error
messages, so a moved function must not reuse positions from before), the
lowering specialization, and the Tack and Python versions. ``.variant``: the
backend's artifact (object code on the CPU) and the parameters the variant
writes and targets with atomics, keyed by
the template's key, the variant key, the backend's target (triple, CPU name
and features) and the LLVM version. No key contains a time or an object id.
"""

from __future__ import annotations

import hashlib
import json

from ..ir import serialize
from ..types import CompositeType, composite, scalar_type
from .core import cache, pack_payload, unpack_payload, versions


def enabled() -> bool:
    return cache().settings().mode != "off"


def _digest(data) -> str:
    text = json.dumps(data, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def ir_key(kernel, specialization) -> str:
    from ..lang.dependencies import reachable_functions, source_key
    funcs = reachable_functions(kernel.fn, kernel.source)
    return _digest({
        "kernel": source_key(kernel.fn, kernel.source),
        "functions": [source_key(f.fn, f.source) for f in funcs],
        "specialization": repr(specialization),
        "versions": versions(),
    })


def variant_key(template_key: str, key_parts, target) -> str:
    return _digest({"template": template_key, "variant": repr(key_parts),
                    "target": repr(target), "versions": versions()})


# -- templates ------------------------------------------------------------------

def load_template(key: str):
    return cache().lookup("ir", key, lambda payload: _decode_lowered(
        unpack_payload(payload)[0]), "ignored an unreadable IR entry")


def store_template(key: str, lowered) -> None:
    cache().store("ir", key, pack_payload(_encode_lowered(lowered)))


def _encode_lowered(lowered) -> dict:
    return {
        "kernel": serialize.encode(lowered.kernel),
        "epilogue": None if lowered.epilogue is None else serialize.encode(
            lowered.epilogue),
        "result_type": _type_record(lowered.result_type),
        "result_kind": lowered.result_kind,
        "sites": [[x.owner, x.file, x.line, x.column, x.text, x.dims]
                  for x in lowered.sites],
    }


def _decode_lowered(meta: dict):
    from ..lang.lower.bounds import Site
    from ..lang.lower.lowered import Lowered
    epilogue = meta["epilogue"]
    return Lowered(serialize.decode(meta["kernel"]),
                   None if epilogue is None else serialize.decode(epilogue),
                   _type_from_record(meta["result_type"]),
                   meta["result_kind"], tuple(Site(*x) for x in meta["sites"]))


def _type_record(dtype):
    if dtype is None:
        return None
    if isinstance(dtype, CompositeType):
        return [dtype.kind, list(dtype.shape), dtype.scalar.name]
    return dtype.name


def _type_from_record(record):
    if record is None:
        return None
    if isinstance(record, list):
        kind, shape, scalar = record
        return composite(kind, tuple(shape), scalar_type(scalar))
    return scalar_type(record)


# -- variants ---------------------------------------------------------------------

def load_variant(key: str, backend):
    """The ``Variant`` from the cache, or None."""
    from ..runtime.dispatch import Variant

    def decode(payload):
        meta, blob = unpack_payload(payload)
        written, atomics = _names(meta["written"]), _names(meta["atomics"])
        return Variant(None, backend.load_artifact(meta["backend"], blob), written,
                       atomics)
    return cache().lookup("variant", key, decode, "could not load a compiled variant")


def store_variant(key: str, variant, backend) -> None:
    """Store what dispatch needs of ``variant``: the program, and the parameters
    it writes and targets with atomics (not the optimized IR: decoding it took
    most of a large kernel's hit)."""
    meta, blob = backend.artifact(variant.program)
    cache().store("variant", key, pack_payload(
        {"written": sorted(variant.written), "atomics": sorted(variant.atomic_targets),
         "backend": meta}, blob))


def _names(value) -> frozenset:
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ValueError("malformed parameter names")
    return frozenset(value)
