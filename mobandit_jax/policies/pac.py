"""Fixed-confidence (epsilon, delta)-PAC Pareto set identification under a polyhedral cone ``C = {x : W x >= 0}``.

Two methods, each an :class:`~mobandit_jax.types.Identifier` whose ``identify`` runs the whole
method as one ``jax.lax.while_loop`` (under ``vmap`` the loop runs until every lane has stopped; a
finished lane is frozen), capped at ``horizon`` rounds:

**PaVeBa** (Karagozlu, Yildirim, Ararat, Tekin, "Learning the Pareto Set Under Incomplete Preferences:
Pure Exploration in Vector Bandits", AISTATS 2024), as the authors' library VOPy implements it. Sets:
undecided ``S`` (initially every arm), decided Pareto ``P``, useful ``U`` (members of ``P`` still needed
as comparators). Round ``t``:

1. sample every arm of ``A = S | U`` once; arm ``i``'s confidence region is the ball
   ``B(mu_hat_i, r(n_i))`` around its empirical mean after its ``n_i`` pulls, with

   ``r(n) = sqrt(8 sigma^2 / n * log(pi^2 (d + 1) K n^2 / (6 delta))) / conf_contraction``

   (``conf_contraction = 1``: the radius VOPy implements for the paper; VOPy's default divides it by 32);
2. discard: ``i`` in ``S`` leaves ``S`` if some ``j != i`` in ``A`` has every point of its ball
   C-dominating every point of ``i``'s (``w_n . (mu_hat_j - mu_hat_i) >= (r_i + r_j) ||w_n||`` for all rows);
3. Pareto: with ``A = S | U`` after step 2, ``i`` in ``S`` moves to ``P`` unless some ``j != i`` in ``A``
   has a point ``y`` of its ball and a point ``x`` of ``i``'s with ``W (y - x) >= epsilon alpha``, where
   ``alpha_n = max{w_n . z : z in C, ||z|| <= 1}`` (VOPy's ``cone_alpha * epsilon`` slack);
4. useful: ``U = {p in P : p's ball reaches some s in S by that slack}``.

All comparisons of a step use the regions of the round (simultaneous updates, as VOPy). The run stops
when ``S`` is empty and returns ``P``; at the round cap (or the budget) it returns ``P`` plus the
undecided arms whose empirical means no arm of ``S | P`` C-dominates, and ``stopped`` is False. The
ball tests are closed forms (:mod:`mobandit_jax.kernels.cone_regions`): no LP or SOCP solver runs.
Option ``radius``: ``"pulls"`` (default) gives each arm the radius of its own pull count ``n_i``;
``"round"`` is VOPy's reading, the radius ``r(t)`` of the round for every arm of ``A`` (an arm outside
``A`` keeps the region of the last round it was sampled in). They differ only for a Pareto arm that
rejoins ``U`` after rounds out of it, whose radius ``r(t) < r(n_i)`` then understates its uncertainty.

**Naive Elimination** (Ararat & Tekin, "Vector Optimization with Stochastic Bandit Feedback", AISTATS
2023): ``L`` pulls of every arm, then the empirical C-Pareto set (arms whose empirical mean no other
arm's C-dominates, ``W (mu_hat_j - mu_hat_i) >= 0``). ``L`` is the option ``L`` when positive, else

    ``L = ceil(4 (c sigma beta / epsilon)^2 log(4 d / (2 delta / (K (K - 1)))))``,  ``c = 1 + sqrt(2)``,

with ``beta = max_n ||w_n|| / alpha_n`` the ordering complexity (VOPy's ``ConeTheta2D.beta`` for 2-D
cones). VOPy's code puts its noise *variance* where this formula has ``sigma``; give ``L`` to compare.

Rewards: arm ``i``'s ``j``-th pull is ``sample(key_env, i, j, t, env_params)`` (common random numbers),
any real values; ``sigma`` is the environment's noise scale (``Context.noise_sigma``), or 1/2 for rewards in
[0, 1] without one (Bernoulli, Beta: bounded rewards are 1/2-sub-Gaussian). A finite budget
stops a run before the round whose pulls would exceed it (``spent`` reports the cost).

Step-wise forms (``Identifier.stepwise``, :func:`paveba_steps`, :func:`naive_steps`): the same rounds
(:func:`paveba_round`, :func:`naive_returned`) for a caller that owns the pulls; ``short`` halts (the caller cannot
afford the round). Fed the bulk run's pulls round by round, each returns the bulk run's set.

Each ``identify`` returns a :class:`PacResult`: the fields of an ``IdentifyResult`` plus the
``epsilon`` the result is scored at (the pac metrics' epsilon-F1).

References:
- E. M. Karagozlu, Y. C. Yildirim, C. Ararat and C. Tekin (2024), Learning the Pareto Set Under Incomplete
  Preferences: Pure Exploration in Vector Bandits, AISTATS 2024, https://proceedings.mlr.press/v238/karagozlu24a.html
- C. Ararat and C. Tekin (2023), Vector Optimization with Stochastic Bandit Feedback, AISTATS 2023,
  https://hdl.handle.net/11693/114415
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels.cone_regions import (
    ConeGeometry,
    ball_dominated,
    ball_reaches_any,
    cone_geometry,
    ordering_complexity,
    validate_pac_cone,
)
from ..kernels.lanes import packed_indices
from ..registry import register_policy
from ..types import Identifier, Stepwise

C_NAIVE = 1.0 + math.sqrt(2.0)  # the constant c of Naive Elimination's L (any c > 0 works; VOPy's choice)
DRAW_WIDTH = 8  # arms per block of PaVeBa's sampling
BOUNDED_SIGMA = 0.5  # rewards in [0, 1] (Bernoulli, Beta) are 1/2-sub-Gaussian


class PacResult(NamedTuple):
    """What a PAC run returns: an ``IdentifyResult``'s fields, then the ``epsilon`` it is scored at."""

    recommended: Any  # (K,) bool, the returned set
    spent: Any  # () cost of the pulls made
    pulls: Any  # (K,) int32 pulls per arm
    stopped: Any  # () bool: the stopping rule fired before the round cap and the budget
    epsilon: Any  # () the method's accuracy epsilon
    delta: Any = None  # () the method's confidence delta (None: the method has none; the lower-bound ratio is NaN)


