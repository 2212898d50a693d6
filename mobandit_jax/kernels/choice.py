"""Branch-free random choices: uniform choice within a mask and argmax with random tie-breaking.

One uniform draw per choice: with ``m`` candidates, the ``floor(u m)``-th of them (in index order)
is taken, found through the running count of candidates. Each candidate has probability
``1/m`` up to the float resolution of ``u`` (``m / 2^24`` in float32).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp


def uniform_from_mask(key, mask):
    """Index drawn uniformly among the ``True`` entries of ``mask (K,)`` (index 0 if none).

    Args:
      key: a PRNG key.
      mask: ``(K,)`` bool, the candidates.

    Returns:
      ``()`` int32: the index of one ``True`` entry, each with probability ``1 / sum(mask)``; 0 if
      ``mask`` has no ``True`` entry.
    """
    # running count of candidates as one small matmul with a triangle of ones (exact: counts < 2^24);
    # XLA's CPU cumsum is a reduce-window of K^2 scalar steps
    K = mask.shape[-1]
    running = (mask.astype(jnp.float32) @ jnp.triu(jnp.ones((K, K), jnp.float32))).astype(jnp.int32)
    count = running[-1]
    j = jnp.minimum(jnp.floor(jax.random.uniform(key) * count).astype(jnp.int32), count - 1)
    return jnp.argmax(running > j).astype(jnp.int32)


def argmax_random_tie(key, values):
    """``argmax`` of ``values (K,)`` with ties broken uniformly at random.

    Args:
      key: a PRNG key.
      values: ``(K,)`` numbers.

    Returns:
      ``()`` int32: an index ``i`` with ``values[i] == max(values)``, uniform among the ties.
    """
    return uniform_from_mask(key, values >= jnp.max(values))
