"""Safe pruning of a confidence-box candidate set (Gutowski et al., "Top-k Pareto Bandits", Algorithm 1,
lines 15-16).

An arm is dropped when some other arm's lower confidence bound weakly dominates its upper bound
(``u_i <= L_j`` in every objective): with both boxes valid, arm ``i`` is then dominated or equal in
mean. If fewer than ``k`` arms would survive, none is dropped.
"""
from __future__ import annotations

import jax.numpy as jnp

from .dominance import weakly_dominates


def safe_prune(upper, lower, k: int):
    """``A_t`` of Algorithm 1, lines 15-16: arms whose UCB is not <= some other arm's LCB (all if < k)."""
    n = upper.shape[0]
    covered = weakly_dominates(lower, upper) & ~jnp.eye(n, dtype=bool)  # [j, i]: lower_j >= upper_i
    keep = ~jnp.any(covered, axis=0)
    return jnp.where(jnp.sum(keep) < k, jnp.ones_like(keep), keep)
