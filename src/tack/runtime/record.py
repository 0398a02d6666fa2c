"""TACK_RECORD_VARIANTS=path: append every compiled variant's optimized IR to a file.

Used by the offline compile checks (tests/test_offline_compile.py), which run
the kernel suites with recording on and then generate and compile every
recorded kernel for CUDA, HIP and SPIR-V. One JSON document per line.
"""

from __future__ import annotations

import json
import os
import threading

from ..ir import serialize

_path = os.environ.get("TACK_RECORD_VARIANTS", "").strip()
_lock = threading.Lock()


def enabled() -> bool:
    return bool(_path)


def record(optimized) -> None:
    line = json.dumps(serialize.encode(optimized)) + "\n"
    with _lock, open(_path, "a", encoding="utf-8") as f:
        f.write(line)


def recorded(path: str) -> list:
    with open(path, encoding="utf-8") as f:
        return [serialize.decode(json.loads(line)) for line in f if line.strip()]
