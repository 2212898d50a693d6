"""The fixed-budget identifiers of :mod:`.identification` (CoPSI, PSI-SR, EGE-SH, uniform allocation) as pure steps.

Xue et al. ("Cost-Aware Multi-Objective Bandits"), Algorithm 2, and Kone, Kaufmann and Richert (AISTATS 2024),
EGE: phase ``r`` brings the active arms to the schedule's target ``n_r`` (:class:`.identification.Schedule`, the
same targets as the bulk run), then :func:`.identification.close_phase` removes arms on the empirical gaps of Eq. (1)
over the active set. The bulk run reads a phase's pulls from prefix sums and keeps the largest number of complete
sweeps (one pull of every active arm) that the budget affords (:func:`.identification.top_up`); here the caller owns
the pulls: ``select`` says how many each arm still needs before the phase barrier, ``update`` takes any of them, and
``short`` ends the phase when the caller cannot afford the next sweep. Fed the same sweeps, with ``short`` called at
the first sweep whose cost would exceed the budget, it recommends what the bulk run recommends (tests).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..types import Stepwise
from .identification import IdentParams, Schedule, _means, close_phase, empirical_gaps, empirical_pareto


class EliminationState(NamedTuple):
    """Phase ``r`` (1-based) and its target, the active and accepted sets (K,) bool, pulls (K,) int32, the sums
    (K, d + 1) of each arm's rewards and costs, the cost spent, and whether the last phase has ended."""

    r: Any
    target: Any
    active: Any
    accepted: Any
    N: Any
    sums: Any
    spent: Any
    done: Any


def stepwise_elimination(schedule: Schedule, num_arms: int, dim: int) -> Stepwise:
    """The :class:`~mobandit_jax.types.Stepwise` form of a method of :mod:`.identification` (module docstring).

    Args:
      schedule: the method's :class:`~.identification.Schedule`.
      num_arms: ``K``.
      dim: the objectives ``d`` of the rewards it is told.

    Returns:
      Its steps, on the method's :class:`~.identification.IdentParams`.
    """
    K = num_arms

    def phase_target(r, active, p: IdentParams):
        C_r = jnp.sum(jnp.where(active, p.costs, 0.0))
        return jnp.asarray(schedule.target(p)(r, jnp.sum(active), C_r), jnp.int32)

    def remaining(s: EliminationState, p: IdentParams):
        n0 = jnp.max(jnp.where(s.active, s.N, 0))
        need = jnp.clip(s.target - n0, 0, p.jmax - n0)
        return jnp.where(s.active & ~s.done, need, 0).astype(jnp.int32)

    def close(s: EliminationState, p: IdentParams) -> EliminationState:
        active, accepted = s.active, s.accepted
        if schedule.final == "elimination":
            gamma, dominated = empirical_gaps(_means(s.sums, s.N), active)
            active, accepted = close_phase(gamma, dominated, active, accepted, schedule.removals)
        r = s.r + 1
        return s._replace(r=r, target=phase_target(r, active, p), active=active, accepted=accepted,
                          done=r > schedule.phases)

    def advance(s: EliminationState, p: IdentParams) -> EliminationState:
        """Close every phase whose target is reached (a phase may need no pulls at all)."""
        return jax.lax.while_loop(lambda s: ~s.done & ~jnp.any(remaining(s, p) > 0), lambda s: close(s, p), s)

    def init(p: IdentParams) -> EliminationState:
        dtype = p.budget.dtype
        active = jnp.ones(K, bool)
        one = jnp.ones((), jnp.int32)
        s = EliminationState(one, phase_target(one, active, p), active, jnp.zeros(K, bool), jnp.zeros(K, jnp.int32),
                             jnp.zeros((K, dim + 1), dtype), jnp.zeros((), dtype), jnp.asarray(schedule.phases < 1))
        return advance(s, p)

    def select(key, s: EliminationState, p: IdentParams):
        return remaining(s, p)

    def update(s: EliminationState, pulls, reward_sums, cost_sums, p: IdentParams) -> EliminationState:
        dtype = s.sums.dtype
        add = jnp.concatenate([reward_sums.astype(dtype), cost_sums.astype(dtype)[:, None]], axis=1)
        s = s._replace(N=s.N + pulls.astype(jnp.int32), sums=s.sums + add,
                       spent=s.spent + jnp.sum(cost_sums.astype(dtype)))
        return advance(s, p)

    def short(s: EliminationState, p: IdentParams) -> EliminationState:
        return advance(s._replace(target=jnp.max(jnp.where(s.active, s.N, 0))), p)

    def recommend(s: EliminationState, p: IdentParams):
        if schedule.final == "pareto":
            return empirical_pareto(_means(s.sums, s.N), s.active)
        return s.accepted | s.active

    def stopped(s: EliminationState, p: IdentParams):
        return s.done

    return Stepwise(init, select, update, short, recommend, stopped)