class PavebaParams(NamedTuple):
    """Sweepable params of PaVeBa: accuracy, confidence, radius contraction, noise scale, the radius reading,
    the cone's arrays, the round cap (int32) and the budget (``inf``: none)."""

    epsilon: jnp.ndarray
    delta: jnp.ndarray
    conf_contraction: jnp.ndarray
    sigma: jnp.ndarray
    round_radius: jnp.ndarray  # () bool: option radius = "round"
    geo: ConeGeometry
    cap: jnp.ndarray
    budget: jnp.ndarray


class NaiveParams(NamedTuple):
    """Sweepable params of Naive Elimination: pulls per arm ``L`` (int32), the cone, the cap, budget and epsilon."""

    L: jnp.ndarray
    epsilon: jnp.ndarray
    W: jnp.ndarray
    cap: jnp.ndarray
    budget: jnp.ndarray


class PavebaCarry(NamedTuple):
    """The loop carry of PaVeBa: the round, pulls (K,) and reward sums (K, d) per arm, each arm's radius (K,),
    the undecided ``S``, Pareto ``P`` and useful ``U`` sets (K,) bool, the cost spent, and whether the budget
    halted the run."""

    t: Any
    counts: Any
    sums: Any
    r: Any
    S: Any
    P: Any
    U: Any
    spent: Any
    halted: Any


class NaiveCarry(NamedTuple):
    """The loop carry of Naive Elimination: pulls per arm so far, reward sums (K, d), the cost spent, and
    whether the budget halted the run."""

    r: Any
    sums: Any
    spent: Any
    halted: Any


def paveba_radius(n, num_arms: int, dim: int, sigma, delta, conf_contraction=1.0, xp=jnp):
    """PaVeBa's ``r(n) = sqrt(8 sigma^2 log(pi^2 (d + 1) K n^2 / (6 delta)) / n) / conf_contraction``, in ``xp``."""
    n = xp.maximum(xp.asarray(n), 1).astype(xp.asarray(sigma).dtype if xp is jnp else float)
    log_term = xp.log(math.pi ** 2 * (dim + 1) * num_arms * n * n / (6.0 * delta))
    return xp.sqrt(8.0 * sigma * sigma / n * log_term) / conf_contraction


