"""Paired differences (Results.compare, report.md, ``mobandit compare --paired``) against the t-interval of the
per-seed differences in finals.npz, and grid winners with their edge flag against a hand-built grid."""
import json

import numpy as np
import pytest
from _tiny_spec import TINY_TOML
from scipy import stats as st

import mobandit_jax as mb
from mobandit_jax.analysis.results import Results
from mobandit_jax.cli import main

TWO = TINY_TOML + '\n[[policies]]\nname = "pareto_ucb"\nlabel = "ParetoUCB"\n'


def _spec(path, W="[[1.0, 0.0, 1.0], [0.0, -1.0, 1.0]]", concentration=1.0):
    text = TWO.format(horizon=60, seeds=6, chunk=6, record_every=20)
    path.write_text(text.replace("W = [[1.0, 0.0, 1.0], [0.0, -1.0, 1.0]]", f"W = {W}")
                    .replace("concentration = 1.0", f"concentration = {concentration}"))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("paired")
    a = _spec(base / "a.toml")
    b = _spec(base / "b.toml", W="[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]")  # the same seeds and environment
    other = _spec(base / "c.toml", concentration=2.0)  # fewer seeds of another environment
    for name, spec, extra in (("a", a, []), ("b", b, []), ("other", other, ["--seeds", "3"])):
        assert main(["run", str(spec), "--out", str(base / name), "--quiet", *extra]) == 0
    return base


def _t(d):
    half = st.t.ppf(0.975, len(d) - 1) * np.std(d, ddof=1) / np.sqrt(len(d))
    return d.mean() - half, d.mean() + half


def test_compare_is_the_t_interval_of_the_per_seed_differences_to_the_best(runs):
    res = Results.load(runs / "a")
    finals = np.load(runs / "a" / "finals.npz")
    pref, pareto = (np.asarray(finals[f"{p}|0|regret_gap"], np.float64) for p in ("PrefUCB", "ParetoUCB"))
    best, other = ("PrefUCB", "ParetoUCB") if pref.mean() < pareto.mean() else ("ParetoUCB", "PrefUCB")
    [row] = res.compare("regret_gap")
    d = (pareto - pref) if best == "PrefUCB" else (pref - pareto)
    assert row["reference"] == best and row["policy"] == other and row["n"] == 6
    assert row["diff"] == pytest.approx(d.mean(), abs=1e-9)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(_t(d), abs=1e-6)
    assert (row["wins"], row["ties"], row["losses"]) == (int(np.sum(d < 0)), int(np.sum(d == 0)), int(np.sum(d > 0)))
    [vs] = res.compare("regret_gap", baseline="ParetoUCB")
    assert vs["reference"] == "ParetoUCB" and vs["diff"] == pytest.approx((pref - pareto).mean(), abs=1e-9)
    with pytest.raises(ValueError, match="metric 'reward_0' has no goal"):
        res.compare("reward_0")
    report = (runs / "a" / "report.md").read_text()
    assert "## Paired differences" in report and f"| default | {best} | " in report


