"""``tack.algorithms`` and ``tack.communication`` after a plain ``import tack``."""

import subprocess
import sys


def test_submodules_load_on_first_use():
    code = ("import sys, tack\n"
            "assert 'tack.algorithms' not in sys.modules\n"
            "print(tack.algorithms.sum(tack.ones(5)), tack.communication.World.__name__)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["5.0", "World"]
