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

Layout: :mod:`.common` holds the shared state, params and forced initialisation (:func:`make_slate_policy`),
:mod:`.thv_ucb` THV-UCB, :mod:`.baselines` the 13 baselines; the array steps (Pareto layers, slate fills,
safe pruning, crowding distance, scalarisations) are kernels (:mod:`mobandit_jax.kernels.layers`,
``.slates``, ``.pruning``, ``.crowding``, ``.scalarization``). This module registers the 14 policies as
``slate/<name>``.

Each policy takes the options of its row (``mobandit list --options NAME`` lists them with their defaults).

Options:
  m0: pulls of every arm before the policy's own rule (the shared forced initialisation). Allowed: a number
    >= 1.
  eta: scale of the confidence bonus sqrt(2 eta log(...) / N_i). Allowed: a number > 0.
  delta: THV-UCB's confidence level in the bonus; None takes 1/T (Theorem 3). Allowed: a number in (0, 1),
    or None.
  clip: clip THV-UCB's upper bounds to [0, 1]. Allowed: true or false.
  sigma_obs: the observation noise's standard deviation; None takes the environment's. Allowed: a number
    >= 0, or None.
  sigma_prior: ParetoTS+'s prior scale, inflating the posterior. Allowed: a number >= 0.
  num_weights: ChebyshevUCB's number of random simplex weights. Allowed: a whole number >= 1.
  bonus: ChebyshevUCB's confidence bonus. Allowed: 'ucb1', 'standard' or 'pareto'.
  boundary: ParetoUCB-Crowd's crowding distance of a layer's boundary arms. Allowed: 'inf', 'neighbour' or
    'zero'.

References:
- N. Gutowski, F. Chhel, A. Letard and S. Lamprier, Top-k Pareto Bandits: Hypervolume Regret for
  Multi-Objective Slate Selection (preprint)
- M. M. Drugan and A. Nowe (2013), Designing multi-objective multi-armed bandits algorithms: a study, IJCNN 2013,
  https://doi.org/10.1109/IJCNN.2013.6707036
"""
from __future__ import annotations

import numpy as np

from ...kernels import greedy_hv_subset  # noqa: F401  (the kernels the family uses, in its namespace)
from ...kernels.counts import CountState, empirical_means, init_counts, record  # noqa: F401
from ...kernels.crowding import CROWD_BOUNDARY, crowding_distance  # noqa: F401
from ...kernels.dominance import dominance_matrix, refresh_dominance, undominated, weakly_dominates  # noqa: F401
from ...kernels.layers import current_layer, peel_layers, top_layers  # noqa: F401
from ...kernels.order import key_ranks, rank_below, refresh_key_ranks, sort_by_layer_value  # noqa: F401
from ...kernels.pruning import safe_prune  # noqa: F401
from ...kernels.scalarization import (  # noqa: F401
    empirical_nadir,
    hv_scalarization,
    positive_sphere,
    simplex_interior_lattice,
)
from ...kernels.slates import layered_random_k, layered_top_k, sequential_pick, top_k  # noqa: F401
from ...registry import register_policy
from ...types import Policy  # noqa: F401
from .baselines import (  # noqa: F401
    CHEBYSHEV_BONUS,
    SIGMA_PRIOR,
    TsParams,
    TsPlusParams,
    chebyshev_ucb,
    chebyshev_ucb_plus,
    hv_scalar_ucb,
    hv_scalar_ucb_plus,
    pareto_ts,
    pareto_ts_plus,
    pareto_ucb,
    pareto_ucb_crowd,
    pareto_ucb_div,
    pareto_ucb_plus,
    random_k,
    scalar_ucb,
    scalar_ucb_randw,
    ts_params,
    ts_plus_params,
)
from .common import (  # noqa: F401
    ETA,
    FAMILY,
    M0,
    BaseParams,
    BoundsState,
    EtaParams,
    EtaRefParams,
    SlateState,
    TrackedState,
    _f,
    _positive,
    base_params,
    drugan_nowe_bonus,
    empirical_means_of,
    eta_params,
    eta_ref_params,
    forced_slate,
    init_state,
    make_slate_policy,
    standard_bonus,
    tracked_ucb,
    ucb_vectors,
    update_state,
)
from .thv_ucb import GAIN_TOL, THV_ETA, ThvUcbParams, thv_ucb, thv_ucb_params  # noqa: F401

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
        ctx.require_bounded(name, "UCB indices and the hypervolume of slates against the reference 0 of [0, 1]^d")
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
                      lambda ctx, eta, num_weights, bonus, m0: ({**_sizes(ctx), "num_weights": num_weights,
                                                                 "bonus": bonus}, eta_params(ctx.horizon, eta, m0)),
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
