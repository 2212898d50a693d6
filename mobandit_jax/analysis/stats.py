"""Paired comparison statistics of Gutowski et al., Appendix B, Table 6.

Two methods are compared on the same environment seeds (paired samples ``a_s``, ``b_s``, e.g. the
per-seed ``HV_last100`` of THV-UCB and of a baseline). Table 6 reports:

- ``delta``: the mean paired difference ``mean(a - b)``;
- ``ci``: a percentile bootstrap 95% CI of that mean (``B = 10,000`` resamples of the seeds);
- ``cohens_d``: the paired effect size ``mean(a - b) / sd(a - b)`` (``sd`` with ``ddof = 1``; the
  paper does not say which Cohen's d, and its values up to 44.5 only fit the paired ``d_z``);
- ``wilcoxon_p``: the one-sided Wilcoxon signed-rank p-value (``H1: a > b``), from scipy
  (exact distribution for small samples without ties or zeros);
- ``wins``: the number of seeds with ``a_s > b_s``, out of ``n``.
"""
from __future__ import annotations

import numpy as np
from scipy import stats as _st


def _paired(a, b):
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"paired samples need equal lengths, got {a.shape[0]} and {b.shape[0]}")
    if a.shape[0] < 2:
        raise ValueError(f"paired statistics need at least 2 pairs, got {a.shape[0]}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("paired samples contain NaN or infinite values")
    return a, b


def bootstrap_ci(diff, resamples: int = 10_000, level: float = 0.95, seed: int = 0):
    """Percentile bootstrap CI of ``mean(diff)`` over ``resamples`` resamples (with replacement)."""
    diff = np.asarray(diff, np.float64).ravel()
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, diff.shape[0], size=(resamples, diff.shape[0]))
    means = diff[idx].mean(axis=1)
    tail = (1 - level) / 2
    return float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))


def cohens_d_paired(a, b) -> float:
    """Paired Cohen's d (``d_z``): ``mean(a - b) / sd(a - b)``; +-inf if the differences are constant."""
    a, b = _paired(a, b)
    diff = a - b
    sd = np.std(diff, ddof=1)
    if sd == 0:
        return float(np.sign(diff.mean()) * np.inf) if diff.mean() != 0 else 0.0
    return float(diff.mean() / sd)


def wilcoxon_greater(a, b) -> float:
    """One-sided Wilcoxon signed-rank p-value for ``H1: a > b`` (1.0 when every difference is 0)."""
    a, b = _paired(a, b)
    if np.all(a == b):
        return 1.0
    return float(_st.wilcoxon(a, b, alternative="greater").pvalue)


def paired_comparison(a, b, resamples: int = 10_000, seed: int = 0) -> dict:
    """Table 6 row: delta, bootstrap 95% CI, Cohen's d, one-sided Wilcoxon p, wins out of n."""
    a, b = _paired(a, b)
    diff = a - b
    lo, hi = bootstrap_ci(diff, resamples=resamples, seed=seed)
    return {
        "delta": float(diff.mean()),
        "ci": (lo, hi),
        "cohens_d": cohens_d_paired(a, b),
        "wilcoxon_p": wilcoxon_greater(a, b),
        "wins": int(np.sum(a > b)),
        "n": int(a.shape[0]),
    }


def mean_ci95(values) -> tuple:
    """Mean and Student-t 95% CI half-width of a sample (half-width 0 for a single value)."""
    v = np.asarray(values, np.float64).ravel()
    if v.shape[0] < 2:
        return float(v.mean()), 0.0
    half = _st.t.ppf(0.975, v.shape[0] - 1) * v.std(ddof=1) / np.sqrt(v.shape[0])
    return float(v.mean()), float(half)
