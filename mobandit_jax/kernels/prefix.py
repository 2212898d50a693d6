"""Prefix sums of each arm's pulls, read one count at a time, in a fixed tiled summation order.

A phase-based identifier (Xue et al., Algorithm 2) needs the sum of an arm's first ``n`` pulls for a
few counts ``n`` per phase. :func:`prefix_sums` keeps the per-pull values in tiles of ``BASE = 16``
and the sums of the tiles (themselves in tiles of 16, and so on); :func:`prefix_at` adds the head
of one tile to the sum of the tiles before it, one level at a time. Building costs one pass over
the stream, a lookup one tile per level.

The order of the additions is that of XLA's CPU ``cumsum`` (its reduce-window rewrite): within a
tile a sequential sum, plus the exclusive prefix of the tile sums, taken the same way while there
are more than 16 of them. So :func:`dense` equals ``jnp.cumsum`` bit for bit on CPU (the committed
numbers were made with it), and the sums no longer depend on the backend or the XLA version.

Xue, Hong, Li, Wan, Cheng & Qiu, "Cost-Aware Multi-Objective Bandits: Theory and Application to
Budgeted LLM Configuration Evaluation" (preprint).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from ..types import PrefixSums

BASE = 16


def tiled_length(n: int) -> int:
    """``n`` rounded up to whole tiles: a bulk sampler that draws this many pulls saves a padded copy
    (pulls past ``n`` are never added to a sum of at most ``n`` pulls).

    Args:
      n: number of pulls.

    Returns:
      The smallest multiple of :data:`BASE` at least ``n``.
    """
    return -(-n // BASE) * BASE


def _tiles(x):
    """``(K, n, m) -> (K, ceil(n / 16), 16, m)``, zero padded."""
    K, n, m = x.shape
    nt = -(-n // BASE)
    return jnp.pad(x, [(0, 0), (0, nt * BASE - n), (0, 0)]).reshape(K, nt, BASE, m)


def _sequential_sum(tiles):
    """``(K, nt, 16, m) -> (K, nt, m)``: each tile summed left to right."""
    acc = tiles[:, :, 0]
    for k in range(1, BASE):
        acc = acc + tiles[:, :, k]
    return acc


def prefix_sums(values) -> PrefixSums:
    """The :class:`PrefixSums` of per-pull ``values (K, n, m)``: the tiles and their sums, level by level.

    Args:
      values: ``(K, n, m)`` the ``n`` pulls of each of ``K`` arms, ``m`` numbers each.

    Returns:
      The :class:`~mobandit_jax.types.PrefixSums`.
    """
    levels = [_tiles(values)]
    while levels[-1].shape[1] > 1:
        levels.append(_tiles(_sequential_sum(levels[-1])))
    return PrefixSums(tuple(levels))


def _inclusive_at(levels, u):
    """``(K, m)``: the sum of entries ``0 .. u[i]`` of level ``levels[0]`` for arm ``i``."""
    tiles = levels[0]
    tile, head = u // BASE, u % BASE
    entries = tiles[jnp.arange(tiles.shape[0]), tile]  # (K, 16, m); those past `head` are not added
    acc = entries[:, 0]
    for k in range(1, BASE):
        acc = jnp.where((k <= head)[:, None], acc + entries[:, k], acc)
    if len(levels) == 1:
        return acc
    before = _inclusive_at(levels[1:], jnp.maximum(tile - 1, 0))
    return jnp.where((tile > 0)[:, None], before, 0.0) + acc


def prefix_at(P: PrefixSums, n):
    """``(K, m)``: the sum of pulls ``0 .. n[i]-1`` of arm ``i`` (``0 <= n[i] <= n_pulls``).

    Args:
      P: the :class:`~mobandit_jax.types.PrefixSums` of :func:`prefix_sums`.
      n: ``(K,)`` int, a pull count per arm.

    Returns:
      ``(K, m)`` sums.
    """
    return jnp.where((n > 0)[:, None], _inclusive_at(P.levels, jnp.maximum(n - 1, 0)), 0.0)


def dense(P: PrefixSums, n: int):
    """The full ``(K, n + 1, m)`` table ``[0, cumsum(values)]`` of ``n`` pulls (tests, inspection).

    Args:
      P: the :class:`~mobandit_jax.types.PrefixSums` of :func:`prefix_sums`.
      n: number of pulls (at most those in ``P``).

    Returns:
      ``(K, n + 1, m)``: row ``j`` of arm ``i`` is the sum of its first ``j`` pulls.
    """
    K = P.levels[0].shape[0]
    rows = jax.vmap(lambda j: prefix_at(P, jnp.full(K, j)))(jnp.arange(n + 1))
    return jnp.swapaxes(rows, 0, 1)
