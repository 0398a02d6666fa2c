"""Keys follow the source: a template's key covers the kernel's source and every
device function it can reach (directly, through a module attribute, or through
another device function), and where each of them sits in its file, so an edit
or a move compiles again; a change anywhere else is still a hit."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tack
import tack.cache

KERNEL = '''\
import tack
import helpers
import unrelated
from helpers import outer


@tack.kernel
def combined(a, out):
    for i in range(len(out)):
        out[i] = outer(a[i]) + helpers.scale(a[i])
'''

HELPERS = '''\
import tack


@tack.func
def inner(x):
    return x + {inner}


@tack.func
def outer(x):
    return inner(x) * 2.0


@tack.func
def scale(x):
    return x * {scale}


def host_only():
    return {host}
'''

DRIVER = textwrap.dedent('''
    import json, sys
    import numpy as np
    import tack, tack.cache
    sys.path.insert(0, sys.argv[1])
    import kern
    a = tack.array(np.array(json.loads(sys.argv[2])))
    out = tack.zeros(len(a), dtype=tack.f64)
    kern.combined(a, out)
    print(json.dumps({"out": out.numpy().tolist(), "stats": tack.cache.stats()}))
''')


class Project:
    """Three modules in a folder; ``run`` calls the kernel in a new process."""

    def __init__(self, folder, cache_dir, tools, seed):
        self.folder, self.cache_dir, self.tools, self.seed = folder, cache_dir, tools, seed
        self.values = {"inner": "1.0", "scale": "3.0", "host": "1"}
        self.kernel_text, self.driver = KERNEL, DRIVER
        self.write("unrelated.py", "VALUE = 1\n")
        self.write_all()

    def write(self, name, text):
        with open(os.path.join(self.folder, name), "w") as f:
            f.write(text)

    def write_all(self):
        self.write("helpers.py", HELPERS.format(**self.values))
        self.write("kern.py", self.kernel_text)

    def run(self):
        x = np.random.default_rng(self.seed).uniform(-4, 4, 13)
        env = self.tools.child_env(self.cache_dir, PYTHONDONTWRITEBYTECODE="1")
        done = subprocess.run([sys.executable, "-c", self.driver, os.fspath(self.folder),
                               json.dumps(x.tolist())], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        inner, scale = float(self.values["inner"]), float(self.values["scale"])
        np.testing.assert_array_equal(result["out"], (x + inner) * 2.0 + x * scale,
                                      err_msg=f"{self.values} seed={self.seed}")
        return result["stats"]


HIT = {"hits": 2, "misses": 0, "writes": 0}
MISS = {"hits": 0, "misses": 2, "writes": 2}


def test_keys_follow_the_source_of_everything_the_kernel_reaches(tmp_path, cache_dir,
                                                                 tools, seed):
    folder = tmp_path / "project"
    folder.mkdir()
    project = Project(folder, cache_dir, tools, seed)
    assert project.run() == MISS
    assert project.run() == HIT

    project.write("unrelated.py", "VALUE = 2  # an unrelated module changed\n")
    assert project.run() == HIT
    project.values["host"] = "2"          # a host function beside the device ones
    project.write_all()
    assert project.run() == HIT

    project.values["inner"] = "2.0"       # reached through outer only
    project.write_all()
    assert project.run() == MISS
    assert project.run() == HIT
    project.values["scale"] = "5.0"       # reached as helpers.scale
    project.write_all()
    assert project.run() == MISS

    project.values["inner"] = "1.0"       # back to a source seen before: its entries
    project.values["scale"] = "3.0"
    project.write_all()
    assert project.run() == HIT
    assert len(tools.entries(cache_dir)) == 2 * 3


def test_a_kernel_moved_in_its_file_compiles_again(tmp_path, cache_dir, tools, seed):
    """The IR carries source positions (debug-mode messages, error notes), so the
    same source at another line must not reuse the old positions."""
    folder = tmp_path / "project"
    folder.mkdir()
    project = Project(folder, cache_dir, tools, seed)
    assert project.run() == MISS
    project.kernel_text = "# a new first line\n" + KERNEL
    project.write_all()
    assert project.run() == MISS
    assert project.run() == HIT


PAST_END = '''\
import tack


@tack.kernel
def past_end(a, out):
    for i in range(len(out)):
        out[i] = a[i + 1]
'''

DEBUG_DRIVER = textwrap.dedent('''
    import sys
    import tack, tack.cache
    sys.path.insert(0, sys.argv[1])
    import past
    tack.set_debug(True)
    try:
        past.past_end(tack.zeros(4), tack.zeros(4))
    except IndexError as exc:
        print(tack.cache.stats()["hits"], exc)
''')


def test_debug_messages_name_the_current_line_after_a_warm_start(tmp_path, cache_dir,
                                                                 tools):
    folder = tmp_path / "project"
    folder.mkdir()
    source = folder / "past.py"

    def message():
        env = tools.child_env(cache_dir, PYTHONDONTWRITEBYTECODE="1")
        done = subprocess.run([sys.executable, "-c", DEBUG_DRIVER, os.fspath(folder)],
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    where = f"in a[i + 1] at {source}, line {{}}, column 18"
    source.write_text(PAST_END)
    assert message() == "0 Kernel 'past_end': index 4 is out of bounds (extent 4) " \
        + where.format(7)
    assert message().startswith("2 ")            # a warm start hits
    source.write_text("# one line\n# and another\n" + PAST_END)
    assert message().endswith(where.format(9))


JOB_SCRIPT = """\
import numpy as np
import tack


