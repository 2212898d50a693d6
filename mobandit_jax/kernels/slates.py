"""Filling a slate of ``k`` distinct arms: the top-``k`` scores, a greedy slot-by-slot pick, and a
layer-by-layer fill (Pareto layers first, a secondary score within a layer).

Every fill breaks ties to the lowest arm index; ``k`` is static and small, so the slot loops are
Python loops, each slot vectorised over the arms.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from .layers import current_layer


def top_k(score, k: int):
    """Indices of the ``k`` largest scores (ties to the lowest index)."""
    return jax.lax.top_k(score, k)[1].astype(jnp.int32)


def layered_top_k(layer, secondary, k: int):
    """Fill ``k`` slots layer by layer, best ``secondary`` first within a layer (ties: lowest index).

    The order of ``lexsort((-secondary, layer))[:k]`` for finite ``secondary``, found by ``k`` argmax
    steps instead of a full sort.
    """
    def best_in_layer(l, chosen, taken):
        in_layer = current_layer(layer, taken)
        best = jnp.max(jnp.where(in_layer, secondary, -jnp.inf))
        return (in_layer & (secondary == best)).astype(jnp.float32)

    return sequential_pick(k, layer.shape[0], best_in_layer)


def sequential_pick(k: int, n: int, score_fn, eligible=None):
    """Greedy fill: slot ``l`` takes ``argmax`` of ``score_fn(l, chosen, taken)`` over untaken eligible arms.

    ``score_fn`` returns ``(n,)`` scores from the static-length prefix ``chosen (l,)``; ties go to the
    lowest index. The k slots are a static Python loop (k is small); each step is vectorised over arms.
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
