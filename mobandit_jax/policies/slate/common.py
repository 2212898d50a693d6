"""What every top-k slate policy of Gutowski et al. ("Top-k Pareto Bandits") shares: the state of
Algorithm 1, line 2 (round counter, pull counts ``N_i``, reward sums), its semi-bandit update (line 22),
the forced initialisation of lines 3-7, the confidence bonuses of the baselines, the params of the
policies without their own, and :func:`make_slate_policy`, which wraps a policy's round ``core``.

References:
- N. Gutowski, F. Chhel, A. Letard and S. Lamprier, Top-k Pareto Bandits: Hypervolume Regret for
  Multi-Objective Slate Selection (preprint)
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from ...kernels.counts import CountState, empirical_means, init_counts, record
from ...kernels.dominance import dominance_matrix, refresh_dominance
from ...kernels.order import key_ranks, refresh_key_ranks
from ...kernels.slates import top_k
from ...types import Policy

FAMILY = "slate"
M0 = 2  # forced initial pulls per arm (Algorithm 1, lines 3-7)
ETA = 0.1  # default confidence scale of the eta baselines

SlateState = CountState  # rounds played, pull counts N_i and reward sums (Algorithm 1, line 2)


class TrackedState(NamedTuple):
    """The slate state plus the dominance matrix of a per-arm vector (``mu_hat_i``, or a UCB whose bonus
    does not depend on ``t``) that changes only in the rows of the arms just played."""

    stats: SlateState
    dom: jnp.ndarray  # (n, n) bool: dominance_matrix(tracked(stats, params)), [j, i]: j dominates i
    ranks: jnp.ndarray | None = None  # (d, n) int32: key_ranks of the tracked vector's columns, if kept


class BoundsState(NamedTuple):
    """The slate state plus the confidence bounds of the next round, made with the state (so a round reads
    them from memory instead of recomputing them inside its pairwise comparisons)."""

    stats: SlateState
    upper: jnp.ndarray  # (n, d)
    lower: jnp.ndarray  # (n, d)


def init_state(n: int, d: int) -> SlateState:
    """The empty state of Algorithm 1, line 2.

    Args:
      n: the number of arms.
      d: the number of objectives.

    Returns:
      zero counts and sums (:class:`~mobandit_jax.kernels.counts.CountState`).
    """
    return init_counts(n, d)


def update_state(state: SlateState, action, obs) -> SlateState:
    """Semi-bandit update of counts and sums for the ``k`` played arms (Algorithm 1, line 22).

    Args:
      state: the counts and sums before the round.
      action: the (k,) int32 slate played.
      obs: its :class:`~mobandit_jax.types.Observation`, one reward row (k, d) per arm of the slate.

    Returns:
      the counts and sums after the round.
    """
    return record(state, action, obs.reward)


def forced_slate(counts, k: int):
    """The ``k`` arms with the smallest pull counts, ties to the lowest index (Algorithm 1, line 4).

    Args:
      counts: (n,) pull counts.
      k: the slate size.

    Returns:
      a (k,) int32 slate.
    """
    return top_k(-counts, k)


def standard_bonus(counts, eta, n: int, d: int, horizon):
    """The standard UCB bonus ``sqrt(eta log(n d T^2) / (2 N_i))`` (ChebyshevUCB+).

    Args:
      counts: (n,) pull counts ``N_i`` (unpulled arms read as 1).
      eta: the confidence scale.
      n: the number of arms.
      d: the number of objectives.
      horizon: T.

    Returns:
      the (n,) bonuses.
    """
    return jnp.sqrt(eta * jnp.log(n * d * horizon**2) / (2.0 * jnp.maximum(counts, 1.0)))


def drugan_nowe_bonus(front, counts, t, d: int, eta=None):
    """ParetoUCB's bonus ``sqrt(2 log(t (d |F_hat|)^{1/4}) / N_i)``, ``|F_hat|`` the size of the empirical
    Pareto front ``front`` (K,) bool (Drugan & Nowe 2013); ``eta`` (if given) scales the 2.

    Args:
      front: (n,) bool, the empirical Pareto front.
      counts: (n,) pull counts ``N_i`` (unpulled arms read as 1).
      t: the round, 1-based.
      d: the number of objectives.
      eta: an optional scale of the 2 in the radius.

    Returns:
      the (n,) bonuses.
    """
    front_size = jnp.sum(front).astype(jnp.float32)
    scale = 2.0 if eta is None else 2.0 * eta
    return jnp.sqrt(scale * jnp.log(t * (d * front_size) ** 0.25) / jnp.maximum(counts, 1.0))


# ----------------------------------------------------------------------------- params


class BaseParams(NamedTuple):
    """Forced pulls ``m0`` and horizon ``T`` (policies without a tuned confidence scale)."""

    m0: jnp.ndarray
    horizon: jnp.ndarray


class EtaParams(NamedTuple):
    """``m0``, ``T`` and the confidence scale ``eta``."""

    m0: jnp.ndarray
    horizon: jnp.ndarray
    eta: jnp.ndarray


class EtaRefParams(NamedTuple):
    """``m0``, ``T``, ``eta`` and the hypervolume reference point ``r`` (d,)."""

    m0: jnp.ndarray
    horizon: jnp.ndarray
    eta: jnp.ndarray
    ref: jnp.ndarray


def _f(x):
    return jnp.asarray(x, float)  # the default float dtype: float32, float64 under x64


def _positive(key: str, value):
    arr = np.asarray(value, float)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{key} must be > 0, got {value!r}")
    return _f(value)


def base_params(horizon, m0=M0) -> BaseParams:
    """:class:`BaseParams`; ``m0 >= 1``.

    Args:
      horizon: T, the run's rounds.
      m0: the forced initial pulls of every arm (>= 1).

    Returns:
      the :class:`BaseParams` pytree.
    """
    if not (isinstance(m0, (int, float)) and not isinstance(m0, bool) and m0 >= 1):
        raise ValueError(f"m0 (minimum pulls) must be a number >= 1, got {m0!r}")
    return BaseParams(_f(m0), _f(float(horizon)))


def eta_params(horizon, eta=ETA, m0=M0) -> EtaParams:
    """:class:`EtaParams`; ``eta > 0``.

    Args:
      horizon: T, the run's rounds.
      eta: the confidence scale (> 0).
      m0: the forced initial pulls of every arm (>= 1).

    Returns:
      the :class:`EtaParams` pytree.
    """
    return EtaParams(*base_params(horizon, m0), _positive("eta", eta))


def eta_ref_params(horizon, ref, eta=ETA, m0=M0) -> EtaRefParams:
    """:class:`EtaRefParams`.

    Args:
      horizon: T, the run's rounds.
      ref: the (d,) hypervolume reference point.
      eta: the confidence scale (> 0).
      m0: the forced initial pulls of every arm (>= 1).

    Returns:
      the :class:`EtaRefParams` pytree.
    """
    return EtaRefParams(*eta_params(horizon, eta, m0), _f(ref))


# ----------------------------------------------------------------------------- the shared round


def make_slate_policy(n: int, d: int, k: int, core, tracked=None, ranked: bool = False, bounds=None) -> Policy:
    """Wrap ``core(key, state, params, t) -> (k,)`` with the shared state and forced initialisation.

    With ``tracked(stats, params) -> (n, d)``, a per-arm vector whose row ``i`` changes only when arm
    ``i`` is played, the state is a :class:`TrackedState` that keeps its dominance matrix: each update
    recomputes the rows and columns of the ``k`` played arms (:func:`refresh_dominance`), the same
    matrix as a full recomputation at a ``k / n`` share of its comparisons. ``ranked`` also keeps each
    objective's (value, index) ranks of the vector (:func:`refresh_key_ranks`). With
    ``bounds(stats, params) -> (upper, lower)``, the state is a :class:`BoundsState` holding the bounds
    of the round after ``stats``.

    Args:
      n: the number of arms.
      d: the number of objectives.
      k: the slate size (1 <= k <= n).
      core: ``core(key, state, params, t) -> (k,)``, the policy's slate after the forced pulls.
      tracked: an optional per-arm vector whose dominance matrix the state keeps.
      ranked: also keep the tracked vector's per-objective ranks.
      bounds: an optional ``bounds(stats, params) -> (upper, lower)`` kept in the state.

    Returns:
      a slate :class:`~mobandit_jax.types.Policy` with ``slate_size = k``.
    """
    if not 1 <= k <= n:
        raise ValueError(f"slate policies need 1 <= k <= n={n}, got slate size k={k!r}")
    if bounds is not None and tracked is not None:
        raise ValueError("make_slate_policy: give `tracked` or `bounds`, not both")

    def init(params):
        stats = init_state(n, d)
        if bounds is not None:
            return BoundsState(stats, *bounds(stats, params))
        if tracked is None:
            return stats
        x = tracked(stats, params)
        return TrackedState(stats, dominance_matrix(x), key_ranks(x.T) if ranked else None)

    def select(key, state, params):
        stats = state if isinstance(state, CountState) else state.stats
        forcing = jnp.any(stats.counts < params.m0)
        t = (stats.t + 1).astype(jnp.float32)
        chosen = core(key, state, params, t)
        return jnp.where(forcing, forced_slate(stats.counts, k), chosen).astype(jnp.int32)

    def update(state, action, obs, params):
        if isinstance(state, CountState):
            return update_state(state, action, obs)
        stats = update_state(state.stats, action, obs)
        if bounds is not None:
            return BoundsState(stats, *bounds(stats, params))
        x = tracked(stats, params)
        ranks = None
        if ranked:
            ranks = refresh_key_ranks(state.ranks, tracked(state.stats, params).T, x.T, action)
        return TrackedState(stats, refresh_dominance(state.dom, x, action), ranks)

    return Policy(init=init, select=select, update=update, slate_size=k)


def empirical_means_of(stats, params):
    """``mu_hat`` as a tracked vector (:func:`make_slate_policy`).

    Args:
      stats: the counts and sums.
      params: the policy's params (unused).

    Returns:
      the (n, d) empirical means.
    """
    return empirical_means(stats)


def ucb_vectors(state, params, n, d):
    """``U_i = mu_hat_i + sqrt(eta log(n d T^2) / (2 N_i)) 1`` (the standard bonus; it does not depend on
    ``t``, so ``U_i`` changes only when arm ``i`` is played).

    Args:
      state: the counts and sums.
      params: params with ``eta`` and ``horizon``.
      n: the number of arms.
      d: the number of objectives.

    Returns:
      the (n, d) optimistic vectors.
    """
    return empirical_means(state) + standard_bonus(state.counts, params.eta, n, d, params.horizon)[:, None]


def tracked_ucb(n: int, d: int):
    """:func:`ucb_vectors` as a tracked vector (:func:`make_slate_policy`).

    Args:
      n: the number of arms.
      d: the number of objectives.

    Returns:
      ``tracked(stats, params) -> (n, d)``.
    """
    return lambda stats, params: ucb_vectors(stats, params, n, d)
