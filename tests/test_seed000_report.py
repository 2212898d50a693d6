"""Seed 000 report: moving averages from cumulative checkpoints, tests, ranks, tables on a synthetic run."""
import json

import numpy as np
import pytest
from scipy import stats

from mobandit_jax.problems import llm_leaderboard as llm
from mobandit_jax.problems import nyse
from mobandit_jax.reports import seed000 as rep


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


def _fake_run(tmp_path, scenarios, dim, T=400, every=50, seeds=4):
    """A run directory in the engine's format with known per-round regret and reward rates."""
    ck = np.arange(every, T + 1, every)
    curves, grid, records = {"checkpoints": ck}, {}, []
    rates = {}
    for p, lab in enumerate(rep.POLICIES):
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
    rates_l = _fake_run(tmp_path / "llm", list(llm.SCENARIOS), 7)
    rates_a = _fake_run(tmp_path / "assets", list(nyse.MANDATES), 7)
    run = rep.load_run(tmp_path / "assets")
    rows = rep.table2(run)
    assert [r["scenario"] for r in rows] == list(nyse.MANDATES)
    for r in rows:
        for i, lab in enumerate(rep.POLICIES):
            np.testing.assert_allclose(r["values"][i], rates_a[(lab, r["scenario"])])
        assert r["rank"].tolist() == [1, 2, 3, 4]
        assert r["paired"][1] == 0.0  # constant positive difference across seeds
    t1 = rep.table1(rep.load_run(tmp_path / "llm"))
    cs = rep.REAL_WORLD
    jm = llm.CAPABILITIES.index(llm.SCENARIO_ROLES[cs[0]]["main"])
    np.testing.assert_allclose(t1["main"]["PrefUCB"][0], 0.05 * jm + rates_l[("PrefUCB", cs[0])])
    np.testing.assert_allclose(t1["ratio"]["GT-PF"][2], 1 - rates_l[("GT-PF", cs[2])])
    out = tmp_path / "report"
    path = rep.build({"llm": tmp_path / "llm", "assets": tmp_path / "assets"}, out)
    text = path.read_text()
    assert "Avg. rank (ours) | 1.00 | 2.00 | 3.00 | 4.00" in text
    for name in ("figure3_llm_regret.png", "figure4_llm_trends.png", "figure5_assets_regret.png",
                 "figure6_assets_trends.png", "figure7_assets_trends.png"):
        assert (out / name).stat().st_size > 1000
    recs = json.loads((out / "summary.json").read_text())["records"]
    derived = [r for r in recs if r["metric"] == "regret_gap_per_round" and r["setting"]["experiment"] == "assets"
               and r["policy"] == "ParetoUCB" and r["setting"]["scenario"] == "Low Volatility"]
    assert len(derived) == 1
    v = rates_a[("ParetoUCB", "Low Volatility")]
    assert np.isclose(derived[0]["mean"], v.mean()) and np.isclose(derived[0]["std"], v.std(ddof=1))
    with pytest.raises(KeyError, match="unknown key"):
        rep.build({"llms": tmp_path / "llm"}, out)
    with pytest.raises(FileNotFoundError, match="has no curves.npz"):
        rep.load_run(tmp_path)
