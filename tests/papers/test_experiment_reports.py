"""The report builders in experiments/ use the package's general API only and read the papers' numbers
from their own paper_tables.json, never from a paper table inside the package."""
import ast
import json
from pathlib import Path

import pytest
from _report_text import image_lines, without_images

from mobandit_jax.runner.reproduce import load_report, report_builders

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
BUILDERS = report_builders(EXPERIMENTS)

# Modules of the package a builder may import anywhere (and their names), besides ``import mobandit_jax as mb``.
GENERAL = ("mobandit_jax.analysis", "mobandit_jax.kernels",
           "mobandit_jax.problems.llm_leaderboard", "mobandit_jax.problems.nyse", "mobandit_jax.problems.llm_configs")
# Xue et al. rebuilds instances and identification policies: only inside these functions.
PACKAGE_ACCESS = {"budget_use", "classification_gaps", "l_k_lambda"}
# Paper tables and report-only helpers that are leaving the package.
PAPER_NAMES = {"TABLE1", "TABLE2_ETA", "table2_eta", "SCENARIO_ROLES", "SCENARIOS", "MANDATES", "scenario_matrices",
               "preference_levels", "mandate_matrices", "mandate_levels", "data_driven_W", "data_driven_mandates"}


def _imports(tree):
    """``[(imported dotted name, enclosing function or None), ...]`` for every import from the package."""
    out = []

    def visit(node, fn):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ImportFrom) and (child.module or "").startswith("mobandit_jax"):
                out.extend((f"{child.module}.{a.name}", fn) for a in child.names)
            elif isinstance(child, ast.Import):
                out.extend((a.name, fn) for a in child.names if a.name.startswith("mobandit_jax"))
            visit(child, child.name if isinstance(child, ast.FunctionDef) else fn)

    visit(tree, None)
    return out


def _general(name):
    return name == "mobandit_jax" or any(name == g or name.startswith(g + ".") for g in GENERAL)


@pytest.mark.parametrize("prefix", sorted(BUILDERS))
def test_builder_imports_only_the_general_api(prefix):
    tree = ast.parse(BUILDERS[prefix].path.read_text())
    for name, fn in _imports(tree):
        assert _general(name) or fn in PACKAGE_ACCESS, f"{prefix}: {name} imported in {fn or 'module scope'}"
        assert name.rsplit(".", 1)[-1] not in PAPER_NAMES, f"{prefix}: {name}"
    for node in ast.walk(tree):
        assert not (isinstance(node, ast.ImportFrom) and node.level), f"{prefix}: relative import line {node.lineno}"
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in ("L", "llm", "nyse")):
            assert node.attr not in PAPER_NAMES, f"{prefix}: {node.value.id}.{node.attr}"


@pytest.mark.parametrize("prefix", sorted(BUILDERS))
def test_builder_reads_its_runs_through_results(prefix):
    """A builder reads run folders through ``mb.Results`` (its record, curve and final look-ups): it derives no
    class of a runner's reader and spells no ``"label|grid|metric"`` key of the arrays itself."""
    source = BUILDERS[prefix].path.read_text()
    tree = ast.parse(source)
    bases = [ast.unparse(b) for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for b in node.bases]
    assert not [b for b in bases if "RunDir" in b], f"{prefix}: {bases}"
    assert "Results.load" in source, prefix
    keys = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) and "}|{" in ast.unparse(n)]
    assert keys == [], f"{prefix}: hand-built array keys {keys}"


def test_import_scan_sees_module_and_function_level_imports():
    tree = ast.parse("from mobandit_jax.analysis import stats\nimport numpy\n"
                     "def f():\n    from mobandit_jax import registry\n")
    found = _imports(tree)
    assert found == [("mobandit_jax.analysis.stats", None), ("mobandit_jax.registry", "f")]
    assert _general(found[0][0]) and not _general(found[1][0]) and not _general("mobandit_jax.resultsx")


def test_cost_aware_paper_values_are_read_from_its_table_file():
    rep = load_report("cost_aware", EXPERIMENTS)
    tables = json.loads((EXPERIMENTS / "cost_aware" / "paper_tables.json").read_text())
    assert tables["quoted"] == rep.PAPER
    assert rep._paper(rep.PAPER["stoch"], "gsm8k", "Uniform") == "0.026 / 0.028"
    assert rep._paper(rep.PAPER["ident_large"], "piqa", "CoPSI") == "0.148"
    assert rep._paper(rep.PAPER["ident_small"], "piqa", "CoPSI") == "—"
    # Table 1 of the paper: GSM8K accuracy 0.014-0.165, 7 Pareto-optimal configurations
    assert tables["table1"]["gsm8k"]["acc"] == [0.014, 0.165] and tables["table1"]["gsm8k"]["pareto"] == 7


def test_cost_aware_builds_the_same_report_without_figures(tmp_path):
    """``build(..., figures=False)`` (what ``mobandit reproduce --check`` calls): the same report.md but the figure
    links, the same summary, no PNG; the default draws the figures."""
    rep = load_report("cost_aware", EXPERIMENTS)
    drawn, bare = tmp_path / "drawn", tmp_path / "bare"
    rep.build({}, drawn)
    rep.build({}, bare, figures=False)
    assert (drawn / "fig1_landscape.png").stat().st_size > 0 and not list(bare.glob("*.png"))
    text, bare_text = (drawn / "report.md").read_text(), (bare / "report.md").read_text()
    assert image_lines(text) == ["![](fig1_landscape.png)"] and not image_lines(bare_text)
    assert without_images(bare_text) == without_images(text)
    assert (bare / "summary.json").read_text() == (drawn / "summary.json").read_text()
