"""Pull counts and reward sums: the sufficient statistics of empirical-mean bandit policies."""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp


class CountState(NamedTuple):
    """Rounds played ``t``, pull counts ``N_i`` and reward sums per arm."""

    t: jnp.ndarray  # () int32
    counts: jnp.ndarray  # (n,) float
    sums: jnp.ndarray  # (n, d)


def init_counts(n: int, d: int, dtype=jnp.float32) -> CountState:
    """No round played, no pulls.

    Args:
      n: number of arms.
      d: number of objectives.
      dtype: dtype of the counts and sums.

    Returns:
      A :class:`CountState` with ``t = 0``, ``counts`` ``(n,)`` and ``sums`` ``(n, d)`` all zero.
    """
    return CountState(jnp.zeros((), jnp.int32), jnp.zeros((n,), dtype), jnp.zeros((n, d), dtype))


def record(state: CountState, arms, reward) -> CountState:
    """Add one round: ``arms`` () or (k,), ``reward`` (d,) or (k, d).

    Args:
      state: the statistics so far.
      arms: ``()`` or ``(k,)`` int, the arm(s) pulled this round.
      reward: ``(d,)`` or ``(k, d)``, their rewards (one row per arm).

    Returns:
      ``state`` with ``t`` one higher, each pulled arm's count one higher and its reward added to its sum.
    """
    return CountState(
        state.t + 1,
        state.counts.at[arms].add(1.0),
        state.sums.at[arms].add(reward.astype(state.sums.dtype)),
    )


def empirical_means(state: CountState):
    """``mu_hat_i = sums_i / max(N_i, 1)`` (zero for unpulled arms).

    Args:
      state: the statistics so far.

    Returns:
      ``(n, d)`` empirical mean rewards.
    """
    return state.sums / jnp.maximum(state.counts, 1.0)[:, None]
