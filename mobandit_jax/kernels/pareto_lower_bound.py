"""The characteristic time ``T*(mu)`` of Pareto set identification with Gaussian arms, and its cost function.

Crepon, Garivier & Koolen ("Sequential learning of the Pareto front for multi-objective bandits",
AISTATS 2024, Section 3) and Kone, Kaufmann & Richert (NeurIPS 2023) lower-bound the expected
sample complexity of any delta-correct method by ``T*(mu) log(1 / (2.4 delta))`` with

    T*(mu)^-1 = max_{w in simplex} g(w),   g(w) = inf_{lambda : S(lambda) != S(mu)} sum_k w_k ||mu_k - lambda_k||^2 / 2

for unit-variance Gaussian objectives (divide objective ``j`` by its standard deviation first). ``S`` is
the Pareto set under weak dominance (``mu_j >= mu_i`` on every objective, ``j != i``). The alternatives
split in two kinds (their ``get_rm_cost`` / ``get_add_cost``):

- *remove*: Pareto arm ``i`` becomes dominated by Pareto arm ``j``: cost
  ``w_i w_j / (w_i + w_j) sum_n (mu_in - mu_jn)_+^2 / 2``;
- *add*: dominated arm ``b`` becomes Pareto-optimal: each Pareto arm ``k`` is assigned an objective
  ``v_k`` on which it is lowered to ``b``'s raised value; objective ``n`` then costs
  ``min_x [w_b (x - mu_bn)^2 + sum_{k : v_k = n} w_k (mu_kn - x)_+^2] / 2`` and the assignment the least sum.
  A Pareto arm below ``b`` on some objective costs nothing there, so only the arms above ``b`` on
  every objective are assigned (every assignment, :func:`alternative_cost_np`). With two objectives and
  the Pareto arms sorted by the first, the assignments that can be least are the prefixes (the first
  ``m`` arms lowered on the first objective, the others on the second; :func:`alternative_cost_2d`).

``g`` is concave (an infimum of functions linear in ``w``) and its gradient at ``w`` is
``||mu_k - lambda*_k||^2 / 2`` at the minimising alternative ``lambda*``. :func:`characteristic_time`
maximises it by exponentiated gradient (their Hedge step), in float64 on the host, once per instance
(cached), and stops once the gap to an upper bound is below :data:`TOLERANCE`: every gradient ``G`` seen
is the cost vector of an alternative, so ``g(w') <= <w', G>`` for every ``w'`` and ``max g`` is at most
``max_k G_k`` for ``G`` the average of the gradients seen (or any one of them).

References:
  - Crepon, Garivier & Koolen, "Sequential learning of the Pareto front for multi-objective bandits",
    AISTATS 2024, https://proceedings.mlr.press/v238/crepon24a.html.
  - Kone, Kaufmann & Richert, "Adaptive Algorithms for Relaxed Pareto Set Identification", NeurIPS 2023,
    https://arxiv.org/abs/2307.00424.
"""
from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np

ASCENT_STEPS = 300  # most steps (Hedge, then cutting planes) of characteristic_time
HEDGE_STEPS = 20  # Hedge steps of characteristic_time before its cutting planes
TOLERANCE = 1e-2  # characteristic_time stops once max g is within this relative gap of the best g seen (T* within 1%)
MAX_ASSIGNMENTS = 4096  # most assignments d^P of one add alternative that alternative_cost_np enumerates


def pareto_mask_np(mu) -> np.ndarray:
    """``(K,)`` bool: the arms no other arm weakly dominates (``mu_j >= mu_i`` on every objective).

    Args:
      mu: ``(K, d)`` means (array-like).

    Returns:
      ``(K,)`` numpy bool (exact duplicates exclude each other).
    """
    mu = np.asarray(mu, float)
    dom = np.all(mu[None, :, :] >= mu[:, None, :], axis=-1)
    np.fill_diagonal(dom, False)
    return ~np.any(dom, axis=1)