def naive_elimination_L(num_arms: int, dim: int, sigma: float, epsilon: float, delta: float, beta: float) -> int:
    """Naive Elimination's pulls per arm, ``ceil(4 (c sigma beta / epsilon)^2 log(2 d K (K - 1) / delta))`` (>= 1)."""
    K = num_arms
    value = 4.0 * (C_NAIVE * sigma * beta / epsilon) ** 2 * math.log(4.0 * dim / (2.0 * delta / (K * (K - 1))))
    return max(1, int(math.ceil(value)))


def _pulls(sample, key_env, env_params, arms, counts, t):
    """Pull ``counts[n]`` of arm ``arms[n]`` for each ``n``: rewards ``(n, d)`` and costs ``(n,)``."""
    return jax.vmap(lambda i, j: sample(key_env, i, j, t, env_params))(arms, counts)


def _draw(sample, key_env, env_params, counts, t):
    """Every arm's next pull: rewards ``(K, d)`` and costs ``(K,)`` (pull ``counts[i]`` of arm ``i``)."""
    return _pulls(sample, key_env, env_params, jnp.arange(counts.shape[0]), counts, t)


def _draw_among(sample, key_env, env_params, counts, t, among, width: int = DRAW_WIDTH):
    """:func:`_draw` for the arms of ``among`` (``(K,)`` bool), ``width`` arms at a time; zeros elsewhere.

    Each pull is the same function of ``(key_env, arm, pull index, t)`` as in :func:`_draw`, so the values
    are the same; only the arms that are sampled are drawn."""
    K = counts.shape[0]
    order = packed_indices(among, width)  # K (out of range) past the last arm

    def block(state):
        start, ys, cs = state
        arms = jax.lax.dynamic_slice(order, (start,), (width,))
        at = jnp.minimum(arms, K - 1)
        y, c = _pulls(sample, key_env, env_params, at, counts[at], t)
        return start + width, ys.at[arms].set(y, mode="drop"), cs.at[arms].set(c, mode="drop")

    y0, c0 = jax.eval_shape(lambda: sample(key_env, 0, counts[0], t, env_params))
    init = (jnp.zeros((), jnp.int32), jnp.zeros((K,) + y0.shape, y0.dtype), jnp.zeros((K,) + c0.shape, c0.dtype))
    _, ys, cs = jax.lax.while_loop(lambda state: state[0] < jnp.sum(among), block, init)
    return ys, cs


def empirical_cone_optimal(mu, W, among):
    """``(K,)`` bool: arms of ``among`` whose mean no other arm of ``among`` C-dominates (``W (mu_j - mu_i) >= 0``)."""
    p = mu @ W.T
    dom = jnp.all(p[:, None, :] - p[None, :, :] >= 0, axis=-1) & ~jnp.eye(mu.shape[0], dtype=bool)
    return among & ~jnp.any(dom & among[:, None], axis=0)


def paveba(num_arms: int, dim: int, sample) -> Identifier:
    """PaVeBa (module docstring) for ``num_arms`` arms of ``dim`` objectives drawn by ``sample``."""
    K, d = num_arms, dim

    def identify(key_env, key_pol, env_params, p: PavebaParams) -> PacResult:
        """Run PaVeBa once on the common stream ``key_env`` (``key_pol`` is unused: the method is deterministic)."""
        dtype = p.sigma.dtype
        init = paveba_start(K, d, p)

        def cond(s: PavebaCarry):
            return jnp.any(s.S) & (s.t < p.cap) & ~s.halted

        def body(s: PavebaCarry):
            A = s.S | s.U
            y, c = _draw_among(sample, key_env, env_params, s.counts, s.t, A)
            cost = jnp.sum(jnp.where(A, c.astype(dtype), 0.0))
            ok = s.spent + cost <= p.budget
            new = paveba_round(s, A, y, cost, p, K, d)
            old = s._replace(halted=jnp.ones((), bool))
            return jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), new, old)

        end = jax.lax.while_loop(cond, body, init)
        return PacResult(paveba_returned(end, p), end.spent, end.counts, ~jnp.any(end.S), p.epsilon, p.delta)

    return Identifier(identify, stepwise=paveba_steps(K, d))


def paveba_start(K: int, d: int, p: PavebaParams) -> PavebaCarry:
    """PaVeBa before its first round: every arm undecided."""
    dtype = p.sigma.dtype
    none = jnp.zeros(K, bool)
    return PavebaCarry(t=jnp.zeros((), jnp.int32), counts=jnp.zeros(K, jnp.int32), sums=jnp.zeros((K, d), dtype),
                       r=jnp.zeros(K, dtype), S=jnp.ones(K, bool), P=none, U=none, spent=jnp.zeros((), dtype),
                       halted=jnp.zeros((), bool))


