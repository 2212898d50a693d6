"""Top-k slate policies of Gutowski et al.: THV-UCB (Algorithm 1) and the 13 baselines of "Baselines".

Every policy picks a slate ``S_t`` of ``k`` distinct arms per round under semi-bandit feedback
(``Observation.reward`` is ``(k, d)``). All share (i) the state: round counter ``t``, pull counts
``N_i`` and reward sums; (ii) the forced initialisation of Algorithm 1, lines 3-7 ("All methods share
the same initialization scheme"): while some arm has fewer than ``m0`` pulls (default 2), play the
``k`` arms with the smallest counts (ties: lowest index). Policies that compare a per-arm vector which
changes only when its arm is played (``mu_hat``, or a UCB with the standard bonus below) keep its
dominance matrix in the state and recompute only the played arms' rows and columns each round
(ParetoUCB-Crowd also keeps each objective's ranks of its UCBs); THV-UCB makes the next round's
confidence bounds together with the state. Either way a round sees the same values as a full recomputation.

THV-UCB (Algorithm 1, lines 8-22). At round ``t`` (1-based)::

    beta_i(t) = sqrt(2 eta log(n d t^2 / delta) / max{1, N_i(t-1)})
    u_i = clip(mu_hat_i + beta_i 1, 0, 1),   L_i = mu_hat_i - beta_i 1
    A_t = {i : for all j != i, u_i is not <= L_j}      (safe pruning; A_t = [n] if |A_t| < k)
    S <- S + argmax_{i in A_t \\ S} HV^UCB(S + i) - HV^UCB(S)   (k greedy steps)

``delta`` defaults to ``1/T`` (Theorem 3); the optional UCB clip to [0, 1] is on by default and
applies to both the greedy step and the pruning test. Greedy ties go to the lowest arm index; gains
below ``GAIN_TOL = 1e-6`` count as zero, so float round-off does not pick among arms that add no
optimistic volume (this happens early on, when a clipped UCB box covers the whole unit cube).

Baselines (formulas as stated in "Baselines"; ``U_i = mu_hat_i + beta_i 1``; all select top-k):

- ``pareto_ucb`` (faithful, Drugan & Nowe 2013): ``beta_i = sqrt(2 log(t (d |F_hat|)^{1/4}) / N_i)``
  with ``|F_hat|`` the size of the empirical Pareto front; fill the slate layer by layer (Pareto
  layers of ``U``), uniformly at random within a layer. No eta.
- ``pareto_ucb_plus`` (Tables 1-5; not spelled out in the text): the layered selection with the
  ``sum_j U_ij`` tie-break of the ParetoUCB description and the standard eta bonus below (Table 2
  gives it an eta).
- ``pareto_ucb_div``: layers on ``U``; within a layer each slot takes the arm maximising the
  minimum ``l_inf`` distance (UCB space) to the arms already in the slate; the first slot, with
  nothing selected, and remaining ties use ``sum_j U_ij``.
- ``pareto_ucb_crowd``: layers on ``U``, ranked within a layer by the NSGA-II crowding distance
  (Deb et al. 2002) computed inside that layer. The paper does not say how a layer's boundary arms
  rank: ``boundary = "inf"`` (NSGA-II, the default) ranks them first, ``"neighbour"`` gives a boundary
  arm the normalised gap to its one neighbour, ``"zero"`` ranks it last (per objective).
- ``pareto_ts`` (faithful, Yahyaa & Manderick 2015): ``theta_i ~ N(mu_hat_i, sigma_obs^2/N_i I)``,
  layers on ``theta``, uniform random within a layer. ``sigma_obs`` defaults to the env's sigma.
- ``pareto_ts_plus``: ``sigma_i^2 = (sigma_prior^2 + sigma_obs^2) / N_i`` (``sigma_prior = 0.5``,
  the largest standard deviation of a [0, 1] reward; the paper gives no value), ``sum_j theta_ij``
  tie-break.
- ``chebyshev_ucb`` (Mandow et al. 2023, Algorithm C2): weights on the interior of the simplex lattice
  (``num_weights`` = at least 32 of them, uniformly spread), one drawn uniformly per round, score
  ``min_l w_l (U_il - z_l)`` with ``z`` the nadir of the empirical Pareto front. Its bonus is not
  given in the paper; ``bonus = "ucb1"`` (the default) is UCB1's ``sqrt(2 eta log t / N_i)`` (eta scales
  it, Table 2 tunes it), ``"standard"`` the standard bonus below, ``"pareto"`` ParetoUCB's
  ``sqrt(2 eta log(t (d |F_hat|)^{1/4}) / N_i)``.
- ``chebyshev_ucb_plus``: ``w = 1/d`` fixed, standard bonus.
- ``scalar_ucb`` (Auer et al. 2002): scalar mean of ``w . X`` with ``w = 1/d`` plus
  ``sqrt(eta log(n T^2) / (2 N_i))``.
- ``scalar_ucb_randw`` (Paria et al. 2020): ``w ~ Dirichlet(1)`` per round, score ``w . U_i``.
- ``hv_scalar_ucb`` (Zhang & Golovin 2020, Lemma 5): ``lambda`` uniform on the positive unit sphere,
  score ``(min_l max(0, (U_il - r_l) / lambda_l))^d``.
- ``hv_scalar_ucb_plus`` (Zhang 2024): ``k`` directions per round, slot ``j`` takes
  ``argmax_{i not chosen} min_l (U_il - r_l) / lambda^(j)_l``.
- ``random_k``: a uniformly random slate.

The standard bonus (ChebyshevUCB+, and our reading for every eta baseline whose bonus is not given:
ParetoUCB+/-Div/-Crowd, ScalarUCB-RandW, HVScalarUCB(+)) is ``sqrt(eta log(n d T^2) / (2 N_i))``.

Every policy is a public factory ``name(num_arms, dim, k, ...) -> Policy`` with params built by
``*_params`` functions; ``eta`` defaults to :data:`ETA` (:data:`THV_ETA` for THV-UCB). The paper's
tuned ``eta*`` (Table 2) are written in the specs that use them.
"""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np
import jax
import jax.numpy as jnp

