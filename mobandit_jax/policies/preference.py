"""Preference-directed policies of PDMOB (Selective Ensemble Based on Preference-Directed MOB).

- ``prefucb``: Algorithm 1. Pull each arm once; then for every arm ``a`` and direction ``k``
  ``U_{a,k}(t) = sup{q in [S_k(r_hat(a)), 1] : n(a) kl(S_k(r_hat(a)), q) <= beta_t}`` with
  ``beta_t = log t`` (Eq. 2-3), ``U_a = min_k U_{a,k}``, play ``argmax_a U_a`` (Eq. 4). The state
  keeps every arm's ``U_a`` for the next round: the pulled arm's is solved afresh, the others' (whose
  ``r_hat`` and ``n`` did not change, only ``beta_t``) are moved from their last value by
  ``kernels.kl.klucb_upper_refine``, exact to round-off once ``t >= 7``; with fewer than
  ``REFINE_MIN_ARMS`` arms the forced first rounds end before that, and every root is solved afresh.
- ``pareto_ucb``: Pareto UCB1 (Drugan & Nowe 2013): UCB vectors ``r_hat(a) + beta_a 1`` with
  ``beta_a = sqrt(2 log(t (d |F_hat|)^(1/4)) / n(a))``, ``|F_hat|`` the size of the empirical
  Pareto front; play uniformly among arms whose UCB vectors are not Pareto-dominated.
- ``scalarized_ucb_rr``: scalarized UCB1 with random robin (Drugan & Nowe 2013): each round a
  row ``w_j`` of ``W`` is drawn uniformly and UCB1 runs on the normalised projection,
  ``S_j(r_hat(a)) + sqrt(2 log t / n(a))``. Reading of Appendix B.1: the scalarised reward is
  "taken as input of the selection algorithm", so one UCB1 learner with shared counts is used
  (Drugan & Nowe's original keeps separate counts per scalarisation function).
- ``gt_pf``: the oracle GT-PF of Appendix B.1: uniform choice over the true standard Pareto set.

Index ablations (options; defaults are the algorithms above): ``prefucb(index="pareto_ucb1")``
replaces the KL-UCB root by ``min_k S_k(r_hat(a)) + beta_a`` with Pareto UCB1's radius ``beta_a``;
``pareto_ucb(index="klucb")`` builds the UCB vectors coordinatewise by KL-UCB with ``beta_t = log t``.
They separate the index (KL-UCB vs Hoeffding radius) from the selection rule (max-min over
directions vs uniform over the optimistic Pareto front) when ``W = I``.

Ties in an argmax are broken uniformly at random. Rounds are 1-based in the formulas (``t``).

References:
- L. Ma, Z.-Y. Zhang, M. Sugiyama and Z.-H. Zhou (2026), Selective Ensemble Based on Preference-Directed
  Multi-Objective Bandits, arXiv:2606.21929, https://arxiv.org/abs/2606.21929
- M. M. Drugan and A. Nowe (2013), Designing multi-objective multi-armed bandits algorithms: a study, IJCNN 2013,
  https://doi.org/10.1109/IJCNN.2013.6707036
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..kernels import (
    argmax_random_tie,
    klucb_upper,
    klucb_upper_refine,
    normalized_projections,
    pareto_front_mask,
    uniform_from_mask,
    validate_cone,
)
from ..kernels.counts import CountState, empirical_means, init_counts, record
from ..registry import register_policy
from ..types import Policy


class ConeParams(NamedTuple):
    """The preference matrix ``W (M, d)``."""

    W: jnp.ndarray


class OracleParams(NamedTuple):
    """The true standard Pareto set (GT-PF oracle)."""

    pareto_mask: jnp.ndarray


def _round_robin_first(state, K, chosen):
    """During the first ``K`` rounds play arm ``t`` (each arm once), else ``chosen``."""
    return jnp.where(state.t < K, state.t, chosen).astype(jnp.int32)


INDICES = {"prefucb": ("klucb", "pareto_ucb1"), "pareto_ucb": ("pareto_ucb1", "klucb")}


def _pareto_ucb1_radius(mu, counts, t, dim):
    """Pareto UCB1's ``beta_a = sqrt(2 log(t (d |F_hat|)^(1/4)) / n(a))`` (Drugan & Nowe 2013)."""
    front = jnp.sum(pareto_front_mask(mu)).astype(mu.dtype)
    return jnp.sqrt(2 * jnp.log(t * (dim * front) ** 0.25) / jnp.maximum(counts, 1.0))


