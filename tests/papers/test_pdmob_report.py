"""PDMOB report (experiments/pdmob/report.py): moving averages from cumulative checkpoints, tests,
ranks, tables on a synthetic run, the paper tables it reads and the objective groups it draws."""
import json
from pathlib import Path

import numpy as np
import pytest
from _report_text import image_lines, without_images
from PIL import Image
from scipy import stats

from mobandit_jax.problems import llm_leaderboard as llm
from mobandit_jax.runner import spec as cfg
from mobandit_jax.runner.reproduce import load_report

ROOT = Path(__file__).resolve().parents[2]
rep = load_report("pdmob", ROOT / "experiments")


def test_moving_average_matches_direct_average_of_rounds():
    rng = np.random.default_rng(0)
    T, every, w = 1030, 50, 100
    y = rng.uniform(size=(3, T))
    ck = np.array([min((c + 1) * every, T) for c in range(-(-T // every))])
    cum = np.cumsum(y, axis=1)[:, ck - 1]
    ma = rep.moving_average(cum, ck, w)
    for i, c in enumerate(ck):
        # the window starts at the latest recorded round (or 0) at least w rounds back
        start = max([0] + [int(k) for k in ck if k <= c - w])
        np.testing.assert_allclose(ma[:, i], y[:, start:c].mean(1), rtol=1e-10)
    assert max([0] + [int(k) for k in ck if k <= ck[-1] - w]) == 900  # last window: rounds 900..1030


def _welch_by_hand(a, b):
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    t = (a.mean() - b.mean()) / np.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    return 2 * stats.t.sf(abs(t), df)


def test_welch_and_paired_tests_against_formulas():
    rng = np.random.default_rng(1)
    a, b = rng.normal(1.0, 0.3, 20), rng.normal(1.2, 0.1, 20)
    assert np.isclose(rep.welch_test(a, b), _welch_by_hand(a, b))
    d = a - b
    t = d.mean() / (d.std(ddof=1) / np.sqrt(d.size))
    assert np.isclose(rep.paired_test(a, b), 2 * stats.t.sf(abs(t), d.size - 1))
    assert rep.welch_test(np.ones(5), np.ones(5)) == 1.0


def test_ranks_share_ties():
    assert rep.ranks([0.672, 0.710, 0.7101, 0.767]).tolist() == [1, 2, 2, 4]


def _fake_run(tmp_path, scenarios, dim, T=400, every=50, seeds=4, labels=rep.POLICIES):
    """A run directory in the engine's format with known per-round regret and reward rates."""
    ck = np.arange(every, T + 1, every)
    curves, grid, records = {"checkpoints": ck}, {}, []
    rates = {}
    for p, lab in enumerate(labels):
        grid[lab] = []
        for g, sc in enumerate(scenarios):
            grid[lab].append({"setting": {"scenario": sc}, "params": {"name": lab}})
            rate = 0.1 * (p + 1) + 0.01 * g + 0.001 * np.arange(seeds)  # per-round gap, per seed
            rates[(lab, sc)] = rate
            curves[f"{lab}|{g}|regret_gap"] = rate[:, None] * ck[None, :]
            curves[f"{lab}|{g}|regret_indicator"] = 2 * rate[:, None] * ck[None, :]
            curves[f"{lab}|{g}|optimal_selection_ratio"] = (1 - rate)[:, None] * ck[None, :]
            for j in range(dim):
                curves[f"{lab}|{g}|reward_{j}"] = (0.05 * j + rate)[:, None] * ck[None, :]
            records.append({"policy": lab, "params": {"name": lab}, "setting": {"scenario": sc},
                            "metric": "regret_gap", "mean": float(rate.mean() * T), "std": 0.0, "n": seeds})
    np.savez(tmp_path / "curves.npz", **curves)
    (tmp_path / "grid.json").write_text(json.dumps(grid))
    (tmp_path / "summary.json").write_text(json.dumps({"records": records}))
    (tmp_path / "run.json").write_text(json.dumps({"spec": {"scenarios": [{"name": s} for s in scenarios]}}))
    (tmp_path / "timing.json").write_text(json.dumps({"wall_seconds_this_invocation": 1.5, "seeds": seeds}))
    return rates


def test_tables_from_a_synthetic_run(tmp_path):
    (tmp_path / "llm").mkdir()
    (tmp_path / "assets").mkdir()
    rates_l = _fake_run(tmp_path / "llm", list(rep.scenario_matrices()), 7)
    rates_a = _fake_run(tmp_path / "assets", list(rep.mandate_matrices()), 7)
    run = rep.load_run(tmp_path / "assets")
    rows = rep.table2(run)
    assert [r["scenario"] for r in rows] == list(rep.mandate_matrices())
    for r in rows:
        for i, lab in enumerate(rep.POLICIES):
            np.testing.assert_allclose(r["values"][i], rates_a[(lab, r["scenario"])])
        assert r["rank"].tolist() == [1, 2, 3, 4]
        assert r["paired"][1] == 0.0  # constant positive difference across seeds
    t1 = rep.table1(rep.load_run(tmp_path / "llm"))
    cs = rep.REAL_WORLD
    jm = llm.CAPABILITIES.index(rep.SCENARIO_ROLES[cs[0]]["main"])
    np.testing.assert_allclose(t1["main"]["PrefUCB"][0], 0.05 * jm + rates_l[("PrefUCB", cs[0])])
    np.testing.assert_allclose(t1["ratio"]["GT-PF"][2], 1 - rates_l[("GT-PF", cs[2])])
    out = tmp_path / "report"
    path = rep.build({"llm": tmp_path / "llm", "assets": tmp_path / "assets"}, out)
    text = path.read_text()
    assert "Avg. rank (ours) | 1.00 | 2.00 | 3.00 | 4.00" in text
    for name in ("figure3_llm_regret.png", "figure4_llm_trends.png", "figure5_assets_regret.png",
                 "figure6_assets_trends.png", "figure7_assets_trends.png"):
        assert (out / name).stat().st_size > 1000
        with Image.open(out / name) as im:  # print quality: the PNG records the dpi it was saved at
            assert min(round(v) for v in im.info["dpi"]) >= 150, name
    recs = json.loads((out / "summary.json").read_text())["records"]
    derived = [r for r in recs if r["metric"] == "regret_gap_per_round" and r["setting"]["experiment"] == "assets"
               and r["policy"] == "ParetoUCB" and r["setting"]["scenario"] == "Low Volatility"]
    assert len(derived) == 1
    v = rates_a[("ParetoUCB", "Low Volatility")]
    assert np.isclose(derived[0]["mean"], v.mean()) and np.isclose(derived[0]["std"], v.std(ddof=1))
    bare = tmp_path / "bare"  # figures=False (mobandit reproduce --check): the same text but the figures, no PNG
    rep.build({"llm": tmp_path / "llm", "assets": tmp_path / "assets"}, bare, figures=False)
    assert not list(bare.glob("*.png")) and len(image_lines(text)) == 5
    assert not image_lines(bare_text := (bare / "report.md").read_text())
    assert without_images(bare_text) == without_images(text)
    assert json.loads((bare / "summary.json").read_text())["records"] == recs
    with pytest.raises(KeyError, match="unknown key"):
        rep.build({"llms": tmp_path / "llm"}, out)
    with pytest.raises(FileNotFoundError, match="has no curves.npz"):
        rep.load_run(tmp_path)


@pytest.mark.parametrize("stem, table", [("pdmob/llm", rep.scenario_matrices), ("pdmob/assets", rep.mandate_matrices)])
def test_paper_matrices_are_the_ones_the_shipped_specs_run(stem, table):
    """Tables 3 and 5 in paper_tables.json and the W written in the specs are two transcriptions of the paper."""
    spec = cfg.load(ROOT / "configs" / f"{stem}.toml")
    ours = table()
    assert [s.name for s in spec.scenarios] == list(ours)
    for s in spec.scenarios:
        np.testing.assert_array_equal(np.array(s.overrides["preference.W"], float), ours[s.name], err_msg=s.name)


def test_preference_levels_follow_the_roles_of_table3():
    Ws = rep.scenario_matrices()
    for name, roles in rep.SCENARIO_ROLES.items():
        levels = rep.preference_levels(Ws[name])
        main = llm.CAPABILITIES.index(roles["main"])
        relax = llm.CAPABILITIES.index(roles["relaxable"])
        assert levels["preferred"] == [main] and levels["relaxable"] == [relax], name
        assert np.argmax(Ws[name][0]) == main and Ws[name][1, relax] == -1
    # Customer Service row 0 = (1, 0, 1, 0, 0, 2, 1): multitasking (2) preferred, the other positives moderate
    assert rep.preference_levels(Ws["Customer Service"])["moderate"] == [0, 2, 6]


def test_mandate_levels_by_hand():
    # Aggressive Growth totals: CWG 1.633, SR 0, MDD -0.6, Sortino -0.3, Alpha 0.842, TO -0.6, CR 0.525
    lv = rep.mandate_levels(rep.mandate_matrices()["Aggressive Growth"])
    assert lv == {"preferred": [0, 4], "moderate": [6], "relaxable": [2, 3, 5]}


def test_data_driven_W_on_synthetic_data():
    rng = np.random.default_rng(3)
    n = 20000
    a = rng.normal(0, 2.0, n)  # variance 4
    b = rng.normal(0, 1.0, n)  # variance 1
    c = 0.05 * a + rng.normal(0, 1.0, n)  # weakly tied to a
    d = 2.0 * a + rng.normal(0, 0.1, n)  # strongly tied to a
    R = np.column_stack([a, b, c, d])
    W = rep.data_driven_W(R, np.array([[1, 1, -1, -1]]), cap=0.3)
    var = R.var(0)
    np.testing.assert_allclose(W[0, :2], var[:2] / var[:2].sum())
    comp = R[:, :2] @ W[0, :2]
    beta_c = np.cov(comp, c, bias=True)[0, 1] / c.var()
    np.testing.assert_allclose(W[0, 2], -abs(beta_c))  # below the cap
    assert W[0, 3] == -0.3  # capped
    with pytest.raises(ValueError, match="pattern row 0 has no positive entry"):
        rep.data_driven_W(R, np.array([[0, 0, -1, 0]]))


def test_identity_ablation_section_from_a_synthetic_run(tmp_path):
    labels = [lab for lab, _, _ in rep.ABLATION]
    rates = _fake_run(tmp_path, ["Standard"], 7, labels=labels)
    final = {lab: 400 * rates[(lab, "Standard")].mean() for lab in labels}
    text = rep._ablation_section(rep.load_run(tmp_path))
    pk, ph, qh, qk = (final[lab] for lab in labels[:4])
    assert f"The gap to explain is {qh - pk:.1f}" in text
    assert f"moves ParetoUCB by {qk - qh:+.1f} and PrefUCB by {ph - pk:+.1f}" in text
    # rates grow with the label's position: index effects |qk-qh| + |ph-pk| = 40 + 40, rule effects 40 + 120
    assert "the selection rule accounts for more" in text
    assert f"| index, summed | both rules (absolute changes) | | | {abs(qk - qh) + abs(ph - pk):.1f} |" in text
    assert f"| both | — | PrefUCB | ParetoUCB | {qh - pk:+.1f} |" in text
    assert f"| ParetoUCB | Pareto UCB1 | uniform on optimistic front | {final['ParetoUCB']:.1f} ± " in text
