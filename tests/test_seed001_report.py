"""The seed-001 report builder on a synthetic run directory (no experiment is run)."""
import json

import numpy as np
import pytest

from mobandit_jax import stats
from mobandit_jax.reports import seed001


def _fake_run(path, d=2, seeds=10, ckpt_every=10, horizon=200):
    rng = np.random.default_rng(0)
    checkpoints = np.arange(ckpt_every, horizon + 1, ckpt_every)
    grid, finals, curves, records = {}, {}, {"checkpoints": checkpoints}, []
    level = {a: 0.6 - 0.02 * i for i, a in enumerate(seed001.ALGOS)}
    for a in seed001.ALGOS:
        grid[a] = []
        for g, f in enumerate(seed001.FRONTS):
            grid[a].append({"setting": {"d": d, "front": f}, "params": {"name": a}})
            per_round = level[a] + 0.01 * rng.standard_normal((seeds, 1)) * np.ones((1, horizon))
            cum = np.cumsum(per_round, axis=1)[:, checkpoints - 1]
            curves[f"{a}|{g}|hv_last100"] = cum
            finals[f"{a}|{g}|hv_last100"] = per_round[:, -1]
            finals[f"{a}|{g}|alpha_regret_pos"] = np.full(seeds, 5.0)
            finals[f"{a}|{g}|vstar"] = np.full(seeds, 0.65)
            for m in ("hv_last100", "alpha_regret_pos", "vstar"):
                records.append({"policy": a, "params": {"name": a}, "setting": {"d": d, "front": f}, "metric": m,
                                "mean": float(finals[f"{a}|{g}|{m}"].mean()), "std": 0.0, "n": seeds})
    path.mkdir()
    (path / "grid.json").write_text(json.dumps(grid))
    (path / "summary.json").write_text(json.dumps({"records": records}))
    np.savez(path / "finals.npz", **finals)
    np.savez(path / "curves.npz", **curves)
    return finals


def test_moving_average_matches_direct_window_mean():
    rng = np.random.default_rng(1)
    per_round = rng.uniform(0, 1, (3, 300))
    ck = np.arange(10, 301, 10)
    ma = seed001._moving_average(np.cumsum(per_round, axis=1)[:, ck - 1], ck, window=50)
    for c, r in enumerate(ck):
        lo = max(r - 50, 0)
        np.testing.assert_allclose(ma[:, c], per_round[:, lo:r].mean(axis=1), rtol=1e-10)


def test_build_writes_tables_statistics_and_records(tmp_path):
    finals = _fake_run(tmp_path / "d2")
    out = tmp_path / "out"
    summary = seed001.build({"d2": str(tmp_path / "d2")}, out)
    text = (out / "report.md").read_text()
    assert "THV-UCB first by mean HV_last100 in 4/4 settings." in text
    assert (out / "hv_trajectories_d2.png").stat().st_size > 0
    row = summary["table6"][0]
    assert row["baseline"] == "ParetoUCB"  # the second-highest level in the synthetic run
    expected = stats.paired_comparison(finals["THV-UCB|0|hv_last100"], finals["ParetoUCB|0|hv_last100"])
    assert row["delta"] == pytest.approx(expected["delta"]) and row["wins"] == expected["wins"]
    saved = json.loads((out / "summary.json").read_text())
    assert {r["setting"]["front"] for r in saved["records"]} == set(seed001.FRONTS)
    assert all(r["setting"]["d"] == 2 for r in saved["records"])
    ratio = [b for b in summary["benchmark_ratio"] if b["front"] == "clusters"][0]
    assert ratio["thv_over_benchmark"] == pytest.approx(np.mean(finals["THV-UCB|0|hv_last100"] / 0.65))


def test_run_keys():
    assert seed001._kind("d3") == ("main", 3)
    assert seed001._kind("eta_d2") == ("eta", 2)
    assert seed001._kind("fixed_d5") == ("fixed", 5)
    assert seed001._kind("d7") is None and seed001._kind("other") is None