from ..kernels import greedy_hv_subset
from ..kernels.counts import CountState, empirical_means, init_counts, record
from ..kernels.dominance import dominance_matrix, refresh_dominance, undominated, weakly_dominates
from ..kernels.order import key_ranks, rank_below, refresh_key_ranks, sort_by_layer_value
from ..types import Policy
from ..registry import register_policy

FAMILY = "slate"
# Marginal gains at or below this are zero-gain ties (float32 round-off of the kernel's clipped-box
# identity is ~1e-8 where the exact gain is 0, e.g. once an arm's clipped UCB box is [0, 1]^d).
GAIN_TOL = 1e-6

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
    """The empty state of Algorithm 1, line 2."""
    return init_counts(n, d)


def update_state(state: SlateState, action, obs) -> SlateState:
    """Semi-bandit update of counts and sums for the ``k`` played arms (Algorithm 1, line 22)."""
    return record(state, action, obs.reward)


def forced_slate(counts, k: int):
    """The ``k`` arms with the smallest pull counts, ties to the lowest index (Algorithm 1, line 4)."""
    return top_k(-counts, k)


def standard_bonus(counts, eta, n: int, d: int, horizon):
    """The standard UCB bonus ``sqrt(eta log(n d T^2) / (2 N_i))`` (ChebyshevUCB+)."""
    return jnp.sqrt(eta * jnp.log(n * d * horizon**2) / (2.0 * jnp.maximum(counts, 1.0)))


def drugan_nowe_bonus(front, counts, t, d: int, eta=None):
    """ParetoUCB's bonus ``sqrt(2 log(t (d |F_hat|)^{1/4}) / N_i)``, ``|F_hat|`` the size of the empirical
    Pareto front ``front`` (K,) bool (Drugan & Nowe 2013); ``eta`` (if given) scales the 2."""
    front_size = jnp.sum(front).astype(jnp.float32)
    scale = 2.0 if eta is None else 2.0 * eta
    return jnp.sqrt(scale * jnp.log(t * (d * front_size) ** 0.25) / jnp.maximum(counts, 1.0))


