"""Track-and-Stop for Pareto set identification (Crepon, Garivier & Koolen, "Sequential learning of the Pareto
front for multi-objective bandits", AISTATS 2024), as the authors implement it
(``elise-crepon/sequential-pareto-learning-experiments``, ``track_and_stop.py`` with ``hedge.py``).

Gaussian objectives of known scale ``sigma`` (rewards are divided by it, so the objectives have unit
variance). After one pull of every arm, with ``t`` pulls so far, empirical means ``mu`` and counts ``N``:

1. stop when ``Z_t = t g(mu, N / t) - log(log(1 + t)) >= log(1/delta)`` (their GLR statistic; ``g`` is the cost of
   the closest alternative, below) and return the
   empirical Pareto set of ``mu``;
2. one Hedge step on the lower bound's weights: ``w <- w exp(eta grad) / sum``, ``grad`` the gradient of
   ``g(mu, w)``, ``eta = sqrt(log K) / (sqrt(1 + t) R)`` with ``R`` the largest ``|grad|`` seen so far;
3. C-tracking (``tracking = "C"``, default): ``W_t <- W_t + w``; D-tracking (``"D"``): ``W_t = t w``;
4. forced exploration: pull the least pulled arm (first on ties) if some ``N_k <= sqrt(t) - K/2``, else
   ``argmax (W_t - N)``.

The cost ``g`` and its gradient are exact for any number of objectives ``d`` (the cone's rows under a cone). With
``d = 2`` they are compiled (:func:`~mobandit_jax.kernels.pareto_lower_bound.alternative_cost_2d`, fixed shapes, no
host round trip). With ``d >= 3`` they are computed in float64 numpy on the host
(:func:`~mobandit_jax.kernels.pareto_lower_bound.alternative_cost_host`, one ``jax.pure_callback`` a round for the
whole batch of seeds, both weight vectors at once; a seed that has stopped is skipped). For each dominated arm it
scores every assignment of the ``P`` Pareto arms above it on every objective to an objective on which to lower them
(``d^P``, up to ``MAX_ENUMERATED``), and beyond that only the authors' cells (``PCnd``), polynomially many in ``P``:
a round takes milliseconds for each running seed (COV-BOOST, ``K = 20``, ``d = 3``), no limit on ``d``.

References:
- E. Crepon, A. Garivier and W. M. Koolen (2024), Sequential Learning of the Pareto Front for Multi-objective
  Bandits, AISTATS 2024, https://arxiv.org/abs/2501.17513
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from ..kernels.pareto_lower_bound import alternative_cost_2d, alternative_cost_host, pareto_mask
from ..registry import register_policy
from .pac_stepwise import Counts, StepwiseMethod, configure_stepwise, stepwise_identifier, wrap

TRACKINGS = ("C", "D")


class TnsParams(NamedTuple):
    """``log(1/delta)``, the projected ``sigma``, C-tracking (bool)."""

    log_delta: jnp.ndarray
    sigma: jnp.ndarray
    c_tracking: jnp.ndarray


class TnsState(NamedTuple):
    counts: Counts  # of the rewards divided by sigma
    w: jnp.ndarray  # (K,) Hedge weights
    tracked: jnp.ndarray  # (K,) W_t
    reg: jnp.ndarray  # () the largest |grad| seen
    pull: jnp.ndarray  # (K,) bool: the next round's arm
    done: jnp.ndarray  # () bool


def track_and_stop_method(num_arms: int, dim: int) -> StepwiseMethod:
    """Track-and-Stop (module docstring) for ``num_arms`` arms of ``dim`` objectives.

    Args:
      num_arms: K, the number of arms.
      dim: the number of objectives the method sees (2: compiled cost; 3 or more: the host's).

    Returns:
      its :class:`~mobandit_jax.policies.pac_stepwise.StepwiseMethod`, for a caller that owns the pulls.
    """
    K = num_arms
    arms = jnp.arange(K)

    def init(p: TnsParams) -> TnsState:
        dtype = p.sigma.dtype
        return TnsState(Counts.zeros(K, dim, dtype), jnp.full(K, 1.0 / K, dtype), jnp.zeros(K, dtype),
                        jnp.zeros((), dtype), jnp.ones(K, bool), jnp.zeros((), bool))

    def select(key, s: TnsState, p: TnsParams):
        return s.pull

    def update(s: TnsState, pulled, rewards, p: TnsParams) -> TnsState:
        counts = s.counts.add(pulled, rewards / p.sigma)
        n = counts.n.astype(p.sigma.dtype)
        t = jnp.sum(n)
        mu = counts.means
        ready = jnp.all(counts.n > 0)
        if dim == 2:  # compiled
            z = t * alternative_cost_2d(mu, n / t)[0] - jnp.log(jnp.log1p(t))
            _, grad = alternative_cost_2d(mu, s.w)
        else:  # on the host, skipped for a seed that has stopped (which then stays stopped)
            g, grads = alternative_cost_host(mu, jnp.stack([n / t, s.w]), ready & ~s.done)
            z = t * g[0] - jnp.log(jnp.log1p(t))
            grad = grads[1]
        reg = jnp.maximum(s.reg, jnp.max(jnp.abs(grad)))
        # sqrt(log K / (1 + t)): a quotient under one square root, never a division by a square root, which
        # XLA rewrites to an rsqrt whose last bits differ between CPUs (tests/policies/test_conformance.py)
        eta = jnp.sqrt(jnp.log(K) / (1.0 + t)) / jnp.maximum(reg, jnp.finfo(reg.dtype).tiny)
        w = s.w * jnp.exp(eta * grad)
        w = w / jnp.sum(w)
        tracked = jnp.where(p.c_tracking, s.tracked + w, t * w)
        forced = jnp.any(n <= jnp.sqrt(t) - K / 2)
        arm = jnp.where(forced, jnp.argmin(n), jnp.argmax(tracked - n))
        new = TnsState(counts, w, tracked, reg, arms == arm, ready & (z >= p.log_delta))
        return TnsState(counts, *(jnp.where(ready, a, b) for a, b in zip(new[1:], s[1:], strict=False)))._replace(
            pull=jnp.where(ready, arms == arm, counts.n == 0))

    def recommend(s: TnsState, p: TnsParams):
        return pareto_mask(s.counts.means)

    def stopped(s: TnsState, p: TnsParams):
        return s.done

    return StepwiseMethod(init, select, update, recommend, stopped)


def track_and_stop(num_arms: int, dim: int, sample) -> object:
    """The pac-family Identifier of :func:`track_and_stop_method` (one arm per round).

    Args:
      num_arms: K, the number of arms.
      dim: the number of objectives the method sees (the cone's rows M, or d without a cone).
      sample: the environment's ``sample(key, arm, params)``.

    Returns:
      an :class:`~mobandit_jax.types.Identifier` of the pac family (:func:`~.pac_stepwise.stepwise_identifier`).
    """
    # Seeds run in turn in a large batch (the lanes share one queue of seeds), as Auer et al. and APE. A seed's rewards
    # are the same either way; its float32 rounds follow the last bits of Hedge's exponentials and the argmax of the
    # tracking, which move with how XLA fuses the loop's body, so in float32 a seed run in turn can part from its run
    # alone after some rounds (the same law of samples and errors); in float64 they agree pull for pull.
    return stepwise_identifier(track_and_stop_method(num_arms, dim), num_arms, dim, sample, width=1)


def _configure(ctx, delta, tracking):
    """Track-and-Stop's sizes and params.

    Options:
      delta: the error probability delta of the stopping rule. Allowed: a number in (0, 1).
      tracking: C-tracking (cumulative weights) or D-tracking (t times the current weights). Allowed: 'C' or 'D'.
    """
    W, sigma, eps, dlt, cap, budget = configure_stepwise(ctx, "track_and_stop", 0.0, delta)
    if tracking not in TRACKINGS:
        raise ValueError(f"policy 'track_and_stop': tracking = {tracking!r} must be 'C' (cumulative weights) or 'D'")
    if sigma <= 0:
        raise ValueError("policy 'track_and_stop' needs a noise scale sigma > 0")
    params = TnsParams(jnp.log(1.0 / jnp.asarray(dlt, float)), jnp.asarray(sigma, float),
                       jnp.asarray(tracking == "C"))
    return dict(num_arms=ctx.num_arms, dim=len(W), sample=ctx.env.sample), wrap(ctx, W, eps, dlt, cap, budget, params)


register_policy("track_and_stop", "pac", track_and_stop, _configure,
                "Track-and-Stop for Pareto set identification (Crepon, Garivier & Koolen, AISTATS 2024): Hedge on "
                "the lower bound's weights, C-tracking with forced exploration, GLR stopping; d = 2 compiled, d >= 3 "
                "on the host",
                delta=0.05, tracking="C")
