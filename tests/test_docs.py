"""The docs' code blocks run, and the site builds.

Conventions of the fenced code blocks in ``docs/*.md`` (what this test does with each):

- ```` ```python ````: runs. The blocks of a page run in order in one namespace, in a fresh
  temporary folder as the current directory.
- ```` ```LANG title="NAME" ````: a file, shown with its name. It is written to ``NAME`` in that
  folder when the page reaches it (later blocks read it, or import it as a plugin) and is not run.
  A TOML file must parse; when ``NAME`` is a file of the repository (``configs/quickstart.toml``),
  every table the block shows must equal that table of the file.
- a block on the line after ``<!-- no-run -->``: shown only, neither run nor written.
- any other ```` ```toml ```` block is a fragment and must parse.
- ``bash``, ``text`` and other blocks are not run.

Each page runs in a fresh interpreter (``python tests/test_docs.py PAGE FOLDER``), as a reader would run
it: the policies and environments a page registers stay out of the other tests' registries. Pages keep
horizons and seed counts small, so each page runs in seconds.
"""
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)
NO_RUN = "<!-- no-run -->"


def blocks(page: str) -> list:
    """``(lang, title or None, code, first line of the code, shown only)`` of each fenced block of ``page``."""
    text = (DOCS / page).read_text()
    found = []
    for m in FENCE.finditer(text):
        lang, info, code = m.group(1), m.group(2), m.group(3)
        title = re.search(r'title="([^"]+)"', info)
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        line = text.count("\n", 0, m.start(3))
        found.append((lang, title.group(1) if title else None, code, line, before == NO_RUN))
    return found


def test_pages_found():
    assert {"index.md", "getting-started.md", "own-data.md", "own-policy.md", "sweeps.md"} <= set(PAGES)


def test_api_pages_cover_every_module():
    """Each module of the package (a file, not a package's ``__init__``) has a ``::: module`` block in docs/api/."""
    package = ROOT / "mobandit_jax"
    modules = {".".join(p.relative_to(ROOT).with_suffix("").parts) for p in package.rglob("*.py")
               if p.name != "__init__.py" and not p.name.startswith("_")}
    shown = {m for page in (DOCS / "api").glob("*.md") for m in re.findall(r"^::: (\S+)", page.read_text(), re.M)}
    assert not sorted(modules - shown), f"modules with no API block in docs/api/: {sorted(modules - shown)}"
    assert not sorted(m for m in shown if m not in modules and not (ROOT / m.replace(".", "/")).is_dir()), \
        "API blocks of modules that do not exist"


def _check_file(page: str, name: str, lang: str, code: str):
    if lang != "toml":
        return
    shown = tomllib.loads(code)
    repo_file = ROOT / name
    if repo_file.is_file():
        spec = tomllib.loads(repo_file.read_text())
        for table, values in shown.items():
            assert spec.get(table) == values, f"{page}: block {name!r} table [{table}] differs from the file"


def run_page(page: str, folder: Path) -> dict:
    """Run ``page``'s blocks by the conventions above, in ``folder``; return the namespace."""
    scope = {"__name__": f"docs_{Path(page).stem.replace('-', '_')}"}
    for lang, title, code, line, shown_only in blocks(page):
        if shown_only:
            continue
        if title is not None:
            path = folder / title
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(code)
            _check_file(page, title, lang, code)
        elif lang == "toml":
            tomllib.loads(code)
        elif lang == "python":
            source = "\n" * line + code  # tracebacks name the page's own line numbers
            exec(compile(source, str(DOCS / page), "exec"), scope)
    return scope


def _getting_started(ns, folder):
    curves = ns["curves"]
    assert curves.values.shape == (2, 1, 8, 10) and curves.policies == ("PrefUCB", "ParetoUCB")
    assert int(curves.checkpoints[-1]) == 400
    np.testing.assert_allclose(ns["out"]["regret_gap"], curves.values[0, 0], rtol=1e-5, atol=1e-4)
    assert ns["both"]["regret_gap"].shape == (2, 8, 10)
    np.testing.assert_array_equal(ns["both"]["regret_gap"][0], ns["out"]["regret_gap"])
    assert (folder / "runs/first/summary.json").is_file() and ns["back"].records == ns["res"].records
    assert {r["n"] for r in ns["more"].records} == {16} and (folder / "runs/second/run.json").is_file()


