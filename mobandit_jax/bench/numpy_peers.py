"""Seed-batched numpy versions of PrefUCB, THV-UCB and CoHV-UCB: the benchmark's strong CPU peer.

What a numpy user would write to run many seeds at once: every array carries a leading seed axis
``S``, every seed advances one round per numpy call, arrays are allocated once, and no Python
loop runs over seeds or arms. Same algorithms and reward models as the per-seed loops of
:mod:`mobandit_jax.bench.reference` (which the tests compare them with):

- PrefUCB (PDMOB, Algorithm 1, Eqs. 2-4): the KL-UCB index (Eq. 3) of ``min_k S_k(a)`` by
  vectorised Halley steps from a closed-form point above the root, the projected means kept per
  arm and refreshed only for the pulled arm, ties broken uniformly at random;
- THV-UCB (Gutowski et al., Algorithm 1): safe pruning by one ``(S, n, n)`` dominance test, the greedy
  slate by inclusion-exclusion gains ``HV(T + i) - HV(T)`` of all candidates at once;
- CoHV-UCB (Xue et al., Algorithm 1): index ``prod_d U_i^(d) / c_low_i`` over feasible arms,
  per-seed budgets (a seed stops for good at its first pull over budget).
"""
from __future__ import annotations

import math

import numpy as np

# --- KL-UCB ---------------------------------------------------------------------------------------

def _entr(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, -x * np.log(x), 0.0)


def klucb_upper_batched(p, level, steps: int = 4):
    """``sup{q in [p, 1] : kl(p, q) <= level}`` elementwise, Halley steps on ``kl(p, .) - level``.

    Started above the root at the tightest of the caps ``p + sqrt(level min(1/2, 2(1-p)))``,
    ``p + level + sqrt(level (level + 2p))`` and ``1 - exp(-(level + H(p)) / (1 - p))``; ``kl(p, .)``
    is increasing and convex on ``[p, 1)``, so steps from above converge monotonically (cubically
    near the root; a Newton step where the Halley correction is large).

    Args:
      p: means in [0, 1] (clipped), any shape.
      level: exploration levels (negative ones taken as 0), broadcast with ``p``.
      steps: Halley steps.

    Returns:
      float64 upper indices, the broadcast shape; ``p`` where ``level = 0``, 1 where ``level`` is infinite or
      ``p = 1``.
    """
    p = np.clip(np.asarray(p, np.float64), 0.0, 1.0)
    level = np.maximum(np.asarray(level, np.float64), 0.0)
    eps = np.finfo(np.float64).eps / 2
    one_minus_p = 1.0 - p
    q = p + np.minimum(np.sqrt(level * np.minimum(0.5, 2 * one_minus_p)), level + np.sqrt(level * (level + 2 * p)))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        tail = -np.expm1(-(level + _entr(p) + _entr(one_minus_p)) / np.maximum(one_minus_p, eps))
        np.minimum(q, tail, out=q)
        np.minimum(q, 1 - eps, out=q)
        safe_p = np.maximum(p, 1e-300)
        for _ in range(steps):
            gap = q - p
            f = -p * np.log1p(gap / safe_p) + one_minus_p * np.log1p(gap / (1 - q)) - level
            h = q * (1 - q)
            slope = np.maximum(gap, 1e-300) / h
            correction = f * (h - gap * (1 - 2 * q)) / (h * h) / (2 * slope * slope)
            step = f / slope / np.where(np.abs(correction) < 0.5, 1 - correction, 1.0)
            q = np.clip(q - step, p, 1 - eps)
    q = np.where(level == 0, p, q)
    return np.where(np.isinf(level) | (p >= 1.0), 1.0, q)


# --- PrefUCB ----------------------------------------------------------------------------------------

