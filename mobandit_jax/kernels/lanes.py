"""Work that only some lanes of a batch, or some entries of an array, need.

Under ``vmap`` (the engine runs the seeds as lanes of one batch), ``lax.cond`` with a per-lane predicate
becomes a ``select`` that computes both branches for every lane. :func:`where_needed` keeps the branch a
real conditional: batched, it runs the expensive branch for the whole batch only if some lane needs
it, and keeps the other lanes' default values. Nested ``vmap`` levels each reduce their predicate the
same way. :func:`packed_indices` lists the entries of a mask first, so that a loop over fixed-size
blocks of them stops once they are done.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap


def where_needed(need, fn, default, *args):
    """``fn(*args)`` if ``need`` else ``default``; under ``vmap``, ``fn`` runs only when some lane needs it.

    ``need`` is a scalar bool, ``default`` an array shaped like ``fn``'s result. ``fn`` must read its
    arrays from ``args`` (it may not close over traced values).

    Args:
      need: ``()`` bool, whether ``fn``'s result is wanted.
      fn: a function of ``args`` returning one array shaped like ``default``.
      default: the array returned where ``need`` is false.
      *args: the arrays ``fn`` reads.

    Returns:
      ``fn(*args)`` where ``need``, else ``default``; batched, per lane.
    """
    @custom_vmap
    def run(need, default, *args):
        return jax.lax.cond(need, lambda: fn(*args), lambda: default)

    @run.def_vmap
    def run_lanes(size, batched, need, default, *args):
        need = need if batched[0] else jnp.broadcast_to(need, (size,))
        default = default if batched[1] else jnp.broadcast_to(default, (size,) + default.shape)
        lane_fn = jax.vmap(fn, in_axes=tuple(0 if b else None for b in batched[2:]))

        def every_lane(need, default, *args):
            keep = need.reshape(need.shape + (1,) * (default.ndim - 1))
            return jnp.where(keep, lane_fn(*args), default)

        return where_needed(jnp.any(need), every_lane, default, need, default, *args), True

    return run(need, default, *args)


def packed_indices(mask, pad: int):
    """``(n + pad,)`` int32: the indices of ``mask``'s (``(n,)`` bool) True entries first, in order, then ``n``
    (out of range) in every other slot.

    Args:
      mask: ``(n,)`` bool.
      pad: number of extra slots (static).

    Returns:
      ``(n + pad,)`` int32 indices.
    """
    n = mask.shape[0]
    rank = jax.lax.associative_scan(jnp.add, mask.astype(jnp.int32)) - 1
    slot = jnp.where(mask, rank, n + pad)
    return jnp.full(n + pad, n, jnp.int32).at[slot].set(jnp.arange(n, dtype=jnp.int32), mode="drop")