def paveba_round(s: PavebaCarry, A, y, cost, p: PavebaParams, K: int, d: int) -> PavebaCarry:
    """One round of PaVeBa (module docstring, steps 1-4) after the arms of ``A = S | U`` were pulled once each with
    rewards ``y (K, d)`` (rows outside ``A`` ignored) at total ``cost``."""
    dtype = p.sigma.dtype
    slack = p.epsilon * p.geo.alpha
    counts = s.counts + A.astype(jnp.int32)
    sums = s.sums + jnp.where(A[:, None], y.astype(dtype), 0.0)
    mu = sums / jnp.maximum(counts, 1)[:, None].astype(dtype)
    n = jnp.where(p.round_radius, s.t + 1, counts)  # "round": every arm of A gets the round's radius
    r = jnp.where(A, paveba_radius(n, K, d, p.sigma, p.delta, p.conf_contraction), s.r)
    discard = s.S & jnp.any(ball_dominated(mu, r, p.geo) & A[:, None], axis=0)
    S1 = s.S & ~discard
    # j reaches i: some point of j's ball beats some point of i's by the slack
    new_p = S1 & ~ball_reaches_any(mu, r, slack, p.geo, rows=S1 | s.U, cols=S1, axis=0)
    P1, S2 = s.P | new_p, S1 & ~new_p
    U1 = P1 & ball_reaches_any(mu, r, slack, p.geo, rows=P1, cols=S2, axis=1)
    return PavebaCarry(t=s.t + 1, counts=counts, sums=sums, r=r, S=S2, P=P1, U=U1, spent=s.spent + cost,
                       halted=jnp.zeros((), bool))


def paveba_returned(end: PavebaCarry, p: PavebaParams):
    """The set PaVeBa returns: ``P``, plus the undecided arms no arm of ``S | P`` C-dominates empirically."""
    dtype = p.sigma.dtype
    mu = end.sums / jnp.maximum(end.counts, 1)[:, None].astype(dtype)
    guess = empirical_cone_optimal(mu, p.geo.W.astype(dtype), end.S | end.P)
    return end.P | (end.S & guess)


def naive_elimination(num_arms: int, dim: int, sample) -> Identifier:
    """Naive Elimination (module docstring) for ``num_arms`` arms of ``dim`` objectives drawn by ``sample``."""
    K, d = num_arms, dim

    def identify(key_env, key_pol, env_params, p: NaiveParams) -> PacResult:
        """Pull every arm ``L`` times on the common stream ``key_env``; return the empirical C-Pareto set."""
        dtype = p.epsilon.dtype
        rounds = jnp.minimum(p.L, p.cap)
        init = NaiveCarry(r=jnp.zeros((), jnp.int32), sums=jnp.zeros((K, d), dtype), spent=jnp.zeros((), dtype),
                          halted=jnp.zeros((), bool))

        def cond(s: NaiveCarry):
            return (s.r < rounds) & ~s.halted

        def body(s: NaiveCarry):
            y, c = _draw(sample, key_env, env_params, jnp.full(K, s.r, jnp.int32), s.r)
            cost = jnp.sum(c.astype(dtype))
            ok = s.spent + cost <= p.budget
            return NaiveCarry(r=jnp.where(ok, s.r + 1, s.r), sums=jnp.where(ok, s.sums + y.astype(dtype), s.sums),
                              spent=jnp.where(ok, s.spent + cost, s.spent), halted=~ok)

        end = jax.lax.while_loop(cond, body, init)
        return PacResult(naive_returned(end, p), end.spent, jnp.full(K, end.r, jnp.int32), end.r == p.L, p.epsilon)

    return Identifier(identify, stepwise=naive_steps(K, d))


def naive_returned(end: NaiveCarry, p: NaiveParams):
    """The set Naive Elimination returns: the empirical C-Pareto set of every arm's ``end.r`` pulls."""
    dtype = p.epsilon.dtype
    mu = end.sums / jnp.maximum(end.r, 1).astype(dtype)
    return empirical_cone_optimal(mu, p.W.astype(dtype), jnp.ones(end.sums.shape[0], bool))


# --------------------------------------------------------------------------------------------
# Step-wise forms: the caller owns the pulls (a live study)
# --------------------------------------------------------------------------------------------