def top_k(score, k: int):
    """Indices of the ``k`` largest scores (ties to the lowest index)."""
    return jax.lax.top_k(score, k)[1].astype(jnp.int32)


def top_layers(x, k: int, fill: int | None = None):
    """Non-dominated sorting rank of ``x (n, d)`` truncated to the first ``k`` layers (others get k).

    With ``fill = s``, peeling stops as soon as the ranked layers hold at least ``s`` arms and every
    arm not yet ranked gets ``k``: a layer-by-layer choice of ``s`` arms never reaches those arms, and
    the ranks (and any within-layer statistic) of the arms it can reach are unchanged.
    """
    return peel_layers(dominance_matrix(x), k, fill)


def peel_layers(dom, k: int, fill: int | None = None):
    """:func:`top_layers` from the dominance matrix ``dom[j, i]`` (j dominates i) of the points."""
    n = dom.shape[0]
    need = n if fill is None else fill

    def more(carry):
        r, rank = carry
        return (r < k) & (jnp.sum(rank < k) < need)

    def peel(carry):
        r, rank = carry
        left = rank == k
        layer = left & ~jnp.any(dom & left[:, None], axis=0)
        return r + 1, jnp.where(layer, r, rank)

    return jax.lax.while_loop(more, peel, (jnp.int32(0), jnp.full((n,), k, jnp.int32)))[1]


def current_layer(layer, taken):
    """Mask of the untaken arms in the best (lowest) layer that still has untaken arms."""
    current = jnp.min(jnp.where(taken, jnp.iinfo(jnp.int32).max, layer))
    return ~taken & (layer == current)


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


def safe_prune(upper, lower, k: int):
    """``A_t`` of Algorithm 1, lines 15-16: arms whose UCB is not <= some other arm's LCB (all if < k)."""
    n = upper.shape[0]
    covered = weakly_dominates(lower, upper) & ~jnp.eye(n, dtype=bool)  # [j, i]: lower_j >= upper_i
    keep = ~jnp.any(covered, axis=0)
    return jnp.where(jnp.sum(keep) < k, jnp.ones_like(keep), keep)


CROWD_BOUNDARY = ("inf", "neighbour", "zero")


def crowding_distance(x, layer, boundary: str = "inf", ranks=None):
    """NSGA-II crowding distance of ``x (n, d)`` computed within each layer (``ranks``: optional
    :func:`key_ranks` of ``x.T``, which saves ranking the values).

    Per objective, arms are sorted by (layer, value, index): an arm's neighbours below and above are
    the adjacent arms of its layer in that order (equal values: the later index counts as above), and
    the layer's first and last arms give the span. An arm without a neighbour on either side is a
    boundary arm; its term is +inf (``boundary = "inf"``, NSGA-II), the normalised gap to its one
    neighbour (``"neighbour"``; 0 for an arm alone in its layer) or 0 (``"zero"``). The per-objective
    terms are summed in objective order. ``x`` must be finite.
    """
    if boundary not in CROWD_BOUNDARY:
        raise ValueError(f"boundary must be one of {CROWD_BOUNDARY}, got {boundary!r}")
    n, d = x.shape
    layers, values, arm = sort_by_layer_value(layer, x.T, ranks)
    same_next = jnp.concatenate([layers[:, 1:] == layers[:, :-1], jnp.zeros((d, 1), bool)], axis=1)
    same_prev = jnp.concatenate([jnp.zeros((d, 1), bool), same_next[:, :-1]], axis=1)
    up = jnp.where(same_next, jnp.roll(values, -1, axis=1), jnp.inf)
    down = jnp.where(same_prev, jnp.roll(values, 1, axis=1), -jnp.inf)
    first = rank_below(layer)[arm]  # a layer's sorted positions run from #{lower layers} to n - 1 - #{higher}
    last = n - 1 - rank_below(-layer)[arm]
    span = jnp.take_along_axis(values, last, axis=1) - jnp.take_along_axis(values, first, axis=1)
    if boundary == "inf":
        edge = jnp.inf
    elif boundary == "zero":
        edge = 0.0
    else:
        gap = jnp.where(same_next, up - values, 0.0) + jnp.where(same_prev, values - down, 0.0)
        edge = gap / jnp.maximum(span, 1e-12)
    part = jnp.where(same_next & same_prev, (up - down) / jnp.maximum(span, 1e-12), edge)  # sorted order
    part = jnp.zeros((d, n), x.dtype).at[jnp.arange(d)[:, None], arm].set(part)
    total = part[0]
    for j in range(1, d):
        total = total + part[j]
    return total


