"""Pareto set identification gaps (Auer et al. 2016, "Pareto front identification from stochastic bandit
feedback"), in the form of Xue et al. ("Cost-Aware Multi-Objective Bandits"), Section 3.2 and Eq. (1).

References:
  - Auer, Chiang, Ortner & Drugan, "Pareto front identification from stochastic bandit feedback",
    AISTATS 2016, https://proceedings.mlr.press/v51/auer16.html.
  - Xue, Hong, Li, Wan, Cheng & Qiu, "Cost-Aware Multi-Objective Bandits: Theory and Application to
    Budgeted LLM Configuration Evaluation" (preprint).

``u < v`` is a strict inequality in *every* coordinate: arm ``i`` is dominated iff some ``j`` has
``m(i, j) = min_d (mu_j - mu_i) > 0`` (weak Pareto order, not the weak-dominance ``pareto_front_mask``);
``M(i, j) = max_d (mu_i - mu_j)``. Every fixed-budget identifier reads these gaps.
"""
from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np


def strict_pareto_mask_np(mu) -> np.ndarray:
    """``(K, d) -> (K,)`` bool: arms no other arm beats in *every* coordinate (the P* of Section 3.2).

    Args:
      mu: ``(K, d)`` means (array-like).

    Returns:
      ``(K,)`` numpy bool: ``True`` where no other arm is strictly larger in every coordinate.
    """
    mu = np.asarray(mu, float)
    strict = np.all(mu[None, :, :] > mu[:, None, :], axis=-1)  # [i, j]: j strictly dominates i
    return ~strict.any(axis=1)


def pairwise_margins(mu):
    """``(m, M)`` of shape (K, K): ``m[i,j] = min_d (mu_j - mu_i)``, ``M[i,j] = max_d (mu_i - mu_j)``.

    The minimum runs over the (few) objectives one (K, K) plane at a time, and ``M = -m`` exactly
    (``mu_i - mu_j`` is the exact negation of ``mu_j - mu_i`` in floating point).

    Args:
      mu: ``(K, d)`` means.

    Returns:
      ``(m, M)``, each ``(K, K)``.
    """
    m = functools.reduce(jnp.minimum, [mu[None, :, k] - mu[:, None, k] for k in range(mu.shape[-1])])
    return m, -m


def empirical_gaps(mu, active):
    """Eq. (1) over the active set: ``(gamma, dominated)``, each (K,); inactive entries are -inf / False.

    Args:
      mu: ``(K, d)`` (empirical) means.
      active: ``(K,)`` bool, the active set ``A``.

    Returns:
      ``(gamma, dominated)``: ``(K,)`` gaps (``Delta_i^-`` for a dominated arm, ``Delta_i^+`` otherwise;
      -inf off ``A``) and ``(K,)`` bool, the active arms some other active arm strictly beats.
    """
    mu = jnp.asarray(mu)
    K = mu.shape[0]
    m, M = pairwise_margins(mu)
    other = active[None, :] & active[:, None] & ~jnp.eye(K, dtype=bool)  # [i, j]: j in A \ {i}
    d_minus = jnp.max(jnp.where(other, m, -jnp.inf), axis=1)
    # j beats i in every objective: compared, not read off d_minus > 0 (the same in exact arithmetic, but a build
    # that contracts the means' products into the differences (FMA) makes equal means differ there)
    beats = functools.reduce(jnp.logical_and, [mu[None, :, k] > mu[:, None, k] for k in range(mu.shape[-1])])
    dominated = active & jnp.any(other & beats, axis=1)
    pos = lambda x: jnp.maximum(x, 0.0)
    # term[i, j] = M(i,j) ^ (M(j,i)^+ + (Delta_j^-)^+)
    term = jnp.minimum(M, pos(M.T) + pos(d_minus)[None, :])
    d_plus = jnp.min(jnp.where(other, term, jnp.inf), axis=1)
    gamma = jnp.where(dominated, d_minus, d_plus)
    return jnp.where(active, gamma, -jnp.inf), dominated


def classification_gaps_np(mu) -> np.ndarray:
    """Population classification gaps ``gamma_i`` of Section 3.2 for all K arms (numpy in and out).

    Args:
      mu: ``(K, d)`` true means (array-like; computed in float32).

    Returns:
      ``(K,)`` float64 numpy gaps ``gamma_i`` (:func:`empirical_gaps` with every arm active).
    """
    mu = np.asarray(mu, np.float32)
    g, _ = empirical_gaps(jnp.asarray(mu), jnp.ones(mu.shape[0], bool))
    return np.asarray(g, np.float64)
