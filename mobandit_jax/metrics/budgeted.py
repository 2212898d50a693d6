"""Budgeted online metrics of Xue et al. (Section 3.1; Appendix A "Supplementary evaluation metrics").

With the zero reference point, ``H_i = HV(mu_i) = prod_d mu_i^(d)``, ``nu_i = H_i / mu_i^c``,
``i* = argmax nu_i`` and ``Delta_i = nu_{i*} - nu_i``. Per pull ``i_t`` (summed by the engine):

- ``hv_efficiency_regret``: ``Delta_{i_t}``, so the sum is ``R_B^HV = sum_{t <= T(B)} Delta_{i_t}``;
- ``hv_regret``: ``mu^c_{i_t} Delta_{i_t} = nu* mu^c_{i_t} - H_{i_t}``. Its sum is the standard
  budgeted regret ``R_B^std = R*_B - sum_t H_{i_t}`` with the benchmark
  ``R*_B = nu* sum_t mu^c_{i_t}``: the largest expected hypervolume attainable with the (expected)
  budget the run actually consumed (Lemma 1 bounds ``R*_B <= nu* (B + 1)``; Corollary 1's proof
  reduces ``R_B^std`` to ``sum_i mu^c_i Delta_i E[n_i(B)]`` plus at most ``2 nu*``, and this metric is
  that sum, i.e. it leaves out the boundary term of at most ``2 nu*``);
- ``moving_avg_regret_w50``: ``Delta_{i_t}`` reduced by ``last50``, the moving-average per-pull
  regret ``bar Delta_t^(50)`` at the final pull.

``mu`` and ``mu^c`` are the environment's true means (the bootstrap population: evaluation-split
means of accuracy, efficiency and charged cost).

Xue, Hong, Li, Wan, Cheng & Qiu, "Cost-Aware Multi-Objective Bandits: Theory and Application to
Budgeted LLM Configuration Evaluation" (preprint).
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from ..engine import float_dtype
from ..kernels import box_volume
from ..problems.replay import constant_instance
from ..registry import ONLINE, register_family
from ..types import Context, Metric, MetricSet

METRICS = (
    Metric("hv_efficiency_regret", "sum", "efficiency gap nu* - nu of the pulled arm (summed: R_B^HV)",
           (0, None), "min"),
    Metric("hv_regret", "sum", "cost-weighted gap mu^c (nu* - nu) of the pulled arm (summed: R_B^std)",
           (0, None), "min"),
    Metric("moving_avg_regret_w50", "last50", "efficiency gap, averaged over the last 50 pulls",
           (0, None), "min"),
)


class BudgetMetricParams(NamedTuple):
    """Per-arm efficiency ``nu`` (K,), its max ``nu*`` and the mean costs ``mu^c`` (K,)."""

    nu: jnp.ndarray
    nu_star: jnp.ndarray
    mean_cost: jnp.ndarray


def efficiency(means, mean_costs):
    """``nu_i = HV(mu_i) / mu_i^c`` with the zero reference point.

    Args:
      means: ``(K, d)`` true means.
      mean_costs: ``(K,)`` positive mean costs ``mu^c``.

    Returns:
      ``(K,)`` float64 numpy efficiencies ``nu``.
    """
    means = jnp.asarray(means, float_dtype())
    H = np.asarray(box_volume(means, jnp.zeros(means.shape[-1], means.dtype)), np.float64)
    return H / np.asarray(mean_costs, np.float64)


def build(ctx):
    """Metric set of the budgeted family (needs true means and mean costs).

    Args:
      ctx: a :class:`~mobandit_jax.types.Context` whose instance has positive ``mean_costs``.

    Returns:
      ``(MetricSet, BudgetMetricParams)``.
    """
    if ctx.mean_costs is None:
        raise ValueError("budgeted metrics need per-arm mean costs (EnvInstance.mean_costs)")
    mc = np.asarray(ctx.mean_costs, np.float64)
    if np.any(mc <= 0):
        raise ValueError(f"budgeted metrics: mean cost {mc[mc <= 0][0]} must be > 0")
    nu = efficiency(ctx.means, mc)
    dtype = float_dtype()
    mp = BudgetMetricParams(jnp.asarray(nu, dtype), jnp.asarray(nu.max(), dtype), jnp.asarray(mc, dtype))

    def step(mp, action, obs):
        gap = mp.nu_star - mp.nu[action]
        return {"hv_efficiency_regret": gap, "hv_regret": mp.mean_cost[action] * gap, "moving_avg_regret_w50": gap}

    return MetricSet(METRICS, step), mp


def truth(mp: BudgetMetricParams, slate_size: int) -> dict:
    """What the metrics score against (``truth.json``): the efficiencies ``nu``, ``nu*`` and the arms at ``nu*``.

    Args:
      mp: the :class:`BudgetMetricParams` of :func:`build`.
      slate_size: unused (the family interface).

    Returns:
      A dict with ``efficiency`` ``(K,)``, ``nu_star`` ``()`` and ``optimal`` ``(K,)`` bool.
    """
    return {"efficiency": mp.nu, "nu_star": mp.nu_star, "optimal": mp.nu == mp.nu_star}


def example(seed: int) -> Context:
    """A small context of the family (the conformance test): 6 arms, 2 objectives, costs and a budget of 6 + seed.

    Args:
      seed: draws the means.

    Returns:
      A :class:`~mobandit_jax.types.Context` with horizon ``20 + 10 seed``.
    """
    means = np.random.default_rng(seed).uniform(0.1, 0.9, (6, 2))
    costs = np.random.default_rng(7).uniform(0.3, 1.0, 6)
    budget = 6.0 + seed
    return Context.of(constant_instance(means, costs, budget=budget, budget_ratio=budget / (6 * costs.mean())),
                      20 + 10 * seed)


register_family("budgeted", kind=ONLINE, metrics=build, truth=truth, example=example,
                doc="budgeted hypervolume-efficiency regret (Xue et al., Section 3.1)")
