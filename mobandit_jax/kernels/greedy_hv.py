"""Greedy top-k slate by marginal hypervolume, the inclusion-exclusion terms kept across steps.

THV-UCB (Gutowski et al., "Top-k Pareto Bandits", Algorithm 1, lines 17-21) fills its slate ``S`` in ``k``
steps, each adding the eligible arm of largest marginal gain of its box. With gaps ``g_i = (u_i - r)_+``
and the identity of :func:`~mobandit_jax.kernels.hypervolume.hv_contributions`::

    HV(S + i) - HV(S) = vol(g_i) - sum_{T subset S, T != {}} (-1)^{|T|+1} prod_j min(g_ij, min_{s in T} g_sj)

The subsets are ordered as in :func:`~mobandit_jax.kernels.hypervolume._subset_minima` (subset ``T`` is
row ``bits(T) - 1``): those of the first ``m - 1`` chosen points come first, and choosing the ``m``-th
point ``s`` appends ``2^(m-1)`` rows, ``g_s`` and then ``min(row, g_s)`` for each earlier row. Each row's
term is computed once per arm, in the step that appends the row, and kept: the whole selection costs
``2^(k-1) - 1`` terms per arm instead of ``sum_m (2^m - 1)``, and every step is elementwise over the arms.

The gains are the same floats as those of :func:`~mobandit_jax.kernels.hypervolume.greedy_hv_subset` as
XLA:CPU compiles it in THV-UCB's round (jaxlib 0.10), so the same arms are chosen, near-ties included:
the volumes and terms are the same products (multiplied left to right, each rounded), the terms are
added in the order in which XLA:CPU adds them there (:func:`subset_sum`), and at the second pick, where
that kernel subtracts its one product from the volume, the last multiply is fused into the subtraction
there and here. Slates of more than :data:`MAX_SLATE` arms, and ``d <= 2``, use ``greedy_hv_subset``.

Gutowski, Chhel, Letard & Lamprier, "Top-k Pareto Bandits: Hypervolume Regret for Multi-Objective
Slate Selection" (preprint).
"""
from __future__ import annotations

import jax.numpy as jnp

from .hypervolume import _subset_tables, box_volume, greedy_hv_subset

MAX_SLATE = 6  # up to 31 subsets, the sums whose order subset_sum follows
LANE_BLOCKS = (0, 2, 4, 3, 1, 5)  # the order in which a sum of 31 terms adds its first 6 blocks of 4


def lesser(a, b):
    """``min(a, b)`` of numbers that are never NaN (gaps and their minima), as one compare and select.

    ``jnp.minimum`` also orders NaN and signed zeros, which costs several instructions per element.

    Args:
      a: an array without NaN.
      b: an array without NaN (broadcast against ``a``).

    Returns:
      The elementwise minimum (``b`` where they are equal).
    """
    return jnp.where(a < b, a, b)


