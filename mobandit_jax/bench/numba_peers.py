"""Per-seed loops compiled with numba: the benchmark's compiled peer (``pip install 'mobandit_jax[bench]'``).

What a user who cares about speed writes in place of numpy: one seed after another, each round a few scalar
loops over arms and objectives, compiled by numba (``fastmath``, less its no-infinity and no-NaN assumptions), on
one core. The same algorithms and
reward models as the seed-batched numpy peers of :mod:`mobandit_jax.bench.numpy_peers` (which the tests
compare them with):

- PrefUCB (PDMOB, Algorithm 1, Eqs. 2-4) on Beta(c r, c (1 - r)) rewards: the KL-UCB index of
  ``min_k S_k(a)`` by the numpy peer's Halley steps, ties broken uniformly at random;
- THV-UCB (Gutowski et al., Algorithm 1) on ``clip(mu + N(0, sigma^2), 0, 1)`` rewards: safe pruning, then
  the greedy slate by inclusion-exclusion gains against the corners of the slate's subsets;
- Auer et al. (AISTATS 2016, Algorithm 1) and APE (Kone et al., NeurIPS 2023; both ``b_t`` and ``c_t`` pulled)
  on Bernoulli or Gaussian arms, with linear_psi's radius ``beta_ij``, as :mod:`mobandit_jax.policies.pac_auer`
  and :mod:`mobandit_jax.policies.pac_ape` run them.

Each loop takes an optional reward table ``(K, P, d)`` (arm ``i``'s ``j``-th pull is ``table[i, j]``; an empty
table draws from numba's generator, seeded by the seed's index), so the tests can feed the numpy loops and
these the same rewards. This module imports numba; the benchmark imports it only when asked for.
"""
from __future__ import annotations

import math

import numba
import numpy as np

EMPTY = np.zeros((0, 0, 0))  # no reward table: draw
# fastmath without its no-infinity and no-NaN assumptions: the loops compare against +-inf
_jit = numba.njit(fastmath={"nsz", "arcp", "contract", "afn", "reassoc"}, cache=False)


# --- KL-UCB -------------------------------------------------------------------------------------------

@_jit
def _entr(x):
    return -x * math.log(x) if x > 0 else 0.0


@_jit
def klucb_upper(p, level):
    """``sup{q in [p, 1] : kl(p, q) <= level}``: the numpy peer's start and 4 Halley steps, one scalar.

    Args:
      p: the empirical mean (clipped to [0, 1]).
      level: the exploration level (``inf``: the bound is 1).

    Returns:
      The upper confidence bound ``q``, in ``[p, 1)`` (1 where ``p`` is 1 or ``level`` is infinite).
    """
    p = min(max(p, 0.0), 1.0)
    if math.isinf(level) or p >= 1.0:
        return 1.0
    level = max(level, 0.0)
    if level == 0.0:
        return p
    eps = 2.220446049250313e-16 / 2
    one_minus_p = 1.0 - p
    q = p + min(math.sqrt(level * min(0.5, 2 * one_minus_p)), level + math.sqrt(level * (level + 2 * p)))
    q = min(q, -math.expm1(-(level + _entr(p) + _entr(one_minus_p)) / max(one_minus_p, eps)), 1 - eps)
    safe_p = max(p, 1e-300)
    for _ in range(4):
        gap = q - p
        f = -p * math.log1p(gap / safe_p) + one_minus_p * math.log1p(gap / (1 - q)) - level
        h = q * (1 - q)
        slope = max(gap, 1e-300) / h
        correction = f * (h - gap * (1 - 2 * q)) / (h * h) / (2 * slope * slope)
        step = f / slope / (1 - correction if abs(correction) < 0.5 else 1.0)
        q = min(max(q - step, p), 1 - eps)
    return q


