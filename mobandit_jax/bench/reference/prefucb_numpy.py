"""A plain numpy per-round loop of PrefUCB (PDMOB, Algorithm 1), independent of the JAX code.

Used as the reference in tests (same instance and horizon, statistical agreement) and as the
baseline of ``scripts/bench.py``. The KL-UCB index of every arm and direction (Eq. 3) is a
float64 bisection on ``[p, 1]`` with the textbook ``log(p / q)`` divergence, 23 steps (resolution
~1e-7, the float32 accuracy of the jitted Halley kernel); rewards are Beta(c r, c (1 - r)) draws
from ``numpy.random``.
"""
from __future__ import annotations

import numpy as np


def _kl(p, q):
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(p / q), 0.0)
        b = np.where(p < 1, (1 - p) * np.log((1 - p) / (1 - q)), 0.0)
    return a + b


def klucb_upper_numpy(p, level, iters: int = 23):
    """``sup{q in [p, 1] : kl(p, q) <= level}`` by bisection on [p, 1] (float64).

    Args:
      p: means in [0, 1] (clipped), any shape.
      level: exploration levels, broadcast with ``p``.
      iters: bisection steps (23: about 1e-7).

    Returns:
      float64 upper indices, the midpoint of the last bracket (1 where ``p = 1``).
    """
    p = np.clip(np.asarray(p, np.float64), 0.0, 1.0)
    lo, hi = p.copy(), np.ones_like(p)
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        ok = _kl(p, mid) <= level
        lo = np.where(ok, mid, lo)
        hi = np.where(ok, hi, mid)
    return np.where(p >= 1, 1.0, 0.5 * (lo + hi))


def _projections(r, W):
    """``S_k(r)`` of Def. 3 for rows of ``r``: ``(K, d), (M, d) -> (K, M)``."""
    W = np.asarray(W, np.float64)
    L, U = np.minimum(W, 0).sum(1), np.maximum(W, 0).sum(1)
    return (r @ W.T - L) / (U - L)


def _beta_rewards(rng, r, c: float = 1.0):
    """One Beta(c r, c (1 - r)) draw per objective; means of exactly 0 or 1 return that value."""
    a, b = np.maximum(c * r, 1e-300), np.maximum(c * (1 - r), 1e-300)
    y = rng.beta(a, b)
    return np.where(r <= 0, 0.0, np.where(r >= 1, 1.0, y))


def run_prefucb_numpy(means, W, horizon: int, seed: int, c: float = 1.0):
    """Run Algorithm 1 for ``horizon`` rounds.

    Args:
      means: ``(K, d)`` arm means in [0, 1].
      W: ``(M, d)`` preference cone.
      horizon: rounds.
      seed: the numpy generator's seed (rewards and tie-breaks).
      c: the Beta concentration.

    Returns:
      ``(horizon,)`` int64 arms played.
    """
    rng = np.random.default_rng(seed)
    means = np.asarray(means, np.float64)
    K, _ = means.shape
    counts = np.zeros(K)
    sums = np.zeros_like(means)
    arms = np.empty(horizon, np.int64)
    for t in range(1, horizon + 1):
        if t <= K:
            a = t - 1
        else:
            S = _projections(sums / counts[:, None], W)
            U = klucb_upper_numpy(S, np.log(t) / counts[:, None]).min(axis=1)
            best = np.flatnonzero(U.max() <= U)
            a = best[rng.integers(len(best))]
        y = _beta_rewards(rng, means[a], c)
        counts[a] += 1
        sums[a] += y
        arms[t - 1] = a
    return arms
