"""Fixed-budget cost-aware Pareto set identification: CoPSI, PSI-SR and uniform allocation.

Seed 002 (Xue et al., "Cost-Aware Multi-Objective Bandits"), Section 3.2 (Pareto set, pairwise
margins ``m(i, j)``, ``M(i, j)``, classification gaps), Section 4.2 and Algorithm 2 (CoPSI:
cost-aware targets ``n_r = floor(B / (L_{K,lambda} C_r))`` with
``L_{K,lambda} = 1 + sum_{l=2}^K 1 / (1 + (l-1) lambda)``, empirical Pareto set, empirical gaps of
Eq. (1), accept/reject with the tie rule of line 15) and Appendix A (tie tolerances
``rtol = 1e-10``, ``atol = 1e-12``; the stochastic-cost robustness protocol).

Every method is an :class:`Identifier`: ``identify(key_env, key_pol, env_params, params)`` returns
the (K,) bool recommended set. Pulls come from the environment's common bootstrap stream: a
per-arm prefix table of the first ``jmax`` pulls is built once (``prefix_table`` of
:mod:`mobandit_jax.problems.llm_configs`, passed in through ``ctx.info``), so a phase's pulls of an
arm are a slice ``P[i, n_r] - P[i, N_i]`` and a whole run is ``K - 1`` vectorized phases.

``lambda`` in ``L_{K,lambda}`` is ``min_i c_i`` (the floor of the allocation costs): with
deterministic costs it is the environment's cost floor; under realized token charges CoPSI keeps
allocating with the profiling ``c_i`` (Appendix A), so its schedule is unchanged.

Charging and the budget guard (shared by the three methods). A phase brings every active arm
from its count ``N`` (equal for all active arms) to the target; its pulls are charged the cost
column of the stream (the fixed ``c_i`` when ``costs = "deterministic"``, the realized token cost
in the robustness setting). If the phase would overrun ``B``, it is cut to the largest number of
complete sweeps over the active arms that fits (found by bisection on the monotone cumulative
cost); later phases then add no pulls and elimination continues on the current means. With
deterministic costs CoPSI never triggers the guard (Theorem 2, Step 2).

Baselines (Section 5.1; choices documented because the paper gives no pseudocode):

* ``psi_sr``: Empirical Gap Elimination with successive-rejects phases (Kone et al., 2024), cost
  insensitive: it treats every pull as costing the mean cost ``c_bar``, i.e. it has
  ``T = floor(B / c_bar)`` pulls and the successive-rejects targets
  ``n_r = ceil((T - K) / (logbar(K) (K + 1 - r)))``, ``logbar(K) = 1/2 + sum_{i=2}^K 1/i``
  (Audibert & Bubeck, 2010), with the same gaps and accept/reject rule as CoPSI. Its pulls are
  charged the actual costs (budget guard above). Option ``schedule = "equal_costs"`` is the other
  reading of "ignores heterogeneous evaluation costs": CoPSI's Algorithm 2 with every ``c_i``
  replaced by ``c_bar`` (``n_r = floor(B / (L_{K,lambda} k_r c_bar))``, same ``L_{K,lambda}``), so it
  differs from CoPSI only in cost awareness. The paper does not say which it ran.
* ``uniform_alloc``: the largest number of complete rounds over all arms that the budget affords
  (charged as above), then the empirical Pareto set.

Pareto order. Section 3.2 writes ``u < v`` for a strict inequality in *every* coordinate, so
``i`` is (empirically) dominated iff some ``j`` has ``m(i, j) > 0``. This is the order used here for
both the true and the empirical Pareto sets (not the weak-dominance ``pareto_front_mask`` kernel).

Tie rule (line 15): the maximizers are the active arms with
``gamma_i >= gamma_max - max(atol, rtol |gamma_max|)``; an empirically dominated maximizer is
preferred, and among equals the lowest arm index is taken. Appendix A's tolerances
(``rtol = 1e-10``, ``atol = 1e-12``) are used in float64 (``--x64``); in float32 they are below the
rounding error of a mean, so they are widened to ``rtol = 8 eps``, ``atol = 0.08 eps``
(``eps = 2^-23``), which keeps exact ties (equal counts of correct answers) tied.
"""
from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
import jax
import jax.numpy as jnp