@_jit
def klucb_upper_many(p, level):
    """:func:`klucb_upper` elementwise over two 1-d arrays (for tests).

    Args:
      p: ``(n,)`` means.
      level: ``(n,)`` levels.

    Returns:
      ``(n,)`` float64 bounds.
    """
    out = np.empty(p.shape[0])
    for i in range(p.shape[0]):
        out[i] = klucb_upper(p[i], level[i])
    return out


# --- PrefUCB ------------------------------------------------------------------------------------------

@_jit
def _prefucb_seed(means, proj, offset, horizon, c, table, arms):
    K, d = means.shape
    counts = np.zeros(K)
    sums = np.zeros((K, d))
    min_proj = np.zeros(K)
    U = np.empty(K)
    for t in range(1, horizon + 1):
        if t <= K:
            a = t - 1
        else:
            log_t = math.log(t)
            for i in range(K):
                U[i] = klucb_upper(min_proj[i], log_t / counts[i])
            a, best, ties = 0, -np.inf, 0
            for i in range(K):  # uniform among the tied arms (one pass, reservoir)
                if U[i] > best:
                    a, best, ties = i, U[i], 1
                elif U[i] == best:
                    ties += 1
                    if np.random.random() * ties < 1.0:
                        a = i
        for n in range(d):
            m = means[a, n]
            if table.shape[1] > 0:
                y = table[a, int(counts[a]), n]
            elif m <= 0:
                y = 0.0
            elif m >= 1:
                y = 1.0
            else:
                y = np.random.beta(c * m, c * (1 - m))
            sums[a, n] += y
        counts[a] += 1
        low = np.inf
        for k in range(proj.shape[1]):
            s = -offset[k]
            for n in range(d):
                s += sums[a, n] / counts[a] * proj[n, k]
            low = min(low, s)
        min_proj[a] = low
        arms[t - 1] = a


@_jit
def _prefucb_seeds(means, proj, offset, horizon, seeds, first, c, table):
    arms = np.empty((seeds, horizon), np.int64)
    for s in range(seeds):
        np.random.seed(first + s)
        _prefucb_seed(means, proj, offset, horizon, c, table, arms[s])
    return arms


def prefucb_seeds(means, W, horizon: int, seeds: int, first: int = 0, c: float = 1.0, table=EMPTY):
    """PrefUCB on Beta(c r, c (1 - r)) rewards (or ``table``) for seeds ``first, ..., first + seeds - 1``.

    Args:
      means: ``(K, d)`` mean rewards in [0, 1].
      W: ``(M, d)`` cone directions.
      horizon: rounds per seed.
      seeds: how many seeds, one after another.
      first: the first seed's index (numba's generator is seeded by it).
      c: the Beta concentration.
      table: ``(K, P, d)`` rewards, arm ``i``'s ``j``-th pull ``table[i, j]``; empty: Beta draws.

    Returns:
      ``(seeds, horizon)`` played arms.
    """
    W = np.asarray(W, np.float64)
    lo_w, hi_w = np.minimum(W, 0).sum(1), np.maximum(W, 0).sum(1)
    return _prefucb_seeds(np.asarray(means, np.float64), np.ascontiguousarray(W.T / (hi_w - lo_w)),
                          lo_w / (hi_w - lo_w), horizon, seeds, first, float(c), np.asarray(table, np.float64))


# --- THV-UCB ------------------------------------------------------------------------------------------