def _level_np(mu0, w0, vals, ws):
    """``(min_x F(x), x*)`` of ``F(x) = w0 (x - mu0)^2 / 2 + sum_k ws_k (vals_k - x)_+^2 / 2`` over the last axis.

    ``vals``, ``ws`` are ``(..., P)`` (weight 0: not in the sum). The minimiser sets the top arms above ``x``:
    one candidate per arm taken as the lowest of them, and ``mu0`` (none above), each scored exactly."""
    above = (vals[..., None, :] >= vals[..., :, None]) & (ws[..., None, :] > 0)  # [c, k]: k at or above c
    sw = np.sum(np.where(above, ws[..., None, :], 0.0), -1)
    swv = np.sum(np.where(above, (ws * vals)[..., None, :], 0.0), -1)
    cand = np.concatenate([np.broadcast_to(mu0, vals.shape[:-1] + (1,)), (w0 * mu0 + swv) / (w0 + sw)], -1)
    F = w0 * (cand - mu0) ** 2 / 2 + np.sum(ws[..., None, :] * np.maximum(vals[..., None, :] - cand[..., None], 0) ** 2,
                                           -1) / 2
    best = np.argmin(F, -1)
    return np.take_along_axis(F, best[..., None], -1)[..., 0], np.take_along_axis(cand, best[..., None], -1)[..., 0]


def alternative_cost_np(mu, w):
    """``(g(w), grad (K,))`` of the module docstring for unit-variance objectives, any dimension (float64).

    Args:
      mu: ``(K, d)`` means, in units of each objective's standard deviation.
      w: ``(K,)`` positive sampling weights.

    Returns:
      ``(g, grad)``: the least alternative cost (``inf`` if there is no alternative) and ``(K,)`` float64
      numpy gradient ``||mu_k - lambda*_k||^2 / 2``.
    """
    mu, w = np.asarray(mu, float), np.asarray(w, float)
    K, d = mu.shape
    front = pareto_mask_np(mu)
    best, grad = np.inf, np.zeros(K)
    F = np.flatnonzero(front)
    if len(F) > 1:  # remove: Pareto arm i falls under Pareto arm j
        gap = np.sum(np.maximum(mu[F][:, None, :] - mu[F][None, :, :], 0) ** 2, -1)
        wi, wj = w[F][:, None], w[F][None, :]
        cost = np.where(np.eye(len(F), dtype=bool), np.inf, wi * wj / (wi + wj) * gap / 2)
        a, c = np.unravel_index(np.argmin(cost), cost.shape)
        i, j = F[a], F[c]
        best = cost[a, c]
        grad[i], grad[j] = (w[j] / (w[i] + w[j])) ** 2 * gap[a, c] / 2, (w[i] / (w[i] + w[j])) ** 2 * gap[a, c] / 2
    for b in np.flatnonzero(~front):  # add: dominated arm b rises out of every Pareto arm's dominance
        above = F[np.all(mu[F] > mu[b], axis=1)]
        if len(above) == 0:
            cost, x, v = 0.0, mu[b].copy(), np.zeros(0, int)
        else:
            V = np.array(list(itertools.product(range(d), repeat=len(above))))  # (A, P) assignments
            on = V[:, None, :] == np.arange(d)[None, :, None]  # (A, d, P)
            vals = np.broadcast_to(mu[above].T[None], on.shape)
            costs, levels = _level_np(mu[b][None, :, None], w[b], vals, np.where(on, w[above][None, None, :], 0.0))
            a = int(np.argmin(costs.sum(1)))
            cost, x, v = costs[a].sum(), levels[a], V[a]
        if cost < best:
            best, grad = cost, np.zeros(K)
            grad[b] = np.sum((x - mu[b]) ** 2) / 2
            for k, n in zip(above, v, strict=False):
                grad[k] = max(mu[k, n] - x[n], 0) ** 2 / 2
    return best, grad


def _cutting_plane(cuts):
    """``(max_w min_t <w, cuts_t>, its w)`` over the simplex: an upper bound on ``max g`` (module docstring), by LP."""
    from scipy.optimize import linprog

    T, K = cuts.shape
    out = linprog(np.r_[np.zeros(K), -1.0], A_ub=np.c_[-cuts, np.ones(T)], b_ub=np.zeros(T),
                  A_eq=np.r_[np.ones(K), 0.0][None], b_eq=[1.0], bounds=[(0, None)] * K + [(None, None)],
                  method="highs")
    w = np.maximum(out.x[:K], 1e-12)
    return -out.fun, w / w.sum()