def empirical_nadir(mu, front):
    """Nadir of the empirical Pareto front ``front`` (K,) bool: coordinate-wise minimum over its ``mu_hat``."""
    return jnp.min(jnp.where(front[:, None], mu, jnp.inf), axis=0)


def simplex_interior_lattice(d: int, at_least: int) -> np.ndarray:
    """Uniformly spread weights ``h / H`` with integer ``h_l >= 1``, smallest ``H`` giving >= ``at_least``."""
    H = d
    while math.comb(H - 1, d - 1) < at_least:
        H += 1
    rows = [np.array(c, float) for c in itertools.product(range(1, H + 1), repeat=d) if sum(c) == H]
    return np.stack(rows) / H


def positive_sphere(key, shape):
    """Directions uniform on the positive unit sphere ``S^{d-1}_+`` (``|N(0, I)|`` normalised)."""
    z = jnp.abs(jax.random.normal(key, shape))
    return z / jnp.maximum(jnp.linalg.norm(z, axis=-1, keepdims=True), 1e-12)


# ----------------------------------------------------------------------------- params

M0 = 2  # forced initial pulls per arm (Algorithm 1, lines 3-7)
ETA = 0.1  # default confidence scale of the eta baselines
THV_ETA = 0.01  # default eta of THV-UCB
SIGMA_PRIOR = 0.5  # ParetoTS+: the largest standard deviation of a [0, 1] reward


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


class ThvUcbParams(NamedTuple):
    """THV-UCB: ``m0``, ``T``, ``eta``, the confidence level ``delta`` and the reference point ``r``."""

    m0: jnp.ndarray
    horizon: jnp.ndarray
    eta: jnp.ndarray
    delta: jnp.ndarray
    ref: jnp.ndarray


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


def _f(x):
    return jnp.asarray(x, float)  # the default float dtype: float32, float64 under x64


def _positive(key: str, value):
    arr = np.asarray(value, float)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{key} must be > 0, got {value!r}")
    return _f(value)


def base_params(horizon, m0=M0) -> BaseParams:
    """:class:`BaseParams`; ``m0 >= 1``."""
    if not (isinstance(m0, (int, float)) and not isinstance(m0, bool) and m0 >= 1):
        raise ValueError(f"m0 (minimum pulls) must be a number >= 1, got {m0!r}")
    return BaseParams(_f(m0), _f(float(horizon)))


def eta_params(horizon, eta=ETA, m0=M0) -> EtaParams:
    """:class:`EtaParams`; ``eta > 0``."""
    return EtaParams(*base_params(horizon, m0), _positive("eta", eta))


def eta_ref_params(horizon, ref, eta=ETA, m0=M0) -> EtaRefParams:
    """:class:`EtaRefParams`."""
    return EtaRefParams(*eta_params(horizon, eta, m0), _f(ref))


def thv_ucb_params(horizon, ref, eta=THV_ETA, delta=None, m0=M0) -> ThvUcbParams:
    """:class:`ThvUcbParams`; ``delta`` defaults to ``1/T`` (Theorem 3)."""
    if delta is None:
        delta = 1.0 / max(int(horizon), 2)
    if not (0 < float(delta) < 1):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    p = eta_params(horizon, eta, m0)
    return ThvUcbParams(p.m0, p.horizon, p.eta, _f(delta), _f(ref))


