"""The seed-001 report builder (experiments/topk_pareto/report.py) on synthetic run directories (no experiment
is run), and the paper's Table 2 eta* it reads."""
import json
from pathlib import Path

import numpy as np
import pytest
from _report_text import image_lines, without_images

from mobandit_jax.analysis import stats
from mobandit_jax.runner import spec as cfg
from mobandit_jax.runner.reproduce import load_report

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"
topk_pareto = load_report("topk_pareto", ROOT / "experiments")
TABLE2_ETA, table2_eta = topk_pareto.TABLE2_ETA, topk_pareto.table2_eta
NAMES = {p.label: p.name for stem in ("topk_pareto/d2", "topk_pareto/eta_grid")
         for p in cfg.load(CONFIGS / f"{stem}.toml").policies}
ETA_TUNED = [a for a in topk_pareto.ALGOS if NAMES[a] in TABLE2_ETA]
UNTUNED = [a for a in topk_pareto.ALGOS if NAMES[a] not in TABLE2_ETA]
ETAS = (0.01, 0.1, 0.3, 1.0)


def _fake_run(path, d=2, seeds=10, ckpt_every=10, horizon=200, labels=topk_pareto.ALGOS, etas=None, spec=None, rng=0):
    """A run directory with the files the report reads: per label, one grid point per front (per front and
    eta if ``etas``), each with its own per-seed HV level; returns the finals."""
    rng = np.random.default_rng(rng)
    checkpoints = np.arange(ckpt_every, horizon + 1, ckpt_every)
    grid, finals, curves, records = {}, {}, {"checkpoints": checkpoints}, []
    level = {a: 0.6 - 0.02 * i for i, a in enumerate(topk_pareto.ALGOS)}
    for a in labels:
        grid[a] = []
        base, _, option = a.partition(" [")  # "ParetoUCB-Crowd [boundary=inf]": a reading of ParetoUCB-Crowd
        options = dict([option.rstrip("]").split("=")]) if option else {}
        for f in topk_pareto.FRONTS:
            for e in etas or (None,):
                g = len(grid[a])
                params = {"name": NAMES[base], **options} if e is None else {"name": NAMES[base], **options, "eta": e}
                grid[a].append({"setting": {"d": d, "front": f}, "params": params})
                per_round = level[base] + 0.01 * rng.standard_normal((seeds, 1)) * np.ones((1, horizon))
                cum = np.cumsum(per_round, axis=1)[:, checkpoints - 1]
                curves[f"{a}|{g}|hv_last100"] = cum
                finals[f"{a}|{g}|hv_last100"] = per_round[:, -1]
                finals[f"{a}|{g}|alpha_regret_pos"] = rng.uniform(1, 10, seeds)
                finals[f"{a}|{g}|vstar"] = np.full(seeds, 0.65)
                for m in ("hv_last100", "alpha_regret_pos", "vstar"):
                    records.append({"policy": a, "params": params, "setting": {"d": d, "front": f}, "metric": m,
                                    "mean": float(finals[f"{a}|{g}|{m}"].mean()), "std": 0.0, "n": seeds})
    path.mkdir()
    (path / "grid.json").write_text(json.dumps(grid))
    (path / "summary.json").write_text(json.dumps({"records": records}))
    if spec is not None:
        (path / "run.json").write_text(json.dumps({"spec": spec}))
    np.savez(path / "finals.npz", **finals)
    np.savez(path / "curves.npz", **curves)
    return finals


def _eta_slice(label, front, d=2):
    """Grid index of ``label`` at ``front`` and its Table 2 eta* in a synthetic eta-grid run."""
    star = table2_eta(NAMES[label], d, front)
    return topk_pareto.FRONTS.index(front) * len(ETAS) + ETAS.index(star)