def paveba_steps(num_arms: int, dim: int) -> Stepwise:
    """PaVeBa's :class:`~mobandit_jax.types.Stepwise` form on its :class:`~.pac.PavebaParams`.

    Args:
      num_arms: ``K``.
      dim: ``d``.

    Returns:
      Its steps.
    """
    K, d = num_arms, dim

    def stopped(s: PavebaCarry, p: PavebaParams):
        return ~jnp.any(s.S) | (s.t >= p.cap) | s.halted

    def select(key, s: PavebaCarry, p: PavebaParams):
        return jnp.where(stopped(s, p), 0, (s.S | s.U).astype(jnp.int32))

    def update(s: PavebaCarry, pulls, reward_sums, cost_sums, p: PavebaParams) -> PavebaCarry:
        return paveba_round(s, pulls > 0, reward_sums, jnp.sum(cost_sums).astype(p.sigma.dtype), p, K, d)

    return Stepwise(lambda p: paveba_start(K, d, p), select, update, lambda s, p: s._replace(halted=jnp.ones((), bool)),
                    paveba_returned, stopped, lambda s, p: ~jnp.any(s.S))


def naive_steps(num_arms: int, dim: int) -> Stepwise:
    """Naive Elimination's :class:`~mobandit_jax.types.Stepwise` form on its :class:`~.pac.NaiveParams`.

    Args:
      num_arms: ``K``.
      dim: ``d``.

    Returns:
      Its steps.
    """
    K, d = num_arms, dim

    def init(p: NaiveParams) -> NaiveCarry:
        dtype = p.epsilon.dtype
        return NaiveCarry(jnp.zeros((), jnp.int32), jnp.zeros((K, d), dtype), jnp.zeros((), dtype),
                          jnp.zeros((), bool))

    def stopped(s: NaiveCarry, p: NaiveParams):
        return (s.r >= jnp.minimum(p.L, p.cap)) | s.halted

    def select(key, s: NaiveCarry, p: NaiveParams):
        return jnp.where(stopped(s, p), jnp.zeros(K, jnp.int32), jnp.ones(K, jnp.int32))

    def update(s: NaiveCarry, pulls, reward_sums, cost_sums, p: NaiveParams) -> NaiveCarry:
        dtype = p.epsilon.dtype
        return NaiveCarry(s.r + 1, s.sums + reward_sums.astype(dtype), s.spent + jnp.sum(cost_sums).astype(dtype),
                          s.halted)

    return Stepwise(init, select, update, lambda s, p: s._replace(halted=jnp.ones((), bool)), naive_returned,
                    stopped, lambda s, p: s.r >= p.L)


# --------------------------------------------------------------------------------------------
# Registry rows
# --------------------------------------------------------------------------------------------

def pac_cone(ctx) -> np.ndarray:
    """The context's cone ``W`` (identity ``d x d`` when the spec has no ``[preference]``), checked solid."""
    W = np.eye(ctx.dim) if ctx.W is None else np.asarray(ctx.W, float)
    if W.ndim != 2 or W.shape[1] != ctx.dim:
        raise ValueError(f"preference matrix W has shape {W.shape}, but the arms have d = {ctx.dim} objectives")
    return validate_pac_cone(W)


def noise_scale(ctx):
    """The environment's noise scale; rewards in [0, 1] without one are 1/2-sub-Gaussian (Hoeffding's lemma), so
    1/2; None for unbounded rewards without one."""
    if ctx.noise_sigma is not None:
        return float(ctx.noise_sigma)
    return BOUNDED_SIGMA if ctx.bounded else None


def _sigma(ctx, policy: str) -> float:
    if noise_scale(ctx) is None:
        raise ValueError(f"policy {policy!r} needs the reward noise scale sigma, but this environment does not give "
                         "one; use noise = 'gaussian' with sigma = ... (and clip = false for any real means)")
    sigma = noise_scale(ctx)
    if not (math.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"policy {policy!r}: noise sigma = {sigma} must be a finite number >= 0")
    return sigma