def _own_data(ns, folder):
    assert set(ns["regret"]) == {"PrefUCB", "ParetoUCB"}
    assert ns["budgeted"].metrics() == ["hv_efficiency_regret", "hv_regret", "moving_avg_regret_w50"]
    assert {r["policy"] for r in ns["online"].records} == {"cohv_ucb", "hv_ucb", "budgeted/uniform"}
    assert ns["found"].metrics() == ["misidentification", "f1", "budget_spent"]
    assert sorted(p.name for p in folder.iterdir()) == ["examples", "logs.csv", "models.csv"]  # nothing else written


def _own_policy(ns, folder):
    params = [r["params"] for r in ns["res"].records if r["metric"] == "regret_gap"]
    assert params == [{"name": "cone_greedy", "epsilon": 0.05}, {"name": "cone_greedy", "epsilon": 0.2},
                      {"name": "prefucb"}]
    np.testing.assert_allclose(ns["out"]["regret_gap"], ns["small"].curves("regret_gap").values[0, 0],
                               rtol=1e-5, atol=1e-4)
    assert {r["policy"] for r in ns["coins"].records} == {"prefucb", "cone_greedy"}
    weighted = ns["weighted"]  # a whole new family from its plugin: its metrics, its sweep and its truth
    assert weighted.metrics() == ["weighted_regret", "best_played"]
    assert [p.params["c"] for p in weighted.grid["weighted UCB"]] == [0.5, 2.0]
    means = np.array([[0.9, 0.1], [0.4, 0.5], [0.6, 0.6], [0.2, 0.3]])
    family = weighted.truth(0)["families"]["weighted"]
    assert family["best_arms"] == (means.mean(1) == means.mean(1).max()).tolist()
    assert abs(family["best_value"] - 0.6) < 1e-6
    gaps = means.mean(1).max() - means.mean(1)  # a run's regret is at most the horizon times the largest gap
    assert all(0 < r["mean"] < 200 * gaps.max() for r in weighted.records if r["metric"] == "weighted_regret")


def _sweeps(ns, folder):
    curves = ns["curves"]
    assert curves.values.shape == (2, 4, 4, 10)
    assert curves.policies == ("PrefUCB (index = klucb)", "PrefUCB (index = pareto_ucb1)")
    assert curves.settings[0] == {"K": 4, "scenario": "two_rows", "concentration": 0.5}
    assert {r["n"] for r in ns["fewer"].records} == {2}
    assert {r["setting"]["concentration"] for r in ns["fewer"].records} == {1.0}


CHECKS = {"getting-started.md": _getting_started, "own-data.md": _own_data, "own-policy.md": _own_policy,
          "sweeps.md": _sweeps}


def main(page: str, folder: str) -> None:
    """Run ``page`` in ``folder`` (the current directory) and its checks; raise on the first failure."""
    os.chdir(folder)
    ns = run_page(page, Path(folder))
    if page in CHECKS:
        CHECKS[page](ns, Path(folder))


NEEDS = {"live-studies.md": "sklearn"}  # a page's optional package (pip install 'mobandit_jax[examples]')
CHECKOUT = {"live-studies.md": ("examples",)}  # what a page reads from a checkout of the repository


@pytest.mark.parametrize("page", PAGES)
def test_page_blocks_run(page, tmp_path):
    if page in NEEDS and importlib.util.find_spec(NEEDS[page]) is None:
        pytest.skip(f"docs/{page} needs {NEEDS[page]} (pip install 'mobandit_jax[examples]')")
    if not any(lang == "python" and title is None and not shown for lang, title, _, _, shown in blocks(page)):
        run_page(page, tmp_path)  # files and TOML only: nothing is imported or registered
        return
    for name in CHECKOUT.get(page, ()):
        (tmp_path / name).symlink_to(ROOT / name)
    cache = os.path.join(tempfile.gettempdir(), "mobandit_jax_test_cache")  # shared with conftest's
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": cache, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
           "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, __file__, page, str(tmp_path)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"docs/{page}:\n{done.stderr[-6000:]}"


def test_mkdocs_build_strict(tmp_path):
    """``mkdocs build --strict`` passes (every warning is an error); skipped where mkdocs is not installed."""
    for name in ("mkdocs", "material", "mkdocstrings_handlers.python"):
        if importlib.util.find_spec(name.split(".")[0]) is None or importlib.util.find_spec(name) is None:
            pytest.skip(f"{name} is not installed (pip install mkdocs-material 'mkdocstrings[python]')")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()


if __name__ == "__main__":
    main(*sys.argv[1:])
