"""Figures: 200 dpi and a title naming the experiment (read back from the PNG), legend labels as the
report's columns, a budgeted x-axis ending where the last seed's budget ran out, compare figures with a
title, axis labels, a legend outside the bars and rate error bars within [0, 1], a fixed-confidence run's
figures against delta, and the figures again as PDF or SVG on request."""
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import mobandit_jax as mb
from mobandit_jax.analysis import compare, plots
from mobandit_jax.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _pngs(folder):
    return sorted(Path(folder).glob("*.png"))


def _check_png(path, name):
    with Image.open(path) as im:
        dpi = im.info["dpi"]
        assert min(dpi) >= 199.9, (path.name, dpi)
        assert im.size[0] >= 3.4 * 200 and name in im.text["Title"], (path.name, im.size, im.text)
        return im.text["Title"]


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("fig") / "quick"
    assert main(["run", str(ROOT / "configs" / "quickstart.toml"), "--out", str(out), "--quiet", "--seeds", "3",
                 "--set", "experiment.horizon=100"]) == 0
    return out


@pytest.fixture(scope="module")
def budget(tmp_path_factory):
    base = tmp_path_factory.mktemp("budget")
    for name in ("llm_models_budget.toml", "llm_models.csv"):
        shutil.copy(ROOT / "examples" / name, base / name)
    assert main(["run", str(base / "llm_models_budget.toml"), "--out", str(base / "run"), "--quiet",
                 "--seeds", "2"]) == 0
    return base / "run"


def test_quickstart_figures_are_200_dpi_titled_with_the_experiment_and_the_band(quick):
    name = "quickstart: PDMOB with a two-row preference cone"
    pngs = _pngs(quick)
    assert {p.name for p in pngs} >= {"regret_gap.png", "regret_indicator.png"}
    for p in pngs:
        title = _check_png(p, name)
        assert "mean, 95% CI over 3 seeds" in title


def test_legend_labels_are_the_reports_columns(quick):
    res = mb.Results.load(quick)
    fig = res.plot("regret_gap")
    labels = fig.axes[0].get_legend_handles_labels()[1]
    header = next(line for line in (quick / "report.md").read_text().splitlines() if line.startswith("| setting |"))
    assert labels == [c.strip() for c in header.strip("|").split("|")[1:]]
    std = res.plot("regret_gap", band="std")
    assert "mean ± 1 std over 3 seeds" in std.get_suptitle()


def test_budgeted_figures_end_where_the_last_seeds_budget_ran_out(budget):
    name = "llm_models_budget: hypervolume per cost under a budget"
    for p in _pngs(budget):
        _check_png(p, name)
    res = mb.Results.load(budget)
    played = max(float(np.max(res.curve(label, "rounds")[:, -1])) for label in res.grid)
    assert played < res.checkpoints[-1]  # the horizon runs past every seed's budget
    fig = res.plot("hv_regret")
    assert fig.axes[0].get_xlim()[1] == pytest.approx(played)
    for line in fig.axes[0].collections:  # the bands of a regret (>= 0) stay at or above 0
        assert np.min(line.get_paths()[0].vertices[:, 1]) >= 0


def _folder(path, records, spec=None):
    path.mkdir(parents=True)
    (path / "run.json").write_text(json.dumps({"tool": "mobandit_jax", "fingerprint": "f",
                                               "spec": spec or {"env": {"kind": "x"}}}))
    (path / "summary.json").write_text(json.dumps({"records": records}))
    return path


def _rate(policy, mean, std, n=10):
    rec = mb.analysis.files.record(policy, {"name": policy}, {}, "misidentification", [0.0] * n, (0, 1))
    lo, hi = mb.analysis.stats.wilson_interval(mean, n)
    return {**rec, "mean": mean, "std": std, "ci_low": lo, "ci_high": hi}


