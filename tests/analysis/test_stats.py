"""Paired statistics of Gutowski et al. Table 6 against scipy, brute force and hand-computed values."""
import itertools

import numpy as np
import pytest
from scipy import stats as st

from mobandit_jax.analysis import stats


def _exact_signed_rank_p(diff):
    """Brute-force one-sided signed-rank p-value: enumerate all 2^n sign flips (no ties, no zeros)."""
    ranks = st.rankdata(np.abs(diff))
    observed = ranks[diff > 0].sum()
    count = 0
    for signs in itertools.product([0, 1], repeat=len(diff)):
        if np.dot(signs, ranks) >= observed - 1e-12:
            count += 1
    return count / 2 ** len(diff)


def test_wilcoxon_all_wins_is_one_over_two_to_n():
    a = np.arange(10) * 0.1 + 1.0
    b = a - np.linspace(0.01, 0.1, 10)
    assert stats.wilcoxon_greater(a, b) == pytest.approx(1 / 1024)


def test_wilcoxon_mixed_signs_matches_enumeration():
    rng = np.random.default_rng(3)
    a, b = rng.normal(0.3, 1, 9), rng.normal(0, 1, 9)
    diff = a - b
    assert stats.wilcoxon_greater(a, b) == pytest.approx(_exact_signed_rank_p(diff), rel=1e-9)


def test_cohens_d_hand_computed():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    b = np.array([0.5, 1.0, 2.5, 3.0])  # diffs 0.5, 1, 0.5, 1: mean 0.75, sd sqrt(1/12)
    assert stats.cohens_d_paired(a, b) == pytest.approx(0.75 / np.sqrt(1 / 12))


def test_bootstrap_ci_matches_scipy_percentile_bootstrap():
    rng = np.random.default_rng(0)
    diff = rng.normal(0.01, 0.004, 10)
    lo, hi = stats.bootstrap_ci(diff, resamples=10_000, seed=1)
    ref = st.bootstrap((diff,), np.mean, n_resamples=10_000, method="percentile", random_state=2).confidence_interval
    sd = diff.std(ddof=1) / np.sqrt(10)
    assert abs(lo - ref.low) < 0.1 * sd and abs(hi - ref.high) < 0.1 * sd
    assert lo < diff.mean() < hi


def test_paired_comparison_row():
    a = np.array([0.66, 0.65, 0.67, 0.64, 0.66, 0.65, 0.66, 0.67, 0.65, 0.66])
    b = a - np.array([0.004, 0.006, 0.003, 0.005, 0.007, -0.001, 0.004, 0.005, 0.006, 0.004])
    row = stats.paired_comparison(a, b)
    assert row["wins"] == 9 and row["n"] == 10
    assert row["delta"] == pytest.approx(0.0043)
    assert row["ci"][0] < row["delta"] < row["ci"][1]
    assert row["wilcoxon_p"] == pytest.approx(st.wilcoxon(a, b, alternative="greater").pvalue)


def test_mean_ci95_is_student_t():
    v = np.array([1.0, 2.0, 4.0])
    m, h = stats.mean_ci95(v)
    assert m == pytest.approx(7 / 3)
    assert h == pytest.approx(st.t.ppf(0.975, 2) * np.std(v, ddof=1) / np.sqrt(3))


@pytest.mark.parametrize("a,b,msg", [([1.0, 2.0], [1.0], "equal lengths"), ([1.0], [2.0], "at least 2"),
                                     ([1.0, np.nan], [0.0, 0.0], "NaN")])
def test_bad_input_is_named(a, b, msg):
    with pytest.raises(ValueError, match=msg):
        stats.paired_comparison(a, b)
