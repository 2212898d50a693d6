"""The package's import graph, read from the source with ``ast`` (imports inside functions included), is acyclic."""
import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "mobandit_jax"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PKG.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PKG.rglob("*.py")}


def _targets(name: str, path: Path) -> set:
    """Package modules that ``name`` imports anywhere in its source (relative and absolute)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            bases = [alias.name for alias in node.names]
            out.update(b for b in bases if b in MODULES)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            submodules = {f"{base}.{alias.name}" for alias in node.names} & set(MODULES)
            out.update(submodules)  # `from . import engine` names a submodule: an edge to it, not to the package
            if base in MODULES and len(submodules) < len(node.names):
                out.add(base)
    out.discard(name)
    return out


def _find_cycle(graph: dict):
    state, stack = {}, []

    def visit(u):
        state[u] = 1
        stack.append(u)
        for v in sorted(graph[u]):
            if state.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if v not in state:
                found = visit(v)
                if found:
                    return found
        stack.pop()
        state[u] = 2
        return None

    for u in sorted(graph):
        if u not in state:
            found = visit(u)
            if found:
                return found
    return None


def test_import_reader_sees_function_level_imports():
    assert "mobandit_jax.runner.threefry" in _targets("mobandit_jax.runner.runtime",
                                                      MODULES["mobandit_jax.runner.runtime"])
    assert _targets("mobandit_jax.runner.plans", MODULES["mobandit_jax.runner.plans"]) >= {
        "mobandit_jax.runner.spec", "mobandit_jax.engine", "mobandit_jax.registry"}
    assert "mobandit_jax" not in _targets("mobandit_jax.runner.plans", MODULES["mobandit_jax.runner.plans"])
    assert "mobandit_jax.runner.plans" in _targets("mobandit_jax.runner.cli", MODULES["mobandit_jax.runner.cli"])
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


def test_package_import_graph_is_acyclic():
    graph = {name: _targets(name, path) for name, path in MODULES.items()}
    assert _find_cycle(graph) is None, " -> ".join(_find_cycle(graph))


def test_the_cli_reads_its_spec_and_starts_its_workers_without_jax():
    """``import mobandit_jax`` and the modules ``mobandit run`` needs before its worker processes start
    import no JAX (the package's names load on first use), so the workers start JAX beside this process."""
    import subprocess
    import sys

    code = ("import sys, mobandit_jax as mb; from mobandit_jax.runner import cache, cli, spec, devices, workers, "
            "run_folder, runtime, plugins; assert 'jax' not in sys.modules, 'jax imported'; mb.make_run; "
            "assert 'jax' in sys.modules; assert callable(mb.make_policy) and mb.POLICIES")
    subprocess.run([sys.executable, "-c", code], check=True)


LAYERS = {  # a layer of the package -> the layers it must not import (function-level imports count)
    "mobandit_jax.kernels": ("policies", "problems", "metrics", "runner", "analysis", "bench", "registry"),
    "mobandit_jax.policies": ("runner", "analysis", "bench"),
    "mobandit_jax.problems": ("runner", "analysis", "bench"),
    "mobandit_jax.metrics": ("runner", "analysis", "bench"),
    "mobandit_jax.engine": ("policies", "problems", "metrics", "runner", "analysis", "bench", "registry"),
    "mobandit_jax.types": ("kernels", "policies", "problems", "metrics", "runner", "analysis", "bench", "registry"),
    "mobandit_jax.registry": ("policies", "problems", "metrics", "runner", "analysis", "bench"),
    "mobandit_jax.analysis": ("runner", "bench"),  # the runner writes a run folder, analysis reads it
}


def test_the_layers_import_only_downwards():
    assert "mobandit_jax.analysis.files" in _targets("mobandit_jax.runner.run_folder",
                                                     MODULES["mobandit_jax.runner.run_folder"])
    bad = []
    for name, path in MODULES.items():
        for layer, forbidden in LAYERS.items():
            if name == layer or name.startswith(layer + "."):
                bad += [(name, t) for t in _targets(name, path)
                        if any(t == f"mobandit_jax.{f}" or t.startswith(f"mobandit_jax.{f}.") for f in forbidden)]
    assert bad == []
