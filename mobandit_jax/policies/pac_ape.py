"""APE, Adaptive Pareto Exploration (Kone, Kaufmann & Richert, "Adaptive algorithms for relaxed Pareto set
identification", NeurIPS 2023), as the authors implement it (``cyrille-kone/linear_psi``, ``psi_ape::loop``;
``cyrille-kone/psips``, ``ape::loop``).

After one pull of every arm, with empirical means ``mu``, the pair radius ``beta_ij``
(:func:`~.pac_stepwise.radius_between`), ``M(i, j) = max_n (mu_in - mu_jn)`` and ``m(i, j) = min_n (mu_jn - mu_in)``:

- ``h_i = min_{j != i} [M(i, j) + epsilon - beta_ij]`` (no arm can dominate ``i``), ``g_i = max_{j != i}
  [m(i, j) - beta_ij]`` (some arm surely dominates ``i``), ``OPT = {i : h_i > 0}``, ``S`` the empirical
  Pareto set;
- ``b_t = argmax_{i not in OPT} min_{j != i} [M(i, j) + beta_ji]``,
  ``c_t = argmin_{j != b_t} [M(b_t, j) - beta_{b_t j}]``
  (first index on ties);
- pull both (``pull = "both"``, linear_psi's) or the less pulled of the two (``pull = "less_pulled"``, the
  paper's and psips'; ``c_t`` on a tie);
- stop when ``Z1 = min_{i in S} h_i >= 0`` and ``Z2 = min_{i not in S} max(h_i, g_i) >= 0``, and return ``S``;
  APE-k (``k > 0``): stop also once ``|OPT| >= k`` and return ``OPT`` (``k`` certified Pareto arms or more).

``epsilon`` is the relaxation of epsilon-APE (0: exact identification). At the round cap ``S`` is returned.

References:
- C. Kone, E. Kaufmann and L. Richert (2023), Adaptive Algorithms for Relaxed Pareto Set Identification,
  NeurIPS 2023, https://arxiv.org/abs/2307.00424
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax.numpy as jnp

from ..registry import register_policy
from .pac_lanes import lanes_identifier
from .pac_stepwise import (
    ArmTerms,
    Counts,
    StepwiseMethod,
    arm_terms,
    cg,
    configure_stepwise,
    off_diagonal,
    pair_statistics,
    radius_between,
    radius_delta,
    wrap,
)

PULLS = ("both", "less_pulled")


class ApeParams(NamedTuple):
    """``epsilon``, ``c = C^g(delta)``, projected ``sigma``, ``k`` (int32, 0: the whole set), ``both`` (bool)."""

    epsilon: jnp.ndarray
    c: jnp.ndarray
    sigma: jnp.ndarray
    k: jnp.ndarray
    both: jnp.ndarray


class ApeIndices(NamedTuple):
    """The round's statistics, each ``(K,)``: ``h``, ``g``, ``S`` and ``OPT``."""

    h: jnp.ndarray
    g: jnp.ndarray
    S: jnp.ndarray
    opt: jnp.ndarray


def ape_indices(t: ArmTerms, p: ApeParams) -> ApeIndices:
    """:class:`ApeIndices` of the arms' terms (module docstring).

    ``g_i = max_{j != i} [-M(i, j) - beta_ij] = -min_{j != i} [M(i, j) + beta_ij]``, the score of ``b_t`` negated;
    ``j`` dominates ``i`` where ``M(i, j) <= 0`` and ``M(j, i) > 0`` (a rounded difference of two floats has the sign
    of the exact one, so this is the comparison of the means).

    Args:
      t: the arms' :class:`~.pac_stepwise.ArmTerms`.
      p: the method's :class:`ApeParams`.

    Returns:
      ``ApeIndices(h, g, S, opt)``: the indices ``h_i`` and ``g_i`` (K,), the empirical Pareto set and the
      certified-optimal arms (K,) bool.
    """
    K = t.means.shape[0]
    off = off_diagonal(K, t.means.ndim - 2)
    big, big_t, beta = pair_statistics(t, p.c, p.sigma)
    h = jnp.min(jnp.where(off, big + p.epsilon - beta, jnp.inf), axis=1)
    g = -jnp.min(jnp.where(off, big + beta, jnp.inf), axis=1)
    S = ~jnp.any((big <= 0) & (big_t > 0) & off, axis=1)  # [i, j]: j dominates i
    return ApeIndices(h, g, S, h > 0)


def _at(at, x):
    """``x``'s row of the arm where ``at (K, ...)`` holds (one arm a lane), for ``x`` of shape ``(K, ...)`` or
    ``(K, M, ...)``: a sum of that row and zeros, exact."""
    return jnp.sum(jnp.where(at.reshape(at.shape[:1] + (1,) * (x.ndim - at.ndim) + at.shape[1:]), x, 0), axis=0)


def _row(t: ArmTerms, at, p: ApeParams):
    """``M(b, j) - beta_bj`` for every ``j`` (``(K,)``), ``b`` the arm where ``at (K,)`` holds."""
    mu_b = _at(at, t.means)
    big = functools.reduce(jnp.maximum, [mu_b[None, n] - t.means[:, n] for n in range(t.means.shape[1])])
    return big - radius_between(_at(at, t.inverse)[None], _at(at, t.loglog)[None], t.inverse, t.loglog, p.c,
                                p.sigma)


class ApeState(NamedTuple):
    """The counts, the next round's pulls ``(K,)`` and whether the rule fired, each decided once per round."""

    counts: Counts
    pull: jnp.ndarray
    done: jnp.ndarray
    recommended: jnp.ndarray


