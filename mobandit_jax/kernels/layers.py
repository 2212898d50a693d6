"""Pareto layers by peeling (the non-dominated sorting of NSGA-II, Deb et al. 2002), truncated to the
first ``k`` layers: all a layer-by-layer choice of ``k`` arms can reach.

Deb, Pratap, Agarwal & Meyarivan, "A fast and elitist multiobjective genetic algorithm: NSGA-II",
IEEE Transactions on Evolutionary Computation 6(2), 2002, https://doi.org/10.1109/4235.996017.

Layer ``0`` is the set of undominated points, layer ``r`` the undominated points once layers
``0..r-1`` are removed; points beyond the first ``k`` layers get rank ``k``.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from .dominance import dominance_matrix


def top_layers(x, k: int, fill: int | None = None):
    """Non-dominated sorting rank of ``x (n, d)`` truncated to the first ``k`` layers (others get k).

    With ``fill = s``, peeling stops as soon as the ranked layers hold at least ``s`` arms and every
    arm not yet ranked gets ``k``: a layer-by-layer choice of ``s`` arms never reaches those arms, and
    the ranks (and any within-layer statistic) of the arms it can reach are unchanged.

    Args:
      x: ``(n, d)`` points (larger is better).
      k: number of layers ranked (static).
      fill: optional arm count ``s`` at which peeling stops.

    Returns:
      ``(n,)`` int32 layer ranks in ``[0, k]``.
    """
    return peel_layers(dominance_matrix(x), k, fill)


def peel_layers(dom, k: int, fill: int | None = None):
    """:func:`top_layers` from the dominance matrix ``dom[j, i]`` (j dominates i) of the points.

    Args:
      dom: ``(n, n)`` bool, ``dom[j, i]`` true iff point ``j`` dominates point ``i``.
      k: number of layers ranked (static).
      fill: optional arm count ``s`` at which peeling stops.

    Returns:
      ``(n,)`` int32 layer ranks in ``[0, k]``.
    """
    n = dom.shape[0]
    need = n if fill is None else fill

    def more(carry):
        r, rank = carry
        return (r < k) & (jnp.sum(rank < k) < need)

    def peel(carry):
        r, rank = carry
        left = rank == k
        layer = left & ~jnp.any(dom & left[:, None], axis=0)
        return r + 1, jnp.where(layer, r, rank)

    return jax.lax.while_loop(more, peel, (jnp.int32(0), jnp.full((n,), k, jnp.int32)))[1]


def current_layer(layer, taken):
    """Mask of the untaken arms in the best (lowest) layer that still has untaken arms.

    Args:
      layer: ``(n,)`` int layer ranks.
      taken: ``(n,)`` bool, the arms already chosen.

    Returns:
      ``(n,)`` bool mask of those arms (all ``False`` if every arm is taken).
    """
    current = jnp.min(jnp.where(taken, jnp.iinfo(jnp.int32).max, layer))
    return ~taken & (layer == current)
