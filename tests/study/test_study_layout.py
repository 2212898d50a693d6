"""The study package's seams, read from its source with ``ast``: drivers and the other modules read a study through
its public calls and the :class:`StudyView` (no ``study._private`` outside ``study.py``), ``study.py`` picks no
behaviour with ``hasattr``, every public function and method has ``Args:`` and ``Returns:``, and no function is over
80 lines. Each checker is shown to catch a planted breach."""
import ast

from _layout import LONGEST, PACKAGE, long_functions, undocumented
from _layout import sources as _sources

STUDY = PACKAGE / "study"
OWNED_ELSEWHERE = {"spec.py"}  # the spec's module is being rewritten as the typed spec of runs and studies


def sources() -> dict:
    """File (relative to ``study/``) -> parsed module, for every ``.py`` file of the package."""
    return _sources(STUDY)


def private_reads(tree) -> list:
    """``study._NAME`` attribute reads (any name bound to a study is called ``study`` in this package)."""
    return [f"study.{n.attr} (line {n.lineno})" for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == "study" and n.attr.startswith("_")]


def hasattr_calls(tree) -> list:
    return [f"line {n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name) and n.func.id == "hasattr"]


def test_only_study_py_reads_a_studys_private_fields():
    found = {f: private_reads(t) for f, t in sources().items() if f != "study.py"}
    assert not {f: r for f, r in found.items() if r}, found
    planted = ast.parse("def settle(study):\n    return study._pending\n")
    assert private_reads(planted) == ["study._pending (line 2)"]


def test_study_py_picks_no_behaviour_by_hasattr():
    assert hasattr_calls(sources()["study.py"]) == []
    assert hasattr_calls(ast.parse("if hasattr(driver, 'restore'):\n    pass\n")) == ["line 1"]


def test_every_public_function_has_args_and_returns():
    missing = {f: undocumented(t) for f, t in sources().items() if f not in OWNED_ELSEWHERE}
    assert not {f: m for f, m in missing.items() if m}, missing
    planted = ast.parse('def f(x):\n    """Do it.\n\n    Returns:\n      x.\n    """\n\n'
                        'class C:\n    def g(self):\n        """Do it."""\n\n    @property\n    def p(self):\n'
                        '        """A value."""\n')
    assert undocumented(planted) == ["f: no Args:", "C.g: no Returns:"]


def test_no_function_over_80_lines():
    found = {f: long_functions(t) for f, t in sources().items() if f not in OWNED_ELSEWHERE}
    assert not {f: n for f, n in found.items() if n}, found
    planted = ast.parse("def f():\n" + "    x = 1\n" * LONGEST)
    assert long_functions(planted) == [f"f ({LONGEST + 1} lines)"]
