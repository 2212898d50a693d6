"""The package's import graph, read from the source with ``ast`` (imports inside functions included): acyclic, and
layered: the command line (``cli``) on top, then the parts it drives (``runner``, ``study``, ``bench``,
``analysis``), then the core; no arrow runs back up. The checker is shown to catch a planted upward import in a
small fake package."""
import ast
import subprocess
import sys
import textwrap
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "mobandit_jax"

TOP = {"", "cli"}  # the package's facade (``mobandit_jax/__init__.py``, names loaded on use) and the command line
PARTS = {  # a part -> the other parts it may import besides the core; any other part is core
    "bench": {"runner", "analysis"},
    "runner": {"analysis"},  # the runner writes a run folder, analysis reads it
    "study": set(),
    "analysis": set(),
}
CORE_ORDER = {  # within the core: a module family -> the families it must not import
    "kernels": ("policies", "problems", "metrics", "registry", "plugins"),
    "engine": ("policies", "problems", "metrics", "registry", "plugins"),
    "types": ("kernels", "policies", "problems", "metrics", "registry", "plugins"),
    "registry": ("policies", "problems", "metrics", "plugins"),
    "errors": ("kernels", "policies", "problems", "metrics", "registry", "plugins", "types", "engine"),
    "spec_tables": ("kernels", "policies", "problems", "metrics", "registry", "plugins", "types", "engine"),
    "experiment_spec": ("kernels", "policies", "problems", "metrics", "registry", "plugins", "types", "engine"),
}


def read_modules(pkg: Path) -> dict:
    """Module name -> file, for every ``.py`` file under the package folder ``pkg``."""
    def name(path):
        parts = path.relative_to(pkg.parent).with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    return {name(p): p for p in sorted(pkg.rglob("*.py"))}


def targets(name: str, path: Path, modules) -> set:
    """Modules of ``modules`` that module ``name`` imports anywhere in its source (relative and absolute)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            submodules = {f"{base}.{alias.name}" for alias in node.names} & set(modules)
            out.update(submodules)  # `from . import engine` names a submodule: an edge to it, not to the package
            if base in modules and len(submodules) < len(node.names):
                out.add(base)
    out.discard(name)
    return out


def import_graph(pkg: Path) -> dict:
    """Module name -> the package's modules it imports."""
    modules = read_modules(pkg)
    return {name: targets(name, path, modules) for name, path in modules.items()}


def part(module: str) -> str:
    """The part of the package a module belongs to: ``runner`` for ``pkg.runner.spec``, ``""`` for ``pkg``."""
    return module.split(".")[1] if "." in module else ""


def upward_arrows(graph: dict) -> list:
    """``(importer, imported)`` pairs that run against the layers: a part or the core importing the command line,
    the core importing a part, a part importing another part it may not (:data:`PARTS`)."""
    bad = []
    for name, imported in graph.items():
        src = part(name)
        if src in TOP:
            continue
        for t in sorted(imported):
            dst = part(t)
            if dst == src:
                continue
            allowed = PARTS.get(src, set())
            if dst in TOP or (dst in PARTS and dst not in allowed):
                bad.append((name, t))
    return bad


def find_cycle(graph: dict):
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


GRAPH = import_graph(PKG)


def test_import_reader_sees_function_level_imports():
    assert "mobandit_jax.runner.threefry" in GRAPH["mobandit_jax.runner.runtime"]
    assert GRAPH["mobandit_jax.runner.plans"] >= {"mobandit_jax.experiment_spec", "mobandit_jax.engine",
                                                  "mobandit_jax.registry", "mobandit_jax.plugins"}
    assert "mobandit_jax" not in GRAPH["mobandit_jax.runner.plans"]
    assert GRAPH["mobandit_jax.cli"] >= {"mobandit_jax.runner.commands", "mobandit_jax.study.cli",
                                         "mobandit_jax.bench.benchmark"}  # inside functions, all three
    assert "mobandit_jax.plugins" in GRAPH["mobandit_jax.study.policy"]  # inside a function
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_package_import_graph_is_acyclic():
    assert find_cycle(GRAPH) is None, " -> ".join(find_cycle(GRAPH))


def test_no_arrow_runs_back_up():
    assert upward_arrows(GRAPH) == []


def _fake_package(root: Path, planted: dict) -> Path:
    """A package ``fake`` laid out as this one (cli on top, runner, study and analysis, a core), with the
    ``planted`` source appended to the named files."""
    files = {
        "__init__.py": "",
        "cli.py": "def main():\n    from .runner import commands\n    from .study import cli\n",
        "errors.py": "",
        "registry.py": "from .errors import *\n",
        "runner/__init__.py": "",
        "runner/commands.py": "from ..analysis import files\nfrom .. import registry\n",
        "study/__init__.py": "",
        "study/cli.py": "def main():\n    from ..registry import make\n",
        "analysis/__init__.py": "",
        "analysis/files.py": "import fake.errors\n",
    }
    for rel, text in files.items():
        path = root / "fake" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + textwrap.dedent(planted.get(rel, "")))
    return root / "fake"


def test_the_checker_finds_a_planted_upward_import(tmp_path):
    clean = import_graph(_fake_package(tmp_path / "clean", {}))
    assert clean["fake.cli"] == {"fake.runner.commands", "fake.study.cli"}
    assert upward_arrows(clean) == [] and find_cycle(clean) is None
    planted = {  # each inside a function, as the old command line's were
        "runner/commands.py": "def study():\n    from ..study import cli\n",
        "registry.py": "def cli():\n    import fake.cli\n",
        "analysis/files.py": "def back():\n    from ..runner.commands import x\n",
    }
    graph = import_graph(_fake_package(tmp_path / "planted", planted))
    assert upward_arrows(graph) == [("fake.analysis.files", "fake.runner.commands"),
                                    ("fake.registry", "fake.cli"),
                                    ("fake.runner.commands", "fake.study.cli")]
    assert find_cycle(graph) is not None  # fake.cli -> runner.commands -> study.cli ... and registry -> cli -> ...


def test_the_cli_reads_its_spec_and_starts_its_workers_without_jax():
    """``import mobandit_jax`` and the modules ``mobandit run`` needs before its worker processes start
    import no JAX (the package's names load on first use), so the workers start JAX beside this process."""
    code = ("import sys, mobandit_jax as mb; from mobandit_jax import cli, plugins; from mobandit_jax.runner import "
            "cache, commands, spec, devices, workers, run_folder, runtime; cli.parser(); "
            "assert 'jax' not in sys.modules, 'jax imported'; mb.make_run; "
            "assert 'jax' in sys.modules; assert callable(mb.make_policy) and mb.POLICIES")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_core_imports_in_its_own_order():
    bad = []
    for name, imported in GRAPH.items():
        forbidden = CORE_ORDER.get(part(name), ())
        bad += [(name, t) for t in imported if part(t) in forbidden]
    assert bad == []
