"""Filling a slate of ``k`` distinct arms: the top-``k`` scores, a greedy slot-by-slot pick, and a
layer-by-layer fill (Pareto layers first, a secondary score or a random order within a layer).

Every fill breaks ties to the lowest arm index; ``k`` is static and small, so the slot loops are
Python loops, each slot vectorised over the arms.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from .layers import current_layer
from .order import ordered_ints


def top_k(score, k: int):
    """Indices of the ``k`` largest scores (ties to the lowest index).

    Args:
      score: ``(n,)`` scores.
      k: slate size (static), at most ``n``.

    Returns:
      ``(k,)`` int32 indices, best first.
    """
    return jax.lax.top_k(score, k)[1].astype(jnp.int32)


def layered_top_k(layer, secondary, k: int):
    """Fill ``k`` slots layer by layer, best ``secondary`` first within a layer (ties: lowest index).

    The order of ``lexsort((-secondary, layer))[:k]`` for finite ``secondary``, found by ``k`` argmax
    steps instead of a full sort.

    Args:
      layer: ``(n,)`` int layer ranks (lower is better).
      secondary: ``(n,)`` finite scores within a layer.
      k: slate size (static), at most ``n``.

    Returns:
      ``(k,)`` int32 indices in the order filled.
    """
    def best_in_layer(l, chosen, taken):
        in_layer = current_layer(layer, taken)
        best = jnp.max(jnp.where(in_layer, secondary, -jnp.inf))
        return (in_layer & (secondary == best)).astype(jnp.float32)

    return sequential_pick(k, layer.shape[0], best_in_layer)


def descending_rank(u):
    """``(n,)`` int32: each entry's place in the descending order of ``u (n,) >= 0`` (ties to the lowest index).

    Read from an integer sort, so no reduction reads ``u``: XLA's CPU backend fuses the producer of a random
    ``u`` (the 20 straight-line rounds of Threefry, :mod:`mobandit_jax.runner.threefry`) into each reduction
    over it, and LLVM does not finish optimising such a reduction over 8, 16, 24, 32 or 48 arms
    (``tests/bench/test_compile_shapes.py``); a sort's operand is written out first.

    Args:
      u: ``(n,)`` non-negative floats.

    Returns:
      ``(n,)`` int32 ranks, 0 for the largest.
    """
    n = u.shape[0]
    order = jnp.argsort(-ordered_ints(u), stable=True)  # u >= 0: keys >= 0, so no overflow in the negation
    return jnp.zeros((n,), jnp.int32).at[order].set(jnp.arange(n, dtype=jnp.int32))


def layered_random_k(layer, key, k: int):
    """Fill ``k`` slots layer by layer, uniformly at random within a layer: the slate of :func:`layered_top_k`
    with the secondary ``u = jax.random.uniform(key, (n,))``, read through :func:`descending_rank` of ``u``.

    Args:
      layer: ``(n,)`` int layer ranks (lower is better).
      key: a PRNG key.
      k: slate size (static), at most ``n``.

    Returns:
      ``(k,)`` int32 indices in the order filled.
    """
    u = jax.random.uniform(key, layer.shape)
    return layered_top_k(layer, -descending_rank(u).astype(jnp.float32), k)


def sequential_pick(k: int, n: int, score_fn, eligible=None):
    """Greedy fill: slot ``l`` takes ``argmax`` of ``score_fn(l, chosen, taken)`` over untaken eligible arms.

    ``score_fn`` returns ``(n,)`` scores from the static-length prefix ``chosen (l,)``; ties go to the
    lowest index. The k slots are a static Python loop (k is small); each step is vectorised over arms.

    Args:
      k: slate size (static), at most the number of eligible arms.
      n: number of arms.
      score_fn: ``score_fn(l, chosen, taken) -> (n,)`` scores for slot ``l``, given ``chosen (l,)`` int32
        and ``taken (n,)`` bool.
      eligible: optional ``(n,)`` bool, the arms that may be chosen (all if ``None``).

    Returns:
      ``(k,)`` int32 indices in the order chosen.
    """
    taken = jnp.zeros((n,), bool)
    allowed = jnp.ones((n,), bool) if eligible is None else eligible
    chosen = jnp.zeros((0,), jnp.int32)
    for l in range(k):
        score = score_fn(l, chosen, taken)
        i = jnp.argmax(jnp.where(allowed & ~taken, score, -jnp.inf)).astype(jnp.int32)
        chosen = jnp.concatenate([chosen, i[None]])
        taken = taken.at[i].set(True)
    return chosen