def characteristic_time(mu, sigma=1.0, steps: int = ASCENT_STEPS, tol: float = TOLERANCE):
    """``(T*(mu), w*)`` for Gaussian objectives of standard deviations ``sigma`` (a number or ``(d,)``).

    Maximises the concave ``g`` by exponentiated gradient with Crepon et al.'s step
    ``sqrt(log K) / (sqrt(1 + s) max|grad|)``, from uniform weights, until the best ``g`` seen is within ``tol``
    (relative) of the upper bound of the module docstring, or ``steps``; returns the best weights seen, so
    ``T*`` is an upper bound on the true value, within a factor ``1 / (1 - tol)`` when the gap closed.
    ``inf`` when an alternative costs nothing (an arm ties another on an objective it is dominated on);
    ``(nan, None)`` when an add alternative has more than :data:`MAX_ASSIGNMENTS` assignments to enumerate.

    Args:
      mu: ``(K, d)`` means.
      sigma: the objectives' standard deviations, a number or ``(d,)``.
      steps: most ascent steps.
      tol: relative gap at which the ascent stops.

    Returns:
      ``(T*, w*)``: a float and ``(K,)`` float64 numpy weights on the simplex (``(nan, None)`` beyond
      :data:`MAX_ASSIGNMENTS`).
    """
    mu = np.asarray(mu, float) / np.broadcast_to(np.asarray(sigma, float), np.shape(mu)[-1:])
    return _characteristic_time(mu.tobytes(), mu.shape, int(steps), float(tol))


@functools.lru_cache(maxsize=256)
def _characteristic_time(data: bytes, shape: tuple, steps: int, tol: float):
    mu = np.frombuffer(data, float).reshape(shape)
    K, d = shape
    front = pareto_mask_np(mu)
    above = [int(np.sum(np.all(mu[front] > mu[b], axis=1))) for b in np.flatnonzero(~front)]
    if above and float(d) ** max(above) > MAX_ASSIGNMENTS:
        return np.nan, None
    w = np.full(K, 1.0 / K)
    best, best_w, reg, cuts = -np.inf, w.copy(), 0.0, []
    for s in range(steps):
        g, grad = alternative_cost_np(mu, w)
        if g > best:
            best, best_w = g, w.copy()
        if not np.isfinite(g) or g <= 0:
            break
        cuts.append(grad)
        if s < HEDGE_STEPS:  # Crepon et al.'s Hedge step
            reg = max(reg, float(np.max(np.abs(grad))))
            w = w * np.exp(np.sqrt(np.log(K)) / np.sqrt(1.0 + s) / reg * grad)
            w /= w.sum()
            continue
        upper, w = _cutting_plane(np.array(cuts))
        if best >= (1 - tol) * upper:
            break
    return (1.0 / best if best > 0 else np.inf), best_w


# --------------------------------------------------------------------------------------------
# The two-objective cost in JAX (Track-and-Stop's inner step)
# --------------------------------------------------------------------------------------------

def pareto_mask(mu):
    """:func:`pareto_mask_np` in JAX.

    Args:
      mu: ``(K, d)`` means.

    Returns:
      ``(K,)`` bool.
    """
    dom = jnp.all(mu[None, :, :] >= mu[:, None, :], axis=-1) & ~jnp.eye(mu.shape[0], dtype=bool)
    return ~jnp.any(dom, axis=1)


def _water(m0, w0, P0, P1, P2, lo, hi, ok):
    """``(min_x F, x*)`` for ``F(x) = w0 (x - m0)^2 / 2 + sum_{r in A} w_r (v_r - x)^2 / 2`` over candidate active sets.

    ``P0, P1, P2 (..., C)``: each candidate's sums of ``w``, ``w v``, ``w v^2``; a candidate is the minimiser when
    its level lies in ``[lo, hi]`` (the values just outside and just inside its set); ``ok`` marks the candidates
    that exist. The level of a valid
    candidate is the minimiser of the convex ``F``; should rounding leave none valid, the least value is kept."""
    x = (w0 * m0 + P1) / (w0 + P0)
    F = jnp.where(ok, w0 * (x - m0) ** 2 / 2 + (P2 - 2 * x * P1 + x * x * P0) / 2, jnp.inf)
    valid = ok & (x >= lo) & (x <= hi)
    F = jnp.where(jnp.any(valid, -1, keepdims=True), jnp.where(valid, F, jnp.inf), F)
    best = jnp.argmin(F, -1)
    return jnp.take_along_axis(F, best[..., None], -1)[..., 0], jnp.take_along_axis(x, best[..., None], -1)[..., 0]