def _common(ctx, policy: str, epsilon, delta, need_epsilon: bool):
    if ctx.env is None:
        raise ValueError(f"policy {policy!r} needs the environment's sampler (a Context built from an EnvInstance)")
    if ctx.num_arms < 2:
        raise ValueError(f"policy {policy!r} needs at least 2 arms, got {ctx.num_arms}")
    eps, dlt = float(epsilon), float(delta)
    if not (math.isfinite(eps) and (eps > 0 if need_epsilon else eps >= 0)):
        raise ValueError(f"policy {policy!r}: epsilon = {epsilon} must be a finite number "
                         f"{'> 0' if need_epsilon else '>= 0'}")
    if not 0 < dlt < 1:
        raise ValueError(f"policy {policy!r}: delta = {delta} must lie in (0, 1)")
    if ctx.horizon < 1:
        raise ValueError(f"policy {policy!r}: the round cap (experiment horizon) must be at least 1, got {ctx.horizon}")
    budget = np.inf if ctx.budget is None else float(ctx.budget)
    return pac_cone(ctx), eps, dlt, jnp.asarray(int(ctx.horizon), jnp.int32), jnp.asarray(budget, float)


def _configure_paveba(ctx, epsilon, delta, conf_contraction, radius):
    """PaVeBa's sizes and params.

    Options:
      epsilon: the accuracy epsilon of the (epsilon, delta)-PAC guarantee. Allowed: a finite number >= 0.
      delta: the error probability delta of the guarantee. Allowed: a number in (0, 1).
      conf_contraction: divides the confidence radius r(n) (VOPy's default is 32). Allowed: a finite number > 0.
      radius: each arm's radius from its own pull count, or VOPy's radius of the round. Allowed: 'pulls' or
        'round'.
    """
    W, eps, dlt, cap, budget = _common(ctx, "paveba", epsilon, delta, need_epsilon=False)
    sigma = _sigma(ctx, "paveba")
    cc = float(conf_contraction)
    if not (math.isfinite(cc) and cc > 0):
        raise ValueError(f"policy 'paveba': conf_contraction = {conf_contraction} must be a finite number > 0")
    if radius not in ("pulls", "round"):
        raise ValueError(f"policy 'paveba': radius = {radius!r} must be 'pulls' (each arm's own pull count) or "
                         "'round' (VOPy's: the round's radius for every sampled arm)")
    params = PavebaParams(jnp.asarray(eps, float), jnp.asarray(dlt, float), jnp.asarray(cc, float),
                          jnp.asarray(sigma, float), jnp.asarray(radius == "round"), cone_geometry(W), cap, budget)
    return dict(num_arms=ctx.num_arms, dim=ctx.dim, sample=ctx.env.sample), params


def _configure_naive(ctx, epsilon, delta, L):
    """Naive Elimination's sizes and params.

    Options:
      epsilon: the accuracy epsilon of the guarantee, which sets the paper's L. Allowed: a finite number > 0
        (>= 0 when L is given).
      delta: the error probability delta of the guarantee. Allowed: a number in (0, 1).
      L: pulls of every arm; 0 takes the paper's L from epsilon and delta. Allowed: a whole number >= 0.
    """
    if isinstance(L, bool) or int(L) != L or L < 0:
        raise ValueError(f"policy 'naive_elimination': L = {L!r} must be a whole number >= 0 (0: the paper's L)")
    W, eps, dlt, cap, budget = _common(ctx, "naive_elimination", epsilon, delta, need_epsilon=int(L) == 0)
    if int(L) > 0:
        pulls = int(L)
    else:
        pulls = naive_elimination_L(ctx.num_arms, ctx.dim, _sigma(ctx, "naive_elimination"), eps, dlt,
                                    ordering_complexity(W))
    if pulls >= 2 ** 31 - 1:
        raise ValueError(f"policy 'naive_elimination': L = {pulls} pulls per arm overflows int32; raise epsilon "
                         "or delta, or give L")
    params = NaiveParams(jnp.asarray(pulls, jnp.int32), jnp.asarray(eps, float), jnp.asarray(W, float), cap, budget)
    return dict(num_arms=ctx.num_arms, dim=ctx.dim, sample=ctx.env.sample), params


register_policy("paveba", "pac", paveba, _configure_paveba,
                "PaVeBa: (epsilon, delta)-PAC Pareto set identification under a polyhedral cone "
                "(Karagozlu et al., AISTATS 2024)", epsilon=0.1, delta=0.05, conf_contraction=1.0, radius="pulls")
register_policy("naive_elimination", "pac", naive_elimination, _configure_naive,
                "Naive Elimination: L pulls per arm, then the empirical cone-Pareto set (Ararat & Tekin, "
                "AISTATS 2023)", epsilon=0.1, delta=0.05, L=0)
