"""Exact dominated hypervolume (maximisation), batched over leading axes.

``HV(P; r) = vol( union_{p in P} [r, p] )``. Points that do not strictly dominate ``r`` in every
coordinate add nothing. Two exact, branch-free algorithms, chosen by the static shape:

- d <= 2: a sweep (sort by the first objective, running maximum of the second), any m;
- d >= 3 and m <= 16: inclusion-exclusion over the 2^m subsets,
  ``HV = sum_{S != {}} (-1)^{|S|+1} prod_j (min_{i in S} p_ij - r_j)_+``, with subset minima built
  by doubling (m steps, 2^m x d work and memory per set).

The marginal contribution of a candidate ``c`` to a set ``B`` (the greedy step of a top-k slate,
Gutowski et al. Algorithm 1) uses ``HV(B + c) - HV(B) = vol([r, c]) - HV({min(c, b) : b in B})``; at
d >= 3 the subset minima of ``B`` are built once and clipped by each candidate. :func:`greedy_hv_subset`
recomputes every step's sums; :mod:`.greedy_hv` keeps them across steps (the same gains, for THV-UCB).
Padding rows equal to ``r`` (or anything not dominating ``r``) are inert, so variable-size sets
fit in fixed shapes.

References:
  - Zitzler & Thiele, "Multiobjective evolutionary algorithms: a comparative case study and the
    strength Pareto approach", IEEE Transactions on Evolutionary Computation 3(4), 1999 (the hypervolume
    indicator).
  - Gutowski, Chhel, Letard & Lamprier, "Top-k Pareto Bandits: Hypervolume Regret for Multi-Objective
    Slate Selection" (preprint).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

MAX_POINTS_INCLUSION_EXCLUSION = 16


def box_volume(points, ref):
    """Volume of the box ``[ref, p]`` for each point ``(..., d) -> (...)``; zero unless p > ref.

    Args:
      points: ``(..., d)`` points.
      ref: ``(d,)`` reference point (broadcast against ``points``).

    Returns:
      ``(...)`` volumes ``prod_j (p_j - ref_j)_+``.
    """
    points = jnp.asarray(points)
    return jnp.prod(jnp.maximum(points - jnp.asarray(ref, points.dtype), 0.0), axis=-1)


def _hv2d(points, ref):
    # points (m, 2), ref (2,)
    x = jnp.maximum(points[:, 0] - ref[0], 0.0)
    y = jnp.maximum(points[:, 1] - ref[1], 0.0)
    # Sort by x descending; ties by y descending so the running max is exact.
    order = jnp.lexsort((-y, -x))
    x, y = x[order], y[order]
    prev = jnp.concatenate([jnp.zeros((1,), y.dtype), jax.lax.cummax(y)[:-1]])
    return jnp.sum(x * jnp.maximum(y - prev, 0.0))


def _subset_tables(m: int):
    signs = np.array([1.0])
    for _ in range(m):
        signs = np.concatenate([signs, -signs])
    return -signs[1:]  # drop the empty set; (-1)^{|S|+1}


def _subset_minima(g):
    """``(m, d) -> (2^m - 1, d)``: coordinate-wise minima of the non-empty subsets of the rows of ``g``.

    Row ``s - 1`` is the minimum over the rows whose bits are set in ``s``; built by doubling (m steps).
    """
    mins = jnp.full((1, g.shape[1]), jnp.inf, g.dtype)
    for i in range(g.shape[0]):
        mins = jnp.concatenate([mins, jnp.minimum(mins, g[i])], axis=0)
    return mins[1:]


def _hv_incl_excl(points, ref):
    # points (m, d); gaps g_ij = (p_ij - r_j)_+ ; HV = sum_S sign(S) prod_j min_{i in S} g_ij
    m = points.shape[0]
    mins = _subset_minima(jnp.maximum(points - ref, 0.0))
    signs = jnp.asarray(_subset_tables(m), mins.dtype)
    return jnp.sum(signs * jnp.prod(mins, axis=-1))


def _check_size(m: int, d: int):
    if d >= 3 and m > MAX_POINTS_INCLUSION_EXCLUSION:
        raise ValueError(
            f"hypervolume: {m} points in d={d} is outside the exact kernel's envelope "
            f"(any number of points at d <= 2, at most {MAX_POINTS_INCLUSION_EXCLUSION} points at d >= 3)"
        )


def _hv_single(points, ref):
    m, d = points.shape
    if m == 0:
        return jnp.zeros((), points.dtype)
    if d == 1:
        return jnp.max(jnp.maximum(points[:, 0] - ref[0], 0.0))
    if d == 2:
        return _hv2d(points, ref)
    return _hv_incl_excl(points, ref)


def _promote(points, ref):
    points = jnp.asarray(points)
    if not jnp.issubdtype(points.dtype, jnp.floating):
        points = points.astype(jnp.float32)
    ref = jnp.asarray(ref, points.dtype)
    return points, ref


def _batched(fn, points, ref, core_ndim_points: int):
    """Apply ``fn(points_core, ref_core)`` over broadcast leading axes."""
    lead = jnp.broadcast_shapes(points.shape[: points.ndim - core_ndim_points], ref.shape[:-1])
    points = jnp.broadcast_to(points, lead + points.shape[points.ndim - core_ndim_points:])
    ref = jnp.broadcast_to(ref, lead + ref.shape[-1:])
    f = fn
    for _ in lead:
        f = jax.vmap(f)
    return f(points, ref)


@jax.jit
def hypervolume(points, ref):
    """Exact dominated hypervolume of ``points (..., m, d)`` w.r.t. ``ref (..., d)`` -> ``(...)``.

    Args:
      points: ``(..., m, d)`` points (integer points are cast to float32); at ``d >= 3`` at most
        :data:`MAX_POINTS_INCLUSION_EXCLUSION` of them.
      ref: ``(..., d)`` reference point; leading axes broadcast against those of ``points``.

    Returns:
      ``(...)`` hypervolumes (0 for ``m = 0``).

    Raises:
      ValueError: more than :data:`MAX_POINTS_INCLUSION_EXCLUSION` points at ``d >= 3``.
    """
    points, ref = _promote(points, ref)
    _check_size(points.shape[-2], points.shape[-1])
    return _batched(_hv_single, points, ref, 2)


def _contributions(cands, base, ref):
    # cands (n, d), base (m, d): HV(base + c) - HV(base) = vol(c) - HV({min(c, b) : b in base}).
    m, d = base.shape
    if m == 0 or d <= 2:
        return box_volume(cands, ref) - jax.vmap(lambda c: _hv_single(jnp.minimum(base, c), ref))(cands)
    return box_volume(cands, ref) - _clipped_hv_incl_excl(cands, base, ref)


def _clipped_hv_incl_excl(cands, base, ref):
    """``HV({min(c, b) : b in base})`` for every candidate ``c``, by inclusion-exclusion (d >= 3).

    The minimum of the clipped points over a subset ``S`` is ``min(min_{b in S} b, c)``, so the subset
    minima of the base are built once and clipped per candidate; candidates sit on the minor axis.
    """
    table = _subset_minima(jnp.maximum(base - ref, 0.0))  # (2^m - 1, d)
    gaps = jnp.maximum(cands - ref, 0.0)  # (n, d)
    terms = jnp.minimum(table[:, :1], gaps[:, 0])  # (2^m - 1, n)
    for j in range(1, table.shape[1]):
        terms = terms * jnp.minimum(table[:, j:j + 1], gaps[:, j])
    signs = jnp.asarray(_subset_tables(base.shape[0]), terms.dtype)
    return jnp.sum(signs[:, None] * terms, axis=0)


@jax.jit
def hv_contributions(candidates, base, ref):
    """Marginal HV gain of each candidate: ``(..., n, d), (..., m, d), (..., d) -> (..., n)``.

    Args:
      candidates: ``(..., n, d)`` candidate points.
      base: ``(..., m, d)`` the set ``B`` (at ``d >= 3`` at most :data:`MAX_POINTS_INCLUSION_EXCLUSION`
        points).
      ref: ``(..., d)`` reference point; leading axes of the three broadcast.

    Returns:
      ``(..., n)`` gains ``HV(B + c) - HV(B)``.

    Raises:
      ValueError: more than :data:`MAX_POINTS_INCLUSION_EXCLUSION` base points at ``d >= 3``.
    """
    candidates, ref = _promote(candidates, ref)
    base = jnp.asarray(base, candidates.dtype)
    _check_size(base.shape[-2], base.shape[-1])
    lead = jnp.broadcast_shapes(candidates.shape[:-2], base.shape[:-2], ref.shape[:-1])
    candidates = jnp.broadcast_to(candidates, lead + candidates.shape[-2:])
    base = jnp.broadcast_to(base, lead + base.shape[-2:])
    ref = jnp.broadcast_to(ref, lead + ref.shape[-1:])
    f = _contributions
    for _ in lead:
        f = jax.vmap(f)
    return f(candidates, base, ref)


def greedy_hv_subset(points, ref, k: int, gain_tol=None, eligible=None):
    """Greedy ``k``-subset of ``points (n, d)`` maximising the marginal hypervolume: ``(k,)`` int32.

    Step ``l`` adds the untaken (and ``eligible``) point of largest gain ``HV(S + i) - HV(S)``, ties to
    the lowest index. With ``gain_tol``, gains ``<= gain_tol`` count as zero (so float round-off does not
    choose among points that add no volume); ``None`` compares the raw gains.

    Args:
      points: ``(n, d)`` points.
      ref: ``(d,)`` reference point.
      k: slate size (static), at most ``n``; at ``d >= 3`` at most
        ``MAX_POINTS_INCLUSION_EXCLUSION + 1``.
      gain_tol: optional threshold at or below which a gain counts as zero.
      eligible: optional ``(n,)`` bool, the points that may be chosen (all if ``None``).

    Returns:
      ``(k,)`` int32 indices in the order chosen.
    """
    points = jnp.asarray(points)
    ref = jnp.asarray(ref, points.dtype)
    n = points.shape[0]
    allowed = jnp.ones((n,), bool) if eligible is None else eligible
    taken = jnp.zeros((n,), bool)
    chosen = jnp.zeros((0,), jnp.int32)
    for l in range(k):
        if l == 0:
            gains = box_volume(points, ref)
        else:
            gains = hv_contributions(points, points[chosen], ref)
            if gain_tol is not None:
                gains = jnp.where(gains > gain_tol, gains, 0.0)
        i = jnp.argmax(jnp.where(allowed & ~taken, gains, -jnp.inf)).astype(jnp.int32)
        chosen = jnp.concatenate([chosen, i[None]])
        taken = taken.at[i].set(True)
    return chosen