def test_moving_average_matches_direct_window_mean():
    rng = np.random.default_rng(1)
    per_round = rng.uniform(0, 1, (3, 300))
    ck = np.arange(10, 301, 10)
    ma = topk_pareto._moving_average(np.cumsum(per_round, axis=1)[:, ck - 1], ck, window=50)
    for c, r in enumerate(ck):
        lo = max(r - 50, 0)
        np.testing.assert_allclose(ma[:, c], per_round[:, lo:r].mean(axis=1), rtol=1e-10)


def test_build_writes_tables_statistics_and_records(tmp_path):
    finals = _fake_run(tmp_path / "d2")
    out = tmp_path / "out"
    summary = topk_pareto.build({"d2": str(tmp_path / "d2")}, out)
    text = (out / "report.md").read_text()
    assert "THV-UCB first by mean HV_last100 in 4/4 settings." in text
    assert (out / "hv_trajectories_d2.png").stat().st_size > 0
    row = summary["table6"][0]
    assert row["baseline"] == "ParetoUCB"  # the second-highest level in the synthetic run
    expected = stats.paired_comparison(finals["THV-UCB|0|hv_last100"], finals["ParetoUCB|0|hv_last100"])
    assert row["delta"] == pytest.approx(expected["delta"]) and row["wins"] == expected["wins"]
    saved = json.loads((out / "summary.json").read_text())
    assert {r["setting"]["front"] for r in saved["records"]} == set(topk_pareto.FRONTS)
    assert all(r["setting"]["d"] == 2 for r in saved["records"])
    ratio = [b for b in summary["benchmark_ratio"] if b["front"] == "clusters"][0]
    assert ratio["thv_over_benchmark"] == pytest.approx(np.mean(finals["THV-UCB|0|hv_last100"] / 0.65))
    bare = tmp_path / "bare"  # figures=False (mobandit reproduce --check): the same numbers, no PNG
    assert topk_pareto.build({"d2": str(tmp_path / "d2")}, bare, figures=False) == summary
    assert not list(bare.glob("*.png"))
    text, bare_text = (out / "report.md").read_text(), (bare / "report.md").read_text()
    assert image_lines(text) and not image_lines(bare_text) and without_images(bare_text) == without_images(text)
    assert (bare / "summary.json").read_text() == (out / "summary.json").read_text()


def test_main_tables_take_eta_tuned_rows_from_the_eta_grid_at_table2_eta(tmp_path):
    main = _fake_run(tmp_path / "d2", seeds=2, labels=UNTUNED)
    eta = _fake_run(tmp_path / "eta", seeds=2, labels=ETA_TUNED, etas=ETAS, rng=1)
    runs = {"d2": topk_pareto.Run(tmp_path / "d2"), "eta_grid": topk_pareto.Run(tmp_path / "eta")}
    [(d, key, table)] = topk_pareto._tables(runs)
    assert (d, key) == (2, "d2") and set(table.grid) == set(topk_pareto.ALGOS)
    for f in topk_pareto.FRONTS:
        for a in ETA_TUNED:
            g = table.index(a, f)
            assert table.grid[a][g].params["eta"] == table2_eta(NAMES[a], 2, f)
            np.testing.assert_array_equal(table.final(a, g, "hv_last100"),
                                          eta[f"{a}|{_eta_slice(a, f)}|hv_last100"])
        for a in UNTUNED:
            g = table.index(a, f)
            np.testing.assert_array_equal(table.final(a, g, "alpha_regret_pos"),
                                          main[f"{a}|{topk_pareto.FRONTS.index(f)}|alpha_regret_pos"])

    out = tmp_path / "out"
    summary = topk_pareto.build({"d2": str(tmp_path / "d2"), "eta_grid": str(tmp_path / "eta")}, out)
    text = (out / "report.md").read_text()
    assert topk_pareto.MERGE_NOTE in text and (out / "hv_trajectories_d2.png").stat().st_size > 0
    # ChebyshevUCB+ on the concave front: eta* = 1.0 at d = 2
    hv = eta[f"ChebyshevUCB+|{_eta_slice('ChebyshevUCB+', 'concave')}|hv_last100"]
    m, h = stats.mean_ci95(hv)
    row = [line for line in text.splitlines() if line.startswith("| ChebyshevUCB+ |")][0]
    assert row.split(" | ")[4].startswith(f"{m:.4f} ± {h:.4f}")
    t6 = [r for r in summary["table6"] if r["front"] == "linear"][0]
    base = t6["baseline"]
    expected = stats.paired_comparison(eta[f"THV-UCB|{_eta_slice('THV-UCB', 'linear')}|hv_last100"],
                                       table.final(base, table.index(base, "linear"), "hv_last100"))
    assert t6["delta"] == pytest.approx(expected["delta"])