def prefucb_batched(means, W, horizon: int, seeds: int, seed: int = 0, c: float = 1.0):
    """PrefUCB on Beta(c r, c (1 - r)) rewards for ``seeds`` seeds at once.

    Args:
      means: ``(K, d)`` arm means in [0, 1].
      W: ``(M, d)`` preference cone.
      horizon: rounds ``T``.
      seeds: seeds ``S``.
      seed: the numpy generator's seed (rewards and tie-breaks of every seed).
      c: the Beta concentration.

    Returns:
      ``(T, S)`` int64 arms pulled.
    """
    rng = np.random.default_rng(seed)
    means = np.asarray(means, np.float64)
    W = np.asarray(W, np.float64)
    K, d = means.shape
    lo_w, hi_w = np.minimum(W, 0).sum(1), np.maximum(W, 0).sum(1)
    proj = W.T / (hi_w - lo_w)  # S_k(r) = r @ proj - offset, Def. 3
    offset = lo_w / (hi_w - lo_w)
    a_par, b_par = np.maximum(c * means, 1e-300), np.maximum(c * (1 - means), 1e-300)
    counts = np.zeros((seeds, K))
    sums = np.zeros((seeds, K, d))
    min_proj = np.zeros((seeds, K))  # min_k S_k of each arm's empirical mean, refreshed on pulls
    rows = np.arange(seeds)
    arms = np.empty((horizon, seeds), np.int64)
    for t in range(1, horizon + 1):
        if t <= K:
            a = np.full(seeds, t - 1)
        else:
            U = klucb_upper_batched(min_proj, math.log(t) / counts)
            best = U.max(axis=1, keepdims=True) <= U
            a = best.argmax(axis=1)
            tied = np.flatnonzero(best.sum(axis=1) > 1)
            if tied.size:  # uniform among the tied arms
                a[tied] = np.where(best[tied], rng.random((tied.size, K)), -1.0).argmax(axis=1)
        y = rng.beta(a_par[a], b_par[a])
        y = np.where(means[a] <= 0, 0.0, np.where(means[a] >= 1, 1.0, y))
        counts[rows, a] += 1
        sums[rows, a] += y
        min_proj[rows, a] = ((sums[rows, a] / counts[rows, a, None]) @ proj - offset).min(axis=1)
        arms[t - 1] = a
    return arms


# --- THV-UCB ----------------------------------------------------------------------------------------

def _subset_tables(k: int):
    """For slates of size ``m < k``: members ``(2^m, m)`` bool and signs ``(2^m,)`` of every subset."""
    tables = []
    for m in range(k):
        masks = np.arange(1 << m)
        member = (masks[:, None] >> np.arange(m)) & 1 == 1
        tables.append((member, np.where(member.sum(1) % 2 == 0, 1.0, -1.0)))
    return tables


def thv_ucb_batched(means, k: int, horizon: int, seeds: int, *, eta: float = 0.01, delta: float | None = None,
                    m0: int = 2, ref=None, sigma: float = 0.05, seed: int = 0, rewards=None, gain_tol: float = 1e-6):
    """THV-UCB for ``seeds`` seeds at once.

    The gain of candidate ``i`` against slate ``T`` is ``sum_{A subset T} (-1)^|A| prod_d min(g_i, min_{a in A}
    g_a)`` with ``g = max(upper - ref, 0)``.

    Args:
      means: ``(n, d)`` arm means.
      k: the slate's size.
      horizon: rounds ``T``.
      seeds: seeds ``S``.
      eta: the confidence radius' scale.
      delta: the confidence (default ``1 / max(T, 2)``).
      m0: pulls of every arm in the forced initialisation.
      ref: ``(d,)`` hypervolume reference point (default the origin).
      sigma: the Gaussian noise scale of the default rewards.
      seed: the numpy generator's seed of the default rewards.
      rewards: ``rewards(arms (S, k), pulls (S, k)) -> (S, k, d)`` (e.g. a shared table); by default
        ``clip(mu + N(0, sigma^2), 0, 1)``.
      gain_tol: gains at or below it count as zero after the first slot.

    Returns:
      ``(T, S, k)`` int64 slates.
    """
    rng = np.random.default_rng(seed)
    means = np.asarray(means, np.float64)
    n, d = means.shape
    ref = np.zeros(d) if ref is None else np.asarray(ref, np.float64)
    delta = 1.0 / max(horizon, 2) if delta is None else delta
    if rewards is None:
        def rewards(arms, pulls):
            return np.clip(means[arms] + sigma * rng.standard_normal(arms.shape + (d,)), 0.0, 1.0)
    counts = np.zeros((seeds, n))
    sums = np.zeros((seeds, n, d))
    rows = np.arange(seeds)[:, None]
    off_diag = ~np.eye(n, dtype=bool)
    tables = _subset_tables(k)
    slates = np.empty((horizon, seeds, k), np.int64)
    for step in range(horizon):
        t = step + 1
        if (counts < m0).any():  # forced initialisation: the same rounds for every seed
            slate = np.argsort(counts, axis=1, kind="stable")[:, :k]
        else:
            mu = sums / counts[..., None]
            beta = np.sqrt(2 * eta * math.log(n * d * t * t / delta) / counts)[..., None]
            upper = np.clip(mu + beta, 0.0, 1.0)
            lower = mu - beta
            dominated = np.all(upper[:, :, None, :] <= lower[:, None, :, :], axis=3) & off_diag  # (S, i, j)
            open_ = ~dominated.any(axis=2)
            open_ |= (open_.sum(axis=1) < k)[:, None]
            g = np.maximum(upper - ref, 0.0)  # (S, n, d)
            slate = np.empty((seeds, k), np.int64)
            for m in range(k):  # greedy, one slot of every seed per step
                member, sign = tables[m]
                chosen = g[rows, slate[:, :m]]  # (S, m, d)
                corner = np.where(member[None, :, :, None], chosen[:, None, :, :], np.inf).min(
                    axis=2, initial=np.inf)  # (S, 2^m, d)
                gain = (np.minimum(g[:, :, None, :], corner[:, None, :, :]).prod(axis=3) * sign).sum(axis=2)  # (S, n)
                if m:
                    gain = np.where(gain > gain_tol, gain, 0.0)
                    open_[rows, slate[:, m - 1:m]] = False
                slate[:, m] = np.where(open_, gain, -np.inf).argmax(axis=1)
        r = rewards(slate, counts[rows, slate].astype(np.int64))
        counts[rows, slate] += 1
        sums[rows, slate] += r
        slates[step] = slate
    return slates