@_jit
def _thv_ucb_seed(means, k, horizon, eta, delta, m0, sigma, gain_tol, table, slates):
    n, d = means.shape
    counts = np.zeros(n)
    sums = np.zeros((n, d))
    upper = np.empty((n, d))
    lower = np.empty((n, d))
    corner = np.empty((1 << k, d))  # min over each subset of the slate of its members' g; row 0: no member
    sign = np.empty(1 << k)
    open_ = np.empty(n, np.bool_)
    slate = np.empty(k, np.int64)
    for step in range(horizon):
        t = step + 1
        if counts.min() < m0:  # forced initialisation: the k least pulled arms, lowest index first
            slate[:] = np.argsort(counts, kind="mergesort")[:k]
        else:
            log_term = math.log(n * d * t * t / delta)
            for i in range(n):
                beta = math.sqrt(2 * eta * log_term / counts[i])
                for j in range(d):
                    mu = sums[i, j] / counts[i]
                    upper[i, j] = min(max(mu + beta, 0.0), 1.0)
                    lower[i, j] = mu - beta
            live = 0
            for i in range(n):  # safe pruning: i is closed if some j's lower corner dominates i's upper
                open_[i] = True
                for j in range(n):
                    if j != i:
                        dominated = True
                        for m in range(d):
                            if upper[i, m] > lower[j, m]:
                                dominated = False
                                break
                        if dominated:
                            open_[i] = False
                            break
                live += open_[i]
            if live < k:
                open_[:] = True
            corner[0, :] = np.inf
            sign[0] = 1.0
            for m in range(k):  # greedy: gain of i = sum over subsets A of the slate of sign_A prod min(g_i, corner_A)
                best, best_gain = -1, -np.inf
                for i in range(n):
                    if not open_[i]:
                        continue
                    gain = 0.0
                    for A in range(1 << m):
                        vol = sign[A]
                        for j in range(d):
                            vol *= min(max(upper[i, j], 0.0), corner[A, j])
                        gain += vol
                    if m and gain <= gain_tol:
                        gain = 0.0
                    if gain > best_gain:
                        best, best_gain = i, gain
                slate[m] = best
                open_[best] = False
                for A in range(1 << m):  # the subsets that hold the new member
                    sign[A + (1 << m)] = -sign[A]
                    for j in range(d):
                        corner[A + (1 << m), j] = min(corner[A, j], max(upper[best, j], 0.0))
        for m in range(k):
            a = slate[m]
            for j in range(d):
                if table.shape[1] > 0:
                    y = table[a, int(counts[a]), j]
                else:
                    y = min(max(means[a, j] + sigma * np.random.standard_normal(), 0.0), 1.0)
                sums[a, j] += y
            counts[a] += 1
        slates[step] = slate


@_jit
def _thv_ucb_seeds(means, k, horizon, seeds, first, eta, delta, m0, sigma, gain_tol, table):
    slates = np.empty((seeds, horizon, k), np.int64)
    for s in range(seeds):
        np.random.seed(first + s)
        _thv_ucb_seed(means, k, horizon, eta, delta, m0, sigma, gain_tol, table, slates[s])
    return slates


def thv_ucb_seeds(means, k: int, horizon: int, seeds: int, *, first: int = 0, eta: float = 0.01,
                  delta: float | None = None, m0: int = 2, sigma: float = 0.05, gain_tol: float = 1e-6, table=EMPTY):
    """THV-UCB with reference point 0 for seeds ``first, ..., first + seeds - 1`` (the numpy peer's options).

    Args:
      means: ``(n, d)`` mean rewards in [0, 1].
      k: slate size.
      horizon: rounds per seed.
      seeds: how many seeds, one after another.
      first: the first seed's index.
      eta: as in :func:`~mobandit_jax.bench.numpy_peers.thv_ucb_batched`.
      delta: as in :func:`~mobandit_jax.bench.numpy_peers.thv_ucb_batched`.
      m0: as in :func:`~mobandit_jax.bench.numpy_peers.thv_ucb_batched`.
      sigma: as in :func:`~mobandit_jax.bench.numpy_peers.thv_ucb_batched`.
      gain_tol: as in :func:`~mobandit_jax.bench.numpy_peers.thv_ucb_batched`.
      table: ``(n, P, d)`` rewards; empty: ``clip(mu + N(0, sigma^2), 0, 1)`` draws.

    Returns:
      ``(seeds, horizon, k)`` slates.
    """
    delta = 1.0 / max(horizon, 2) if delta is None else delta
    return _thv_ucb_seeds(np.asarray(means, np.float64), k, horizon, seeds, first, eta, delta, m0, sigma, gain_tol,
                          np.asarray(table, np.float64))


