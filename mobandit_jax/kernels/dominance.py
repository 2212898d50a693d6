"""Pareto and cone dominance: masks, layers, normalised projections and preference gaps.

PDMOB (preference-directed MO bandits), Section 2.1:
- Def. 1: the preference cone ``C = {x : W x >= 0}``, ``W`` of shape ``(M, d)``;
- Def. 2: ``x`` C-dominates ``y`` iff ``W (x - y) >= 0``; arm ``i`` is Pareto C-optimal iff no
  other arm C-dominates it (read literally: two arms whose difference lies in the lineality space
  of ``C``, e.g. exact duplicates, C-dominate each other and neither is C-optimal);
- Def. 3: normalised projections ``S_k(r) = (w_k . r - L_k) / (U_k - L_k)`` with
  ``L_k = sum_i min(0, w_ki)``, ``U_k = sum_i max(0, w_ki)``;
- Def. 4: preference gaps ``Delta_a = max_{a* in D(a)} min_k w_k . (r(a*) - r(a)) / (U_k - L_k)``
  over the C-optimal dominators ``D(a)``; 0 on C-optimal arms. If a non-optimal arm has no
  C-optimal dominator (possible only for a non-pointed cone with mutual dominance), the maximum
  runs over all its C-dominators instead, so that playing it still costs a positive gap.

All functions are pure and jittable; ``validate_cone`` checks concrete ``W`` before tracing.

PDMOB: Ma, Zhang, Sugiyama & Zhou, "Selective Ensemble Based on Preference-Directed Multi-Objective
Bandits", arXiv 2026, https://arxiv.org/abs/2606.21929.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def validate_cone(W) -> np.ndarray:
    """Return ``W`` as a float array of shape (M, d), rejecting NaN and all-zero rows by index.

    Args:
      W: ``(M, d)`` preference matrix, or one row ``(d,)`` (array-like).

    Returns:
      ``(M, d)`` float64 numpy array.

    Raises:
      ValueError: ``W`` has a wrong shape, a non-finite entry or an all-zero row.
    """
    W = np.asarray(W, dtype=np.float64)
    if W.ndim == 1:
        W = W[None, :]
    if W.ndim != 2 or W.shape[0] < 1 or W.shape[1] < 1:
        raise ValueError(f"preference matrix W must have shape (M, d) with M, d >= 1; got {W.shape}")
    if not np.all(np.isfinite(W)):
        bad = np.argwhere(~np.isfinite(W))[0]
        raise ValueError(f"preference matrix W has a non-finite entry at row {bad[0]}, column {bad[1]}")
    zero = np.flatnonzero(np.abs(W).sum(axis=1) == 0)
    if zero.size:
        raise ValueError(
            f"preference matrix W row {int(zero[0])} is all zeros (U_k = L_k): every row needs a nonzero weight"
        )
    return W


def _concrete(x) -> bool:
    return not isinstance(x, jax.core.Tracer)


def _check(W):
    if _concrete(W):
        validate_cone(W)
    W = jnp.asarray(W)
    return W if W.ndim == 2 else W[None, :]


def dominates(x, y):
    """Strict Pareto dominance ``x > y``: ``x >= y`` everywhere and ``x > y`` somewhere (last axis).

    Args:
      x: ``(..., d)`` vectors.
      y: ``(..., d)`` vectors (broadcast against ``x``).

    Returns:
      ``(...)`` bool: ``x`` strictly Pareto-dominates ``y``.
    """
    return jnp.all(x >= y, axis=-1) & jnp.any(x > y, axis=-1)


def weakly_dominates(a, b):
    """``(n, d), (m, d) -> (n, m)`` bool: ``[i, j]`` true iff ``a_i >= b_j`` in every coordinate.

    Built one coordinate at a time, so no ``(n, m, d)`` intermediate is formed.

    Args:
      a: ``(n, d)`` points.
      b: ``(m, d)`` points.

    Returns:
      ``(n, m)`` bool.
    """
    a, b = jnp.asarray(a), jnp.asarray(b)
    ge = a[:, None, 0] >= b[None, :, 0]
    for j in range(1, a.shape[1]):
        ge = ge & (a[:, None, j] >= b[None, :, j])
    return ge


def dominance_matrix(x):
    """``(K, d) -> (K, K)`` bool: ``[j, i]`` true iff arm j strictly Pareto-dominates arm i.

    ``x_j >= x_i`` everywhere and not ``x_i >= x_j`` everywhere, i.e. ``dominates(x_j, x_i)``.

    Args:
      x: ``(K, d)`` points.

    Returns:
      ``(K, K)`` bool, ``[j, i]`` true iff ``x_j`` strictly dominates ``x_i``.
    """
    weak = weakly_dominates(x, x)
    return weak & ~weak.T


def _strict_block(a, b):
    """``(n, d), (m, d) -> (n, m)`` bool: ``[i, j]`` true iff ``a_i`` strictly dominates ``b_j``."""
    return weakly_dominates(a, b) & ~weakly_dominates(b, a).T


def refresh_dominance(dom, x, arms):
    """``dominance_matrix(x)`` from ``dom``, that of an ``x`` that differed only in the rows ``arms (k,)``.

    Only the rows and columns of ``arms`` are recomputed (``O(k K d)`` comparisons instead of
    ``O(K^2 d)``); the other entries compare unchanged rows, so the result is the full matrix exactly.

    Args:
      dom: ``(K, K)`` bool, the :func:`dominance_matrix` of the previous ``x``.
      x: ``(K, d)`` points now.
      arms: ``(k,)`` int, the rows of ``x`` that changed.

    Returns:
      ``(K, K)`` bool, equal to ``dominance_matrix(x)``.
    """
    xa = x[arms]
    return dom.at[arms, :].set(_strict_block(xa, x)).at[:, arms].set(_strict_block(x, xa))


def undominated(dom):
    """``(K, K) -> (K,)`` bool: the arms no other arm dominates, from a dominance matrix ``dom[j, i]``.

    Args:
      dom: ``(K, K)`` bool, ``dom[j, i]`` true iff arm ``j`` dominates arm ``i``.

    Returns:
      ``(K,)`` bool.
    """
    return ~jnp.any(dom, axis=0)


def pareto_front_mask(mu):
    """``(K, d) -> (K,)`` bool: arms not strictly Pareto-dominated by any other arm.

    Args:
      mu: ``(K, d)`` means (larger is better).

    Returns:
      ``(K,)`` bool, the Pareto front (duplicates are all kept).
    """
    return undominated(dominance_matrix(mu))


def pareto_layers(mu):
    """``(K, d) -> (K,)`` int32 non-dominated sorting rank (0 = Pareto front).

    Args:
      mu: ``(K, d)`` means (larger is better).

    Returns:
      ``(K,)`` int32: 0 on the front, ``r`` on the front once layers ``0..r-1`` are removed.
    """
    mu = jnp.asarray(mu)
    K = mu.shape[0]
    dom = dominance_matrix(mu)

    def body(r, carry):
        rank, left = carry
        dominated = jnp.any(dom & left[:, None], axis=0)
        layer = left & ~dominated
        return jnp.where(layer, r, rank), left & ~layer

    rank, _ = jax.lax.fori_loop(0, K, body, (jnp.full((K,), K, jnp.int32), jnp.ones((K,), bool)))
    return rank


def cone_bounds(W):
    """``(L, U)``: the per-row bounds of ``w_k . r`` over ``r`` in ``[0, 1]^d`` (Def. 3).

    Args:
      W: ``(M, d)`` preference matrix.

    Returns:
      ``(L, U)``, each ``(M,)``: ``L_k = sum_i min(0, w_ki)``, ``U_k = sum_i max(0, w_ki)``.
    """
    W = jnp.asarray(W)
    return jnp.sum(jnp.minimum(W, 0.0), axis=-1), jnp.sum(jnp.maximum(W, 0.0), axis=-1)


def normalized_projections(r, W):
    """``S_k(r)`` of Def. 3: ``(..., d), (M, d) -> (..., M)``, in [0, 1] for ``r`` in [0, 1]^d.

    Args:
      r: ``(..., d)`` reward vectors.
      W: ``(M, d)`` preference matrix (or one row ``(d,)``); concrete ``W`` is checked by
        :func:`validate_cone`.

    Returns:
      ``(..., M)`` projections in ``W``'s float dtype (float32 for an integer ``W``).
    """
    W = _check(W)
    L, U = cone_bounds(W)
    r = jnp.asarray(r, W.dtype if jnp.issubdtype(W.dtype, jnp.floating) else jnp.float32)
    return (jnp.matmul(r, W.T, precision="highest") - L) / (U - L)  # float32 on a GPU too (not TF32)


def _pairwise_margins(mu, W):
    # m[j, i] = min_k S_k(mu_j) - S_k(mu_i): j C-dominates i iff m[j, i] >= 0.
    S = normalized_projections(mu, W)
    return jnp.min(S[:, None, :] - S[None, :, :], axis=-1)


def cone_dominance(mu, W):
    """``(K, d), (M, d) -> (K, K)`` bool: ``[j, i]`` true iff arm j C-dominates arm i, ``j != i``.

    Args:
      mu: ``(K, d)`` means.
      W: ``(M, d)`` preference matrix (or one row ``(d,)``).

    Returns:
      ``(K, K)`` bool, ``[j, i]`` true iff ``S(mu_j) >= S(mu_i)`` on every row and ``j != i``.
    """
    mu = jnp.asarray(mu)
    K = mu.shape[0]
    return (_pairwise_margins(mu, W) >= 0) & ~jnp.eye(K, dtype=bool)


def cone_optimal_mask(mu, W):
    """``(K, d), (M, d) -> (K,)`` bool: the Pareto C-optimal arms ``P*_C`` of Def. 2.

    Args:
      mu: ``(K, d)`` means.
      W: ``(M, d)`` preference matrix (or one row ``(d,)``).

    Returns:
      ``(K,)`` bool, the arms no other arm C-dominates.
    """
    return ~jnp.any(cone_dominance(mu, W), axis=0)


def preference_gaps(mu, W):
    """``(K, d), (M, d) -> (K,)``: the preference gaps ``Delta_a`` of Def. 4 (0 on ``P*_C``).

    Args:
      mu: ``(K, d)`` means.
      W: ``(M, d)`` preference matrix (or one row ``(d,)``).

    Returns:
      ``(K,)`` non-negative gaps in normalised-projection units; 0 on the C-optimal arms.
    """
    margins = _pairwise_margins(mu, W)
    K = margins.shape[0]
    dom = (margins >= 0) & ~jnp.eye(K, dtype=bool)
    optimal = ~jnp.any(dom, axis=0)
    via_opt = dom & optimal[:, None]
    has_opt = jnp.any(via_opt, axis=0)
    use = jnp.where(has_opt[None, :], via_opt, dom)
    gap = jnp.max(jnp.where(use, margins, -jnp.inf), axis=0)
    return jnp.where(optimal, 0.0, jnp.maximum(gap, 0.0))
