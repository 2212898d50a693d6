"""mb.run and Results: in memory with nothing written, the same records as `mobandit run`, labelled curves, compare."""
import json
import os

import numpy as np
import pytest

import mobandit_jax as mb
from mobandit_jax.runner import cli
from mobandit_jax.runner import spec as cfg
from mobandit_jax.runner.spec import ConfigError
from mobandit_jax.runner import execution
from mobandit_jax.runner import plans

from _tiny_spec import tiny_spec


def _files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A fresh cwd, HOME and XDG cache dir under tmp_path, holding only the tiny spec (2 chunks of 2 seeds)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    tiny_spec(work / "tiny.toml", horizon=60, seeds=6, chunk=2, record_every=20)
    return tmp_path


def test_run_in_memory_writes_nothing_and_matches_the_cli(sandbox):
    before = _files(sandbox)
    res = mb.run("tiny.toml", seeds=4)
    assert _files(sandbox) == before == ["work/tiny.toml"]
    assert {"regret_gap", "regret_indicator", "optimal_selection_ratio"} <= {r["metric"] for r in res.records}
    assert all(r["n"] == 4 and r["policy"] == "PrefUCB" for r in res.records)
    # The run folder `mobandit run` writes holds the same records and arrays.
    plan = plans.checked_build(cfg.apply_overrides(cfg.load("tiny.toml"), ["experiment.seeds=4"]))
    execution.execute(plan, "cli", progress=False)
    assert json.loads((sandbox / "work/cli/summary.json").read_text())["records"] == res.records
    with np.load(sandbox / "work/cli/curves.npz") as z:
        assert sorted(z.files) == sorted(res.arrays)
        for k in z.files:
            np.testing.assert_array_equal(z[k], res.arrays[k])


def test_curves_are_labelled_and_records_are_their_seed_means(sandbox):
    spec = {"experiment": {"horizon": 60, "seeds": 3, "record_every": 20},
            "env": {"kind": "stochastic", "means": [[0.2, 0.7], [0.6, 0.4], [0.5, 0.5]]},
            "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "sweep": {"env.concentration": [1.0, 4.0]},
            "policies": [{"name": "prefucb", "label": "P"}, {"name": "pareto_ucb", "label": "Q"}]}
    res = mb.run(spec, overrides={"experiment.seeds": 2})
    c = res.curves("regret_gap")
    assert c.values.shape == (2, 2, 2, 3)  # policy x setting x seed x checkpoint
    assert c.policies == ("P", "Q") and c.settings == ({"concentration": 1.0}, {"concentration": 4.0})
    np.testing.assert_array_equal(c.checkpoints, [20, 40, 60])
    for r in res.records:
        if r["metric"] == "regret_gap":  # reducer "sum": the mean over seeds of the last checkpoint
            p, s = c.policies.index(r["policy"]), c.settings.index(r["setting"])
            assert r["mean"] == pytest.approx(float(np.mean(c.values[p, s, :, -1])), rel=1e-6)
    frame = res.frame()
    assert list(frame.columns) == ["policy", "concentration", "metric", "mean", "std", "n"]
    assert len(frame) == len(res.records) == 2 * 2 * len(res.metrics()) and set(frame["n"]) == {2}
    assert res.plot("regret_gap").axes[0].get_title() == "concentration=1.0"
    with pytest.raises(ValueError, match="unknown metric 'nope'"):
        res.curves("nope")
    assert _files(sandbox) == ["work/tiny.toml"]


def test_save_writes_a_run_folder_that_compare_reads(sandbox, capsys):
    res = mb.run("tiny.toml", overrides=["experiment.seeds=2", "experiment.horizon=40"])
    res.save("a")
    for name in ("run.json", "summary.json", "curves.npz", "finals.npz", "grid.json", "report.md", "regret_gap.png"):
        assert (sandbox / "work/a" / name).is_file(), name
    back = mb.Results.load("a")
    assert back.records == res.records and back.grid == res.grid
    other = mb.run("tiny.toml", overrides={"experiment.seeds": 2, "preference.W": [[1.0, 0.0, 0.0]]})
    other.save("b")
    with pytest.raises(RuntimeError, match="different experiment"):
        other.save("a")
    assert cli.main(["compare", "a", "b", "--metric", "regret_gap", "--out", "cmp.png"]) == 0
    out = capsys.readouterr().out
    mean = {n: r["mean"] for n, rr in (("a", res), ("b", other)) for r in rr.records if r["metric"] == "regret_gap"}
    row = next(line for line in out.splitlines() if line.startswith("| default | PrefUCB |"))
    assert row.split("|")[3].strip().startswith(f"{mean['a']:.4g} ±") and row.split("|")[4].strip().startswith(
        f"{mean['b']:.4g} ±")
    assert (sandbox / "work/cmp.png").stat().st_size > 0
    assert cli.main(["compare", "a", "b", "--metric", "regret_gap", "regret_indicator", "--out", "two.png"]) == 0
    assert capsys.readouterr().out.count("### ") == 2
    assert cli.main(["compare", "a", "--metric", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--metric 'nope' is in none of the runs" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv, message", [
    (["compare", "missing"], "run folder 'missing' does not exist"),
    (["compare", "empty"], "has no grid.json"),
    (["compare", "broken"], "summary.json or grid.json cannot be read"),
])
def test_compare_bad_run_dirs_are_one_line_exit_2(sandbox, capsys, argv, message):
    (sandbox / "work/empty").mkdir()
    (sandbox / "work/broken").mkdir()
    (sandbox / "work/broken/grid.json").write_text("{}")
    (sandbox / "work/broken/summary.json").write_text("{not json")
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_run_rejects_a_bad_spec_argument(sandbox):
    with pytest.raises(TypeError, match="TOML path or a dict"):
        mb.run(42)
    with pytest.raises(ConfigError, match="does not exist"):
        mb.run("nope.toml")
    with pytest.raises(ConfigError, match="experiment.seeds"):
        mb.run("tiny.toml", seeds=0)