def alternative_cost_2d(mu, w):
    """``(g(w), grad (K,))`` for two unit-variance objectives, batched-friendly (fixed shapes, no host loop).

    ``mu (K, 2)``, ``w (K,)`` positive. The add cost of arm ``b`` and split ``m`` solves each objective's level
    from prefix sums over the Pareto arms sorted by the first objective (the first ``m`` lowered on it, whose
    values rise with rank; the others on the second, whose values fall with rank): ``O(K^3)`` per call.

    Args:
      mu: ``(K, 2)`` means, in units of each objective's standard deviation.
      w: ``(K,)`` positive sampling weights.

    Returns:
      ``(g, grad)``: ``()`` least alternative cost and ``(K,)`` gradient, in ``mu``'s dtype.
    """
    K = mu.shape[0]
    dtype = mu.dtype
    front = pareto_mask(mu)
    # remove: Pareto i under Pareto j
    gap = jnp.sum(jnp.maximum(mu[:, None, :] - mu[None, :, :], 0) ** 2, -1)  # [i, j]
    pair = front[:, None] & front[None, :] & ~jnp.eye(K, dtype=bool)
    rm = jnp.where(pair, w[:, None] * w[None, :] / (w[:, None] + w[None, :]) * gap / 2, jnp.inf)
    flat = jnp.argmin(rm)
    i, j = flat // K, flat % K
    g_rm = rm.reshape(-1)[flat]
    grad_rm = jnp.zeros(K, dtype).at[i].add((w[j] / (w[i] + w[j])) ** 2 * gap[i, j] / 2) \
        .at[j].add((w[i] / (w[i] + w[j])) ** 2 * gap[i, j] / 2)
    # add: the Pareto arms by rank (first objective ascending), the others after them with weight 0
    big = jnp.asarray(jnp.finfo(dtype).max / 4, dtype)
    order = jnp.argsort(jnp.where(front, mu[:, 0], big))
    ws = jnp.where(front[order], w[order], 0.0)
    xs = jnp.where(front[order], mu[order, 0], big)
    ys = jnp.where(front[order], mu[order, 1], -big)

    def sums(v):  # cumulative sums with a leading 0: S[a] = sum_{r < a}
        pw, pv, pvv = (jnp.concatenate([jnp.zeros(1, dtype), jnp.cumsum(jnp.where(ws > 0, q, 0.0))])
                       for q in (ws, ws * v, ws * v * v))
        return pw, pv, pvv

    r = jnp.arange(K + 1)
    m, c = r[:, None], r[None, :]  # split m, candidate c (ranks [c, m) lowered on x; [m, c) on y)
    X0, X1, X2 = sums(xs)
    Y0, Y1, Y2 = sums(ys)
    lo_x = jnp.where(c == 0, -big, xs[jnp.maximum(c - 1, 0)])
    hi_x = jnp.where(c >= m, big, xs[jnp.minimum(c, K - 1)])
    ok_x = c <= m
    lo_y = jnp.where(c >= K, -big, ys[jnp.minimum(c, K - 1)])
    hi_y = jnp.where(c <= m, big, ys[jnp.maximum(c - 1, 0)])
    ok_y = c >= m

    def objective(m0, w0, S0, S1, S2, first, lo, hi, ok):
        P = [jnp.where(ok, (S[m] - S[c]) if first else (S[c] - S[m]), 0.0) for S in (S0, S1, S2)]
        return _water(m0, w0, *P, lo, hi, ok)

    def per_arm(mb, wb):
        Fx, lx = objective(mb[0], wb, X0, X1, X2, True, lo_x, hi_x, ok_x)
        Fy, ly = objective(mb[1], wb, Y0, Y1, Y2, False, lo_y, hi_y, ok_y)
        return Fx + Fy, lx, ly  # each (m,)

    total, lx, ly = jax.vmap(per_arm)(mu, w)  # (b, m)
    total = jnp.where(front[:, None], jnp.inf, total)
    flat = jnp.argmin(total)
    b, ms = flat // (K + 1), flat % (K + 1)
    g_add = total.reshape(-1)[flat]
    x0, x1 = lx[b, ms], ly[b, ms]
    lowered = jnp.where(jnp.arange(K) < ms, jnp.maximum(xs - x0, 0) ** 2, jnp.maximum(ys - x1, 0) ** 2) / 2
    grad_add = jnp.zeros(K, dtype).at[order].set(jnp.where(ws > 0, lowered, 0.0))
    grad_add = grad_add.at[b].set(((x0 - mu[b, 0]) ** 2 + (x1 - mu[b, 1]) ** 2) / 2)
    take_rm = g_rm <= g_add
    return jnp.where(take_rm, g_rm, g_add), jnp.where(take_rm, grad_rm, grad_add)