# --- Auer et al. and APE ------------------------------------------------------------------------------

@_jit
def _pull(means, gauss, sigma, table, a, n, sums):
    """Add arm ``a``'s ``n``-th pull to ``sums[a]``: ``table[a, n]``, else a Gaussian or Bernoulli draw."""
    for j in range(means.shape[1]):
        if table.shape[1] > 0:
            y = table[a, n, j]
        elif gauss:
            y = means[a, j] + sigma * np.random.standard_normal()
        else:
            y = 1.0 if np.random.random() < means[a, j] else 0.0
        sums[a, j] += y


@_jit
def _radius(counts, c, sigma, beta):
    """linear_psi's ``beta_ij`` of every pair into ``beta (K, K)``."""
    K = counts.shape[0]
    ll = np.empty(K)
    inv = np.empty(K)
    for i in range(K):
        ll[i] = math.log1p(math.log(counts[i]))
        inv[i] = 1.0 / counts[i]
    for i in range(K):
        for j in range(K):
            beta[i, j] = sigma * math.sqrt(2 * (2 * c + ll[i] + ll[j]) * (inv[i] + inv[j]))


@_jit
def _margins(sums, counts, big):
    """``M(i, j) = max_n (mu_in - mu_jn)`` into ``big (K, K)`` (``m(i, j) = -M(i, j)``)."""
    K, d = sums.shape
    for i in range(K):
        for j in range(K):
            best = -np.inf
            for n in range(d):
                best = max(best, sums[i, n] / counts[i] - sums[j, n] / counts[j])
            big[i, j] = best


@_jit
def _auer_seed(means, gauss, sigma, radius_sigma, c, epsilon, cap, table, counts, accepted):
    K, d = means.shape
    sums = np.zeros((K, d))
    active = np.ones(K, np.bool_)
    kept = np.empty(K, np.bool_)
    p1 = np.empty(K, np.bool_)
    beta = np.empty((K, K))
    big = np.empty((K, K))
    counts[:] = 0
    accepted[:] = False
    for _ in range(cap):
        if not active.any():
            break
        for a in range(K):
            if active[a]:
                _pull(means, gauss, sigma, table, a, int(counts[a]), sums)
                counts[a] += 1
        _radius(counts, c, radius_sigma, beta)
        _margins(sums, counts, big)
        for i in range(K):  # step 2: discard i if some active j dominates it beyond the width (the step's first A)
            kept[i] = active[i]
            if active[i]:
                for j in range(K):
                    if active[j] and -big[i, j] > beta[i, j]:
                        kept[i] = False
                        break
        for i in range(K):  # step 3: P1
            p1[i] = kept[i]
            if kept[i]:
                for j in range(K):
                    if j != i and kept[j] and not big[i, j] + epsilon > beta[i, j]:
                        p1[i] = False
                        break
        for i in range(K):  # step 4: accept P2
            active[i] = kept[i]
            if p1[i]:
                sure = True
                for j in range(K):
                    if kept[j] and not p1[j] and not beta[i, j] < big[j, i]:
                        sure = False
                        break
                if sure:
                    accepted[i] = True
                    active[i] = False
    if active.any():  # the round cap: the active arms that no arm of A or P empirically dominates join P
        for i in range(K):
            if active[i]:
                alone = True
                for j in range(K):
                    if (active[j] or accepted[j]) and j != i and big[i, j] <= 0 and big[j, i] > 0:
                        alone = False
                        break
                accepted[i] = accepted[i] or alone