from .base import Identifier, register

RTOL, ATOL = 1e-10, 1e-12


# --------------------------------------------------------------------------------------------
# Gaps (Section 3.2 / Eq. (1)), shared by the three methods and the stand-in generator
# --------------------------------------------------------------------------------------------

def pairwise_margins(mu):
    """``(m, M)`` of shape (K, K): ``m[i,j] = min_d (mu_j - mu_i)``, ``M[i,j] = max_d (mu_i - mu_j)``.

    The minimum runs over the (few) objectives one (K, K) plane at a time, and ``M = -m`` exactly
    (``mu_i - mu_j`` is the exact negation of ``mu_j - mu_i`` in floating point).
    """
    m = functools.reduce(jnp.minimum, [mu[None, :, k] - mu[:, None, k] for k in range(mu.shape[-1])])
    return m, -m


def empirical_gaps(mu, active):
    """Eq. (1) over the active set: ``(gamma, dominated)``, each (K,); inactive entries are -inf / False."""
    mu = jnp.asarray(mu)
    K = mu.shape[0]
    m, M = pairwise_margins(mu)
    other = active[None, :] & active[:, None] & ~jnp.eye(K, dtype=bool)  # [i, j]: j in A \ {i}
    d_minus = jnp.max(jnp.where(other, m, -jnp.inf), axis=1)
    dominated = active & (d_minus > 0)
    pos = lambda x: jnp.maximum(x, 0.0)
    # term[i, j] = M(i,j) ^ (M(j,i)^+ + (Delta_j^-)^+)
    term = jnp.minimum(M, pos(M.T) + pos(d_minus)[None, :])
    d_plus = jnp.min(jnp.where(other, term, jnp.inf), axis=1)
    gamma = jnp.where(dominated, d_minus, d_plus)
    return jnp.where(active, gamma, -jnp.inf), dominated


def classification_gaps_np(mu) -> np.ndarray:
    """Population classification gaps ``gamma_i`` of Section 3.2 for all K arms (numpy in and out)."""
    mu = np.asarray(mu, np.float32)
    g, _ = empirical_gaps(jnp.asarray(mu), jnp.ones(mu.shape[0], bool))
    return np.asarray(g, np.float64)


def tie_tolerances(dtype):
    """``(rtol, atol)``: Appendix A's 1e-10 / 1e-12, widened to 8 machine epsilons below float64."""
    eps = float(jnp.finfo(dtype).eps)
    return max(RTOL, 8 * eps), max(ATOL, 8 * eps * 1e-2)


def choose_arm(gamma, dominated, active):
    """Line 15 of Algorithm 2: a maximizer of ``gamma`` over ``A``, preferring dominated arms."""
    gmax = jnp.max(jnp.where(active, gamma, -jnp.inf))
    rtol, atol = tie_tolerances(gamma.dtype)
    tol = jnp.maximum(atol, rtol * jnp.abs(gmax))
    tied = active & (gamma >= gmax - tol)
    prefer = tied & dominated
    cand = jnp.where(jnp.any(prefer), prefer, tied)
    return jnp.argmax(cand)  # lowest index among the candidates


def empirical_pareto(mu, active):
    """Active arms not strictly dominated (every coordinate) by another active arm."""
    _, dominated = empirical_gaps(mu, active)
    return active & ~dominated


# --------------------------------------------------------------------------------------------
# Bulk phases
# --------------------------------------------------------------------------------------------

def _n_bisect(jmax: int) -> int:
    return max(1, int(math.ceil(math.log2(jmax + 2))) + 1)


def top_up(P, N, active, target, spent, budget, jmax: int):
    """Bring active arms from the common count ``N`` to ``target`` in complete sweeps within budget.

    ``P`` is the (K, jmax+1, 3) prefix table; returns the new counts and spent budget.
    """
    K = P.shape[0]
    n0 = jnp.max(jnp.where(active, N, 0))
    need = jnp.clip(target - n0, 0, jmax - n0)
    arms = jnp.arange(K)
    base_cost = P[arms, jnp.minimum(N, jmax), 2]

    def cost_of(s):
        idx = jnp.minimum(N + s, jmax)
        return jnp.sum(jnp.where(active, P[arms, idx, 2] - base_cost, 0.0))

    def body(_, lohi):
        lo, hi = lohi  # invariant: s = lo fits, s = hi + 1 does not (or hi = need)
        mid = (lo + hi + 1) // 2
        ok = spent + cost_of(mid) <= budget
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid - 1)

    lo, _ = jax.lax.fori_loop(0, _n_bisect(jmax), body, (jnp.zeros((), need.dtype), need))
    s = lo
    return jnp.where(active, N + s, N), spent + cost_of(s)


