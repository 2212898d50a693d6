"""NSGA-II crowding distance (Deb et al. 2002, Section III-B) computed within each Pareto layer.

Deb, Pratap, Agarwal & Meyarivan, "A fast and elitist multiobjective genetic algorithm: NSGA-II",
IEEE Transactions on Evolutionary Computation 6(2), 2002, https://doi.org/10.1109/4235.996017.

Per objective ``l``, the arms of a layer sorted by value give each interior arm the term
``(x_above - x_below) / (x_last - x_first)``; the terms are summed over objectives. How a layer's
boundary arms rank is a choice (:data:`CROWD_BOUNDARY`).
"""
from __future__ import annotations

import jax.numpy as jnp

from .order import layer_counts, sort_by_layer_value

CROWD_BOUNDARY = ("inf", "neighbour", "zero")


def crowding_distance(x, layer, boundary: str = "inf", ranks=None, num_layers: int | None = None):
    """NSGA-II crowding distance of ``x (n, d)`` computed within each layer (``ranks``: optional
    :func:`key_ranks` of ``x.T``, which saves ranking the values; ``num_layers``: optional static bound,
    every layer in ``[0, num_layers)``, which saves ranking the layers: :func:`layer_counts`).

    Per objective, arms are sorted by (layer, value, index): an arm's neighbours below and above are
    the adjacent arms of its layer in that order (equal values: the later index counts as above), and
    the layer's first and last arms give the span. An arm without a neighbour on either side is a
    boundary arm; its term is +inf (``boundary = "inf"``, NSGA-II), the normalised gap to its one
    neighbour (``"neighbour"``; 0 for an arm alone in its layer) or 0 (``"zero"``). The per-objective
    terms are summed in objective order. ``x`` must be finite.

    Args:
      x: ``(n, d)`` finite points (arms' values).
      layer: ``(n,)`` int, each point's layer (e.g. :func:`~mobandit_jax.kernels.layers.top_layers`).
      boundary: the term of a boundary arm, one of :data:`CROWD_BOUNDARY`.
      ranks: optional :func:`~mobandit_jax.kernels.order.key_ranks` of ``x.T``, ``(d, n)``.
      num_layers: optional static bound on the layers (every layer in ``[0, num_layers)``).

    Returns:
      ``(n,)`` crowding distances, in ``x``'s dtype.

    Raises:
      ValueError: ``boundary`` is not one of :data:`CROWD_BOUNDARY`.
    """
    if boundary not in CROWD_BOUNDARY:
        raise ValueError(f"boundary must be one of {CROWD_BOUNDARY}, got {boundary!r}")
    n, d = x.shape
    below, size = layer_counts(layer, num_layers)
    layers, values, arm = sort_by_layer_value(layer, x.T, ranks, below)
    same_next = jnp.concatenate([layers[:, 1:] == layers[:, :-1], jnp.zeros((d, 1), bool)], axis=1)
    same_prev = jnp.concatenate([jnp.zeros((d, 1), bool), same_next[:, :-1]], axis=1)
    up = jnp.where(same_next, jnp.roll(values, -1, axis=1), jnp.inf)
    down = jnp.where(same_prev, jnp.roll(values, 1, axis=1), -jnp.inf)
    first = below[arm]  # a layer's sorted positions run from #{lower layers} on, one per arm of the layer
    last = first + size[arm] - 1
    span = jnp.take_along_axis(values, last, axis=1) - jnp.take_along_axis(values, first, axis=1)
    if boundary == "inf":
        edge = jnp.inf
    elif boundary == "zero":
        edge = 0.0
    else:
        gap = jnp.where(same_next, up - values, 0.0) + jnp.where(same_prev, values - down, 0.0)
        edge = gap / jnp.maximum(span, 1e-12)
    part = jnp.where(same_next & same_prev, (up - down) / jnp.maximum(span, 1e-12), edge)  # sorted order
    part = jnp.zeros((d, n), x.dtype).at[jnp.arange(d)[:, None], arm].set(part)
    total = part[0]
    for j in range(1, d):
        total = total + part[j]
    return total