def ts_params(horizon, sigma_obs, m0=M0) -> TsParams:
    """:class:`TsParams`; ``sigma_obs >= 0``."""
    if sigma_obs is None or not np.isfinite(sigma_obs) or sigma_obs < 0:
        raise ValueError(f"sigma_obs must be >= 0, got {sigma_obs!r}")
    return TsParams(*base_params(horizon, m0), _f(sigma_obs))


def ts_plus_params(horizon, sigma_obs, sigma_prior=SIGMA_PRIOR, m0=M0) -> TsPlusParams:
    """:class:`TsPlusParams`; ``sigma_obs, sigma_prior >= 0``."""
    if not np.isfinite(sigma_prior) or sigma_prior < 0:
        raise ValueError(f"sigma_prior must be >= 0, got {sigma_prior!r}")
    return TsPlusParams(*ts_params(horizon, sigma_obs, m0), _f(sigma_prior))


def make_slate_policy(n: int, d: int, k: int, core, tracked=None, ranked: bool = False, bounds=None) -> Policy:
    """Wrap ``core(key, state, params, t) -> (k,)`` with the shared state and forced initialisation.

    With ``tracked(stats, params) -> (n, d)``, a per-arm vector whose row ``i`` changes only when arm
    ``i`` is played, the state is a :class:`TrackedState` that keeps its dominance matrix: each update
    recomputes the rows and columns of the ``k`` played arms (:func:`refresh_dominance`), the same
    matrix as a full recomputation at a ``k / n`` share of its comparisons. ``ranked`` also keeps each
    objective's (value, index) ranks of the vector (:func:`refresh_key_ranks`). With
    ``bounds(stats, params) -> (upper, lower)``, the state is a :class:`BoundsState` holding the bounds
    of the round after ``stats``.
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
    """``mu_hat`` as a tracked vector (:func:`make_slate_policy`)."""
    return empirical_means(stats)


def ucb_vectors(state, params, n, d):
    """``U_i = mu_hat_i + sqrt(eta log(n d T^2) / (2 N_i)) 1`` (the standard bonus; it does not depend on
    ``t``, so ``U_i`` changes only when arm ``i`` is played)."""
    return empirical_means(state) + standard_bonus(state.counts, params.eta, n, d, params.horizon)[:, None]


def tracked_ucb(n: int, d: int):
    """:func:`ucb_vectors` as a tracked vector (:func:`make_slate_policy`)."""
    return lambda stats, params: ucb_vectors(stats, params, n, d)


# ----------------------------------------------------------------------------- THV-UCB


def thv_ucb(num_arms: int, dim: int, k: int, clip: bool = True) -> Policy:
    """THV-UCB (Algorithm 1, lines 9-21); ``clip`` clips the UCBs to [0, 1]. Params: :func:`thv_ucb_params`."""
    n, d = num_arms, dim

    def bounds(stats, params):  # lines 10-14, for round t = (rounds played) + 1
        t = (stats.t + 1).astype(jnp.float32)
        mu = empirical_means(stats)
        beta = jnp.sqrt(2.0 * params.eta * jnp.log(n * d * t**2 / params.delta) / jnp.maximum(stats.counts, 1.0))
        upper = mu + beta[:, None]
        if clip:
            upper = jnp.clip(upper, 0.0, 1.0)
        return upper, mu - beta[:, None]

    def core(key, state, params, t):
        candidates = safe_prune(state.upper, state.lower, k)
        return greedy_hv_subset(state.upper, params.ref, k, GAIN_TOL, candidates)  # lines 17-21

    return make_slate_policy(n, d, k, core, bounds=bounds)


# ----------------------------------------------------------------------------- Pareto-layer UCB


def pareto_ucb(num_arms: int, dim: int, k: int) -> Policy:
    """ParetoUCB: ``beta = sqrt(2 log(t (d |F_hat|)^{1/4}) / N)``, random within layers. Params: :func:`base_params`."""
    n, d = num_arms, dim

    def core(key, state, params, t):
        stats, dom_mu = state.stats, state.dom
        mu = empirical_means(stats)
        beta = drugan_nowe_bonus(undominated(dom_mu), stats.counts, t, d)
        layer = top_layers(mu + beta[:, None], k, fill=k)
        return layered_top_k(layer, jax.random.uniform(key, (n,)), k)

    return make_slate_policy(n, d, k, core, tracked=empirical_means_of)


def pareto_ucb_plus(num_arms: int, dim: int, k: int) -> Policy:
    """ParetoUCB+: layers on ``U``, ``sum_j U_ij`` tie-break. Params: :func:`eta_params`."""
    n, d = num_arms, dim

    def core(key, state, params, t):
        U = ucb_vectors(state.stats, params, n, d)
        return layered_top_k(peel_layers(state.dom, k, fill=k), jnp.sum(U, axis=-1), k)

    return make_slate_policy(n, d, k, core, tracked=tracked_ucb(n, d))


def pareto_ucb_div(num_arms: int, dim: int, k: int) -> Policy:
    """ParetoUCB-Div: per slot, current layer, then maximin ``l_inf`` distance, then ``sum U``. Params: :func:`eta_params`."""
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
    :func:`crowding_distance`). Params: :func:`eta_params`."""
    n, d = num_arms, dim
    if boundary not in CROWD_BOUNDARY:
        raise ValueError(f"pareto_ucb_crowd: boundary must be one of {CROWD_BOUNDARY}, got {boundary!r}")

    def core(key, state, params, t):
        U = ucb_vectors(state.stats, params, n, d)
        layer = peel_layers(state.dom, k, fill=k)
        return layered_top_k(layer, crowding_distance(U, layer, boundary, state.ranks), k)

    return make_slate_policy(n, d, k, core, tracked=tracked_ucb(n, d), ranked=True)


