"""PaVeBa and Naive Elimination (:mod:`.pac`) as pure steps, for a caller that owns the pulls (a live study).

Karagozlu et al. (AISTATS 2024), PaVeBa: each round pulls every arm of ``A = S | U`` once, then
:func:`.pac.paveba_round` updates the regions and the undecided, Pareto and useful sets, as the bulk run does; it
stops when ``S`` is empty (its stopping rule), at the round cap, or when the caller cannot afford a round (``short``).
Ararat & Tekin (AISTATS 2023), Naive Elimination: ``L`` rounds of one pull of every arm, then the empirical C-Pareto
set (:func:`.pac.naive_returned`). Fed the pulls the bulk run draws, round by round, each returns the bulk run's set
(tests).
"""
from __future__ import annotations

import jax.numpy as jnp

from ..types import Stepwise
from .pac import NaiveCarry, NaiveParams, PavebaCarry, PavebaParams, naive_returned, paveba_returned, paveba_round
from .pac import paveba_start as _start


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

    return Stepwise(lambda p: _start(K, d, p), select, update, lambda s, p: s._replace(halted=jnp.ones((), bool)),
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