@_jit
def _ape_seed(means, gauss, sigma, radius_sigma, c, epsilon, cap, table, counts, accepted):
    K, d = means.shape
    sums = np.zeros((K, d))
    beta = np.empty((K, K))
    big = np.empty((K, K))
    h = np.empty(K)
    g = np.empty(K)
    pareto = np.empty(K, np.bool_)
    counts[:] = 0
    for a in range(K):
        _pull(means, gauss, sigma, table, a, 0, sums)
        counts[a] = 1
    for _ in range(cap):
        _radius(counts, c, radius_sigma, beta)
        _margins(sums, counts, big)
        z1, z2 = np.inf, np.inf
        for i in range(K):
            h[i], g[i], pareto[i] = np.inf, -np.inf, True
            for j in range(K):
                if j != i:
                    h[i] = min(h[i], big[i, j] + epsilon - beta[i, j])
                    g[i] = max(g[i], -big[i, j] - beta[i, j])
                    if big[i, j] <= 0 and big[j, i] > 0:  # j >= i everywhere, > somewhere
                        pareto[i] = False
            if pareto[i]:
                z1 = min(z1, h[i])
            else:
                z2 = min(z2, max(h[i], g[i]))
        accepted[:] = pareto
        if z1 >= 0 and z2 >= 0:
            return
        b, score_b = -1, -np.inf
        for i in range(K):  # b_t: the uncertified arm with the largest min_j [M(i, j) + beta_ji], first on ties
            score = np.inf
            for j in range(K):
                if j != i:
                    score = min(score, big[i, j] + beta[j, i])
            score = -np.inf if h[i] > 0 else score
            if b < 0 or score > score_b:
                b, score_b = i, score
        c_t, low = -1, np.inf
        for j in range(K):
            if j != b and (c_t < 0 or big[b, j] - beta[b, j] < low):
                c_t, low = j, big[b, j] - beta[b, j]
        for a in (b, c_t):
            _pull(means, gauss, sigma, table, a, int(counts[a]), sums)
            counts[a] += 1


@_jit
def _fixed_confidence_seeds(ape, means, gauss, sigma, radius_sigma, c, epsilon, cap, seeds, first, table):
    K = means.shape[0]
    counts = np.zeros((seeds, K))
    found = np.zeros((seeds, K), np.bool_)
    for s in range(seeds):
        np.random.seed(first + s)
        if ape:
            _ape_seed(means, gauss, sigma, radius_sigma, c, epsilon, cap, table, counts[s], found[s])
        else:
            _auer_seed(means, gauss, sigma, radius_sigma, c, epsilon, cap, table, counts[s], found[s])
    return counts, found


def fixed_confidence_seeds(method: str, means, gauss: bool, sigma: float, delta: float, seeds: int, *,
                           first: int = 0, epsilon: float = 0.0, cap: int = 10**9, table=EMPTY):
    """Auer et al. (``method = "auer"``) or APE (``"ape"``, both ``b_t`` and ``c_t`` pulled) for seeds ``first, ...``.

    Args:
      method: ``"auer"`` or ``"ape"``.
      means: ``(K, d)`` arm means.
      gauss: Gaussian arms of scale ``sigma``, else Bernoulli arms (the radius then uses ``sigma = 1/2``).
      sigma: the Gaussian noise scale.
      delta: the confidence, in ``C^g(delta)`` of linear_psi's radius.
      seeds: how many seeds, one after another.
      first: the first seed's index.
      epsilon: the accuracy (0: exact identification).
      cap: the most rounds a seed plays.
      table: ``(K, P, d)`` rewards; empty: draws.

    Returns:
      ``(counts (seeds, K), recommended (seeds, K) bool)``.
    """
    half = math.log(1 / delta) / 2
    c = half + max(math.log(half), 0.0)
    return _fixed_confidence_seeds(method == "ape", np.asarray(means, np.float64), bool(gauss), float(sigma),
                                   float(sigma) if gauss else 0.5, c, float(epsilon), int(cap), seeds, first,
                                   np.asarray(table, np.float64))
