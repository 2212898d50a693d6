"""The study package's seams, read from its source with ``ast``: drivers and the other modules read a study through
its public calls and the :class:`StudyView` (no ``study._private`` outside ``study.py``), ``study.py`` picks no
behaviour with ``hasattr``, every public function and method has ``Args:`` and ``Returns:``, and no function is over
80 lines. Each checker is shown to catch a planted breach."""
import ast
from pathlib import Path

STUDY = Path(__file__).resolve().parents[2] / "mobandit_jax" / "study"
OWNED_ELSEWHERE = {"spec.py"}  # the spec's module is being rewritten as the typed spec of runs and studies
LONGEST = 80


def sources() -> dict:
    """File (relative to ``study/``) -> parsed module, for every ``.py`` file of the package."""
    return {p.relative_to(STUDY).as_posix(): ast.parse(p.read_text()) for p in sorted(STUDY.rglob("*.py"))}


def private_reads(tree) -> list:
    """``study._NAME`` attribute reads (any name bound to a study is called ``study`` in this package)."""
    return [f"study.{n.attr} (line {n.lineno})" for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name) and n.value.id == "study" and n.attr.startswith("_")]


def hasattr_calls(tree) -> list:
    return [f"line {n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name) and n.func.id == "hasattr"]


def _public_functions(tree):
    """``(qualified name, node, is a method)`` of the module's public functions and public classes' methods."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_"):
            yield node.name, node, False
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not item.name.startswith("_"):
                    yield f"{node.name}.{item.name}", item, True


def undocumented(tree) -> list:
    """Public functions and methods whose docstring lacks ``Args:`` (where they take any) or ``Returns:``; a
    property is an attribute and needs only a docstring."""
    out = []
    for name, node, method in _public_functions(tree):
        doc = ast.get_docstring(node) or ""
        if any(isinstance(d, ast.Name) and d.id == "property" for d in node.decorator_list):
            if not doc:
                out.append(f"{name}: no docstring")
            continue
        args = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
        if method and args and args[0] in ("self", "cls"):
            args = args[1:]
        if (args or node.args.vararg or node.args.kwarg) and "Args:" not in doc:
            out.append(f"{name}: no Args:")
        if "Returns:" not in doc:
            out.append(f"{name}: no Returns:")
    return out


def long_functions(tree) -> list:
    return [f"{n.name} ({n.end_lineno - n.lineno + 1} lines)" for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.end_lineno - n.lineno + 1 > LONGEST]


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
