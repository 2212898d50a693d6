"""Intervals of the mean in ``summary.json`` (Student t, Wilson for rates), bootstrap intervals of the median
and IQM, and paired differences, against numpy, scipy and hand-computed values."""
import json

import numpy as np
import pytest
from _tiny_spec import tiny_spec
from scipy import stats as st

import mobandit_jax as mb
from mobandit_jax.analysis import stats
from mobandit_jax.cli import main


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("ci")
    assert main(["run", str(tiny_spec(base / "tiny.toml", seeds=5, horizon=60, record_every=20)),
                 "--out", str(base / "run"), "--quiet"]) == 0
    return base / "run"


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7, 10, 29, 199, 2000])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_t_quantile_matches_scipy(df, level):
    assert stats.t_quantile(level, df) == pytest.approx(st.t.ppf((1 + level) / 2, df), rel=1e-10)


def test_t_quantile_matches_the_printed_table():
    """Student's table, two-sided 95%: df 1 -> 12.706, 2 -> 4.303, 5 -> 2.571, 30 -> 2.042, 120 -> 1.980."""
    for df, printed in [(1, 12.706), (2, 4.303), (5, 2.571), (30, 2.042), (120, 1.980)]:
        assert round(stats.t_quantile(0.95, df), 3) == printed
    assert stats.normal_quantile(0.95) == pytest.approx(1.959963984540054, abs=1e-12)


def test_summary_interval_is_the_t_interval_of_the_finals(run):
    finals = np.load(run / "finals.npz")
    curves = np.load(run / "curves.npz")
    records = json.loads((run / "summary.json").read_text())["records"]
    seen = set()
    for r in records:
        v = np.asarray(finals[f"PrefUCB|0|{r['metric']}"], np.float64)
        if r["metric"] == "regret_gap":  # a "sum" metric: its final value is the curve's last checkpoint
            np.testing.assert_array_equal(v, curves["PrefUCB|0|regret_gap"][:, -1])
        n = len(v)
        se = v.std(ddof=1) / np.sqrt(n)
        assert r["n"] == n == 5 and r["se"] == pytest.approx(se, abs=1e-12)
        if r["interval"] == "t":
            half = st.t.ppf(0.975, n - 1) * se
            assert abs(r["ci_low"] - (v.mean() - half)) < 1e-6 and abs(r["ci_high"] - (v.mean() + half)) < 1e-6
            # and the record's own numbers (float32 precision) reproduce it to that precision
            own = st.t.ppf(0.975, n - 1) * r["std"] / np.sqrt(n)
            assert (r["ci_low"], r["ci_high"]) == pytest.approx((r["mean"] - own, r["mean"] + own), rel=1e-6)
        seen.add((r["metric"], r["interval"]))
    assert ("regret_gap", "t") in seen and ("optimal_selection_ratio", "t") in seen  # an average over rounds


def test_wilson_hand_computed_and_within_unit_interval():
    # 3 of 10 at 95%: p = 0.3, z = 1.96, (p + z^2/20 -+ z sqrt(p(1-p)/10 + z^2/400)) / (1 + z^2/10)
    z = 1.959963984540054
    centre, half = (0.3 + z * z / 20) / (1 + z * z / 10), z * np.sqrt(0.021 + z * z / 400) / (1 + z * z / 10)
    lo, hi = stats.wilson_interval(0.3, 10)
    assert (lo, hi) == pytest.approx((centre - half, centre + half), abs=1e-12)
    assert (round(lo, 4), round(hi, 4)) == (0.1078, 0.6032)
    assert stats.wilson_interval(0.0, 10) == pytest.approx((0.0, 0.27753), abs=1e-5)
    assert stats.wilson_interval(1.0, 10) == pytest.approx((0.72247, 1.0), abs=1e-5)
    for p in np.linspace(0, 1, 21):
        for n in (1, 2, 5, 200):
            lo, hi = stats.wilson_interval(p, n)
            assert 0.0 <= lo <= p <= hi <= 1.0
    # a rate of 0/1 seeds: Wilson's interval, where the t-interval would pass 1
    fields = stats.interval_fields([1, 1, 1, 1, 0], (0, 1))
    assert fields["interval"] == "wilson" and fields["ci_high"] <= 1.0
    assert stats.t_interval([1, 1, 1, 1, 0])[3] > 1.0


def test_bootstrap_interval_of_median_and_iqm_is_seeded_and_brackets_the_point():
    v = np.random.default_rng(1).lognormal(size=40)
    assert stats.iqm(v) == pytest.approx(st.trim_mean(v, 0.25))
    for name in ("median", "iqm", "mean"):
        point, lo, hi = stats.bootstrap_interval(v, name, seed=3)
        assert lo <= point <= hi and (point, lo, hi) == stats.bootstrap_interval(v, name, seed=3)
    ref = st.bootstrap((v,), np.median, n_resamples=4000, method="percentile", random_state=0).confidence_interval
    _, lo, hi = stats.bootstrap_interval(v, "median", resamples=4000, seed=0)
    assert abs(lo - ref.low) < 0.15 * (ref.high - ref.low) and abs(hi - ref.high) < 0.15 * (ref.high - ref.low)
    with pytest.raises(ValueError, match="statistic 'mode'"):
        stats.bootstrap_interval(v, "mode")


def test_results_interval_reads_the_record_and_bootstraps_the_median(run):
    res = mb.Results.load(run)
    r = res.record("PrefUCB", "regret_gap")
    assert res.interval("PrefUCB", "regret_gap") == pytest.approx((r["mean"], r["ci_low"], r["ci_high"]))
    v = res.final("PrefUCB", "regret_gap")
    assert res.interval("PrefUCB", "regret_gap", "median") == stats.bootstrap_interval(v, "median", seed=res.base_seed)


def test_paired_interval_is_the_t_interval_of_the_differences():
    rng = np.random.default_rng(5)
    common = rng.normal(size=30)
    a, b = common + rng.normal(0.1, 0.05, 30), common
    row = stats.paired_differences(a, b, goal="max")
    d = a - b
    half = st.t.ppf(0.975, 29) * d.std(ddof=1) / np.sqrt(30)
    assert row["diff"] == pytest.approx(d.mean()) and row["ci_low"] == pytest.approx(d.mean() - half, abs=1e-9)
    assert row["wins"] + row["ties"] + row["losses"] == 30 and row["wins"] == int(np.sum(d > 0))
    assert stats.paired_differences([1, 2, 3], [1, 3, 2], goal="min") == pytest.approx(
        {"diff": 0.0, "se": row_se([0, -1, 1]), "ci_low": -st.t.ppf(0.975, 2) * row_se([0, -1, 1]),
         "ci_high": st.t.ppf(0.975, 2) * row_se([0, -1, 1]), "wins": 1, "ties": 1, "losses": 1, "n": 3})
    unpaired = stats.unpaired_difference(a, b)
    assert unpaired["diff"] == pytest.approx(row["diff"])
    assert unpaired["ci_high"] - unpaired["ci_low"] > 5 * (row["ci_high"] - row["ci_low"])  # common noise cancels


def row_se(d):
    return np.std(d, ddof=1) / np.sqrt(len(d))
