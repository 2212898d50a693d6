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
maximises it by exponentiated gradient (their Hedge step), in float64 on the host, once per instance.
"""
from __future__ import annotations

import itertools

import numpy as np
import jax.numpy as jnp

ASCENT_STEPS = 1500  # exponentiated-gradient steps of characteristic_time


def pareto_mask_np(mu) -> np.ndarray:
    """``(K,)`` bool: the arms no other arm weakly dominates (``mu_j >= mu_i`` on every objective)."""
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
    """``(g(w), grad (K,))`` of the module docstring for unit-variance objectives, any dimension (float64)."""
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
            for k, n in zip(above, v):
                grad[k] = max(mu[k, n] - x[n], 0) ** 2 / 2
    return best, grad


def characteristic_time(mu, sigma=1.0, steps: int = ASCENT_STEPS):
    """``(T*(mu), w*)`` for Gaussian objectives of standard deviations ``sigma`` (a number or ``(d,)``).

    Maximises the concave ``g`` by exponentiated gradient with Crepon et al.'s step
    ``sqrt(log K) / (sqrt(1 + s) max|grad|)``, from uniform weights; returns the best weights seen, so
    ``T*`` is an upper bound on the true value that the steps tighten. ``inf`` when every arm ties."""
    mu = np.asarray(mu, float) / np.broadcast_to(np.asarray(sigma, float), np.shape(mu)[-1:])
    K = mu.shape[0]
    w = np.full(K, 1.0 / K)
    best, best_w, reg = -np.inf, w.copy(), 0.0
    for s in range(steps):
        g, grad = alternative_cost_np(mu, w)
        if g > best:
            best, best_w = g, w.copy()
        reg = max(reg, float(np.max(np.abs(grad))))
        if reg == 0 or not np.isfinite(g):
            break
        w = w * np.exp(np.sqrt(np.log(K)) / np.sqrt(1.0 + s) / reg * grad)
        w /= w.sum()
    return (1.0 / best if best > 0 else np.inf), best_w


# --------------------------------------------------------------------------------------------
# The two-objective cost in JAX (Track-and-Stop's inner step)
# --------------------------------------------------------------------------------------------

def pareto_mask(mu):
    """:func:`pareto_mask_np` in JAX."""
    dom = jnp.all(mu[None, :, :] >= mu[:, None, :], axis=-1) & ~jnp.eye(mu.shape[0], dtype=bool)
    return ~jnp.any(dom, axis=1)


def _level(mu0, w0, vals, ws):
    """:func:`_level_np` in JAX: ``(min_x F, x*)`` over the last axis."""
    above = (vals[..., None, :] >= vals[..., :, None]) & (ws[..., None, :] > 0)
    sw = jnp.sum(jnp.where(above, ws[..., None, :], 0.0), -1)
    swv = jnp.sum(jnp.where(above, (ws * vals)[..., None, :], 0.0), -1)
    cand = jnp.concatenate([jnp.broadcast_to(mu0, vals.shape[:-1] + (1,)), (w0 * mu0 + swv) / (w0 + sw)], -1)
    F = w0 * (cand - mu0) ** 2 / 2 + jnp.sum(
        ws[..., None, :] * jnp.maximum(vals[..., None, :] - cand[..., None], 0) ** 2, -1) / 2
    best = jnp.argmin(F, -1)
    return jnp.take_along_axis(F, best[..., None], -1)[..., 0], jnp.take_along_axis(cand, best[..., None], -1)[..., 0]


def alternative_cost_2d(mu, w):
    """``(g(w), grad (K,))`` for two unit-variance objectives, batched-friendly (fixed shapes, no host loop).

    ``mu (K, 2)``, ``w (K,)`` positive. ``g`` is ``inf`` when no alternative exists (one arm)."""
    K = mu.shape[0]
    front = pareto_mask(mu)
    # remove: Pareto i under Pareto j
    gap = jnp.sum(jnp.maximum(mu[:, None, :] - mu[None, :, :], 0) ** 2, -1)  # [i, j]
    pair = front[:, None] & front[None, :] & ~jnp.eye(K, dtype=bool)
    rm = jnp.where(pair, w[:, None] * w[None, :] / (w[:, None] + w[None, :]) * gap / 2, jnp.inf)
    flat = jnp.argmin(rm)
    i, j = flat // K, flat % K
    g_rm = rm.reshape(-1)[flat]
    grad_rm = jnp.zeros(K, mu.dtype).at[i].add((w[j] / (w[i] + w[j])) ** 2 * gap[i, j] / 2) \
        .at[j].add((w[i] / (w[i] + w[j])) ** 2 * gap[i, j] / 2)
    # add: back arm b; Pareto arms of rank < m (by the first objective) lowered on it, the others on the second
    rank = jnp.sum(front[None, :] & ((mu[None, :, 0] < mu[:, None, 0])
                                     | ((mu[None, :, 0] == mu[:, None, 0]) & (jnp.arange(K)[None, :] < jnp.arange(K)[:, None]))),
                   axis=1)
    split = jnp.arange(K + 1)
    first = (rank[None, :] < split[:, None])  # (m, k): k lowered on objective 0
    on = jnp.stack([first, ~first], axis=1) & front[None, None, :]  # (m, n, k)
    ws = jnp.where(on, w[None, None, :], 0.0)
    vals = jnp.broadcast_to(mu.T[None], on.shape)
    costs, levels = jnp.vectorize(lambda m0, w0: _level(m0[None, :, None], w0, vals, ws),
                                  signature="(n),()->(m,n),(m,n)")(mu, w)  # (b, m, n)
    total = jnp.where(front[:, None], jnp.inf, jnp.sum(costs, -1))  # (b, m)
    flat = jnp.argmin(total)
    b, m = flat // (K + 1), flat % (K + 1)
    g_add = total.reshape(-1)[flat]
    x = levels[b, m]  # (2,)
    lowered = jnp.where(on[m], jnp.maximum(mu.T - x[:, None], 0) ** 2 / 2, 0.0).sum(0)  # (k,)
    grad_add = lowered.at[b].set(jnp.sum((x - mu[b]) ** 2) / 2)
    take_rm = g_rm <= g_add
    return jnp.where(take_rm, g_rm, g_add), jnp.where(take_rm, grad_rm, grad_add)