def _means(P, N):
    K = P.shape[0]
    sums = P[jnp.arange(K), N, :2]
    return jnp.where(N[:, None] > 0, sums / jnp.maximum(N, 1)[:, None], 0.0)


def elimination(P, costs_alloc, budget, target_fn, jmax: int):
    """Successive elimination of Algorithm 2 with phase targets ``target_fn(r, k_r, C_r)``.

    Returns the recommended set ``P_hat U A_K`` (K,) bool, the budget spent and the pull counts.
    """
    K = P.shape[0]

    def phase(r, carry):
        active, accepted, N, spent = carry
        k_r = jnp.sum(active)
        C_r = jnp.sum(jnp.where(active, costs_alloc, 0.0))
        n_r = target_fn(r, k_r, C_r)
        N, spent = top_up(P, N, active, n_r, spent, budget, jmax)
        mu = _means(P, N)
        gamma, dominated = empirical_gaps(mu, active)
        e = choose_arm(gamma, dominated, active)
        accept = ~dominated[e]
        accepted = accepted.at[e].set(accepted[e] | accept)
        active = active.at[e].set(False)
        return active, accepted, N, spent

    init = (jnp.ones(K, bool), jnp.zeros(K, bool), jnp.zeros(K, jnp.int32), jnp.zeros((), P.dtype))
    active, accepted, N, spent = jax.lax.fori_loop(1, K, phase, init)
    return accepted | active, spent, N


def l_k_lambda(K: int, lam):
    """``L_{K,lambda} = 1 + sum_{l=2}^K 1 / (1 + (l-1) lambda)``."""
    ell = jnp.arange(2, K + 1, dtype=jnp.float32)
    return 1.0 + jnp.sum(1.0 / (1.0 + (ell - 1.0) * lam))


def logbar(K: int) -> float:
    """Successive-rejects constant ``1/2 + sum_{i=2}^K 1/i``."""
    return 0.5 + sum(1.0 / i for i in range(2, K + 1))


# --------------------------------------------------------------------------------------------
# Builders
# --------------------------------------------------------------------------------------------

class IdentParams(NamedTuple):
    """Sweepable params: budget ``B``, allocation costs ``c_i`` (K,), cost floor ``lambda``."""

    budget: jnp.ndarray
    costs: jnp.ndarray
    cost_floor: jnp.ndarray


def _context(ctx, method):
    from mobandit_jax.problems.llm_configs import validate_budget, validate_costs

    info = ctx.info or {}
    for k in ("env", "prefix_table", "det_cost", "cost_min"):
        if k not in info:
            raise ValueError(f"{method}: the environment must provide info[{k!r}] (use env kind 'llm_configs')")
    lam = float(ctx.cost_floor if ctx.cost_floor is not None else info["cost_floor"])
    det = np.asarray(info["det_cost"], float)
    if not 0 < lam <= 1:
        raise ValueError(f"{method}: cost floor lambda must satisfy 0 < lambda <= 1, got {lam}")
    validate_costs(det, lam)
    budget = float(ctx.budget if ctx.budget is not None else info["budget"])
    validate_budget(budget, float(np.min(info["cost_min"])))
    # The allocation uses the profiling costs c_i only (Appendix A, robustness protocol), so
    # L_{K,lambda} takes lambda = min_i c_i, the floor of the allocation costs, whatever is charged.
    return info, float(det.min()), det, budget