def ape_method(num_arms: int, dim: int) -> StepwiseMethod:
    """APE (module docstring) for ``num_arms`` arms of ``dim`` (projected) objectives.

    ``update`` computes the round's indices once and keeps what ``select``, ``stopped`` and ``recommend`` read.

    Args:
      num_arms: K, the number of arms.
      dim: the number of objectives the method sees (the cone's rows M, or d without a cone).

    Returns:
      its :class:`~mobandit_jax.policies.pac_stepwise.StepwiseMethod`, for a caller that owns the pulls; its functions
      also take states with trailing lane axes (:mod:`~.pac_lanes`).
    """
    K = num_arms

    def decide(counts: Counts, t: ArmTerms, p: ApeParams) -> ApeState:
        x = ape_indices(t, p)
        arms = jnp.arange(K).reshape((K,) + (1,) * (counts.n.ndim - 1))
        b = jnp.argmax(jnp.where(x.opt, -jnp.inf, -x.g), axis=0)  # -g_i = min_{j != i} [M(i, j) + beta_ji]
        c = jnp.argmin(jnp.where(arms != b, _row(t, arms == b, p), jnp.inf), axis=0)
        n_b, n_c = (_at(arms == a, counts.n) for a in (b, c))
        one = jnp.where(n_b < n_c, b, c)
        pair = jnp.where(p.both, (arms == b) | (arms == c), arms == one)
        first = counts.n == 0
        z1 = jnp.min(jnp.where(x.S, x.h, jnp.inf), axis=0)
        z2 = jnp.min(jnp.where(x.S, jnp.inf, jnp.maximum(x.h, x.g)), axis=0)
        whole = (z1 >= 0) & (z2 >= 0)
        by_k = ~whole & (p.k > 0) & (jnp.sum(x.opt, axis=0) >= p.k)
        starting = jnp.any(first, axis=0)
        return ApeState(counts, jnp.where(starting, first, pair), ~starting & (whole | by_k),
                        jnp.where(by_k, x.opt, x.S))

    def init(p: ApeParams) -> ApeState:
        counts = Counts.zeros(K, dim, p.sigma.dtype)
        none = jnp.zeros(K, bool)
        return ApeState(counts, ~none, jnp.zeros((), bool), none)

    def select(key, s: ApeState, p: ApeParams):
        return s.pull

    def update(s: ApeState, pulled, rewards, p: ApeParams) -> ApeState:
        counts = s.counts.add(pulled, rewards)
        return decide(counts, arm_terms(counts), p)

    def recommend(s: ApeState, p: ApeParams):
        return s.recommended

    def stopped(s: ApeState, p: ApeParams):
        return s.done

    return StepwiseMethod(init, select, update, recommend, stopped)


def ape(num_arms: int, dim: int, sample, both: bool = True) -> object:
    """The pac-family Identifier of :func:`ape_method` (``both``: two arms drawn per round, else one).

    Args:
      num_arms: K, the number of arms.
      dim: the number of objectives the method sees (the cone's rows M, or d without a cone).
      sample: the environment's ``sample(key, arm, params)``.
      both: pull ``b_t`` and ``c_t`` each round (the authors' code), else the less pulled of the two.

    Returns:
      an :class:`~mobandit_jax.types.Identifier` of the pac family, its seeds on lanes laid out last
      (:func:`~.pac_lanes.lanes_identifier`).
    """
    return lanes_identifier(ape_method(num_arms, dim), num_arms, dim, sample, width=2 if both else 1)


def _configure(ctx, epsilon, delta, k, pull, radius):
    """APE's sizes and params.

    Options:
      epsilon: the accuracy epsilon of the (epsilon, delta)-PAC guarantee (epsilon-APE). Allowed: a finite
        number >= 0.
      delta: the error probability delta of the guarantee. Allowed: a number in (0, 1).
      k: identify k arms of the Pareto set (APE-k); 0 identifies the whole set. Allowed: a whole number from 0
        to K.
      pull: pull both b_t and c_t each round (the authors' code) or the less pulled of the two (the paper).
        Allowed: 'both' or 'less_pulled'.
      radius: the authors' beta_ij, or a union bound delta / (K (K - 1) M). Allowed: 'authors' or 'union'.
    """
    W, sigma, eps, dlt, cap, budget = configure_stepwise(ctx, "ape", epsilon, delta, radius)
    if isinstance(k, bool) or int(k) != k or not 0 <= k <= ctx.num_arms:
        raise ValueError(f"policy 'ape': k = {k!r} must be a whole number from 0 (the whole Pareto set) to "
                         f"K = {ctx.num_arms}")
    if pull not in PULLS:
        raise ValueError(f"policy 'ape': pull = {pull!r} must be 'both' (b_t and c_t, linear_psi's) or "
                         "'less_pulled' (the paper's)")
    c = cg(jnp.asarray(radius_delta(radius, dlt, ctx.num_arms, len(W)), float))
    params = ApeParams(jnp.asarray(eps, float), c, jnp.asarray(sigma, float), jnp.asarray(int(k), jnp.int32),
                       jnp.asarray(pull == "both"))
    return (dict(num_arms=ctx.num_arms, dim=len(W), sample=ctx.env.sample, both=pull == "both"),
            wrap(ctx, W, eps, dlt, cap, budget, params))


register_policy("ape", "pac", ape, _configure,
                "APE (Kone, Kaufmann & Richert, NeurIPS 2023): LUCB-like pair (b_t, c_t), stop on Z1, Z2 >= 0; "
                "epsilon-APE and APE-k", epsilon=0.0, delta=0.05, k=0, pull="both", radius="authors")
