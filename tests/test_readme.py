"""The README's code blocks run: "A short example" (python) and "Your own data" (bash and python)."""
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def blocks(section: str, lang: str) -> list:
    """The ``lang`` code blocks of the README section titled ``## {section}``."""
    text = README.read_text()
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"```{lang}\n(.*?)```", body, flags=re.S)


def _needs_table_env():
    from mobandit_jax.registry import ENVS

    if "table" not in ENVS:
        pytest.skip('env kind "table" is not registered in this checkout')


def test_short_example_runs():
    code, = blocks("A short example", "python")
    scope = {}
    exec(compile(code, "README.md: A short example", "exec"), scope)
    out = scope["out"]
    assert out["regret_gap"].shape == (256, 20)
    assert np.all(np.diff(out["regret_gap"], axis=1) >= -1e-6)  # cumulative: never decreases


def test_your_own_data_toml_blocks_are_the_example_specs():
    shown = blocks("Your own data", "toml")
    assert len(shown) == 2
    for block in shown:
        name = re.search(r"# (examples/\S+\.toml)", block).group(1)
        spec = tomllib.loads((ROOT / name).read_text())
        for table, values in tomllib.loads(block).items():
            assert spec[table] == values, (name, table)


@pytest.fixture
def examples_cwd(tmp_path, monkeypatch):
    """A cwd holding a copy of examples/, so the blocks' relative paths and outputs stay in tmp_path."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.slow  # many processes or a long run: `pytest -m slow`
def test_your_own_data_bash_block_runs(examples_cwd):
    _needs_table_env()
    code, = blocks("Your own data", "bash")
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "XDG_CACHE_HOME": str(examples_cwd / "cache")}  # the runs share compiled programs, not the user's cache
    for line in code.strip().splitlines():
        assert line.startswith("mobandit "), line
        cmd = (f"{sys.executable} -m mobandit_jax.cli {line[len('mobandit '):]} --quiet"
               if " run " in f" {line} "
               else f"{sys.executable} -m mobandit_jax.cli {line[len('mobandit '):]}")
        done = subprocess.run(cmd, shell=True, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{line}\n{done.stderr}"
    runs = examples_cwd / "runs"
    for name in ("llm_models", "llm_models_pareto", "llm_models_budget"):
        assert (runs / name / "summary.json").is_file() and (runs / name / "report.md").is_file()
    assert (runs / "llm_models_compare.png").stat().st_size > 0
    assert "| setting | policy | llm_models | llm_models_pareto |" in done.stdout


def test_your_own_data_python_block_runs(examples_cwd):
    _needs_table_env()
    code, = blocks("Your own data", "python")
    scope = {}
    exec(compile(code, "README.md: Your own data", "exec"), scope)
    res, budget, curves = scope["res"], scope["budget"], scope["curves"]
    assert {r["policy"] for r in res.records} == {"PrefUCB", "ParetoUCB"} and {r["n"] for r in res.records} == {4}
    assert curves.values.shape[:3] == (2, 1, 4) and curves.policies == ("PrefUCB", "ParetoUCB")
    assert "hv_efficiency_regret" in budget.metrics()
    assert (examples_cwd / "runs/llm_models_dict/summary.json").is_file()
    # Nothing but the dict spec's save() was written next to the examples.
    assert sorted(p.name for p in examples_cwd.iterdir()) == ["examples", "runs"]
    assert sorted(p.name for p in (examples_cwd / "runs").iterdir()) == ["llm_models_dict"]