def first_argmax(x):
    """``jnp.argmax`` of a vector without NaN (the lowest index of the largest value): the largest value,
    then the lowest index holding it, each reduced over rows of 32 and then over the rows.

    ``jnp.argmax`` is one (value, index) reduction, into which XLA:CPU fuses the computation of ``x`` and
    which it runs one element at a time; a max and a min run vectorised, and reductions of at most 32
    elements are not split in two passes.

    Args:
      x: ``(n,)`` values without NaN.

    Returns:
      ``()`` int32: the lowest index of the largest value.
    """
    n = x.shape[0]
    rows = -(-n // 32)
    x = jnp.pad(x, (0, 32 * rows - n), constant_values=-jnp.inf).reshape(rows, 32)
    index = jnp.arange(32 * rows, dtype=jnp.int32).reshape(rows, 32)
    best = jnp.max(jnp.max(x, axis=1))
    return jnp.min(jnp.min(jnp.where(x == best, index, 32 * rows), axis=1))


def extend_subset_minima(rows, gap):
    """The subset minima that a new point adds, in ``_subset_minima``'s order: ``gap (d,)`` itself, then
    ``min(row, gap)`` for each row of the current table ``rows (2^m - 1, d)`` -> ``(2^m, d)``.

    Args:
      rows: ``(2^m - 1, d)`` subset minima of the first ``m`` points.
      gap: ``(d,)`` gap of the new point.

    Returns:
      ``(2^m, d)`` the rows that the new point appends.
    """
    return jnp.minimum(jnp.concatenate([jnp.full((1, gap.shape[0]), jnp.inf, gap.dtype), rows]), gap)


def clipped_terms(rows, gaps):
    """``prod_j min(row_j, g_ij)`` for each row and arm, multiplied left to right: ``(R, n)`` from the
    rows ``(R, d)`` and the arms' gaps ``(n, d)``.

    Args:
      rows: ``(R, d)`` subset minima.
      gaps: ``(n, d)`` the arms' gaps ``(u_i - r)_+``.

    Returns:
      ``(R, n)`` products.
    """
    terms = lesser(rows[:, :1], gaps[:, 0])
    for j in range(1, rows.shape[1]):
        terms = terms * lesser(rows[:, j:j + 1], gaps[:, j])
    return terms


def subset_sum(terms, head=None):
    """The sum of the ``2^m - 1`` signed terms ``terms`` (arrays, in row order), in XLA:CPU's order.

    Up to 15 terms: in sequence, continuing ``head``, the sum of the first ``2^(m-1) - 1`` terms (the
    previous step's). 31 terms: the first 24 in 4 lanes (term ``r`` in lane ``r % 4``), their blocks
    ``terms[4b:4b + 4]`` added lane by lane in the order :data:`LANE_BLOCKS`, the lanes folded as
    ``(l0 + l2) + (l1 + l3)``, then the last 7 terms in sequence.

    Args:
      terms: a list of ``2^m - 1`` arrays (each ``(n,)``), the signed terms in row order; ``m <= 5``.
      head: optional sum of the first ``2^(m-1) - 1`` terms (the previous step's result); ignored for 31
        terms.

    Returns:
      The sum, shaped like one term.
    """
    if len(terms) == 31:
        lanes = terms[4 * LANE_BLOCKS[0]:4 * LANE_BLOCKS[0] + 4]
        for b in LANE_BLOCKS[1:]:
            lanes = [lane + t for lane, t in zip(lanes, terms[4 * b:4 * b + 4], strict=False)]
        total, rest = (lanes[0] + lanes[2]) + (lanes[1] + lanes[3]), terms[24:]
    elif head is None:
        total, rest = terms[0], terms[1:]
    else:
        total, rest = head, terms[len(terms) // 2:]
    for t in rest:
        total = total + t
    return total


def greedy_hv_slate(points, ref, k: int, gain_tol=None, eligible=None):
    """:func:`greedy_hv_subset` (the same arms in the same order) with the subset terms kept across steps.

    ``points (n, d)``, ``ref (d,)``: step ``l`` adds the untaken ``eligible`` point of largest gain ``HV(S + i)
    - HV(S)``, ties to the lowest index; with ``gain_tol``, gains ``<= gain_tol`` count as zero. At
    ``d <= 2`` (the sweep) and for ``k >`` :data:`MAX_SLATE` it is :func:`greedy_hv_subset`.

    Args:
      points: ``(n, d)`` points.
      ref: ``(d,)`` reference point.
      k: slate size (static), at most ``n``.
      gain_tol: optional threshold at or below which a gain counts as zero.
      eligible: optional ``(n,)`` bool, the points that may be chosen (all if ``None``).

    Returns:
      ``(k,)`` int32 indices in the order chosen.
    """
    points = jnp.asarray(points)
    ref = jnp.asarray(ref, points.dtype)
    n, d = points.shape
    if d <= 2 or k > MAX_SLATE:
        return greedy_hv_subset(points, ref, k, gain_tol, eligible)
    allowed = jnp.ones((n,), bool) if eligible is None else eligible
    gaps = jnp.where(points > ref, points - ref, 0.0)
    volume = jnp.maximum(box_volume(points, ref), 0.0)  # the clamp: see the rounding note below
    rows = jnp.zeros((0, d), points.dtype)  # the subset minima of the slate so far
    terms = []  # the signed term of each row, (n,) each
    clipped = None  # their sum: HV of the slate's boxes clipped by each arm's box
    taken = jnp.zeros((n,), bool)
    chosen = []
    for m in range(k):
        if m == 0:
            gains = volume
        else:
            new_rows = extend_subset_minima(rows, gaps[chosen[-1]])
            signs = _subset_tables(m)[len(rows):]
            products = clipped_terms(new_rows, gaps)
            # Rounding as in greedy_hv_subset: each product (and the volume) is rounded before it is added;
            # the clamps, no-ops on these non-negative numbers, keep the compiler from fusing their last
            # multiply into the sum (a fused multiply-add rounds once). At m = 1 (the second pick) the reference
            # subtracts its one product from the volume directly, that multiply fused: so here too.
            terms += [t if s > 0 else -t for s, t in zip(signs, jnp.maximum(products, 0.0), strict=False)]
            clipped = subset_sum(terms, clipped)
            rows = jnp.concatenate([rows, new_rows])
            gains = volume - (products[0] if m == 1 else clipped)
            if gain_tol is not None:
                gains = jnp.where(gains > gain_tol, gains, 0.0)
        i = first_argmax(jnp.where(allowed & ~taken, gains, -jnp.inf))
        chosen.append(i)
        taken = taken | (jnp.arange(n) == i)
    return jnp.stack(chosen)
