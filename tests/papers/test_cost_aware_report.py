"""Xue et al. report helpers (experiments/cost_aware/report.py): Wilson intervals, L_{K,lambda}, the radii scale."""
from pathlib import Path

import pytest
from scipy import stats

from mobandit_jax.runner.reproduce import load_report

rep = load_report("cost_aware", Path(__file__).resolve().parents[2] / "experiments")


@pytest.mark.parametrize("k, n", [(0, 500), (2, 500), (74, 500), (250, 500), (500, 500), (7, 20)])
def test_wilson_matches_scipy(k, n):
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = rep.wilson(k / n, n, z=stats.norm.ppf(0.975))
    assert float(lo) == pytest.approx(ci.low, abs=1e-12) and float(hi) == pytest.approx(ci.high, abs=1e-12)


def test_l_k_lambda_by_hand():
    assert rep.l_k_lambda(2, 0.5) == pytest.approx(1 + 1 / 1.5)
    assert rep.l_k_lambda(3, 0.25) == pytest.approx(1 + 1 / 1.25 + 1 / 1.5)
    assert rep.l_k_lambda(14, 1.0) == pytest.approx(1 + sum(1 / l for l in range(2, 15)))  # unit costs


def test_radii_scale_in_the_prose_is_cohv_ucbs_default():
    from mobandit_jax.policies import budgeted

    assert rep.RADII_SCALE == budgeted.S_R == budgeted.S_C
    assert rep.PROSE_CONSTANTS == (rep.RADII_SCALE,)