def test_report_builds_from_runs_without_eta_tuned_policies(tmp_path):
    _fake_run(tmp_path / "d3", d=3, seeds=2, labels=UNTUNED)
    _fake_run(tmp_path / "fixed", seeds=2, labels=UNTUNED)
    out = tmp_path / "out"
    summary = topk_pareto.build({"d3": str(tmp_path / "d3"), "fixed_d2": str(tmp_path / "fixed")}, out)
    assert summary["table6"] == [] and summary["benchmark_ratio"] == []
    text = (out / "report.md").read_text()
    assert "| THV-UCB | — / 0.2955" in text and "| ParetoTS+ | " in text
    assert "THV-UCB first" not in text
    assert (out / "hv_trajectories_d3.png").stat().st_size > 0
    assert (out / "hv_trajectories_fixed_d2.png").stat().st_size > 0


def test_runs_of_different_experiments_are_not_merged(tmp_path):
    spec = {"env": {"kind": "dtlz", "d": 2}, "experiment": {"horizon": 200, "seeds": 2, "seed": 0}}
    _fake_run(tmp_path / "d2", seeds=2, labels=UNTUNED, spec=spec)
    _fake_run(tmp_path / "eta", seeds=2, labels=ETA_TUNED, etas=ETAS,
              spec={**spec, "experiment": {**spec["experiment"], "seed": 1}})
    with pytest.raises(ValueError, match="same experiment"):
        topk_pareto.build({"d2": str(tmp_path / "d2"), "eta_d2": str(tmp_path / "eta")}, tmp_path / "out")


def test_run_keys():
    assert topk_pareto._kind("d3") == ("main", 3)
    assert topk_pareto._kind("eta_d2") == ("eta", 2)
    assert topk_pareto._kind("eta_grid") == ("eta", 2)
    assert topk_pareto._kind("fixed_d5") == ("fixed", 5)
    assert topk_pareto._kind("alt_d2") == ("alt", 2)
    assert topk_pareto._kind("d7") is None and topk_pareto._kind("other") is None


def test_table2_eta_entries_by_hand():
    """Spot checks against the paper's Table 2 (rows: algorithm and d; columns: clusters, concave, convex, linear)."""
    assert table2_eta("chebyshev_ucb_plus", 3, "linear") == 0.01
    assert table2_eta("pareto_ucb_div", 2, "convex") == 1.0
    assert table2_eta("scalar_ucb", 4, "convex") == 0.3
    assert [table2_eta("thv_ucb", d, f) for d in (2, 5) for f in topk_pareto.FRONTS] == [0.01] * 8
    assert table2_eta("pareto_ucb", 2, "convex") is None and table2_eta("thv_ucb", 2, "ring") is None
    assert len(TABLE2_ETA) == 10 and all(sorted(rows) == [2, 3, 4, 5] for rows in TABLE2_ETA.values())


@pytest.mark.parametrize("d, stem", [(2, "topk_pareto/eta_grid"), (3, "topk_pareto/eta_d3"), (4, "topk_pareto/eta_d4"),
                                     (5, "topk_pareto/eta_d5")])
