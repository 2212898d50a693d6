"""THV-UCB (Gutowski et al., "Top-k Pareto Bandits", Algorithm 1): greedy optimistic marginal hypervolume
over the safely pruned arms.

At round ``t`` (1-based), after the forced initialisation of lines 3-7 (:func:`make_slate_policy`)::

    beta_i(t) = sqrt(2 eta log(n d t^2 / delta) / max{1, N_i(t-1)})          (lines 10-14)
    u_i = clip(mu_hat_i + beta_i 1, 0, 1),   L_i = mu_hat_i - beta_i 1
    A_t = {i : for all j != i, u_i is not <= L_j}   (A_t = [n] if |A_t| < k)   (lines 15-16)
    S <- S + argmax_{i in A_t \\ S} HV^UCB(S + i) - HV^UCB(S),  k times       (lines 17-21)

``delta`` defaults to ``1/T`` (Theorem 3). The bounds of round ``t + 1`` are made with the state at the
update of round ``t`` (line 22), so a round reads them from memory. The greedy first runs over all arms;
``A_t`` is formed, and the greedy redone over it, only if that slate holds a pruned arm (the same slate,
:func:`~mobandit_jax.kernels.pruning.fill_over_safe_arms`).

References:
- N. Gutowski, F. Chhel, A. Letard and S. Lamprier, Top-k Pareto Bandits: Hypervolume Regret for
  Multi-Objective Slate Selection (preprint)
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from ...kernels.counts import empirical_means
from ...kernels.greedy_hv import greedy_hv_slate
from ...kernels.pruning import fill_over_safe_arms
from ...types import Policy
from .common import M0, _f, eta_params, make_slate_policy

THV_ETA = 0.01  # default eta of THV-UCB
# Marginal gains at or below this are zero-gain ties (float32 round-off of the kernel's clipped-box
# identity is ~1e-8 where the exact gain is 0, e.g. once an arm's clipped UCB box is [0, 1]^d).
GAIN_TOL = 1e-6


class ThvUcbParams(NamedTuple):
    """THV-UCB: ``m0``, ``T``, ``eta``, the confidence level ``delta`` and the reference point ``r``."""

    m0: jnp.ndarray
    horizon: jnp.ndarray
    eta: jnp.ndarray
    delta: jnp.ndarray
    ref: jnp.ndarray


def thv_ucb_params(horizon, ref, eta=THV_ETA, delta=None, m0=M0) -> ThvUcbParams:
    """:class:`ThvUcbParams`; ``delta`` defaults to ``1/T`` (Theorem 3).

    Args:
      horizon: T, the run's rounds.
      ref: the (d,) hypervolume reference point r.
      eta: the confidence scale of the radius.
      delta: the confidence level in (0, 1); None gives ``1/T``.
      m0: the forced initial pulls of every arm (>= 1).

    Returns:
      the :class:`ThvUcbParams` pytree.
    """
    if delta is None:
        delta = 1.0 / max(int(horizon), 2)
    if not (0 < float(delta) < 1):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    p = eta_params(horizon, eta, m0)
    return ThvUcbParams(p.m0, p.horizon, p.eta, _f(delta), _f(ref))


def thv_ucb(num_arms: int, dim: int, k: int, clip: bool = True) -> Policy:
    """THV-UCB (Algorithm 1, lines 9-21); ``clip`` clips the UCBs to [0, 1]. Params: :func:`thv_ucb_params`.

    Args:
      num_arms: n, the number of arms.
      dim: d, the number of objectives.
      k: the slate size (1 <= k <= n).
      clip: clip the upper confidence bounds to [0, 1] (rewards in [0, 1]).

    Returns:
      a slate :class:`~mobandit_jax.types.Policy` (``slate_size = k``) whose params come from
      :func:`thv_ucb_params`.
    """
    n, d = num_arms, dim

    def bounds(stats, params):  # lines 10-14, for round t = (rounds played) + 1
        t = (stats.t + 1).astype(jnp.float32)
        mu = empirical_means(stats)
        beta = jnp.sqrt(2.0 * params.eta * jnp.log(n * d * t**2 / params.delta) / jnp.maximum(stats.counts, 1.0))
        upper = mu + beta[:, None]
        if clip:
            upper = jnp.clip(upper, 0.0, 1.0)
        return upper, mu - beta[:, None]

    def greedy(candidates, upper, ref):  # lines 17-21, over the candidates (all arms if None)
        return greedy_hv_slate(upper, ref, k, GAIN_TOL, candidates)

    def core(key, state, params, t):
        return fill_over_safe_arms(greedy, state.upper, state.lower, k, params.ref)  # over A_t (lines 15-16)

    return make_slate_policy(n, d, k, core, bounds=bounds)
