"""A fixed-seed slice of the frontend fuzzer (scripts/fuzz-frontend runs it longer).

Each valid program is checked against the NumPy reference on inputs drawn
from a fresh random seed (in the failure message); each invalid one must
raise exactly the expected UnsupportedSyntaxError.
"""

import os
import random
import secrets

import pytest

import tack

from fuzz import generator, harness

N_PROGRAMS = 240
INPUT_SEED = secrets.randbits(32)


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    return str(tmp_path_factory.mktemp("fuzz"))


@pytest.mark.parametrize("block", range(4))
def test_valid_programs_match_reference(directory, block):
    problems = []
    for s in range(block * N_PROGRAMS // 4, (block + 1) * N_PROGRAMS // 4):
        p = generator.valid_program(random.Random(f"valid-{s}"), s)
        problem = harness.check_valid(p, directory, INPUT_SEED + s)
        if problem:
            problems.append(f"program seed {s}: {problem}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("block", range(4))
def test_invalid_programs_raise_exactly(directory, block):
    problems = []
    for s in range(block * N_PROGRAMS // 4, (block + 1) * N_PROGRAMS // 4):
        p = generator.invalid_program(random.Random(f"invalid-{s}"), s)
        problem = harness.check_invalid(p, directory)
        if problem:
            problems.append(f"program seed {s}: {problem}")
    assert not problems, "\n".join(problems)


def test_valid_programs_match_reference_on_opencl(directory):
    # The same generated programs on the OpenCL backend (PoCL in CI), bit for bit.
    if not tack.device_count("opencl"):
        reason = "no OpenCL device (pip install pyopencl; apt install pocl-opencl-icd)"
        if os.environ.get("TACK_REQUIRE_OPENCL", "").strip() not in ("", "0"):
            pytest.fail(reason + "; TACK_REQUIRE_OPENCL is set")
        pytest.skip(reason)
    problems = []
    previous = tack.get_default_device()
    tack.set_default_device("opencl")
    try:
        for s in range(60):
            p = generator.valid_program(random.Random(f"valid-{s}"), s)
            problem = harness.check_valid(p, directory, INPUT_SEED + s)
            if problem:
                problems.append(f"program seed {s}: {problem}")
    finally:
        tack.set_default_device(previous)
    assert not problems, "\n".join(problems)


def test_every_invalid_construct_is_generated():
    seen = set()
    for s in range(400):
        p = generator.invalid_program(random.Random(f"invalid-{s}"), s)
        seen.add(p.message.split("unsupported ")[1].split(" at line")[0])
    expected = {c for _, c, _ in generator._INVALID} | {"default parameter value"}
    assert seen == expected