@tack.kernel
def doubled(a, out):
    for i in range(len(out)):
        out[i] = 2.0 * a[i]


out = tack.zeros(3)
doubled(tack.array(np.arange(3.0, dtype=np.float32)), out)
assert out.numpy().tolist() == [0.0, 2.0, 4.0]
print(tack.cache.stats()["misses"])
"""


def test_a_script_named_by_another_path_hits_the_same_entries(tmp_path, cache_dir, tools):
    """``python job.py`` names the script absolutely, ``python -m mpi4py job.py``
    (runpy.run_path) relatively, ``python ./job.py`` with a dot: one key."""
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "job.py").write_text(JOB_SCRIPT)
    run_path = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')"

    def misses(*command):
        done = subprocess.run([sys.executable, *command], cwd=folder, capture_output=True,
                              env=tools.child_env(cache_dir), text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return int(done.stdout.split()[-1])

    assert misses("job.py") > 0
    assert misses("-c", run_path, "job.py") == 0
    assert misses("./job.py") == 0
    assert misses(os.path.join("..", "job", "job.py")) == 0


DEVICE_CLASS_KERNEL = '''\
import tack
import helpers


@tack.device_class
class Shifted:
    def __init__(self, by):
        self.by = by

    @tack.func
    def apply(self, x):
        return helpers.outer(x) + helpers.scale(x) + self.by


@tack.kernel
def combined(shift, a, out):
    for i in range(len(out)):
        out[i] = shift.apply(a[i])
'''


def test_keys_follow_what_a_device_class_method_reaches(tmp_path, cache_dir, tools, seed):
    # Regression: the key held the methods' own source only, so an edit to a
    # @tack.func that a method calls was a stale hit that ran the old code.
    folder = tmp_path / "project"
    folder.mkdir()
    project = Project(folder, cache_dir, tools, seed)
    project.kernel_text = DEVICE_CLASS_KERNEL
    project.driver = DRIVER.replace("kern.combined(a, out)",
                                    "kern.combined(kern.Shifted(0.0), a, out)")
    project.write_all()
    assert project.run() == MISS
    assert project.run() == HIT
    project.values["inner"] = "2.0"   # reached through apply -> outer -> inner
    project.write_all()
    assert project.run() == MISS
    project.values["scale"] = "5.0"   # reached as helpers.scale
    project.write_all()
    assert project.run() == MISS


# -- names bound to intrinsics and types -------------------------------------------------

def _apply(op):
    @tack.kernel
    def apply(a, out):
        for i in range(len(out)):
            out[i] = op(a[i])
    return apply


def _convert(to):
    @tack.kernel
    def convert(a, out):
        for i in range(len(out)):
            out[i] = to(a[i] * 0.5)
    return convert


def test_a_factory_binding_other_intrinsics_or_types_compiles_each(cache_dir, seed):
    # Regression: the key held the kernel's source, which is the same for every
    # kernel a factory makes, so the second one ran the first one's code.
    x = np.random.default_rng(seed).uniform(0.5, 4.0, 9)
    a, out = tack.array(x), tack.zeros(9, dtype=tack.f64)
    for op, reference in ((math.sqrt, np.sqrt), (math.exp, np.exp), (abs, np.abs)):
        _apply(op)(a, out)
        np.testing.assert_allclose(out.numpy(), reference(x), rtol=1e-15,
                                   err_msg=f"{op} seed={seed}")
    for to, reference in ((tack.i32, np.trunc), (tack.f64, lambda v: v)):
        _convert(to)(a, out)
        np.testing.assert_array_equal(out.numpy(), reference(x * 0.5),
                                      err_msg=f"{to} seed={seed}")
    assert tack.cache.stats()["hits"] == 0
    _apply(math.exp)(a, out)     # a new kernel object binding exp again: a hit
    assert tack.cache.stats()["hits"] == 2
    np.testing.assert_allclose(out.numpy(), np.exp(x), rtol=1e-15)


ALIASED_KERNEL = '''\
import tack
from math import {name} as op


@tack.kernel
def combined(a, out):
    for i in range(len(out)):
        out[i] = op(a[i])
'''


def test_an_import_alias_bound_to_another_function_compiles_again(tmp_path, cache_dir,
                                                                    tools, seed):
    # Regression: only the line `from math import ... as op` changes, and the
    # kernel's own source and position stay the same.
    folder = tmp_path / "project"
    folder.mkdir()
    project = Project(folder, cache_dir, tools, seed)
    x = np.random.default_rng(seed).uniform(0.5, 4.0, 13)
    env = tools.child_env(cache_dir, PYTHONDONTWRITEBYTECODE="1")
    for name, reference, hits in (("sqrt", np.sqrt, 0), ("exp", np.exp, 0),
                                  ("sqrt", np.sqrt, 2)):
        project.write("kern.py", ALIASED_KERNEL.format(name=name))
        done = subprocess.run([sys.executable, "-c", DRIVER, os.fspath(folder),
                               json.dumps(x.tolist())], env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        np.testing.assert_allclose(result["out"], reference(x), rtol=1e-15,
                                   err_msg=f"{name} seed={seed}")
        assert result["stats"]["hits"] == hits, name


class _Unprintable:
    n = 2.0

    def __repr__(self):
        raise RuntimeError("repr of a host object")


unprintable = _Unprintable()


@tack.kernel
def reads_a_host_object_cached(a, out):
    for i in range(len(out)):
        out[i] = a[i] * unprintable.n


@tack.kernel
def reads_a_host_object_uncached(a, out):
    for i in range(len(out)):
        out[i] = a[i] * unprintable.n


def test_a_host_object_whose_repr_raises_does_not_change_the_error(cache_dir):
    # The key describes what a kernel names by its repr; a broken repr must
    # not replace the kernel's own error (kernels cannot read host objects).
    errors = []
    for kernel, mode in ((reads_a_host_object_cached, "write"),
                         (reads_a_host_object_uncached, "off")):
        tack.cache.configure(directory=cache_dir, mode=mode)
        with pytest.raises(NameError) as caught:
            kernel(tack.zeros(3, dtype=tack.f64), tack.zeros(3, dtype=tack.f64))
        errors.append(str(caught.value).replace("_uncached", "_cached"))
    assert errors[0] == errors[1]
    assert "name 'unprintable' is not defined" in errors[0]
