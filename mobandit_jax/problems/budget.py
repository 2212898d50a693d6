"""The ``[budget]`` table: the total cost budget ``B`` of a run on an environment whose pulls cost.

Xue et al., Section 2 and Appendix A: a run stops once the next pull's cost would exceed
``B``; ``B = rho * K * c_bar`` with ``c_bar`` the mean of the per-arm costs ``c_i`` (in units of the
largest cost), so ``rho`` is the budget in "rounds of uniform exploration". Section 4.1: a run of
cost floor lambda lasts at most ``T_B = ceil(B / lambda) + 1`` rounds::

    [budget]
    rho = 16        # or B = 500 (in normalized cost units); sweepable: "budget.rho" = [2, 4, 8]

Xue, Hong, Li, Wan, Cheng & Qiu, "Cost-Aware Multi-Objective Bandits: Theory and Application to
Budgeted LLM Configuration Evaluation" (preprint).
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError
from ..types import EnvInstance
from .costs import validate_budget

KEYS = ("rho", "B")
MAX_ROUNDS = 2 ** 31 - 1  # the engine counts rounds and pulls in int32


def with_budget(inst: EnvInstance, table) -> EnvInstance:
    """``inst`` with the budget, budget ratio rho and horizon ``T_B`` of a ``[budget]`` table (None: unchanged).

    Args:
      inst: an instance whose pulls cost (``mean_costs`` and ``cost_floor`` set).
      table: the ``[budget]`` table, one of ``{"rho": ...}`` or ``{"B": ...}``, or ``None``.

    Returns:
      The instance with ``budget``, ``budget_ratio`` and ``horizon`` set (``info`` records ``budget`` and
      ``rho``); ``inst`` itself for ``table = None``.

    Raises:
      ConfigError: the environment has no costs, the table is malformed or the budget is out of range.
    """
    if table is None:
        return inst
    if inst.mean_costs is None or inst.cost_floor is None:
        raise ConfigError("[budget] needs an environment whose pulls cost; this env has no costs (for kind 'table' "
                          "or 'replay' name a cost column with env.cost)")
    given = [k for k in KEYS if k in table]
    if len(given) != 1:
        raise ConfigError(f"[budget] needs exactly one of 'rho' (B = rho * K * mean cost) or 'B'; got {sorted(table)}")
    key = given[0]
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise ConfigError(f"budget.{key} = {value!r} must be a positive number")
    costs = inst.alloc_costs if inst.alloc_costs is not None else inst.mean_costs
    scale = inst.env.num_arms * float(np.mean(costs))  # K * c_bar
    budget = float(value) * scale if key == "rho" else float(value)
    if not math.isfinite(budget) or budget / inst.cost_floor >= MAX_ROUNDS:
        rounds = budget / inst.cost_floor
        raise ConfigError(f"budget.{key} = {value!r}: a run would last up to B / lambda = {rounds:.3g} rounds, more "
                          f"than the {MAX_ROUNDS} rounds a run can count; give a smaller budget")
    try:
        validate_budget(budget, inst.cost_floor)
    except ValueError as err:
        raise ConfigError(f"budget.{key} = {value!r}: {err}") from None
    rho = budget / scale
    horizon = int(math.ceil(budget / inst.cost_floor)) + 1
    return inst._replace(budget=budget, budget_ratio=rho, horizon=horizon,
                         info={**inst.info, "budget": budget, "rho": rho})
