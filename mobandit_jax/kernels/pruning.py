"""Safe pruning of a confidence-box candidate set (Gutowski et al., "Top-k Pareto Bandits", Algorithm 1,
lines 15-16).

Gutowski, Chhel, Letard & Lamprier, "Top-k Pareto Bandits: Hypervolume Regret for Multi-Objective
Slate Selection" (preprint).

An arm is dropped when some other arm's lower confidence bound weakly dominates its upper bound
(``u_i <= L_j`` in every objective): with both boxes valid, arm ``i`` is then dominated or equal in
mean. If fewer than ``k`` arms would survive, none is dropped.
"""
from __future__ import annotations

import jax.numpy as jnp

from .dominance import weakly_dominates
from .lanes import where_needed


def safe_prune(upper, lower, k: int):
    """``A_t`` of Algorithm 1, lines 15-16: arms whose UCB is not <= some other arm's LCB (all if < k).

    Args:
      upper: ``(n, d)`` upper confidence bounds.
      lower: ``(n, d)`` lower confidence bounds.
      k: slate size.

    Returns:
      ``(n,)`` bool, the arms of ``A_t`` (every arm if fewer than ``k`` survive).
    """
    n = upper.shape[0]
    covered = weakly_dominates(lower, upper) & ~jnp.eye(n, dtype=bool)  # [j, i]: lower_j >= upper_i
    keep = ~jnp.any(covered, axis=0)
    return jnp.where(jnp.sum(keep) < k, jnp.ones_like(keep), keep)


def pruned(upper, lower, arms):
    """Whether each of ``arms (m,)`` fails the test of ``A_t``: some other arm's LCB is ``>=`` its UCB in every
    objective (the fallback to all arms aside).

    Args:
      upper: ``(n, d)`` upper confidence bounds.
      lower: ``(n, d)`` lower confidence bounds.
      arms: ``(m,)`` int arm indices.

    Returns:
      ``(m,)`` bool.
    """
    n = upper.shape[0]
    covered = weakly_dominates(lower, upper[arms]) & (jnp.arange(n)[:, None] != arms[None, :])  # [j, a]
    return jnp.any(covered, axis=0)


def fill_over_safe_arms(fill, upper, lower, k: int, *operands):
    """``fill(safe_prune(upper, lower, k), upper, *operands)`` for a greedy fill ``fill(eligible, upper,
    *operands) -> (k,)`` (``eligible=None``: all arms).

    A greedy fill (each slot the argmax of a score over the eligible untaken arms, ties to the lowest
    index) over all arms that picks only arms of ``A_t`` is also the fill over ``A_t``: each pick is the
    argmax over a superset and lies in ``A_t``; and ``k`` picks in ``A_t`` mean ``|A_t| >= k``, so the
    fallback to all arms does not apply. Only otherwise is ``A_t`` formed (``n^2 d`` comparisons instead
    of ``k n d``) and the fill redone, for the whole batch if some lane needs it (:func:`where_needed`).

    Args:
      fill: the greedy fill, ``fill(eligible, upper, *operands) -> (k,)`` arm indices.
      upper: ``(n, d)`` upper confidence bounds.
      lower: ``(n, d)`` lower confidence bounds.
      k: slate size.
      *operands: further arrays ``fill`` reads.

    Returns:
      ``(k,)`` the slate chosen over ``A_t``.
    """
    slate = fill(None, upper, *operands)

    def refill(upper, lower, *operands):
        return fill(safe_prune(upper, lower, k), upper, *operands)

    return where_needed(jnp.any(pruned(upper, lower, slate)), refill, slate, upper, lower, *operands)