class PrefUCBState(NamedTuple):
    """Counts and sums, ``min_k S_k(r_hat(a))`` per arm (Eq. 2) and the KL-UCB index of the next round."""

    counts: CountState
    low: jnp.ndarray  # (K,)
    index: jnp.ndarray  # (K,) U_a(t + 1), Eq. (3) with the min over directions (the KL-UCB index only)


REFINE_MIN_ARMS = 8  # K >= 8: the forced rounds reach t = 7, from where refined roots are exact


def _next_level(counts):
    """``beta_{t+1} / n(a) = log(t + 1) / n(a)`` after ``t`` rounds (unpulled arms as ``n = 1``)."""
    return jnp.log((counts.t + 1).astype(counts.counts.dtype)) / jnp.maximum(counts.counts, 1.0)


def prefucb(num_arms: int, dim: int, index: str = "klucb") -> Policy:
    """PrefUCB (PDMOB, Algorithm 1) for ``num_arms`` arms with ``dim`` objectives.

    Args:
      num_arms: K, the number of arms.
      dim: d, the number of objectives.
      index: ``"klucb"`` (Eq. 3, the algorithm) or ``"pareto_ucb1"`` (the ablation: Pareto UCB1's radius on
        the worst direction).

    Returns:
      a :class:`~mobandit_jax.types.Policy` whose params are :class:`ConeParams` (the preference matrix).
    """

    def init(params):
        dtype = params.W.dtype
        return PrefUCBState(init_counts(num_arms, dim, dtype), jnp.zeros((num_arms,), dtype),
                            jnp.ones((num_arms,), dtype))

    def select(key, state, params):
        if index == "klucb":  # Eq. (3) and the min over directions, kept current by update
            U = state.index
        else:  # ablation: Pareto UCB1's radius on the worst direction
            counts = state.counts
            t = (counts.t + 1).astype(params.W.dtype)  # the round being played, 1-based
            U = state.low + _pareto_ucb1_radius(empirical_means(counts), counts.counts, t, dim)
        return _round_robin_first(state.counts, num_arms, argmax_random_tie(key, U))  # Eq. (4)

    def update(state, action, obs, params):
        counts = record(state.counts, action, obs.reward)  # Algorithm 1, line 13
        # only the pulled arm's mean moved: its projection is refreshed, the others are kept
        mean = counts.sums[action] / jnp.maximum(counts.counts[action], 1.0)
        low = state.low.at[action].set(jnp.min(normalized_projections(mean, params.W)))
        if index != "klucb":
            return PrefUCBState(counts, low, state.index)
        # Eq. (3) at round t + 1. All directions of an arm share the level and the index is increasing
        # in S, so min_k U_{a,k} = U(min_k S_k(a)): one KL-UCB root per arm. Unpulled arms keep their
        # S and n, so their root moves only with log(t + 1) / log(t): refined from the last one.
        level = _next_level(counts)
        if num_arms < REFINE_MIN_ARMS:
            return PrefUCBState(counts, low, klucb_upper(low, level))
        U = klucb_upper_refine(low, level, state.index, _next_level(state.counts))
        return PrefUCBState(counts, low, U.at[action].set(klucb_upper(low[action], level[action])))

    return Policy(init, select, update)


def pareto_ucb(num_arms: int, dim: int, index: str = "pareto_ucb1") -> Policy:
    """Pareto UCB1 (Drugan & Nowe 2013) for ``num_arms`` arms with ``dim`` objectives.

    Args:
      num_arms: K, the number of arms.
      dim: d, the number of objectives.
      index: ``"pareto_ucb1"`` (the algorithm) or ``"klucb"`` (the ablation: coordinatewise KL-UCB vectors).

    Returns:
      a :class:`~mobandit_jax.types.Policy`; its params (:class:`ConeParams`) are read by the metrics only.
    """

    def init(params):
        return init_counts(num_arms, dim)

    def select(key, state, params):
        mu = empirical_means(state)
        t = (state.t + 1).astype(mu.dtype)
        if index == "pareto_ucb1":
            ucb = mu + _pareto_ucb1_radius(mu, state.counts, t, dim)[:, None]
        else:  # ablation: coordinatewise KL-UCB with beta_t = log t, as PrefUCB's Eq. (3)
            ucb = klucb_upper(mu, (jnp.log(t) / jnp.maximum(state.counts, 1.0))[:, None])
        return _round_robin_first(state, num_arms, uniform_from_mask(key, pareto_front_mask(ucb)))

    def update(state, action, obs, params):
        return record(state, action, obs.reward)  # Algorithm 1, line 13

    return Policy(init, select, update)


