"""Costs of Xue et al. (Xue et al., "Cost-Aware Multi-Objective Bandits"): validation and ``L_{K,lambda}``.

Section 3.1: every pull costs ``c in [lambda, 1]`` with a known floor ``0 < lambda <= 1``; Algorithm 2
allocates with ``L_{K,lambda} = 1 + sum_{l=2}^K 1 / (1 + (l-1) lambda)``.
"""
from __future__ import annotations

import numpy as np
import jax.numpy as jnp


def validate_costs(costs, cost_floor) -> None:
    """Raise unless ``0 < lambda <= 1`` and every cost lies in ``[lambda, 1]``."""
    lam = float(cost_floor)
    if not (0.0 < lam <= 1.0):
        raise ValueError(f"cost floor lambda must satisfy 0 < lambda <= 1, got {lam}")
    c = np.asarray(costs, float).ravel()
    bad = np.flatnonzero(~((c >= lam - 1e-12) & (c <= 1.0 + 1e-12)))
    if bad.size:
        raise ValueError(f"cost {c[bad[0]]} (entry {bad[0]}) is outside [lambda, 1] = [{lam}, 1]")


def validate_budget(budget, min_cost) -> None:
    """Raise unless the budget affords at least one pull of the cheapest arm."""
    if not (np.isfinite(budget) and budget >= min_cost):
        raise ValueError(f"budget B={budget} is below one pull (the cheapest pull costs {min_cost})")


def l_k_lambda(K: int, lam, xp=jnp):
    """``L_{K,lambda} = 1 + sum_{l=2}^K 1 / (1 + (l-1) lambda)``, in ``xp`` (numpy or jax.numpy).

    With ``xp = jax.numpy`` the terms take the default float dtype (float32, float64 under x64).
    """
    if xp is np:
        return 1.0 + sum(1.0 / (1.0 + (ell - 1) * lam) for ell in range(2, K + 1))
    ell = jnp.arange(2, K + 1, dtype=float)
    return 1.0 + jnp.sum(1.0 / (1.0 + (ell - 1.0) * lam))
