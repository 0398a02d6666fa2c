"""The kernel bundle under MPI (spec 003, ``tack.cache.load_bundle(comm=...)``).

Rank 0 warms a cache in a separate process (as a job's first step would) and
packs it. Then, on every rank in bundle mode: ``load_bundle(comm=...)`` gives
each rank every entry and every kernel hits, while only rank 0 opens a file
under the cache directory (counted with an audit hook) and nothing is
pickled. A missing or damaged bundle on rank 0 gives every rank no entries,
with one warning in all, and every rank compiles, with no hang.
"""

from __future__ import annotations

import atexit
import json
import os
import pickle
import shutil
import struct
import subprocess
import sys
import tempfile
import warnings

import numpy as np
from mpi4py import MPI

import tack
import tack.cache

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cache_kernels as K  # noqa: E402

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
seed = comm.bcast(int.from_bytes(os.urandom(8), "little") if rank == 0 else None)

WARM = """
import sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import tack, tack.cache
import cache_kernels as K
a = tack.array(np.linspace(-1.0, 1.0, 5))
for name in sys.argv[2:]:
    getattr(K, name)(a, tack.zeros(5, dtype=tack.f64))
print(tack.cache.pack()[1])
"""

# -- what every rank touches under a watched directory --------------------------------
_watched: list = []
_touched: list = []


def _audit(event, args):
    for arg in args:
        if isinstance(arg, (str, bytes, os.PathLike)):
            path = os.fsdecode(arg)
            if any(path.startswith(w) for w in _watched):
                _touched.append((event, path))


sys.addaudithook(_audit)


def watch(directory: str) -> None:
    _touched.clear()
    _watched[:] = [directory]


# -- helpers -------------------------------------------------------------------------
def shared_directory() -> str:
    """A new private directory made by rank 0, the same path on every rank."""
    path = None
    if rank == 0:
        path = tempfile.mkdtemp(prefix="tack-mpi-cache-")
        os.chmod(path, 0o700)
        atexit.register(shutil.rmtree, path, True)
    return comm.bcast(path)


def warm(directory: str, scenario: str) -> int:
    """Rank 0: compile a scenario's kernels in a new, non-MPI process and pack."""
    count = None
    if rank == 0:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PMI_", "PMIX_", "OMPI_", "MPI_", "HYDRA", "SLURM_"))}
        env.update(TACK_CACHE="write", TACK_CACHE_DIR=directory)
        done = subprocess.run([sys.executable, "-c", WARM, HERE, *K.SCENARIOS[scenario]],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        count = int(done.stdout.split()[-1])
    return comm.bcast(count)


def run_scenario(scenario: str) -> None:
    """Call the scenario's kernels on this rank's inputs; check against NumPy."""
    gen = np.random.default_rng([seed, rank])
    for name in K.SCENARIOS[scenario]:
        for n in (0, 1, 1 + rank * 17):
            host = gen.uniform(-3, 3, n)
            out = tack.zeros(n, dtype=tack.f64)
            getattr(K, name)(tack.array(host), out)
            np.testing.assert_array_equal(out.numpy(), K.REFERENCE[name](host),
                                          err_msg=f"{name} n={n} rank={rank} seed={seed}")


def load_counting_warnings(path=None):
    """load_bundle(comm=...) with pickling forbidden: (entries, warnings in all ranks)."""
    def refuse(*args, **kwargs):
        raise AssertionError("load_bundle sent a pickled object")
    MPI.pickle.__init__(refuse, refuse)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            loaded = tack.cache.load_bundle(path, comm=comm)
    finally:
        MPI.pickle.__init__(pickle.dumps, pickle.loads)
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    everyone = comm.allgather(messages)
    if rank != 0:
        assert messages == [], messages     # the one warning is rank 0's
    return loaded, [m for ms in everyone for m in ms]


def bundle_file(directory: str) -> str:
    return os.path.join(directory, f"bundle-{tack.__version__}.tackb")


# -- the tests -----------------------------------------------------------------------
def test_every_rank_hits_and_only_rank_0_opens_files():
    directory = shared_directory()
    assert warm(directory, "hits") == 4          # two templates, two variants
    tack.cache.configure(directory=directory, mode="bundle")
    tack.cache.reset_stats()
    watch(directory)
    loaded, messages = load_counting_warnings()
    assert (loaded, messages) == (4, []), (loaded, messages)
    assert comm.allgather(loaded) == [4] * size
    run_scenario("hits")
    assert tack.cache.stats() == {"hits": 4, "misses": 0, "writes": 0}, (
        rank, tack.cache.stats())
    touched = list(_touched)
    if rank == 0:
        assert touched == [("open", bundle_file(directory))], touched
    else:
        assert touched == [], touched


def test_a_missing_bundle_makes_every_rank_compile():
    directory = shared_directory()
    tack.cache.configure(directory=directory, mode="bundle")
    tack.cache.reset_stats()
    watch(directory)
    loaded, messages = load_counting_warnings()
    assert loaded == 0
    path = bundle_file(directory)
    assert len(messages) == 1 and messages[0].startswith(
        f"Tack's kernel bundle {path} is not used: [Errno 2]"), messages
    run_scenario("missing")
    stats = tack.cache.stats()
    assert (stats["hits"], stats["misses"]) == (0, 2), (rank, stats)
    assert stats["writes"] == (2 if rank == 0 else 0), (rank, stats)  # rank 0 stores
    if rank != 0:
        assert _touched == [], _touched


def flip_in_entry(data):
    return data[:-40] + bytes([data[-40] ^ 0x01]) + data[-39:]


def index_past_end(data):
    (length,) = struct.unpack_from("<Q", data, 8)
    header = json.loads(data[16:16 + length])
    header["index"][0][2] = len(data)
    text = json.dumps(header).encode()
    return data[:8] + struct.pack("<Q", len(text)) + text + data[16 + length:]


def malformed_index(data):
    (length,) = struct.unpack_from("<Q", data, 8)
    header = dict(json.loads(data[16:16 + length]), index=7)
    text = json.dumps(header).encode()
    return data[:8] + struct.pack("<Q", len(text)) + text + data[16 + length:]


DAMAGE = {
    "a flipped bit in an entry": flip_in_entry,
    "truncated": lambda data: data[:len(data) // 2],
    "an index entry past the end": index_past_end,
    "an index that is not a list": malformed_index,
    "not a bundle": lambda data: b"\0" * len(data),
    "empty": lambda data: b"",
}


def test_a_damaged_bundle_makes_every_rank_compile():
    directory = shared_directory()
    assert warm(directory, "corrupt") == 2
    path = bundle_file(directory)
    original = None
    if rank == 0:
        shutil.rmtree(os.path.join(directory, tack.__version__))  # the bundle alone
        with open(path, "rb") as f:
            original = f.read()
    tack.cache.configure(directory=directory, mode="bundle")
    for shape, damage in DAMAGE.items():
        if rank == 0:
            with open(path, "wb") as f:
                f.write(damage(original))
        comm.Barrier()
        watch(directory)
        loaded, messages = load_counting_warnings()
        assert loaded == 0, shape
        assert len(messages) == 1 and messages[0].startswith(
            f"Tack's kernel bundle {path} is not used: "), (shape, messages)
        if rank != 0:
            assert _touched == [], _touched
    tack.cache.reset_stats()
    run_scenario("corrupt")
    stats = tack.cache.stats()
    assert (stats["hits"], stats["misses"]) == (0, 2), (rank, stats)