def scalarized_ucb_rr(num_arms: int, dim: int, num_directions: int) -> Policy:
    """Scalarized UCB1 with a uniformly random row of ``W`` each round (Drugan & Nowe 2013).

    Args:
      num_arms: K, the number of arms.
      dim: d, the number of objectives.
      num_directions: M, the rows of the preference matrix ``W`` (M, d).

    Returns:
      a :class:`~mobandit_jax.types.Policy` whose params are :class:`ConeParams`.
    """

    def init(params):
        return init_counts(num_arms, dim, params.W.dtype)

    def select(key, state, params):
        key_row, key_tie = jax.random.split(key)
        row = jax.random.randint(key_row, (), 0, num_directions)
        S = normalized_projections(empirical_means(state), params.W)[:, row]  # (K,)
        t = (state.t + 1).astype(S.dtype)
        index = S + jnp.sqrt(2 * jnp.log(t) / jnp.maximum(state.counts, 1.0))
        return _round_robin_first(state, num_arms, argmax_random_tie(key_tie, index))

    def update(state, action, obs, params):
        return record(state, action, obs.reward)  # Algorithm 1, line 13

    return Policy(init, select, update)


def gt_pf(num_arms: int) -> Policy:
    """GT-PF: uniform random choice over the true standard Pareto set (oracle baseline).

    Args:
      num_arms: K, the number of arms.

    Returns:
      a :class:`~mobandit_jax.types.Policy` whose params are :class:`OracleParams` (the true set).
    """

    def init(params):
        return jnp.zeros((), jnp.int32)

    def select(key, state, params):
        return uniform_from_mask(key, params.pareto_mask)

    def update(state, action, obs, params):
        return state + 1

    return Policy(init, select, update)


def cone_params(W) -> ConeParams:
    """:class:`ConeParams` of a preference matrix, in the default float dtype (float64 under x64).

    Args:
      W: the preference matrix (M, d), one direction a row (validated: finite, no zero row).

    Returns:
      ``ConeParams(W)``.
    """
    return ConeParams(jnp.asarray(validate_cone(W), float))


def oracle_params(means) -> OracleParams:
    """:class:`OracleParams`: the true standard Pareto set of ``means`` (K, d).

    Args:
      means: the true mean rewards (K, d).

    Returns:
      ``OracleParams(pareto_mask)``, a (K,) bool mask.
    """
    return OracleParams(jax.jit(pareto_front_mask)(jnp.asarray(means)))  # comparisons only: one program


def _cone(ctx, name):
    ctx.require_bounded(name, "the normalised projections S_k and the KL-UCB / UCB1 indices on them")
    if ctx.W is None:
        raise KeyError(f"policy {name!r} needs a preference matrix: set [preference] W = [[...], ...]")
    return cone_params(ctx.W)


def _with_index(name):
    """``configure(ctx, index)`` of ``name``, checking ``index`` against :data:`INDICES`."""
    def configure(ctx, index):
        """The sizes and cone params.

        Options:
          index: the per-direction upper confidence index: KL-UCB (PrefUCB's, seed 000) or Pareto UCB1's
            radius (Drugan & Nowe 2013). Allowed: 'klucb' or 'pareto_ucb1'.
        """
        if index not in INDICES[name]:
            raise ValueError(f"{name}: option index must be one of {list(INDICES[name])}, got {index!r}")
        return dict(num_arms=ctx.num_arms, dim=ctx.dim, index=index), _cone(ctx, name)

    return configure


register_policy("prefucb", "preference", prefucb, _with_index("prefucb"),
         "PrefUCB: KL-UCB per preference direction, min over directions (PDMOB, Alg. 1)", index="klucb")
register_policy("pareto_ucb", "preference", pareto_ucb, _with_index("pareto_ucb"),
         "Pareto UCB1: uniform among non-dominated UCB vectors (Drugan & Nowe 2013)", index="pareto_ucb1")
def _configure_scalarized(ctx):
    cone = _cone(ctx, "scalarized_ucb_rr")
    return dict(num_arms=ctx.num_arms, dim=ctx.dim, num_directions=len(cone.W)), cone


register_policy("scalarized_ucb_rr", "preference", scalarized_ucb_rr, _configure_scalarized,
         "scalarized UCB1 on a random row of W each round (Drugan & Nowe 2013)")


def _configure_gt_pf(ctx):
    _cone(ctx, "gt_pf")  # the family's metrics need the cone: fail here with the same message
    return dict(num_arms=ctx.num_arms), oracle_params(ctx.means)


register_policy("gt_pf", "preference", gt_pf, _configure_gt_pf,
         "GT-PF oracle: uniform over the true standard Pareto set (PDMOB, App. B.1)")
