"""The 13 baselines of Gutowski et al. ("Top-k Pareto Bandits", Section "Baselines"), each a top-k slate
policy on the shared state and forced initialisation of Algorithm 1, lines 3-7 (:mod:`.common`).

Pareto-layer UCB (ParetoUCB, +, -Div, -Crowd) and TS (ParetoTS, +) fill the slate layer by layer;
ChebyshevUCB(+), ScalarUCB(-RandW) and HVScalarUCB take the top-k of a scalarised UCB; HVScalarUCB+
gives each slot its own direction; RandomK draws the slate. The formulas and the readings the paper
leaves open are in the family docstring (:mod:`mobandit_jax.policies.slate`).

References:
- N. Gutowski, F. Chhel, A. Letard and S. Lamprier, Top-k Pareto Bandits: Hypervolume Regret for
  Multi-Objective Slate Selection (preprint)
- M. M. Drugan and A. Nowe (2013), Designing multi-objective multi-armed bandits algorithms: a study, IJCNN 2013,
  https://doi.org/10.1109/IJCNN.2013.6707036
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ...kernels.counts import empirical_means
from ...kernels.crowding import CROWD_BOUNDARY, crowding_distance
from ...kernels.dominance import undominated
from ...kernels.layers import current_layer, peel_layers, top_layers
from ...kernels.scalarization import empirical_nadir, hv_scalarization, positive_sphere, simplex_interior_lattice
from ...kernels.slates import layered_random_k, layered_top_k, sequential_pick, top_k
from ...types import Policy
from .common import (
    M0,
    _f,
    base_params,
    drugan_nowe_bonus,
    empirical_means_of,
    make_slate_policy,
    standard_bonus,
    tracked_ucb,
    ucb_vectors,
)

SIGMA_PRIOR = 0.5  # ParetoTS+: the largest standard deviation of a [0, 1] reward


class TsParams(NamedTuple):
    """ParetoTS: ``m0``, ``T`` and the observation noise ``sigma_obs``."""

    m0: jnp.ndarray
    horizon: jnp.ndarray
    sigma_obs: jnp.ndarray


class TsPlusParams(NamedTuple):
    """ParetoTS+: ``m0``, ``T``, ``sigma_obs`` and the prior scale ``sigma_prior``."""

    m0: jnp.ndarray
    horizon: jnp.ndarray
    sigma_obs: jnp.ndarray
    sigma_prior: jnp.ndarray


def ts_params(horizon, sigma_obs, m0=M0) -> TsParams:
    """:class:`TsParams`; ``sigma_obs >= 0``.

    Args:
      horizon: T, the run's rounds.
      sigma_obs: the observation noise scale of the Gaussian posterior (>= 0).
      m0: the forced initial pulls of every arm.

    Returns:
      the :class:`TsParams` pytree.
    """
    if sigma_obs is None or not np.isfinite(sigma_obs) or sigma_obs < 0:
        raise ValueError(f"sigma_obs must be >= 0, got {sigma_obs!r}")
    return TsParams(*base_params(horizon, m0), _f(sigma_obs))


def ts_plus_params(horizon, sigma_obs, sigma_prior=SIGMA_PRIOR, m0=M0) -> TsPlusParams:
    """:class:`TsPlusParams`; ``sigma_obs, sigma_prior >= 0``.

    Args:
      horizon: T, the run's rounds.
      sigma_obs: the observation noise scale (>= 0).
      sigma_prior: the prior scale added to it (>= 0).
      m0: the forced initial pulls of every arm.

    Returns:
      the :class:`TsPlusParams` pytree.
    """
    if not np.isfinite(sigma_prior) or sigma_prior < 0:
        raise ValueError(f"sigma_prior must be >= 0, got {sigma_prior!r}")
    return TsPlusParams(*ts_params(horizon, sigma_obs, m0), _f(sigma_prior))


# ----------------------------------------------------------------------------- Pareto-layer UCB


def pareto_ucb(num_arms: int, dim: int, k: int) -> Policy:
    """ParetoUCB: ``beta = sqrt(2 log(t (d |F_hat|)^{1/4}) / N)``, random within layers. Params: :func:`base_params`.

    Args:
      num_arms: n, the number of arms.
      dim: d, the number of objectives.
      k: the slate size (1 <= k <= n).

    Returns:
      a slate :class:`~mobandit_jax.types.Policy` (``slate_size = k``) whose params come from :func:`base_params`.
    """
    n, d = num_arms, dim

    def core(key, state, params, t):
        stats, dom_mu = state.stats, state.dom
        mu = empirical_means(stats)
        beta = drugan_nowe_bonus(undominated(dom_mu), stats.counts, t, d)
        layer = top_layers(mu + beta[:, None], k, fill=k)
        return layered_random_k(layer, key, k)

    return make_slate_policy(n, d, k, core, tracked=empirical_means_of)


def pareto_ucb_plus(num_arms: int, dim: int, k: int) -> Policy:
    """ParetoUCB+: layers on ``U``, ``sum_j U_ij`` tie-break. Params: :func:`eta_params`.

    Args:
      num_arms: n, the number of arms.
      dim: d, the number of objectives.
      k: the slate size (1 <= k <= n).

    Returns:
      a slate :class:`~mobandit_jax.types.Policy` (``slate_size = k``) whose params come from :func:`eta_params`.
    """
    n, d = num_arms, dim

    def core(key, state, params, t):
        U = ucb_vectors(state.stats, params, n, d)
        return layered_top_k(peel_layers(state.dom, k, fill=k), jnp.sum(U, axis=-1), k)

    return make_slate_policy(n, d, k, core, tracked=tracked_ucb(n, d))


def pareto_ucb_div(num_arms: int, dim: int, k: int) -> Policy:
    """ParetoUCB-Div: per slot, current layer, maximin ``l_inf`` distance, ``sum U``. Params: :func:`eta_params`.

    Args:
      num_arms: n, the number of arms.
      dim: d, the number of objectives.
      k: the slate size (1 <= k <= n).

    Returns:
      a slate :class:`~mobandit_jax.types.Policy` (``slate_size = k``) whose params come from :func:`eta_params`.
    """
    n, d = num_arms, dim

    def core(key, state, params, t):
        U = ucb_vectors(state.stats, params, n, d)
        layer = peel_layers(state.dom, k, fill=k)
        total = jnp.sum(U, axis=-1)

        def score(l, chosen, taken):
            in_layer = current_layer(layer, taken)
            if l == 0:
                dist = jnp.zeros((n,), U.dtype)
            else:
                dist = jnp.min(jnp.max(jnp.abs(U[:, None, :] - U[chosen][None, :, :]), axis=-1), axis=1)
            best = jnp.max(jnp.where(in_layer, dist, -jnp.inf))
            tied = in_layer & (dist >= best)
            return jnp.where(tied, total, -jnp.inf)

        return sequential_pick(k, n, score)

    return make_slate_policy(n, d, k, core, tracked=tracked_ucb(n, d))


def pareto_ucb_crowd(num_arms: int, dim: int, k: int, boundary: str = "inf") -> Policy:
    """ParetoUCB-Crowd: within each layer, largest crowding distance first (``boundary``: see
    :func:`crowding_distance`). Params: :func:`eta_params`.

    Args:
      num_arms: n, the number of arms.
      dim: d, the number of objectives.
      k: the slate size (1 <= k <= n).
      boundary: how boundary arms of a layer are scored (``CROWD_BOUNDARY``; see :func:`crowding_distance`).

    Returns:
      a slate :class:`~mobandit_jax.types.Policy` (``slate_size = k``) whose params come from :func:`eta_params`.
    """
    n, d = num_arms, dim
    if boundary not in CROWD_BOUNDARY:
        raise ValueError(f"pareto_ucb_crowd: boundary must be one of {CROWD_BOUNDARY}, got {boundary!r}")

    def core(key, state, params, t):
        U = ucb_vectors(state.stats, params, n, d)
        layer = peel_layers(state.dom, k, fill=k)
        return layered_top_k(layer, crowding_distance(U, layer, boundary, state.ranks, k + 1), k)

    return make_slate_policy(n, d, k, core, tracked=tracked_ucb(n, d), ranked=True)


# ----------------------------------------------------------------------------- Pareto-layer TS


def pareto_ts(num_arms: int, dim: int, k: int) -> Policy:
    """ParetoTS: ``theta ~ N(mu_hat, sigma_obs^2 / N)``, layers, random within a layer. Params: :func:`ts_params`.

    Args:
      num_arms: n, the number of arms.
      dim: d, the number of objectives.
      k: the slate size (1 <= k <= n).

    Returns:
      a slate :class:`~mobandit_jax.types.Policy` (``slate_size = k``) whose params come from :func:`ts_params`.
    """
    n, d = num_arms, dim

    def core(key, state, params, t):
        k_theta, k_tie = jax.random.split(key)
        sd = jnp.sqrt(params.sigma_obs ** 2 / jnp.maximum(state.counts, 1.0))  # no rsqrt: the same bits on every CPU
        theta = empirical_means(state) + sd[:, None] * jax.random.normal(k_theta, (n, d))
        return layered_random_k(top_layers(theta, k, fill=k), k_tie, k)

    return make_slate_policy(n, d, k, core)


def pareto_ts_plus(num_arms: int, dim: int, k: int) -> Policy:
    """ParetoTS+: ``sigma_i^2 = (sigma_prior^2 + sigma_obs^2) / N_i``, ``sum_j theta_ij`` tie-break.
    Params: :func:`ts_plus_params`.

    Args:
      num_arms: n, the number of arms.
      dim: d, the number of objectives.
      k: the slate size (1 <= k <= n).

    Returns:
      a slate :class:`~mobandit_jax.types.Policy` (``slate_size = k``) whose params come from :func:`ts_plus_params`.
    """
    n, d = num_arms, dim

    def core(key, state, params, t):
        var = (params.sigma_prior ** 2 + params.sigma_obs ** 2) / jnp.maximum(state.counts, 1.0)
        theta = empirical_means(state) + jnp.sqrt(var)[:, None] * jax.random.normal(key, (n, d))
        return layered_top_k(top_layers(theta, k, fill=k), jnp.sum(theta, axis=-1), k)

    return make_slate_policy(n, d, k, core)


# ----------------------------------------------------------------------------- Chebyshev


CHEBYSHEV_BONUS = ("ucb1", "standard", "pareto")


def chebyshev_ucb(num_arms: int, dim: int, k: int, num_weights: int = 32, bonus: str = "ucb1") -> Policy:
    """ChebyshevUCB: ``min_l w_l (U_il - z_l)`` with a uniformly drawn lattice weight; ``bonus`` is
    ``"ucb1"``, ``"standard"`` or ``"pareto"`` (module docstring). Params: :func:`eta_params`.

    Args:
      num_arms: n, the number of arms.
      dim: d, the number of objectives.
      k: the slate size (1 <= k <= n).
      num_weights: the number of interior simplex lattice weights drawn from (>= 1).
      bonus: ``"ucb1"``, ``"standard"`` or ``"pareto"``: the exploration bonus (module docstring).

    Returns:
      a slate :class:`~mobandit_jax.types.Policy` (``slate_size = k``) whose params come from :func:`eta_params`.
    """
    n, d = num_arms, dim
    if not isinstance(num_weights, int) or num_weights < 1:
        raise ValueError(f"chebyshev_ucb: num_weights must be an integer >= 1, got {num_weights!r}")
    if bonus not in CHEBYSHEV_BONUS:
        raise ValueError(f"chebyshev_ucb: bonus must be one of {CHEBYSHEV_BONUS}, got {bonus!r}")
    weights = jnp.asarray(simplex_interior_lattice(d, num_weights), jnp.float32)

    def core(key, state, params, t):
        stats, dom_mu = state.stats, state.dom
        mu, front = empirical_means(stats), undominated(dom_mu)
        if bonus == "standard":
            beta = standard_bonus(stats.counts, params.eta, n, d, params.horizon)
        elif bonus == "pareto":
            beta = drugan_nowe_bonus(front, stats.counts, t, d, params.eta)
        else:
            beta = jnp.sqrt(2.0 * params.eta * jnp.log(t) / jnp.maximum(stats.counts, 1.0))
        U = mu + beta[:, None]
        w = weights[jax.random.randint(key, (), 0, weights.shape[0])]
        return top_k(jnp.min(w * (U - empirical_nadir(mu, front)), axis=-1), k)

    return make_slate_policy(n, d, k, core, tracked=empirical_means_of)


def chebyshev_ucb_plus(num_arms: int, dim: int, k: int) -> Policy:
    """ChebyshevUCB+: top-k of ``min_l (U_il - z_l) / d``. Params: :func:`eta_params`.

    Args:
      num_arms: n, the number of arms.
      dim: d, the number of objectives.
      k: the slate size (1 <= k <= n).

    Returns:
      a slate :class:`~mobandit_jax.types.Policy` (``slate_size = k``) whose params come from :func:`eta_params`.
    """
    n, d = num_arms, dim

    def core(key, state, params, t):
        stats, dom_mu = state.stats, state.dom
        mu = empirical_means(stats)
        U = ucb_vectors(stats, params, n, d)
        return top_k(jnp.min((U - empirical_nadir(mu, undominated(dom_mu))) / d, axis=-1), k)

    return make_slate_policy(n, d, k, core, tracked=empirical_means_of)


# ----------------------------------------------------------------------------- linear / HV scalarisations


def scalar_ucb(num_arms: int, dim: int, k: int) -> Policy:
    """ScalarUCB: top-k of ``mean_j mu_hat_ij + sqrt(eta log(n T^2) / (2 N_i))``. Params: :func:`eta_params`.

    Args:
      num_arms: n, the number of arms.
      dim: d, the number of objectives.
      k: the slate size (1 <= k <= n).

    Returns:
      a slate :class:`~mobandit_jax.types.Policy` (``slate_size = k``) whose params come from :func:`eta_params`.
    """
    n, d = num_arms, dim

    def core(key, state, params, t):
        bonus = jnp.sqrt(params.eta * jnp.log(n * params.horizon ** 2) / (2.0 * jnp.maximum(state.counts, 1.0)))
        return top_k(jnp.mean(empirical_means(state), axis=-1) + bonus, k)

    return make_slate_policy(n, d, k, core)


def scalar_ucb_randw(num_arms: int, dim: int, k: int) -> Policy:
    """ScalarUCB-RandW: top-k of ``w . U_i``, ``w ~ Dirichlet(1)`` each round. Params: :func:`eta_params`.

    Args:
      num_arms: n, the number of arms.
      dim: d, the number of objectives.
      k: the slate size (1 <= k <= n).

    Returns:
      a slate :class:`~mobandit_jax.types.Policy` (``slate_size = k``) whose params come from :func:`eta_params`.
    """
    n, d = num_arms, dim

    def core(key, state, params, t):
        w = jax.random.dirichlet(key, jnp.ones((d,), jnp.float32))
        return top_k(ucb_vectors(state, params, n, d) @ w, k)

    return make_slate_policy(n, d, k, core)


def hv_scalar_ucb(num_arms: int, dim: int, k: int) -> Policy:
    """HVScalarUCB: top-k of the HV scalarisation along one random direction. Params: :func:`eta_ref_params`.

    Args:
      num_arms: n, the number of arms.
      dim: d, the number of objectives.
      k: the slate size (1 <= k <= n).

    Returns:
      a slate :class:`~mobandit_jax.types.Policy` (``slate_size = k``) whose params come from :func:`eta_ref_params`.
    """
    n, d = num_arms, dim

    def core(key, state, params, t):
        lam = positive_sphere(key, (d,))
        return top_k(hv_scalarization(ucb_vectors(state, params, n, d), params.ref, lam), k)

    return make_slate_policy(n, d, k, core)


def hv_scalar_ucb_plus(num_arms: int, dim: int, k: int) -> Policy:
    """HVScalarUCB+: slot ``j`` takes ``argmax_{i not chosen} min_l (U_il - r_l) / lambda^(j)_l``.
    Params: :func:`eta_ref_params`.

    Args:
      num_arms: n, the number of arms.
      dim: d, the number of objectives.
      k: the slate size (1 <= k <= n).

    Returns:
      a slate :class:`~mobandit_jax.types.Policy` (``slate_size = k``) whose params come from :func:`eta_ref_params`.
    """
    n, d = num_arms, dim

    def core(key, state, params, t):
        lam = positive_sphere(key, (k, d))
        U = ucb_vectors(state, params, n, d)
        directional = jnp.min((U[None, :, :] - params.ref) / lam[:, None, :], axis=-1)  # (k, n)
        return sequential_pick(k, n, lambda l, chosen, taken: directional[l])

    return make_slate_policy(n, d, k, core)


def random_k(num_arms: int, dim: int, k: int) -> Policy:
    """RandomK: ``k`` distinct arms uniformly at random. Params: :func:`base_params`.

    Args:
      num_arms: n, the number of arms.
      dim: d, the number of objectives.
      k: the slate size (1 <= k <= n).

    Returns:
      a slate :class:`~mobandit_jax.types.Policy` (``slate_size = k``) whose params come from :func:`base_params`.
    """
    n = num_arms

    def core(key, state, params, t):
        return top_k(jax.random.uniform(key, (n,)), k)

    return make_slate_policy(n, dim, k, core)
