"""Budgeted online multi-objective selection: CoHV-UCB and its baselines.

Xue et al. ("Cost-Aware Multi-Objective Bandits"), Section 4.1 and Algorithm 1
(CoHV-UCB): after the initial pulls, every round computes for each arm

    U_i   = min(1, rbar_i + beta^r_i)                         (line 5, clipped optimistic vector)
    c_i   = max(lambda / 2, cbar_i - beta^c_i)                 (line 6, truncated cost LCB)
    I_i   = HV(U_i) / c_i                                      (line 7, HV w.r.t. the zero reference)

and pulls ``argmax_i I_i`` (line 9). ``T_B = ceil(B / lambda) + 1``. The radii are those of
Appendix A, ``beta^r = s_r sqrt(alpha log T_B / n_i)``, ``beta^c = s_c sqrt(alpha log T_B / n_i)``
(Algorithm 1 is ``s_r = s_c = 1``), with ``n_init = max(1, floor(eta rho))`` initial pulls of every
arm (round robin; Algorithm 1 line 1 is ``n_init = 1``). Defaults are the values Appendix A selects
on both datasets, ``(s_r, s_c, eta) = (0.01, 0.01, 0.05)``, and ``alpha = 2`` (Theorem 1 needs
``alpha >= 2``; Appendix A does not state the value used).

"Feasible selection" (Appendix A): the argmax is taken over the arms whose profiling mean cost
(``EnvInstance.alloc_costs``, else the true mean costs) fits in the remaining budget ``B - spent``;
if none fits, over all arms (the engine then stops the run when the realized cost does not fit).
Ties go to the lowest arm index.

Baselines (Section 5.1): ``hv_ucb`` drops the cost denominator (index ``HV(U_i)``);
``acc_cost_ucb`` uses optimistic accuracy per cost (``U_i^{(1)} / c_i``, objective 0 = accuracy);
``uniform`` is round robin ``t mod K``. All UCB methods share the radii, initial pulls and
feasibility rule.

References:
- B. Xue, Z. Hong, J. Li, Y. Wan, J. Cheng and S. Qiu, Cost-Aware Multi-Objective Bandits: Theory and Application
  to Budgeted LLM Configuration Evaluation (preprint)
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from ..kernels import box_volume
from ..problems.costs import validate_budget, validate_costs
from ..registry import register_policy
from ..types import Policy


class BudgetState(NamedTuple):
    """Round counter, pulls, reward and cost sums per arm, budget spent, and every arm's index.

    An arm's index depends only on its own counts and sums, so ``update`` refreshes the pulled
    arm's entry and ``select`` reads the cached (K,) vector. ``spent`` is the policy's own running
    cost total for the feasibility rule (the engine's counter is not visible to a policy; summing
    ``sum_c`` instead would round differently).
    """

    t: jnp.ndarray
    n: jnp.ndarray
    sum_r: jnp.ndarray
    sum_c: jnp.ndarray
    spent: jnp.ndarray
    index: jnp.ndarray


class BudgetParams(NamedTuple):
    """Sweepable params: ``alpha, s_r, s_c``, ``log T_B``, ``lambda``, ``B``, feasibility costs, ``n_init``."""

    alpha: jnp.ndarray
    s_r: jnp.ndarray
    s_c: jnp.ndarray
    log_TB: jnp.ndarray
    cost_floor: jnp.ndarray
    budget: jnp.ndarray
    feas_cost: jnp.ndarray
    n_init: jnp.ndarray


def confidence_bounds(n, sum_r, sum_c, params: BudgetParams):
    """Lines 5-6 of Algorithm 1: clipped optimistic vectors ``U`` (..., d) and cost LCBs (...).

    Args:
      n: pull counts (...) of one arm or of all arms.
      sum_r: reward sums (..., d).
      sum_c: cost sums (...).
      params: the policy's :class:`BudgetParams`.

    Returns:
      ``(U, c_low)``: ``min(1, r_hat + s_r rad)`` (..., d) and ``max(lambda / 2, c_hat - s_c rad)`` (...),
      with ``rad = sqrt(alpha log T_B / n)``.
    """
    n = jnp.maximum(n, 1).astype(sum_r.dtype)
    rad = jnp.sqrt(params.alpha * params.log_TB / n)
    U = jnp.minimum(1.0, sum_r / n[..., None] + (params.s_r * rad)[..., None])
    c_low = jnp.maximum(params.cost_floor / 2.0, sum_c / n - params.s_c * rad)
    return U, c_low


def cohv_index(U, c_low):
    """CoHV-UCB index ``HV(U_i) / c_i`` (line 7).

    Args:
      U: optimistic reward vectors (..., d) from :func:`confidence_bounds`.
      c_low: lower confidence bounds of the costs (...).

    Returns:
      the index (...), larger is better.
    """
    return box_volume(U, jnp.zeros(U.shape[-1], U.dtype)) / c_low


def hv_index(U, c_low):
    """HV-UCB index ``HV(U_i)`` (no cost denominator).

    Args:
      U: optimistic reward vectors (..., d) from :func:`confidence_bounds`.
      c_low: lower confidence bounds of the costs (...).

    Returns:
      the index (...), larger is better.
    """
    return box_volume(U, jnp.zeros(U.shape[-1], U.dtype))


def acc_cost_index(U, c_low):
    """Accuracy-Cost-UCB index ``U_i^(accuracy) / c_i``.

    Args:
      U: optimistic reward vectors (..., d) from :func:`confidence_bounds`.
      c_low: lower confidence bounds of the costs (...).

    Returns:
      the index (...), larger is better.
    """
    return U[..., 0] / c_low


def _ucb_policy(num_arms: int, dim: int, index_fn) -> Policy:
    """The shared round of the UCB methods: initial round robin, then a feasible argmax of the index."""
    K = num_arms

    def arm_index(n, sum_r, sum_c, params):
        return index_fn(*confidence_bounds(n, sum_r, sum_c, params))

    def init(params):
        dtype = params.alpha.dtype
        n, sum_r, sum_c = jnp.zeros(K, jnp.int32), jnp.zeros((K, dim), dtype), jnp.zeros(K, dtype)
        return BudgetState(jnp.zeros((), jnp.int32), n, sum_r, sum_c, jnp.zeros((), dtype),
                           arm_index(n, sum_r, sum_c, params))

    def select(key, state, params):
        feasible = params.feas_cost <= params.budget - state.spent
        masked = jnp.where(jnp.any(feasible), jnp.where(feasible, state.index, -jnp.inf), state.index)
        # argmax with ties to the lowest index, written as max then min (cheaper than argmax's paired reduce)
        greedy = jnp.min(jnp.where(masked == jnp.max(masked), jnp.arange(K, dtype=jnp.int32), K))
        initial = state.t < K * params.n_init
        return jnp.where(initial, (state.t % K).astype(jnp.int32), greedy)

    def update(state: BudgetState, action, obs, params):
        n = state.n.at[action].add(1)
        sum_r = state.sum_r.at[action].add(obs.reward.astype(state.sum_r.dtype))
        sum_c = state.sum_c.at[action].add(obs.cost.astype(state.sum_c.dtype))
        index = state.index.at[action].set(arm_index(n[action], sum_r[action], sum_c[action], params))
        return BudgetState(state.t + 1, n, sum_r, sum_c, state.spent + obs.cost.astype(state.spent.dtype), index)

    return Policy(init, select, update)


def cohv_ucb(num_arms: int, dim: int) -> Policy:
    """CoHV-UCB (Algorithm 1): argmax of ``HV(U_i) / c_i``.

    Args:
      num_arms: K, the number of arms.
      dim: d, the number of objectives.

    Returns:
      a :class:`~mobandit_jax.types.Policy` whose params are :class:`BudgetParams` (:func:`budget_params`).
    """
    return _ucb_policy(num_arms, dim, cohv_index)


def hv_ucb(num_arms: int, dim: int) -> Policy:
    """HV-UCB: argmax of ``HV(U_i)``.

    Args:
      num_arms: K, the number of arms.
      dim: d, the number of objectives.

    Returns:
      a :class:`~mobandit_jax.types.Policy` whose params are :class:`BudgetParams` (:func:`budget_params`).
    """
    return _ucb_policy(num_arms, dim, hv_index)


def acc_cost_ucb(num_arms: int, dim: int) -> Policy:
    """Accuracy-Cost-UCB: argmax of ``U_i^(accuracy) / c_i``.

    Args:
      num_arms: K, the number of arms.
      dim: d, the number of objectives.

    Returns:
      a :class:`~mobandit_jax.types.Policy` whose params are :class:`BudgetParams` (:func:`budget_params`).
    """
    return _ucb_policy(num_arms, dim, acc_cost_index)


ALPHA, S_R, S_C, ETA = 2.0, 0.01, 0.01, 0.05  # Appendix A's selected (s_r, s_c, eta); alpha of Theorem 1


def budget_params(budget, cost_floor, feas_cost, rho, alpha=ALPHA, s_r=S_R, s_c=S_C, eta=ETA) -> BudgetParams:
    """:class:`BudgetParams` for budget ``B``, floor ``lambda``, per-arm feasibility costs and ``rho``.

    ``n_init = max(1, floor(eta rho))``, ``T_B = ceil(B / lambda) + 1``; floats take the default
    float dtype (float32; float64 under ``jax_enable_x64``).

    Args:
      budget: B, in the problem's cost units.
      cost_floor: lambda, the smallest cost a pull can be charged (0 < lambda <= 1).
      feas_cost: (K,) the per-arm cost a pull is planned at; an arm is feasible while it fits the budget left.
      rho: the budget ratio ``B / (K c_bar)``, which sets the initial round robin.
      alpha: the exploration factor of the confidence radius (Theorem 1).
      s_r: the reward radius scale (Appendix A).
      s_c: the cost radius scale (Appendix A).
      eta: the initial round robin's share, ``n_init = max(1, floor(eta rho))`` pulls an arm.

    Returns:
      the :class:`BudgetParams` pytree.
    """
    n_init = max(1, int(math.floor(eta * float(rho))))
    T_B = math.ceil(budget / cost_floor) + 1
    f = lambda x: jnp.asarray(x, float)
    return BudgetParams(f(alpha), f(s_r), f(s_c), f(math.log(T_B)), f(cost_floor), f(budget), f(feas_cost),
                        jnp.int32(n_init))


def _configure(ctx, name, alpha, s_r, s_c, eta):
    ctx.require_bounded(name, "UCB indices and the hypervolume per cost against the reference 0 of [0, 1]^d")
    lam, B = ctx.cost_floor, ctx.budget
    if lam is None or B is None:
        raise ValueError(f"{name}: needs a budget and a cost floor lambda (EnvInstance.budget, .cost_floor)")
    lam, B = float(lam), float(B)
    if not 0.0 < lam <= 1.0:
        raise ValueError(f"{name}: cost floor lambda must satisfy 0 < lambda <= 1, got {lam}")
    feas = ctx.alloc_costs if ctx.alloc_costs is not None else ctx.mean_costs
    if feas is None:
        raise ValueError(f"{name}: needs per-arm costs (EnvInstance.alloc_costs or .mean_costs)")
    feas = np.asarray(feas, float)
    if ctx.mean_costs is not None:
        validate_costs(ctx.mean_costs, lam)
    validate_budget(B, lam)
    for nm, v, lo in (("alpha", alpha, 0.0), ("s_r", s_r, 0.0), ("s_c", s_c, 0.0), ("eta", eta, 0.0)):
        if not (np.isfinite(v) and v >= lo):
            raise ValueError(f"{name}: option {nm} must be a finite number >= {lo}, got {v}")
    rho = ctx.budget_ratio
    if rho is None:
        rho = B / (ctx.num_arms * float(np.mean(feas)))
    return dict(num_arms=ctx.num_arms, dim=ctx.dim), budget_params(B, lam, feas, rho, alpha, s_r, s_c, eta)


def _row(name, factory, doc):
    def configure(ctx, alpha, s_r, s_c, eta):
        """Check the options against the context and build the factory's sizes and :class:`BudgetParams`.

        Options:
          alpha: exploration constant of the confidence radius sqrt(alpha log T_B / n) (Theorem 1). Allowed: a
            finite number >= 0.
          s_r: scale of the radius added to the reward means (Appendix A). Allowed: a finite number >= 0.
          s_c: scale of the radius taken off the cost means (Appendix A). Allowed: a finite number >= 0.
          eta: initial pulls per arm, max(1, floor(eta rho)) (Appendix A). Allowed: a finite number >= 0.
        """
        return _configure(ctx, name, alpha, s_r, s_c, eta)

    register_policy(name, "budgeted", factory, configure, doc, alpha=ALPHA, s_r=S_R, s_c=S_C, eta=ETA)


_row("cohv_ucb", cohv_ucb, "CoHV-UCB, hypervolume-per-cost UCB (Xue et al., Algorithm 1)")
_row("hv_ucb", hv_ucb, "HV-UCB: CoHV-UCB without the cost denominator (Xue et al., Sec. 5.1)")
_row("acc_cost_ucb", acc_cost_ucb, "Accuracy-Cost-UCB: optimistic accuracy per cost (Xue et al., Sec. 5.1)")


class RoundRobinState(NamedTuple):
    """Round counter only."""

    t: jnp.ndarray


def uniform(num_arms: int) -> Policy:
    """Round robin ``t mod K`` until the budget stops the run.

    Args:
      num_arms: K, the number of arms.

    Returns:
      a :class:`~mobandit_jax.types.Policy` without params.
    """
    K = num_arms
    return Policy(lambda params: RoundRobinState(jnp.zeros((), jnp.int32)),
                  lambda key, state, params: (state.t % K).astype(jnp.int32),
                  lambda state, action, obs, params: RoundRobinState(state.t + 1))


def _configure_uniform(ctx):
    ctx.require_bounded("uniform", "the family's hypervolume-per-cost regret against the reference 0 of [0, 1]^d")
    return dict(num_arms=ctx.num_arms), {}


register_policy("budgeted/uniform", "budgeted", uniform, _configure_uniform,
         "Uniform round-robin allocation (Xue et al., Sec. 5.1)")
