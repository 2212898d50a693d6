"""Pull costs of an environment: validation (Xue et al., "Cost-Aware Multi-Objective Bandits", Section 3.1).

Every pull costs ``c in [lambda, 1]`` with a known floor ``0 < lambda <= 1``; a budget must afford one pull.

Xue, Hong, Li, Wan, Cheng & Qiu, "Cost-Aware Multi-Objective Bandits: Theory and Application to
Budgeted LLM Configuration Evaluation" (preprint).
"""
from __future__ import annotations

import numpy as np


def validate_costs(costs, cost_floor) -> None:
    """Raise unless ``0 < lambda <= 1`` and every cost lies in ``[lambda, 1]``.

    Args:
      costs: the costs (any shape).
      cost_floor: the floor ``lambda``.

    Returns:
      None.

    Raises:
      ValueError: ``lambda`` is outside ``(0, 1]`` or a cost is outside ``[lambda, 1]``.
    """
    lam = float(cost_floor)
    if not (0.0 < lam <= 1.0):
        raise ValueError(f"cost floor lambda must satisfy 0 < lambda <= 1, got {lam}")
    c = np.asarray(costs, float).ravel()
    bad = np.flatnonzero(~((c >= lam - 1e-12) & (c <= 1.0 + 1e-12)))
    if bad.size:
        raise ValueError(f"cost {c[bad[0]]} (entry {bad[0]}) is outside [lambda, 1] = [{lam}, 1]")


def validate_budget(budget, min_cost) -> None:
    """Raise unless the budget affords at least one pull of the cheapest arm.

    Args:
      budget: the budget ``B``.
      min_cost: the cheapest pull's cost.

    Returns:
      None.

    Raises:
      ValueError: ``B`` is not finite or is below ``min_cost``.
    """
    if not (np.isfinite(budget) and budget >= min_cost):
        raise ValueError(f"budget B={budget} is below one pull (the cheapest pull costs {min_cost})")