def _finish(info, ctx, budget, det, lam, jmax, targets, name):
    env_prefix = info["prefix_table"]
    jmax = int(max(1, jmax))
    params = IdentParams(jnp.asarray(budget, jnp.float32), jnp.asarray(det, jnp.float32),
                         jnp.asarray(lam, jnp.float32))

    def identify_detailed(key_env, key_pol, env_params, p: IdentParams):
        """``(recommended (K,) bool, budget spent, pulls per arm (K,))`` on the stream ``key_env``."""
        return targets(env_prefix(key_env, env_params, jmax), p)

    def identify(key_env, key_pol, env_params, p: IdentParams):
        """Run the method once on the common stream ``key_env``; returns the (K,) bool set."""
        return identify_detailed(key_env, key_pol, env_params, p)[0]

    identify.detailed = identify_detailed
    return Identifier(identify), params, (name, ctx.num_arms, jmax)


@register("copsi", "identification", "CoPSI, cost-aware Pareto set identification (seed 002, Algorithm 2)")
def build_copsi(ctx):
    """CoPSI: targets ``n_r = floor(B / (L_{K,lambda} C_r))`` from the profiling costs ``c_i``."""
    info, lam, det, budget = _context(ctx, "copsi")
    K = ctx.num_arms
    L = float(1.0 + sum(1.0 / (1.0 + (l - 1) * lam) for l in range(2, K + 1)))
    two = np.sort(det)[:2].sum() if K >= 2 else det.sum()
    jmax = int(math.floor(budget / (L * two)))

    def targets(P, p):
        Lp = l_k_lambda(K, p.cost_floor)
        fn = lambda r, k_r, C_r: jnp.floor(p.budget / (Lp * C_r)).astype(jnp.int32)
        return elimination(P, p.costs, p.budget, fn, jmax)

    return _finish(info, ctx, budget, det, lam, jmax, targets, "copsi")


@register("psi_sr", "identification", "PSI-SR: cost-insensitive EGE successive rejects (Kone et al., 2024)",
          schedule="sr")
def build_psi_sr(ctx, schedule="sr"):
    """PSI-SR; ``schedule="sr"``: successive-rejects targets for ``T = floor(B / c_bar)`` unit pulls;
    ``schedule="equal_costs"``: CoPSI's targets with every ``c_i`` replaced by ``c_bar``."""
    if schedule not in ("sr", "equal_costs"):
        raise ValueError(f"psi_sr: option schedule must be 'sr' or 'equal_costs', got {schedule!r}")
    info, lam, det, budget = _context(ctx, "psi_sr")
    K = ctx.num_arms
    c_bar = float(det.mean())
    if schedule == "sr":
        lb = logbar(K)
        T_max = math.floor(budget / c_bar)
        jmax = int(math.ceil(max(T_max - K, 0) / (lb * 2)))

        def targets(P, p):
            T = jnp.floor(p.budget / jnp.mean(p.costs))
            fn = lambda r, k_r, C_r: jnp.ceil(jnp.maximum(T - K, 0.0) / (lb * (K + 1 - r))).astype(jnp.int32)
            return elimination(P, p.costs, p.budget, fn, jmax)
    else:
        L = float(1.0 + sum(1.0 / (1.0 + (l - 1) * lam) for l in range(2, K + 1)))
        jmax = int(math.floor(budget / (L * 2 * c_bar)))

        def targets(P, p):
            Lp = l_k_lambda(K, p.cost_floor)
            fn = lambda r, k_r, C_r: jnp.floor(p.budget / (Lp * k_r * jnp.mean(p.costs))).astype(jnp.int32)
            return elimination(P, p.costs, p.budget, fn, jmax)

    return _finish(info, ctx, budget, det, lam, jmax, targets, f"psi_sr/{schedule}")


@register("uniform_alloc", "identification", "Uniform allocation, then the empirical Pareto set (seed 002, Section 5.1)")
def build_uniform_alloc(ctx):
    """Uniform allocation: as many complete rounds as the budget affords, then the empirical Pareto set."""
    info, lam, det, budget = _context(ctx, "uniform_alloc")
    K = ctx.num_arms
    jmax = int(math.floor(budget / float(np.sum(info["cost_min"]))))

    def targets(P, p):
        active = jnp.ones(K, bool)
        N, spent = top_up(P, jnp.zeros(K, jnp.int32), active, jnp.int32(jmax), jnp.zeros((), P.dtype), p.budget, jmax)
        return empirical_pareto(_means(P, N), active), spent, N

    return _finish(info, ctx, budget, det, lam, jmax, targets, "uniform_alloc")