def test_eta_grid_specs_hold_every_table2_eta(d, stem):
    """The main tables read each eta-tuned row from the eta-grid run at Table 2 eta*: the grid must hold it."""
    for entry in cfg.load(CONFIGS / f"{stem}.toml").policies:
        etas = {point.get("eta") for point in entry.points()}
        assert set(TABLE2_ETA[entry.name][d]) <= etas, entry.name


def test_eta_agreement_alternative_readings_and_notes_fields(tmp_path):
    _fake_run(tmp_path / "d2", seeds=3, labels=UNTUNED)
    eta = _fake_run(tmp_path / "eta", seeds=3, labels=ETA_TUNED, etas=ETAS, rng=1)
    alt_labels = ["ParetoUCB-Crowd [boundary=zero]", "ChebyshevUCB [bonus=standard]"]
    alt = _fake_run(tmp_path / "alt", seeds=3, labels=alt_labels, etas=ETAS, rng=2)
    _fake_run(tmp_path / "fixed", seeds=3, rng=3)
    runs = {"d2": tmp_path / "d2", "eta_grid": tmp_path / "eta", "alt_d2": tmp_path / "alt",
            "fixed_d2": tmp_path / "fixed"}
    out = tmp_path / "out"
    notes = "Crowd: {alt_rank_paretoucb_crowd_boundary_zero}; Table 2: {eta_agree_baselines}; {eta_agree_thv}."
    derived = topk_pareto.build(runs, out, notes=notes)
    # eta*: argmax over the grid of the per-seed means, by hand from the finals
    same = {a: 0 for a in ETA_TUNED}
    for a in ETA_TUNED:
        for i, f in enumerate(topk_pareto.FRONTS):
            means = [eta[f"{a}|{i * len(ETAS) + j}|hv_last100"].mean() for j in range(len(ETAS))]
            same[a] += ETAS[int(np.argmax(means))] == table2_eta(NAMES[a], 2, f)
    thv = f"{same['THV-UCB']} of 4"
    baselines = f"{sum(v for a, v in same.items() if a != 'THV-UCB')} of {4 * (len(ETA_TUNED) - 1)}"
    # the zero reading of ParetoUCB-Crowd at the paper's eta*, ranked among the other 13 methods of the table
    [(_, _, table)] = topk_pareto._tables({k: topk_pareto.Run(v) for k, v in runs.items() if k in ("d2", "eta_grid")})
    ranks = []
    for i, f in enumerate(topk_pareto.FRONTS):
        mine = alt[f"{alt_labels[0]}|{i * len(ETAS) + ETAS.index(table2_eta('pareto_ucb_crowd', 2, f))}"
                   "|hv_last100"].mean()
        others = [table.final(a, table.index(a, f), "hv_last100").mean() for a in topk_pareto.ALGOS
                  if a != "ParetoUCB-Crowd"]
        ranks.append(1 + sum(o > mine for o in others))
    span = str(min(ranks)) if min(ranks) == max(ranks) else f"{min(ranks)}–{max(ranks)}"
    text = (out / "report.md").read_text()
    assert f"Crowd: {span}; Table 2: {baselines}; {thv}." in text
    assert f"in {thv} cells for THV-UCB and in {baselines} cells for the baselines" in text
    crowd = [r for r in derived["alt_readings"] if r["reading"] == "boundary = zero"]
    assert [r["rank"] for r in crowd] == ranks and not any(r["chosen"] for r in crowd)
    assert {r["reading"] for r in derived["alt_readings"] if r["chosen"]} == {"boundary = inf", "bonus = ucb1"}
    assert "## Both protocols beside the paper" in text and "| fixed_d2 | — |" in text
    sources = {r["setting"]["source"] for r in json.loads((out / "summary.json").read_text())["records"]}
    assert sources == {"main", "eta_grid", "alt_readings", "fixed_instance"}
    with pytest.raises(KeyError, match="notes.md asks for {nonsense}"):
        topk_pareto.build({"d2": runs["d2"]}, tmp_path / "out2", notes="{nonsense}")
