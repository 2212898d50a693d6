"""Checks of the package's source read with ``ast``, shared by the layout tests (``tests/test_layout.py``,
``tests/study/test_study_layout.py``): public functions and methods without ``Args:`` / ``Returns:``, and functions
over :data:`LONGEST` lines."""
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mobandit_jax"
LONGEST = 80  # the most lines of a function, its docstring included


def sources(folder: Path) -> dict:
    """File (relative to ``folder``) -> parsed module, for every ``.py`` file under ``folder``."""
    return {p.relative_to(folder).as_posix(): ast.parse(p.read_text()) for p in sorted(folder.rglob("*.py"))}


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
    """Functions and methods (nested ones too) of more than :data:`LONGEST` lines."""
    return [f"{n.name} ({n.end_lineno - n.lineno + 1} lines)" for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.end_lineno - n.lineno + 1 > LONGEST]
