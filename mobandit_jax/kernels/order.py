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
    no NaN)."""
    x = jnp.asarray(x)
    itype = jnp.int64 if x.dtype == jnp.float64 else jnp.int32
    bits = jax.lax.bitcast_convert_type(x.astype(jnp.float64 if itype == jnp.int64 else jnp.float32), itype)
    magnitude = bits & jnp.iinfo(itype).max
    return jnp.where(bits >= 0, bits, -magnitude)


def rank_below(keys):
    """``#{m : keys[..., m] < keys[..., i]}`` along the last axis of integer ``keys`` (ties share a rank)."""
    search = lambda row, queries: jnp.searchsorted(row, queries, side="left", method="scan")
    for _ in range(keys.ndim - 1):
        search = jax.vmap(search)
    return search(jnp.sort(keys, axis=-1), keys).astype(jnp.int32)


def sort_by_layer_value(layer, x):
    """Each row of ``x (d, n)`` (with the shared ``layer (n,)``) in stable ``(layer, value, index)`` order.

    Returns ``(layers, values, arm)``, each ``(d, n)``: the sorted layers and values and the index of the
    entry at each sorted position.
    """
    d, n = x.shape
    index = jnp.broadcast_to(jnp.arange(n, dtype=jnp.int32), (d, n))
    layers = jnp.broadcast_to(layer, (d, n))
    if n > PACKED_MAX_N:
        return jax.lax.sort((layers, x, index), dimension=1, num_keys=2, is_stable=True)
    key = (rank_below(layer.astype(jnp.int32))[None, :] * n + rank_below(ordered_ints(x))) * n + index
    arm = jnp.sort(key, axis=1) % n
    return jnp.take_along_axis(layers, arm, axis=1), jnp.take_along_axis(x, arm, axis=1), arm
