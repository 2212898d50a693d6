"""Auer, Chiang, Ortner & Drugan, "Pareto front identification from stochastic bandit feedback" (AISTATS 2016),
Algorithm 1, as the authors' group implements it (``cyrille-kone/linear_psi``, ``psi_auer::loop``).

Active arms ``A`` (initially all), accepted arms ``P``. Each round:

1. pull every arm of ``A`` once;
2. discard ``i`` from ``A`` if some ``j`` in ``A`` dominates it beyond the widths: ``m(i, j) > beta_ij``,
   ``m(i, j) = min_n (mu_jn - mu_in)``;
3. ``P1 = {i in A : M(i, j) + epsilon > beta_ij for every j != i in A}``, ``M(i, j) = max_n (mu_in - mu_jn)``
   (no arm of ``A`` can dominate ``i`` by more than ``epsilon``);
4. ``P2 = {i in P1 : M(j, i) > beta_ij for every j in A \\ P1}`` (``i`` can no longer dominate an undecided arm):
   accept ``P2`` and remove it from ``A``.

Stop when ``A`` is empty and return ``P``; at the round cap, ``P`` plus the active arms that are
empirically Pareto-optimal. ``beta_ij`` is :func:`~.pac_stepwise.radius_between` (``epsilon = 0``: the authors'
code exactly, but for one order effect: their step 2 erases arms from ``A`` while it scans ``A``, so an arm
erased early no longer discards later ones; here every test of a step reads the ``A`` the step began with).

References:
- P. Auer, C.-K. Chiang, R. Ortner and M. M. Drugan (2016), Pareto Front Identification from Stochastic Bandit
  Feedback, AISTATS 2016, https://proceedings.mlr.press/v51/auer16.html
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from ..registry import register_policy
from .pac_lanes import Narrowing, lanes_identifier
from .pac_stepwise import (
    Counts,
    StepwiseMethod,
    arm_terms,
    cg,
    configure_stepwise,
    empirical_pareto,
    off_diagonal,
    pair_statistics,
    radius_delta,
    wrap,
)


class AuerParams(NamedTuple):
    """Accuracy ``epsilon``, ``c = C^g(delta)`` of the radius, the projected noise scale ``sigma``."""

    epsilon: jnp.ndarray
    c: jnp.ndarray
    sigma: jnp.ndarray


class AuerState(NamedTuple):
    counts: Counts
    active: jnp.ndarray  # (K,) bool: A
    accepted: jnp.ndarray  # (K,) bool: P


def auer_method(num_arms: int, dim: int) -> StepwiseMethod:
    """Algorithm 1 (module docstring) for ``num_arms`` arms of ``dim`` (projected) objectives.

    Args:
      num_arms: K, the number of arms.
      dim: the number of objectives the method sees (the cone's rows M, or d without a cone).

    Returns:
      its :class:`~mobandit_jax.policies.pac_stepwise.StepwiseMethod`, for a caller that owns the pulls; its functions
      also take states with trailing lane axes (:mod:`~.pac_lanes`).
    """
    K = num_arms

    def init(p: AuerParams) -> AuerState:
        return AuerState(Counts.zeros(K, dim, p.sigma.dtype), jnp.ones(K, bool), jnp.zeros(K, bool))

    def select(key, s: AuerState, p: AuerParams):
        return s.active

    def update(s: AuerState, pulled, rewards, p: AuerParams) -> AuerState:
        counts = s.counts.add(pulled, rewards)
        big, big_t, beta = pair_statistics(arm_terms(counts), p.c, p.sigma)
        off = off_diagonal(K, s.active.ndim - 1)
        A = s.active & ~jnp.any((-big > beta) & s.active[None, :], axis=1)  # m(i, j) = -M(i, j)
        P1 = A & jnp.all((big + p.epsilon > beta) | ~off | ~A[None, :], axis=1)
        P2 = P1 & jnp.all((beta < big_t) | ~(A & ~P1)[None, :], axis=1)
        return AuerState(counts, A & ~P2, s.accepted | P2)

    def recommend(s: AuerState, p: AuerParams):
        return s.accepted | (s.active & empirical_pareto(jnp.where((s.active | s.accepted)[:, None], s.counts.means,
                                                                  -jnp.inf)))

    def stopped(s: AuerState, p: AuerParams):
        return ~jnp.any(s.active, axis=0)

    return StepwiseMethod(init, select, update, recommend, stopped)


NARROW_WIDTHS = (8, 4, 2)  # the slot counts a seed's active arms move to (module docstring of pac_lanes)


def auer_narrowing(dim: int) -> Narrowing:
    """How a seed of Auer et al. moves onto fewer slots (:class:`~.pac_lanes.Narrowing`): the active arms are the only
    ones a later test reads, so a seed with ``|A| <= w`` continues on ``w`` slots holding its active arms.

    Args:
      dim: the number of objectives the method sees.

    Returns:
      The :class:`~.pac_lanes.Narrowing` of :func:`auer_method`, to :data:`NARROW_WIDTHS` slots.
    """

    def pack(s: AuerState, arms) -> AuerState:
        at, real = jnp.minimum(arms, s.active.shape[0] - 1), arms < s.active.shape[0]
        counts = Counts(jnp.where(real, s.counts.n[at], 0), jnp.where(real[:, None], s.counts.sums[at], 0))
        return AuerState(counts, real & s.active[at], jnp.zeros(arms.shape, bool))

    def unpack(s: AuerState, arms, slots: AuerState) -> AuerState:
        at = jnp.minimum(arms, s.active.shape[0] - 1)
        put = lambda x, v: x.at[arms].set(v, mode="drop")  # noqa: E731  (empty slots, arm K, are dropped)
        return AuerState(Counts(put(s.counts.n, slots.counts.n), put(s.counts.sums, slots.counts.sums)),
                         put(s.active, slots.active), put(s.accepted, s.accepted[at] | slots.accepted))

    return Narrowing(lambda width: auer_method(width, dim), lambda s: s.active, pack, unpack, NARROW_WIDTHS)


def auer(num_arms: int, dim: int, sample) -> object:
    """The pac-family Identifier of :func:`auer_method` (``dim``: objectives after the cone).

    Args:
      num_arms: K, the number of arms.
      dim: the number of objectives the method sees (the cone's rows M, or d without a cone).
      sample: the environment's ``sample(key, arm, params)``.

    Returns:
      an :class:`~mobandit_jax.types.Identifier` of the pac family, its seeds on lanes laid out last
      (:func:`~.pac_lanes.lanes_identifier`).
    """
    return lanes_identifier(auer_method(num_arms, dim), num_arms, dim, sample, width=num_arms,
                            narrowing=auer_narrowing(dim))


def _configure(ctx, epsilon, delta, radius):
    """Auer et al.'s sizes and params.

    Options:
      epsilon: the accuracy epsilon of the (epsilon, delta)-PAC guarantee. Allowed: a finite number >= 0.
      delta: the error probability delta of the guarantee. Allowed: a number in (0, 1).
      radius: the authors' beta_ij, or a union bound delta / (K (K - 1) M). Allowed: 'authors' or 'union'.
    """
    W, sigma, eps, dlt, cap, budget = configure_stepwise(ctx, "auer", epsilon, delta, radius)
    c = cg(jnp.asarray(radius_delta(radius, dlt, ctx.num_arms, len(W)), float))
    params = AuerParams(jnp.asarray(eps, float), c, jnp.asarray(sigma, float))
    return dict(num_arms=ctx.num_arms, dim=len(W), sample=ctx.env.sample), wrap(ctx, W, eps, dlt, cap, budget, params)


register_policy("auer", "pac", auer, _configure,
                "Auer et al. (AISTATS 2016) Algorithm 1: sample every active arm, discard the dominated, accept the "
                "certified Pareto arms", epsilon=0.0, delta=0.05, radius="authors")
