"""``names.scan``: the names of a function's source that disk-cache keys resolve
(what it binds, what it calls, which outer names and attribute chains it
spells), worked out once per source."""

from __future__ import annotations

import ast
import textwrap

from tack.lang.names import assigned_names, scan

SOURCE = textwrap.dedent('''
    @tack.kernel(helpers.option(1))
    def k(a, out, n):
        total = 0.0
        for i in range(len(out)):
            x, y = a[i], math.pi
            x += helpers.scale(x) + np.linalg.norm(y)
            out[i] = lerp(x, pkg.mod.CONST, (a[i] + 1.0).real)
        while n > 0:
            n -= 1
''')


def tree():
    return ast.parse(SOURCE).body[0]


def test_assigned_names_are_parameters_and_every_target():
    found = scan(tree())
    assert found.assigned == frozenset(assigned_names(tree()))
    assert found.assigned == {"a", "out", "n", "total", "i", "x", "y"}


def test_callees_are_every_call_decorators_included():
    spelled = sorted(ast.unparse(c) for c in scan(tree()).callees)
    assert spelled == sorted(["tack.kernel", "helpers.option", "range", "len",
                              "helpers.scale", "np.linalg.norm", "lerp"])


def test_outer_names_spell_chains_as_written_once_each_outside_decorators():
    texts = [text for text, _ in scan(tree()).outer]
    assert len(texts) == len(set(texts))
    for spelled in ("math.pi", "math", "helpers.scale", "np.linalg.norm", "np.linalg",
                    "np", "pkg.mod.CONST", "lerp", "range", "len", "a", "out", "x"):
        assert spelled in texts, spelled
    assert "(a[i] + 1.0).real" in texts      # an attribute of anything else: unparsed
    assert "tack.kernel" not in texts and "helpers.option" not in texts


def test_each_text_keeps_the_node_it_was_first_spelled_by():
    for text, node in scan(tree()).outer:
        assert ast.unparse(node) == text