# ----------------------------------------------------------------------------- Pareto-layer TS


def pareto_ts(num_arms: int, dim: int, k: int) -> Policy:
    """ParetoTS: ``theta ~ N(mu_hat, sigma_obs^2 / N)``, layers, random within a layer. Params: :func:`ts_params`."""
    n, d = num_arms, dim

    def core(key, state, params, t):
        k_theta, k_tie = jax.random.split(key)
        sd = params.sigma_obs / jnp.sqrt(jnp.maximum(state.counts, 1.0))
        theta = empirical_means(state) + sd[:, None] * jax.random.normal(k_theta, (n, d))
        return layered_top_k(top_layers(theta, k, fill=k), jax.random.uniform(k_tie, (n,)), k)

    return make_slate_policy(n, d, k, core)


def pareto_ts_plus(num_arms: int, dim: int, k: int) -> Policy:
    """ParetoTS+: ``sigma_i^2 = (sigma_prior^2 + sigma_obs^2) / N_i``, ``sum_j theta_ij`` tie-break. Params: :func:`ts_plus_params`."""
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
    ``"ucb1"``, ``"standard"`` or ``"pareto"`` (module docstring). Params: :func:`eta_params`."""
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
    """ChebyshevUCB+: top-k of ``min_l (U_il - z_l) / d``. Params: :func:`eta_params`."""
    n, d = num_arms, dim

    def core(key, state, params, t):
        stats, dom_mu = state.stats, state.dom
        mu = empirical_means(stats)
        U = ucb_vectors(stats, params, n, d)
        return top_k(jnp.min((U - empirical_nadir(mu, undominated(dom_mu))) / d, axis=-1), k)

    return make_slate_policy(n, d, k, core, tracked=empirical_means_of)


# ----------------------------------------------------------------------------- linear / HV scalarisations


def scalar_ucb(num_arms: int, dim: int, k: int) -> Policy:
    """ScalarUCB: top-k of ``mean_j mu_hat_ij + sqrt(eta log(n T^2) / (2 N_i))``. Params: :func:`eta_params`."""
    n, d = num_arms, dim

    def core(key, state, params, t):
        bonus = jnp.sqrt(params.eta * jnp.log(n * params.horizon ** 2) / (2.0 * jnp.maximum(state.counts, 1.0)))
        return top_k(jnp.mean(empirical_means(state), axis=-1) + bonus, k)

    return make_slate_policy(n, d, k, core)


def scalar_ucb_randw(num_arms: int, dim: int, k: int) -> Policy:
    """ScalarUCB-RandW: top-k of ``w . U_i``, ``w ~ Dirichlet(1)`` each round. Params: :func:`eta_params`."""
    n, d = num_arms, dim

    def core(key, state, params, t):
        w = jax.random.dirichlet(key, jnp.ones((d,), jnp.float32))
        return top_k(ucb_vectors(state, params, n, d) @ w, k)

    return make_slate_policy(n, d, k, core)


def hv_scalarization(U, ref, lam):
    """``s_lambda(U) = (min_l max(0, (U_l - r_l) / lambda_l))^d`` (Zhang & Golovin 2020, Lemma 5)."""
    d = U.shape[-1]
    return jnp.min(jnp.maximum(0.0, (U - ref) / lam), axis=-1) ** d


def hv_scalar_ucb(num_arms: int, dim: int, k: int) -> Policy:
    """HVScalarUCB: top-k of the HV scalarisation along one random direction. Params: :func:`eta_ref_params`."""
    n, d = num_arms, dim

    def core(key, state, params, t):
        lam = positive_sphere(key, (d,))
        return top_k(hv_scalarization(ucb_vectors(state, params, n, d), params.ref, lam), k)

    return make_slate_policy(n, d, k, core)


def hv_scalar_ucb_plus(num_arms: int, dim: int, k: int) -> Policy:
    """HVScalarUCB+: slot ``j`` takes ``argmax_{i not chosen} min_l (U_il - r_l) / lambda^(j)_l``. Params: :func:`eta_ref_params`."""
    n, d = num_arms, dim

    def core(key, state, params, t):
        lam = positive_sphere(key, (k, d))
        U = ucb_vectors(state, params, n, d)
        directional = jnp.min((U[None, :, :] - params.ref) / lam[:, None, :], axis=-1)  # (k, n)
        return sequential_pick(k, n, lambda l, chosen, taken: directional[l])

    return make_slate_policy(n, d, k, core)


def random_k(num_arms: int, dim: int, k: int) -> Policy:
    """RandomK: ``k`` distinct arms uniformly at random. Params: :func:`base_params`."""
    n = num_arms

    def core(key, state, params, t):
        return top_k(jax.random.uniform(key, (n,)), k)

    return make_slate_policy(n, dim, k, core)


# ----------------------------------------------------------------------------- registry rows


def _sizes(ctx) -> dict:
    return dict(num_arms=ctx.num_arms, dim=ctx.dim, k=int(ctx.slate_size))


def _ref(ctx):
    return np.zeros(ctx.dim) if ctx.ref is None else ctx.ref


def _sigma(ctx, sigma_obs):
    if sigma_obs is None:
        sigma_obs = ctx.noise_sigma
        if sigma_obs is None:
            raise ValueError("sigma_obs not given and the environment reports no noise level")
    return sigma_obs


def _named(name, configure):
    def wrapped(ctx, **options):
        try:
            return configure(ctx, **options)
        except ValueError as err:
            raise ValueError(f"{name}: {err}") from None

    return wrapped


_ROWS = {
    "thv_ucb": (thv_ucb, "THV-UCB: greedy optimistic marginal hypervolume with safe pruning (Gutowski et al., Alg. 1)",
                lambda ctx, eta, delta, clip, m0: ({**_sizes(ctx), "clip": bool(clip)},
                                                   thv_ucb_params(ctx.horizon, _ref(ctx), eta, delta, m0)),
                dict(eta=THV_ETA, delta=None, clip=True)),
    "pareto_ucb": (pareto_ucb, "ParetoUCB (Drugan & Nowe 2013), Pareto layers on UCB, random within a layer",
                   lambda ctx, m0: (_sizes(ctx), base_params(ctx.horizon, m0)), {}),
    "pareto_ts": (pareto_ts, "ParetoTS (Yahyaa & Manderick 2015): Gaussian posterior samples, Pareto layers",
                  lambda ctx, sigma_obs, m0: (_sizes(ctx), ts_params(ctx.horizon, _sigma(ctx, sigma_obs), m0)),
                  dict(sigma_obs=None)),
    "pareto_ts_plus": (pareto_ts_plus, "ParetoTS+: inflated posterior (sigma_prior^2 + sigma_obs^2)/N, sum tie-break",
                       lambda ctx, sigma_obs, sigma_prior, m0: (
                           _sizes(ctx), ts_plus_params(ctx.horizon, _sigma(ctx, sigma_obs), sigma_prior, m0)),
                       dict(sigma_obs=None, sigma_prior=SIGMA_PRIOR)),
    "chebyshev_ucb": (chebyshev_ucb, "ChebyshevUCB (Mandow et al. 2023, Alg. C2): random simplex weight per round",
                      lambda ctx, eta, num_weights, bonus, m0: (
                          {**_sizes(ctx), "num_weights": num_weights, "bonus": bonus}, eta_params(ctx.horizon, eta, m0)),
                      dict(eta=ETA, num_weights=32, bonus="ucb1")),
    "pareto_ucb_crowd": (pareto_ucb_crowd, "ParetoUCB-Crowd: Pareto layers, NSGA-II crowding-distance tie-break",
                         lambda ctx, eta, boundary, m0: ({**_sizes(ctx), "boundary": boundary},
                                                         eta_params(ctx.horizon, eta, m0)),
                         dict(eta=ETA, boundary="inf")),
    "random_k": (random_k, "RandomK: a uniformly random slate each round (after the shared forced init)",
                 lambda ctx, m0: (_sizes(ctx), base_params(ctx.horizon, m0)), {}),
}
for _name, _factory, _doc in (
    (("pareto_ucb_plus", pareto_ucb_plus, "ParetoUCB+ : Pareto layers on UCB with a sum(U) tie-break, eta bonus"),
     ("pareto_ucb_div", pareto_ucb_div, "ParetoUCB-Div: Pareto layers, farthest-point (maximin l_inf) tie-break"),
     ("chebyshev_ucb_plus", chebyshev_ucb_plus, "ChebyshevUCB+: fixed w = 1/d, standard eta bonus"),
     ("scalar_ucb", scalar_ucb, "ScalarUCB (Auer et al. 2002): UCB1 on the mean objective w = 1/d"),
     ("scalar_ucb_randw", scalar_ucb_randw, "ScalarUCB-RandW (Paria et al. 2020): Dirichlet(1) weight per round"))
):
    _ROWS[_name] = (_factory, _doc, lambda ctx, eta, m0: (_sizes(ctx), eta_params(ctx.horizon, eta, m0)), dict(eta=ETA))
for _name, _factory, _doc in (
    (("hv_scalar_ucb", hv_scalar_ucb, "HVScalarUCB (Zhang & Golovin 2020): random HV scalarisation per round"),
     ("hv_scalar_ucb_plus", hv_scalar_ucb_plus, "HVScalarUCB+ (Zhang 2024): k random directions, one arm each"))
):
    _ROWS[_name] = (_factory, _doc, lambda ctx, eta, m0: (_sizes(ctx), eta_ref_params(ctx.horizon, _ref(ctx), eta, m0)),
                    dict(eta=ETA))

SLATE_POLICIES = ("thv_ucb", "pareto_ucb", "pareto_ucb_plus", "pareto_ucb_div", "pareto_ucb_crowd", "pareto_ts",
                  "pareto_ts_plus", "chebyshev_ucb", "chebyshev_ucb_plus", "hv_scalar_ucb", "hv_scalar_ucb_plus",
                  "scalar_ucb", "scalar_ucb_randw", "random_k")
for _name in SLATE_POLICIES:
    _factory, _doc, _configure, _defaults = _ROWS[_name]
    register_policy(f"{FAMILY}/{_name}", FAMILY, _factory, _named(_name, _configure), _doc, m0=M0, **_defaults)
