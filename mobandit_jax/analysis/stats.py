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

Interval estimates of one sample of per-seed values (rliable, Agarwal et al., NeurIPS 2021: report
intervals, not point estimates), as the run's records, tables and figures show them:

- :func:`t_interval`: the mean, its standard error ``sd / sqrt(n)`` (``ddof = 1``) and the Student-t
  interval ``mean +- t_{n-1, (1+level)/2} se``;
- :func:`wilson_interval`: Wilson's score interval (Wilson, JASA 1927) of a rate, for metrics whose
  per-seed values are 0/1 or lie in [0, 1]: it stays within [0, 1] where the t-interval would not;
- :func:`bootstrap_interval`: a seeded percentile bootstrap interval of the mean, the median or the
  interquartile mean (:func:`iqm`, the mean of the middle half);
- :func:`paired_differences`: per-seed differences of two policies on the same seeds (common random
  numbers), their mean, paired t-interval and win/tie/loss counts.
"""
from __future__ import annotations

import math

import numpy as np


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
    from scipy import stats as _st  # here: scipy.stats takes a second to import, and only this needs it

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
    half = t_quantile(0.95, v.shape[0] - 1) * v.std(ddof=1) / np.sqrt(v.shape[0])
    return float(v.mean()), float(half)


LEVEL = 0.95  # the confidence level of every interval the records, tables and figures show
DERIVED = ("se", "ci_low", "ci_high", "interval")  # the record fields computed from a record's per-seed values


def _t_central(theta: float, df: int) -> float:
    """``P(|T| <= sqrt(df) tan(theta))`` for Student's t with integer ``df`` (Abramowitz & Stegun 26.7.3-4)."""
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:  # sin(theta) (1 + 1/2 c^2 + 1.3/(2.4) c^4 + ... + 1.3...(df-3)/(2.4...(df-2)) c^(df-2))
        k = np.arange(1, df // 2)
        terms = np.cumprod((2 * k - 1) / (2 * k) * c2) if len(k) else np.zeros(0)
        return s * (1.0 + float(terms.sum()))
    if df == 1:
        return 2 * theta / math.pi
    k = np.arange(1, (df - 1) // 2)  # (2/pi)(theta + sin cos (1 + 2/3 c^2 + 2.4/(3.5) c^4 + ...))
    terms = np.cumprod(2 * k / (2 * k + 1) * c2) if len(k) else np.zeros(0)
    return 2 / math.pi * (theta + s * math.sqrt(c2) * (1.0 + float(terms.sum())))


def _bisect(f, lo: float, hi: float, target: float) -> float:
    """The root of increasing ``f(x) = target`` in ``[lo, hi]`` by bisection to float64 resolution."""
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if f(mid) < target else (lo, mid)
    return (lo + hi) / 2


def t_quantile(level: float, df: int) -> float:
    """The two-sided Student-t quantile ``t_{df, (1 + level) / 2}`` for integer ``df >= 1``, exact to float64.

    The central probability ``P(|T| <= t)`` has a closed form for integer degrees of freedom (Abramowitz &
    Stegun 26.7.3-4, a finite series in ``theta = atan(t / sqrt(df))``), inverted by bisection in ``theta``
    (no scipy: scipy.stats takes a second to import).
    """
    if int(df) != df or df < 1:
        raise ValueError(f"degrees of freedom must be an integer >= 1, got {df}")
    theta = _bisect(lambda th: _t_central(th, int(df)), 0.0, math.pi / 2, level)
    return math.sqrt(df) * math.tan(theta)


def normal_quantile(level: float) -> float:
    """The two-sided standard normal quantile ``z_{(1 + level) / 2}`` (``math.erf`` inverted by bisection)."""
    return _bisect(lambda x: math.erf(x / math.sqrt(2)), 0.0, 40.0, level)


def t_interval(values, level: float = LEVEL) -> tuple:
    """Mean, standard error and Student-t interval of the mean of a sample.

    Args:
      values: per-seed values.
      level: the confidence level.

    Returns:
      ``(mean, se, low, high)``; ``se`` 0 and the interval ``(mean, mean)`` for a single value.
    """
    v = np.asarray(values, np.float64).ravel()
    mean = float(v.mean())
    if v.shape[0] < 2:
        return mean, 0.0, mean, mean
    se = float(v.std(ddof=1) / np.sqrt(v.shape[0]))
    half = t_quantile(level, v.shape[0] - 1) * se
    return mean, se, mean - half, mean + half


def wilson_interval(rate: float, n: int, level: float = LEVEL) -> tuple:
    """Wilson's score interval of a rate observed over ``n`` seeds (within [0, 1]).

    ``(p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n)`` with ``z`` the normal quantile of
    ``(1 + level) / 2``; for a mean of values in [0, 1] (an F1 averaged over seeds), ``p`` is that mean.

    Args:
      rate: the observed rate ``p`` (clipped to [0, 1]).
      n: the number of seeds.
      level: the confidence level.

    Returns:
      ``(low, high)``.
    """
    p = min(max(float(rate), 0.0), 1.0)
    z = normal_quantile(level)
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z * np.sqrt(p * (1 - p) / n + z2n / (4 * n)) / (1 + z2n)
    return min(max(0.0, float(centre - half)), p), max(min(1.0, float(centre + half)), p)  # round-off at 0 and 1


def is_rate(bounds) -> bool:
    """Whether a metric's ``bounds`` (:class:`~mobandit_jax.types.Metric`) make it a rate: ``(0, 1)``."""
    return bounds is not None and tuple(bounds) == (0, 1)


def summary_interval(mean: float, std: float, n: int, bounds=None, level: float = LEVEL) -> dict:
    """The interval fields of a summary record, from its ``mean``, ``std`` (ddof 1) and ``n``.

    ``mean +- t_{n-1} std / sqrt(n)`` (Wilson's from ``mean`` and ``n`` for a rate).

    Args:
      mean: the mean of the seeds' values.
      std: their standard deviation (ddof 1; 0 for one seed).
      n: the number of seeds.
      bounds: the metric's ``(low, high)``; a rate (``(0, 1)``) gets Wilson's interval, others Student t's.
      level: the confidence level.

    Returns:
      ``{"se", "ci_low", "ci_high", "interval"}``, ``interval`` naming the method (``"t"`` or ``"wilson"``);
      a single seed's t-interval is ``(mean, mean)``.
    """
    se = float(std) / math.sqrt(n) if n > 1 else 0.0
    if is_rate(bounds):
        lo, hi = wilson_interval(mean, n, level)
        return {"se": se, "ci_low": lo, "ci_high": hi, "interval": "wilson"}
    half = t_quantile(level, n - 1) * se if n > 1 else 0.0
    return {"se": se, "ci_low": mean - half, "ci_high": mean + half, "interval": "t"}


def interval_fields(values, bounds=None, level: float = LEVEL) -> dict:
    """The interval fields of a summary record of per-seed ``values`` (:func:`summary_interval` of their mean
    and standard deviation in float64, so the interval is exact for float32 values too; the record's ``mean``
    and ``std`` are in the values' own precision, and agree with it to that precision).

    Args:
      values: per-seed values.
      bounds: the metric's ``(low, high)``; a rate (``(0, 1)``) gets Wilson's interval, others Student t's.
      level: the confidence level.

    Returns:
      ``{"se", "ci_low", "ci_high", "interval"}``.
    """
    v = np.asarray(values, np.float64).ravel()
    std = float(np.std(v, ddof=1)) if v.shape[0] > 1 else 0.0
    return summary_interval(float(np.mean(v)), std, int(v.shape[0]), bounds, level)


def record_interval(record: dict, level: float = LEVEL) -> tuple:
    """A record's ``(ci_low, ci_high)``; for a record of an earlier version (no interval fields), the
    Student-t interval from its ``mean``, ``std`` and ``n``."""
    if "ci_low" in record and "ci_high" in record:
        return record["ci_low"], record["ci_high"]
    fields = summary_interval(record["mean"], record["std"], record.get("n", 1), level=level)
    return fields["ci_low"], fields["ci_high"]


def iqm(values, axis=0):
    """Interquartile mean along ``axis``: the mean of the values left after cutting ``floor(n / 4)`` from each
    end (rliable's IQM; ``scipy.stats.trim_mean(v, 0.25)``)."""
    v = np.sort(np.asarray(values, np.float64), axis=axis)
    n = v.shape[axis]
    cut = n // 4
    return np.take(v, np.arange(cut, n - cut), axis=axis).mean(axis=axis)


STATISTICS = {"mean": lambda v, axis=0: np.mean(v, axis=axis), "median": lambda v, axis=0: np.median(v, axis=axis),
              "iqm": iqm}


def bootstrap_interval(values, statistic: str = "median", level: float = LEVEL, resamples: int = 2000,
                       seed: int = 0) -> tuple:
    """A seeded percentile bootstrap interval of a statistic of the seeds' values.

    Args:
      values: ``(seeds,)`` per-seed values, or ``(seeds, C)`` for C intervals at once (a curve's checkpoints).
      statistic: ``"mean"``, ``"median"`` or ``"iqm"`` (:data:`STATISTICS`).
      level: the confidence level.
      resamples: bootstrap resamples of the seeds (with replacement).
      seed: the resampling seed (the same seed gives the same interval).

    Returns:
      ``(point, low, high)``: the statistic of the sample and the interval's ends (floats, or ``(C,)`` arrays).
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic {statistic!r}; allowed: {list(STATISTICS)}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    v = np.asarray(values, np.float64)
    fn = STATISTICS[statistic]
    idx = np.random.default_rng(seed).integers(0, v.shape[0], size=(resamples, v.shape[0]))
    stats = np.stack([fn(v[i], axis=0) for i in idx])
    tail = (1 - level) / 2
    point, lo, hi = fn(v, axis=0), np.quantile(stats, tail, axis=0), np.quantile(stats, 1 - tail, axis=0)
    if v.ndim == 1:
        return float(point), float(lo), float(hi)
    return point, lo, hi


def paired_differences(a, b, level: float = LEVEL, goal: str = "max") -> dict:
    """Per-seed differences ``a - b`` of two policies on the same seeds, with a paired t-interval.

    Args:
      a: ``(seeds,)`` values of one policy.
      b: ``(seeds,)`` values of the other, seed for seed (common random numbers).
      level: the confidence level.
      goal: ``"max"`` (a seed is a win for ``a`` when ``a > b``) or ``"min"`` (when ``a < b``).

    Returns:
      ``{"diff", "se", "ci_low", "ci_high", "wins", "ties", "losses", "n"}``: the mean difference, its
      standard error and t-interval, and the seeds ``a`` wins, ties and loses.
    """
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"paired samples need equal lengths, got {a.shape[0]} and {b.shape[0]}")
    if goal not in ("max", "min"):
        raise ValueError(f"goal {goal!r}; allowed: 'max', 'min'")
    d = a - b
    mean, se, lo, hi = t_interval(d, level)
    better = d > 0 if goal == "max" else d < 0
    ties = int(np.sum(d == 0))
    return {"diff": mean, "se": se, "ci_low": lo, "ci_high": hi, "wins": int(np.sum(better)), "ties": ties,
            "losses": int(d.shape[0] - ties - np.sum(better)), "n": int(d.shape[0])}


def unpaired_difference(a, b, level: float = LEVEL) -> dict:
    """The difference of two means of independent samples with Welch's t-interval (runs on different seeds).

    Args:
      a: values of one run.
      b: values of the other.
      level: the confidence level.

    Returns:
      ``{"diff", "se", "ci_low", "ci_high", "n"}`` (``n``: the two sample sizes).
    """
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    va, vb = a.var(ddof=1) / a.shape[0], b.var(ddof=1) / b.shape[0]
    se = float(np.sqrt(va + vb))
    df = (va + vb) ** 2 / (va ** 2 / (a.shape[0] - 1) + vb ** 2 / (b.shape[0] - 1)) if se > 0 else 1.0
    from scipy import stats as _st  # Welch's degrees of freedom are not integers

    half = float(_st.t.ppf((1 + level) / 2, df)) * se
    diff = float(a.mean() - b.mean())
    return {"diff": diff, "se": se, "ci_low": diff - half, "ci_high": diff + half, "n": (a.shape[0], b.shape[0])}