# --- CoHV-UCB ---------------------------------------------------------------------------------------

def cohv_ucb_batched(stream, num_arms: int, dim: int, budget: float, cost_floor: float, feas_cost, horizon: int,
                     seeds: int, alpha: float = 2.0, s_r: float = 0.01, s_c: float = 0.01, n_init: int = 1):
    """CoHV-UCB for ``seeds`` seeds at once.

    Args:
      stream: ``stream(arms (S,), pulls (S,)) -> (rewards (S, dim), costs (S,))``, every seed's pull.
      num_arms: arms ``K``.
      dim: objectives.
      budget: each seed's budget ``B``.
      cost_floor: the smallest cost of a pull, ``lambda``.
      feas_cost: ``(K,)`` the cost an arm must fit in the remaining budget to be chosen.
      horizon: the most rounds ``T``.
      seeds: seeds ``S``.
      alpha: the radius' exploration constant.
      s_r: the rewards' radius scale.
      s_c: the costs' radius scale.
      n_init: pulls of every arm in the initialisation.

    Returns:
      ``(T, S)`` int64 arms pulled, ``-1`` once a seed has stopped (its first pull over budget).
    """
    K = num_arms
    feas_cost = np.asarray(feas_cost, np.float64)
    log_tb = math.log(math.ceil(budget / cost_floor) + 1)
    n = np.zeros((seeds, K))
    sum_r = np.zeros((seeds, K, dim))
    sum_c = np.zeros((seeds, K))
    spent = np.zeros(seeds)
    live = np.ones(seeds, bool)
    rows = np.arange(seeds)
    arms = np.full((horizon, seeds), -1, np.int64)
    for t in range(horizon):
        if not live.any():
            break
        if t < K * n_init:
            a = np.full(seeds, t % K)
        else:  # (a seed stopped during the initialisation divides by zero counts: its values are unused)
            with np.errstate(divide="ignore", invalid="ignore"):
                rad = np.sqrt(alpha * log_tb / n)
                U = np.minimum(1.0, sum_r / n[..., None] + s_r * rad[..., None])
                c_low = np.maximum(cost_floor / 2.0, sum_c / n - s_c * rad)
                idx = U.prod(axis=2) / c_low
            feasible = feas_cost <= (budget - spent)[:, None]
            idx = np.where(feasible | ~feasible.any(axis=1, keepdims=True), idx, -np.inf)
            a = idx.argmax(axis=1)
        reward, cost = stream(a, n[rows, a].astype(np.int64))
        live &= spent + cost <= budget
        step = live.astype(np.float64)
        n[rows, a] += step
        sum_r[rows, a] += reward * step[:, None]
        sum_c[rows, a] += cost * step
        spent += cost * step
        arms[t] = np.where(live, a, -1)
    return arms