@pytest.mark.parametrize("band", ["ci", "std"])
def test_compare_figure_titled_labelled_legend_outside_and_rates_within_0_1(tmp_path, band):
    a = _folder(tmp_path / "a", [_rate("P", 0.95, 0.3), _rate("Q", 0.05, 0.3)])
    b = _folder(tmp_path / "b", [_rate("P", 0.9, 0.32), {**_rate("Q", 0.1, 0.3), "metric": "f1"}])
    runs = compare.load_runs([a, b])
    fig = compare.figure(runs, compare.pick_metrics(runs, None), band)
    assert len(fig.axes) == 2 and "compare a, b" in fig.get_suptitle()  # one panel per metric present
    for ax in fig.axes:
        assert ax.get_ylabel().startswith("final ") and ax.get_xlabel().startswith("policy") and ax.get_title()
        assert ax.get_legend() is None  # the legend is the figure's, outside the panels
        ends = [np.asarray(seg, float).reshape(-1, 2)[:, 1] for container in ax.containers
                if hasattr(container, "lines") and container.lines[2] for seg in container.lines[2][0].get_segments()]
        ends = np.concatenate(ends)
        assert len(ends) and np.nanmin(ends) >= 0.0 and np.nanmax(ends) <= 1.0
    assert fig.legends and fig.legends[0].get_texts()[0].get_text() == "a (10 seeds)"
    out = tmp_path / "cmp.png"
    compare.main([a, b], out=str(out), band=band)
    with Image.open(out) as im:
        assert min(im.info["dpi"]) >= 199.9 and "compare a, b" in im.text["Title"]
    assert compare.written_by_compare(out)


def test_band_values_ci_std_and_bootstrap():
    runs = np.array([[1.0, 2.0], [2.0, 4.0], [4.0, 9.0]])
    mid, lo, hi = plots.band_values(runs, "ci")
    t = mb.analysis.stats.t_quantile(0.95, 2)
    np.testing.assert_allclose(hi - mid, t * runs.std(axis=0, ddof=1) / np.sqrt(3))
    mid, lo, hi = plots.band_values(runs, "std")
    np.testing.assert_allclose(hi - mid, runs.std(axis=0, ddof=1))
    mid, lo, hi = plots.band_values(runs, "median")
    np.testing.assert_allclose(mid, [2.0, 4.0]) and np.all(lo <= mid) and np.all(mid <= hi)
    with pytest.raises(ValueError, match="--band 'wide'"):
        plots.band_values(runs, "wide")


PAC = """
[experiment]
name = "pac figures"
horizon = 2000
seeds = 3

[env]
kind = "stochastic"
noise = "gaussian"
sigma = 1.0
clip = false
means = [[2.027, 0.643], [0.928, 2.398], [2.987, 0.427], [0.236, 0.542], [1.079, 0.509]]

[[policies]]
name = "ape"
label = "APE"
sweep = {delta = [0.1, 0.01, 0.001]}
"""


@pytest.fixture(scope="module")
def pac(tmp_path_factory):
    base = tmp_path_factory.mktemp("pac")
    (base / "pac.toml").write_text(PAC)
    assert main(["run", str(base / "pac.toml"), "--out", str(base / "run"), "--quiet", "--format", "svg"]) == 0
    return base / "run"


def test_a_fixed_confidence_run_draws_samples_against_log_1_over_delta_and_its_error_against_delta(pac):
    names = {p.name for p in pac.iterdir()}
    assert {"final_samples.png", "grid_samples.png", "grid_misidentification.png", "grid_tau_over_lower_bound.png",
            "grid_samples.svg"} <= names
    res = mb.Results.load(pac)
    deltas = [p.params["delta"] for p in res.grid["APE"]]
    fig = plots.grid_figure(res, "samples")
    ax = fig.axes[0]
    assert ax.get_xlabel() == "log(1/δ)" and ax.get_xscale() == "linear"
    [line] = ax.containers
    x, y = line.lines[0].get_xdata(), line.lines[0].get_ydata()
    order = np.argsort(deltas)  # the line runs in the order of delta
    np.testing.assert_allclose(x, np.log(1 / np.asarray(deltas)[order]))
    np.testing.assert_allclose(y, [res.finals[f"APE|{g}|samples"].mean() for g in order], rtol=1e-6)
    err = plots.grid_figure(res, "misidentification").axes[0]
    assert err.get_xlabel() == "δ" and err.get_xscale() == "log"
    [ref] = [ln for ln in err.get_lines() if ln.get_label() == "error = δ"]
    np.testing.assert_allclose(ref.get_xdata(), ref.get_ydata())
    np.testing.assert_allclose(sorted(ref.get_xdata()), sorted(deltas))
    ratio = plots.grid_figure(res, "tau_over_lower_bound").axes[0]
    assert ratio.get_xlabel() == "log(1/δ)" and "tau_over_lower_bound" in ratio.get_ylabel()


def test_report_format_draws_the_runs_figures_again_as_pdf(quick, capsys):
    assert main(["report", str(quick), "--format", "pdf"]) == 0
    err = capsys.readouterr().err
    assert "wrote" in err and "regret_gap.pdf" in err
    assert (quick / "regret_gap.pdf").read_bytes().startswith(b"%PDF")
