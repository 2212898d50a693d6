"""Sorting by ``(layer, value, index)`` on integer keys.

XLA's CPU sort runs a compiled comparator per comparison unless it sorts one integer operand: a
stable three-operand sort of ``(layer, value, index)`` costs about eight times a plain ``int32``
sort of the same length. :func:`sort_by_layer_value` gives the stable order with two integer sorts:
values become order-preserving integer keys, their rank among the row (ties share a rank) is found
by binary search in the sorted keys, and ``(layer rank, value rank, index)`` packs into one ``int32``
while ``n^3 < 2^31``; longer rows take the three-operand sort. The order, and so anything computed
from it, is exactly that of the stable sort.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

PACKED_MAX_N = 1290  # the largest n with n^3 < 2^31


def ordered_ints(x):
    """Integer keys of the same width with the order of floats ``x`` (``-0.0`` and ``0.0`` share a key;
    no NaN).

    Args:
      x: float array without NaN (float64 keys are int64, others are computed in float32 as int32).

    Returns:
      An integer array shaped like ``x``, ``a < b`` iff ``x_a < x_b``.
    """
    x = jnp.asarray(x)
    itype = jnp.int64 if x.dtype == jnp.float64 else jnp.int32
    bits = jax.lax.bitcast_convert_type(x.astype(jnp.float64 if itype == jnp.int64 else jnp.float32), itype)
    magnitude = bits & jnp.iinfo(itype).max
    return jnp.where(bits >= 0, bits, -magnitude)


def rank_below(keys):
    """``#{m : keys[..., m] < keys[..., i]}`` along the last axis of integer ``keys`` (ties share a rank).

    Args:
      keys: ``(..., n)`` integers.

    Returns:
      ``(..., n)`` int32 ranks.
    """
    search = lambda row, queries: jnp.searchsorted(row, queries, side="left", method="scan")
    for _ in range(keys.ndim - 1):
        search = jax.vmap(search)
    return search(jnp.sort(keys, axis=-1), keys).astype(jnp.int32)


def _before(a, i, b, j):
    """``(a, i) < (b, j)`` in (value, index) order, broadcast."""
    return (a < b) | ((a == b) & (i < j))


def key_ranks(x):
    """``(d, n) -> (d, n)`` int32: the position of each entry of a row of finite ``x`` in that row's
    ``(value, index)`` order (``-0.0`` and ``0.0`` tie), by comparing all pairs (for a first state).

    Args:
      x: ``(d, n)`` finite values.

    Returns:
      ``(d, n)`` int32 positions, a permutation of ``0..n-1`` in each row.
    """
    n = x.shape[1]
    index = jnp.arange(n)
    below = _before(x[:, None, :], index[None, :], x[:, :, None], index[:, None])  # [c, i, j]: j before i
    return jnp.sum(below, axis=2, dtype=jnp.int32)


def refresh_key_ranks(ranks, old, new, arms):
    """:func:`key_ranks` of ``new (d, n)`` from ``ranks``, those of ``old``, where only the columns
    ``arms (k,)`` (distinct) differ: an unchanged entry moves by the changed entries that left or
    joined the part of its row before it; a changed entry is ranked against the whole new row.

    Args:
      ranks: ``(d, n)`` int32, :func:`key_ranks` of ``old``.
      old: ``(d, n)`` the previous values.
      new: ``(d, n)`` the values now.
      arms: ``(k,)`` int, the distinct columns that changed.

    Returns:
      ``(d, n)`` int32, equal to ``key_ranks(new)``.
    """
    index = jnp.arange(new.shape[1])
    i, s = index[None, None, :], arms[None, :, None]
    row, was, now = new[:, None, :], old[:, arms][:, :, None], new[:, arms][:, :, None]  # [c, ., i], [c, s, .]
    left = jnp.sum(_before(was, s, row, i), axis=1, dtype=jnp.int32)
    joined = jnp.sum(_before(now, s, row, i), axis=1, dtype=jnp.int32)
    changed = jnp.sum(_before(row, i, now, s), axis=2, dtype=jnp.int32)
    return (ranks - left + joined).at[:, arms].set(changed)


def layer_counts(layer, num_layers: int | None = None):
    """``(below, size)``, each ``(n,)`` int32: ``#{j : layer[j] < layer[i]}`` and ``#{j : layer[j] == layer[i]}``
    for the integer ``layer (n,)``. With a static ``num_layers`` (every layer in ``[0, num_layers)``) they come
    from a histogram of the layers, else from ranking them.

    Args:
      layer: ``(n,)`` integer layers.
      num_layers: optional static bound (every layer in ``[0, num_layers)``).

    Returns:
      ``(below, size)``, each ``(n,)`` int32.
    """
    layer = jnp.asarray(layer).astype(jnp.int32)
    if num_layers is None:
        below = rank_below(layer)
        return below, layer.shape[0] - below - rank_below(-layer)
    hist = jnp.sum(layer[:, None] == jnp.arange(num_layers, dtype=jnp.int32), axis=0, dtype=jnp.int32)
    return (jnp.cumsum(hist) - hist)[layer], hist[layer]


def sort_by_layer_value(layer, x, ranks=None, below=None):
    """Each row of ``x (d, n)`` (with the shared ``layer (n,)``) in stable ``(layer, value, index)`` order.

    ``ranks``, if given, are :func:`key_ranks` of ``x`` (kept up to date by the caller), which saves
    ranking the values; ``below``, if given, is the first of :func:`layer_counts`, which saves ranking the
    layers. Returns ``(layers, values, arm)``, each ``(d, n)``: the sorted layers and values and the index
    of the entry at each sorted position.

    Args:
      layer: ``(n,)`` integer layers, shared by the rows.
      x: ``(d, n)`` finite values.
      ranks: optional ``(d, n)`` :func:`key_ranks` of ``x``.
      below: optional ``(n,)`` first output of :func:`layer_counts` of ``layer``.

    Returns:
      ``(layers, values, arm)``, each ``(d, n)`` (``arm`` int32).
    """
    d, n = x.shape
    index = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32), (d, n))
    layers = jnp.broadcast_to(layer, (d, n))
    if n > PACKED_MAX_N:
        return jax.lax.sort((layers, x, index), dimension=1, num_keys=2, is_stable=True)
    value_rank = rank_below(ordered_ints(x)) if ranks is None else ranks  # either orders (value, index)
    layer_rank = rank_below(layer.astype(jnp.int32)) if below is None else below
    key = (layer_rank[None, :] * n + value_rank) * n + index
    arm = jnp.sort(key, axis=1) % n
    return jnp.take_along_axis(layers, arm, axis=1), jnp.take_along_axis(x, arm, axis=1), arm