def test_compare_paired_cli_gives_the_per_seed_interval_and_refuses_runs_of_other_seeds(runs, capsys, monkeypatch):
    monkeypatch.chdir(runs)
    assert main(["compare", "a", "b", "--paired", "--metric", "regret_gap", "--out", "ab.png"]) == 0
    out, err = capsys.readouterr()
    assert "warning" not in err
    fa, fb = np.load(runs / "a" / "finals.npz"), np.load(runs / "b" / "finals.npz")
    d = np.asarray(fb["PrefUCB|0|regret_gap"], np.float64) - np.asarray(fa["PrefUCB|0|regret_gap"], np.float64)
    lo, hi = _t(d)
    assert f"| default | PrefUCB | b | {d.mean():.4g} [{lo:.4g}, {hi:.4g}] |" in out
    why = "seed counts differ (a: 6, other: 3); environments ([env]) differ"
    assert main(["compare", "a", "other", "--metric", "regret_gap", "--out", "other.png"]) == 0
    assert capsys.readouterr().err.strip().splitlines() == [f"warning: the runs are not paired: {why}"]
    assert main(["compare", "a", "other", "--paired", "--out", "other2.png"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and why in err[0] and "--unpaired" in err[0] and not (runs / "other2.png").exists()
    assert main(["compare", "a", "other", "--unpaired", "--metric", "regret_gap", "--out", "other3.png"]) == 0
    out = capsys.readouterr().out
    fo = np.load(runs / "other" / "finals.npz")
    welch = st.ttest_ind(fo["PrefUCB|0|regret_gap"], fa["PrefUCB|0|regret_gap"], equal_var=False).confidence_interval()
    assert "Welch" in out and f"[{welch.low:.4g}, {welch.high:.4g}]" in out


def test_report_band_std_prints_mean_and_std(runs, capsys):
    assert main(["report", str(runs / "a"), "--band", "std"]) == 0
    out = capsys.readouterr().out
    r = Results.load(runs / "a").record("PrefUCB", "regret_gap")
    assert "Values are mean ± 1 std over 6 seeds." in out and f"{r['mean']:.4g} ± {r['std']:.2g}" in out


def _grid_results(means, goal="min"):
    """A hand-built run: policy P sweeps alpha over [0.5, 1, 2, 4], 5 seeds of values around ``means``."""
    alphas = [0.5, 1.0, 2.0, 4.0]
    noise = np.array([-0.2, -0.1, 0.0, 0.1, 0.2])
    finals = {f"P|{g}|regret": m + noise * (1 + g) for g, m in enumerate(means)}
    grid = {"P": [mb.GridPoint({}, {"name": "p", "alpha": a}) for a in alphas]}
    records = [mb.analysis.files.record("P", grid["P"][g].params, {}, "regret", finals[f"P|{g}|regret"])
               for g in range(4)]
    spec = mb.ExperimentSpec.from_dict({"experiment": {"name": "grid"}})
    return Results(spec, grid, {"P": ("regret",)}, {"P": {"regret": "mean"}}, 1, 1, 0,
                   {}, finals, records, bounds={"P": {"regret": [0, None]}}, goal={"P": {"regret": goal}})


def test_a_grid_whose_best_is_at_the_edge_is_flagged():
    [row] = _grid_results([3.0, 2.0, 1.5, 1.0]).grid_winners("regret")
    assert row["option"] == "alpha" and row["best"] == 4.0 and row["edge"] is True and row["grid"] == [0.5, 1, 2, 4]
    assert row["runner_up"]["alpha"] == 2.0 and row["runner_up_diff"] == pytest.approx(0.5)
    d = (1.5 + np.array([-0.2, -0.1, 0.0, 0.1, 0.2]) * 3) - (1.0 + np.array([-0.2, -0.1, 0.0, 0.1, 0.2]) * 4)
    assert (row["runner_up_ci_low"], row["runner_up_ci_high"]) == pytest.approx(_t(d), abs=1e-9)
    [inside] = _grid_results([3.0, 1.0, 1.5, 2.0]).grid_winners("regret")
    assert inside["best"] == 1.0 and inside["edge"] is False
    [high] = _grid_results([3.0, 1.0, 1.5, 2.0], goal="max").grid_winners("regret")
    assert high["best"] == 0.5 and high["edge"] is True
    with pytest.raises(ValueError, match="no goal"):
        _grid_results([1, 2, 3, 4], goal="").grid_winners("regret")


def test_grid_winners_in_report_md_with_the_edge_flag(tmp_path):
    from mobandit_jax.analysis import report

    res = _grid_results([3.0, 2.0, 1.5, 1.0])
    lines = report.grid_section(res)
    assert lines[0] == "## Grid winners" and any("| P | default | regret | alpha |" in x and "at the edge" in x
                                                  for x in lines)
    fig = mb.analysis.plots.grid_figure(res, "regret")
    assert fig.axes[0].get_xlabel() == "alpha" and "grid" in fig._suptitle.get_text()
    assert json.dumps(res.compare("regret")[0]["setting"]) == "{}"


def test_report_baseline_prints_the_paired_differences_to_that_policy(runs, capsys):
    assert main(["report", str(runs / "a"), "--baseline", "ParetoUCB"]) == 0
    out = capsys.readouterr().out
    [vs] = Results.load(runs / "a").compare("regret_gap", baseline="ParetoUCB")
    assert "difference to ParetoUCB [95% CI]" in out and "| default | ParetoUCB | " in out
    cell = f"{vs['diff']:.4g} [{vs['ci_low']:.4g}, {vs['ci_high']:.4g}]"
    assert f"| default | PrefUCB | {vs['mean']:.4g} | {cell} |" in out
    assert main(["report", str(runs / "a"), "--baseline", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--baseline 'nope' is no policy of this run" in err[0]
