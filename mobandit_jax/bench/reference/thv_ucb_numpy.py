"""A plain numpy per-round loop of THV-UCB (Gutowski et al., Algorithm 1), independent of the JAX code.

Used as the reference in tests (exact action equality under an identical reward table, and
statistical agreement) and as the baseline of ``scripts/bench.py``. The hypervolume is computed
here from scratch (a 2-d sweep, and inclusion-exclusion over bitmask subsets at d >= 3), and the
greedy gain is ``HV(S + i) - HV(S)`` of two full set volumes, not the clipped-box identity used by
the JAX kernel. Ties (forced initialisation, greedy argmax) go to the lowest arm index, as in
:mod:`mobandit_jax.policies.slate`.
"""
from __future__ import annotations

import math

import numpy as np


def hypervolume_numpy(points, ref) -> float:
    """Exact dominated hypervolume (maximisation) of a set of points.

    Args:
      points: ``(m, d)`` points.
      ref: ``(d,)`` reference point.

    Returns:
      The volume dominated by the points above ``ref``, a float (0 for no points).
    """
    pts = np.asarray(points, np.float64)
    ref = np.asarray(ref, np.float64)
    if pts.shape[0] == 0:
        return 0.0
    g = np.maximum(pts - ref, 0.0)
    if g.shape[1] == 2:
        order = np.argsort(-g[:, 0], kind="stable")
        total, best_y = 0.0, 0.0
        for x, y in g[order]:
            if y > best_y:
                total += x * (y - best_y)
                best_y = y
        return float(total)
    m = g.shape[0]
    total = 0.0
    for mask in range(1, 1 << m):
        members = [i for i in range(m) if mask >> i & 1]
        vol = np.prod(np.min(g[members], axis=0))
        total += vol if len(members) % 2 else -vol
    return float(total)


def thv_ucb_numpy(means, k: int, horizon: int, *, eta: float = 0.01, delta: float | None = None,
                  m0: int = 2, clip: bool = True, ref=None, reward_fn=None, sigma: float = 0.05,
                  seed: int = 0, dtype=np.float64, gain_tol: float = 1e-6):
    """Run THV-UCB for ``horizon`` rounds.

    Args:
      means: ``(n, d)`` arm means.
      k: the slate's size.
      horizon: rounds ``T``.
      eta: the confidence radius' scale.
      delta: the confidence (default ``1 / max(T, 2)``, as in the JAX policy).
      m0: pulls of every arm in the forced initialisation.
      clip: clip the upper bounds to [0, 1].
      ref: ``(d,)`` hypervolume reference point (default the origin).
      reward_fn: ``reward_fn(arm, pull_index) -> (d,)`` (e.g. a shared table); by default
        ``clip(mu + N(0, sigma^2), 0, 1)`` from ``numpy.random.default_rng(seed)``.
      sigma: the Gaussian noise scale of the default rewards.
      seed: the numpy generator's seed of the default rewards.
      dtype: the dtype of the counts and sums.
      gain_tol: gains at or below it are zero-gain ties after the first slot.

    Returns:
      ``(actions (T, k) int64, hv (T,))``: the slates and each slate's hypervolume on the true means.
    """
    means = np.asarray(means, np.float64)
    n, d = means.shape
    ref = np.zeros(d) if ref is None else np.asarray(ref, np.float64)
    delta = 1.0 / max(horizon, 2) if delta is None else delta
    rng = np.random.default_rng(seed)
    if reward_fn is None:
        def reward_fn(arm, pull):
            return np.clip(means[arm] + sigma * rng.standard_normal(d), 0.0, 1.0)

    counts = np.zeros(n, dtype)
    sums = np.zeros((n, d), dtype)
    actions = np.zeros((horizon, k), np.int64)
    hv = np.zeros(horizon)
    for step in range(horizon):
        t = step + 1
        if np.any(counts < m0):
            slate = list(np.argsort(counts, kind="stable")[:k])  # Algorithm 1, line 4
        else:
            mu = sums / np.maximum(counts, 1)[:, None]
            beta = np.sqrt(2 * eta * math.log(n * d * t * t / delta) / np.maximum(counts, 1))
            upper = mu + beta[:, None]
            if clip:
                upper = np.clip(upper, 0.0, 1.0)
            lower = mu - beta[:, None]
            active = []
            for i in range(n):  # safe pruning, line 15
                pruned = any(j != i and np.all(upper[i] <= lower[j]) for j in range(n))
                if not pruned:
                    active.append(i)
            if len(active) < k:
                active = list(range(n))
            slate = []
            base = 0.0
            for _ in range(k):  # greedy, lines 17-21
                best_i, best_gain = -1, -np.inf
                for i in active:
                    if i in slate:
                        continue
                    gain = hypervolume_numpy(upper[slate + [i]], ref) - base
                    gain = gain if (not slate or gain > gain_tol) else 0.0
                    if gain > best_gain:
                        best_i, best_gain = i, gain
                slate.append(best_i)
                base = hypervolume_numpy(upper[slate], ref)
        for arm in slate:
            r = reward_fn(arm, int(counts[arm]))
            counts[arm] += 1
            sums[arm] += r
        actions[step] = slate
        hv[step] = hypervolume_numpy(means[slate], ref)
    return actions, hv
