"""A plain numpy per-round loop of CoHV-UCB (Xue et al., Algorithm 1) and its baselines.

Independent of the JAX code: float64, one Python iteration per pull, the index computed with an
explicit product ``prod_d U_i^(d)`` (hypervolume of one point w.r.t. the zero reference). It
follows Algorithm 1 with the Appendix A radii ``beta^r = s_r sqrt(alpha log T_B / n)``,
``beta^c = s_c sqrt(alpha log T_B / n)``, ``n_init`` round-robin initial pulls, feasible selection
over arms whose profiling cost fits the remaining budget, and the budget rule of the engine (the
run stops for good at the first pull whose realized cost would exceed ``B``).

``stream(arm, j) -> (reward (d,), cost)`` supplies the ``j``-th pull of ``arm``; feeding it the
environment's common stream makes the actions comparable pull by pull with the JAX policy.
Used by the tests and importable by ``scripts/bench.py``.
"""
from __future__ import annotations

import math

import numpy as np

INDICES = ("cohv", "hv", "acc_cost", "uniform")


def run_cohv_ucb(stream, num_arms: int, dim: int, budget: float, cost_floor: float, feas_cost, horizon: int,
                 alpha: float = 2.0, s_r: float = 0.01, s_c: float = 0.01, n_init: int = 1, index: str = "cohv"):
    """Play until the budget stops the run or ``horizon`` rounds.

    Args:
      stream: ``stream(arm, j) -> (reward (dim,), cost)``, the ``j``-th pull of ``arm``.
      num_arms: arms ``K``.
      dim: objectives.
      budget: the budget ``B``.
      cost_floor: the smallest cost of a pull, ``lambda`` in (0, 1].
      feas_cost: ``(K,)`` the cost an arm must fit in the remaining budget to be chosen.
      horizon: the most rounds.
      alpha: the radius' exploration constant.
      s_r: the rewards' radius scale.
      s_c: the costs' radius scale.
      n_init: round-robin pulls of every arm first.
      index: one of :data:`INDICES`: ``"cohv"`` (Algorithm 1), ``"hv"`` (no cost), ``"acc_cost"`` (the first
        objective over the cost) or ``"uniform"`` (round robin).

    Returns:
      ``{"actions": (n,) int64, "costs": (n,), "spent": float, "pulls": (K,) int64}`` over the ``n`` pulls made.

    Raises:
      ValueError: an unknown ``index`` or a cost floor outside (0, 1].
    """
    if index not in INDICES:
        raise ValueError(f"index must be one of {INDICES}, got {index!r}")
    if not 0.0 < cost_floor <= 1.0:
        raise ValueError(f"cost floor lambda must satisfy 0 < lambda <= 1, got {cost_floor}")
    K = num_arms
    feas_cost = np.asarray(feas_cost, np.float64)
    log_TB = math.log(math.ceil(budget / cost_floor) + 1)
    n = np.zeros(K, np.int64)
    sum_r = np.zeros((K, dim))
    sum_c = np.zeros(K)
    spent = 0.0
    actions, costs = [], []
    for t in range(horizon):
        if index == "uniform" or t < K * n_init:
            arm = t % K
        else:
            rad = np.sqrt(alpha * log_TB / n)
            U = np.minimum(1.0, sum_r / n[:, None] + s_r * rad[:, None])
            c_low = np.maximum(cost_floor / 2.0, sum_c / n - s_c * rad)
            if index == "cohv":
                idx = np.prod(U, axis=1) / c_low
            elif index == "hv":
                idx = np.prod(U, axis=1)
            else:
                idx = U[:, 0] / c_low
            feasible = feas_cost <= budget - spent
            if feasible.any():
                idx = np.where(feasible, idx, -np.inf)
            arm = int(np.argmax(idx))
        reward, cost = stream(arm, int(n[arm]))
        if spent + cost > budget:
            break
        n[arm] += 1
        sum_r[arm] += reward
        sum_c[arm] += cost
        spent += cost
        actions.append(arm)
        costs.append(cost)
    return {"actions": np.array(actions, np.int64), "costs": np.array(costs), "spent": spent, "pulls": n}
