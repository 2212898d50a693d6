"""Branch-free random choices: uniform choice within a mask and argmax with random tie-breaking."""
from __future__ import annotations

import jax
import jax.numpy as jnp


def uniform_from_mask(key, mask):
    """Index drawn uniformly among the ``True`` entries of ``mask (K,)`` (index 0 if none)."""
    u = jax.random.uniform(key, mask.shape)
    return jnp.argmax(jnp.where(mask, u, -1.0)).astype(jnp.int32)


def argmax_random_tie(key, values):
    """``argmax`` of ``values (K,)`` with ties broken uniformly at random."""
    return uniform_from_mask(key, values >= jnp.max(values))
