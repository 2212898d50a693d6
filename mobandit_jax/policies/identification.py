"""Fixed-budget cost-aware Pareto set identification: CoPSI, PSI-SR (EGE-SR), EGE-SH and uniform allocation.

Xue et al. ("Cost-Aware Multi-Objective Bandits"), Section 3.2 (Pareto set, pairwise
margins ``m(i, j)``, ``M(i, j)``, classification gaps), Section 4.2 and Algorithm 2 (CoPSI:
cost-aware targets ``n_r = floor(B / (L_{K,lambda} C_r))`` with
``L_{K,lambda} = 1 + sum_{l=2}^K 1 / (1 + (l-1) lambda)``, empirical Pareto set, empirical gaps of
Eq. (1), accept/reject with the tie rule of line 15) and Appendix A (tie tolerances
``rtol = 1e-10``, ``atol = 1e-12``; the stochastic-cost robustness protocol).

Kone, Kaufmann and Richert ("Bandit Pareto Set Identification: the Fixed Budget Setting", AISTATS 2024),
Empirical Gap Elimination (EGE): rounds of sampling the active set ``A_r``, then removing the arms with
the largest empirical gaps over ``A_r``, each accepted iff it is empirically Pareto optimal in ``A_r``; the
arms still active at the end are accepted. PSI-SR is their EGE-SR (successive-rejects phases, one arm a
round). EGE-SH has ``ceil(log2 K)`` halving rounds: round ``r`` samples every active arm
``t_r = floor(T / (|A_r| ceil(log2 K)))`` more times (here: to ``n_r = sum_{s <= r} t_s`` pulls) and
removes ``floor(|A_r| / 2)`` arms, so ``sum_r |A_r| t_r <= T``. Both are cost insensitive:
``T = floor(B / c_bar)`` unit pulls at the mean allocation cost ``c_bar``, charged the actual costs.

Step-wise form (:func:`stepwise_elimination`, ``Identifier.stepwise``): the same phases (:class:`Schedule`), but
the caller owns the pulls: ``select`` says how many each active arm still needs before the phase barrier, ``update``
takes any of them, and ``short`` ends the phase when the caller cannot afford the next sweep (one pull of every active
arm). Fed the same sweeps, with ``short`` at the first sweep whose cost would exceed the budget (the bulk run's
:func:`top_up` keeps the most complete sweeps the budget affords), it recommends what the bulk run recommends.

Every method is an :class:`Identifier`: ``identify(key_env, key_pol, env_params, params)`` returns
an :class:`IdentifyResult` (recommended set, budget spent, pulls per arm). Pulls come from the
environment's common bootstrap stream: the prefix sums of the first pulls of every arm (at least the
``jmax`` the budget allows, a params value) are built once by the environment's bulk sampler
(``Env.prefix_table``, a ``PrefixSums`` read with
``kernels.prefix.prefix_at``), so a phase's pulls of an arm are a difference ``P[i, n_r] - P[i, N_i]``
of two sums and a whole run is ``K - 1`` (EGE-SH: ``ceil(log2 K)``) vectorized phases. The gaps of
Eq. (1) are in :mod:`mobandit_jax.kernels.gaps`.

How the paper was read where it is silent (``lambda`` in ``L_{K,lambda}`` is ``min_i c_i``; the budget
guard; the PSI-SR schedules; the float32 tie tolerances of line 15) is written in
``experiments/cost_aware/reading_notes.md``. EGE-SH shares PSI-SR's ``T``, the budget guard of
:func:`top_up` and the tie rule: within a round the arms are removed one after another by
:func:`choose_arm` on that round's gaps (largest first; near ties prefer a dominated arm, then the lowest
index).

References:
- B. Xue, Z. Hong, J. Li, Y. Wan, J. Cheng and S. Qiu, Cost-Aware Multi-Objective Bandits: Theory and Application
  to Budgeted LLM Configuration Evaluation (preprint)
- C. Kone, E. Kaufmann and L. Richert (2024), Bandit Pareto Set Identification: the Fixed Budget Setting,
  AISTATS 2024, https://arxiv.org/abs/2311.03992
"""
from __future__ import annotations

import math
import warnings
import weakref
from collections.abc import Callable
from decimal import ROUND_CEILING, Decimal
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import ConfigError
from ..kernels.gaps import classification_gaps_np, empirical_gaps, pairwise_margins  # noqa: F401  (re-exported)
from ..kernels.prefix import prefix_at
from ..problems.costs import validate_budget, validate_costs
from ..registry import register_policy
from ..types import Identifier, IdentifyResult, PrefixSums, Stepwise

RTOL, ATOL = 1e-10, 1e-12


def l_k_lambda(K: int, lam, xp=jnp):
    """``L_{K,lambda} = 1 + sum_{l=2}^K 1 / (1 + (l-1) lambda)``, in ``xp`` (numpy or jax.numpy).

    With ``xp = jax.numpy`` the terms take the default float dtype (float32, float64 under x64).
    """
    if xp is np:
        return 1.0 + sum(1.0 / (1.0 + (ell - 1) * lam) for ell in range(2, K + 1))
    ell = jnp.arange(2, K + 1, dtype=float)
    return 1.0 + jnp.sum(1.0 / (1.0 + (ell - 1.0) * lam))


def tie_tolerances(dtype):
    """``(rtol, atol)``: Appendix A's 1e-10 / 1e-12, widened to 8 machine epsilons below float64."""
    eps = float(jnp.finfo(dtype).eps)
    return max(RTOL, 8 * eps), max(ATOL, 8 * eps * 1e-2)


def choose_arm(gamma, dominated, active):
    """Line 15 of Algorithm 2: a maximizer of ``gamma`` over ``A``, preferring dominated arms."""
    gmax = jnp.max(jnp.where(active, gamma, -jnp.inf))
    rtol, atol = tie_tolerances(gamma.dtype)
    tol = jnp.maximum(atol, rtol * jnp.abs(gmax))
    tied = active & (gamma >= gmax - tol)
    prefer = tied & dominated
    cand = jnp.where(jnp.any(prefer), prefer, tied)
    return jnp.argmax(cand)  # lowest index among the candidates


def empirical_pareto(mu, active):
    """Active arms not strictly dominated (every coordinate) by another active arm."""
    _, dominated = empirical_gaps(mu, active)
    return active & ~dominated


# --------------------------------------------------------------------------------------------
# Bulk phases
# --------------------------------------------------------------------------------------------

def top_up(P: PrefixSums, N, active, target, spent, budget, jmax):
    """Bring active arms from the common count ``N`` to ``target`` in complete sweeps within budget.

    ``P`` holds the prefix sums of (objectives, cost) of at least ``jmax`` pulls per arm (``jmax`` an int,
    traced or not; no arm goes past it). Returns the new
    counts, the spent budget and the sums (K, d + 1) of every arm's pulls up to its new count.
    """
    cost = P.levels[0].shape[-1] - 1
    n0 = jnp.max(jnp.where(active, N, 0))
    need = jnp.clip(target - n0, 0, jmax - n0)

    def sums_after(s):
        return prefix_at(P, jnp.where(active, jnp.minimum(N + s, jmax), N))

    base = sums_after(0)

    def spent_after(sums):
        return spent + jnp.sum(jnp.where(active, sums[:, cost] - base[:, cost], 0.0))

    def body(carry):
        lo, hi, sums_lo = carry  # invariant: s = lo fits, s = hi + 1 does not (or hi = need)
        mid = (lo + hi + 1) // 2
        sums_mid = sums_after(mid)
        ok = spent_after(sums_mid) <= budget
        return jnp.where(ok, mid, lo), jnp.where(ok, hi, mid - 1), jnp.where(ok, sums_mid, sums_lo)

    # bisection until lo = hi; the sums come out of the loop, so the (K, K) gaps read them, not lookups
    s, _, sums = jax.lax.while_loop(lambda c: c[0] < c[1], body, (jnp.zeros((), need.dtype), need, base))
    return jnp.where(active, N + s, N), spent_after(sums), sums


def _means(sums, N):
    """Empirical means of the objectives from the sums of ``N`` pulls per arm (0 for unpulled arms)."""
    return jnp.where(N[:, None] > 0, sums[:, :-1] / jnp.maximum(N, 1)[:, None], 0.0)


def sample_and_gaps(P, N, active, target, spent, budget, jmax):
    """One phase's sampling: :func:`top_up` the active arms to ``target``, then the gaps of Eq. (1) over them.

    Returns the new counts, the spent budget and ``(gamma, dominated)`` of the active set.
    """
    N, spent, sums = top_up(P, N, active, target, spent, budget, jmax)
    gamma, dominated = empirical_gaps(_means(sums, N), active)
    return N, spent, gamma, dominated


def remove_arm(gamma, dominated, active, accepted):
    """Remove the arm of :func:`choose_arm` from ``active``, accepted iff it is not empirically dominated."""
    e = choose_arm(gamma, dominated, active)
    accept = ~dominated[e]
    accepted = accepted.at[e].set(accepted[e] | accept)
    return active.at[e].set(False), accepted


def close_phase(gamma, dominated, active, accepted, removals=None):
    """The end of a phase: :func:`remove_arm` once, or ``removals(k_r)`` times one after another on the same gaps.

    Returns the new ``(active, accepted)``."""
    if removals is None:
        return remove_arm(gamma, dominated, active, accepted)
    count = removals(jnp.sum(active))

    def one(j, sets):
        moved = remove_arm(gamma, dominated, *sets)
        return jax.tree_util.tree_map(lambda new, old: jnp.where(j < count, new, old), moved, sets)

    return jax.lax.fori_loop(0, active.shape[0] // 2, one, (active, accepted))


def elimination(P, costs_alloc, budget, target_fn, jmax, phases=None, removals=None):
    """Successive elimination of Algorithm 2 with phase targets ``target_fn(r, k_r, C_r)``.

    ``phases`` (static, ``K - 1`` by default) phases ``r = 1, 2, ...``; phase ``r`` brings the ``k_r`` active
    arms (allocation cost ``C_r``) to ``target_fn(r, k_r, C_r)`` pulls and removes one arm, or, with
    ``removals``, ``removals(k_r)`` arms one after another by :func:`remove_arm` on the gaps of that phase
    (the largest first, so the removed arms are those with the largest gaps, ties as in line 15).
    Returns the recommended set ``P_hat U A`` (K,) bool (the accepted arms and those still active at the end),
    the budget spent and the pull counts.
    """
    K = P.levels[0].shape[0]
    phases = K - 1 if phases is None else int(phases)

    def phase(r, carry):
        active, accepted, N, spent = carry
        k_r = jnp.sum(active)
        C_r = jnp.sum(jnp.where(active, costs_alloc, 0.0))
        n_r = target_fn(r, k_r, C_r)
        N, spent, gamma, dominated = sample_and_gaps(P, N, active, n_r, spent, budget, jmax)
        active, accepted = close_phase(gamma, dominated, active, accepted, removals)
        return active, accepted, N, spent

    init = (jnp.ones(K, bool), jnp.zeros(K, bool), jnp.zeros(K, jnp.int32), jnp.zeros((), P.levels[0].dtype))
    active, accepted, N, spent = jax.lax.fori_loop(1, phases + 1, phase, init)
    return accepted | active, spent, N


def unit_pulls(budget: float, costs) -> int:
    """``T = floor(B / c_bar)``, the unit pulls at the mean allocation cost ``c_bar`` (PSI-SR, EGE-SH), an int
    computed once on the host: ``B = rho K c_bar`` makes the ratio the integer ``rho K`` up to float64 rounding
    (:func:`_floor`), which float32 in the program would round to ``rho K - 1`` in most settings."""
    return _floor(float(budget) / float(np.mean(np.asarray(costs, np.float64))))


def halving_rounds(K: int) -> int:
    """``ceil(log2 K)``, the number of rounds of successive halving (Python ints: exact)."""
    return max(0, (int(K) - 1).bit_length())


def halving_sizes(K: int) -> np.ndarray:
    """``|A_r|`` for ``r = 1 .. ceil(log2 K)``: ``|A_1| = K``, ``|A_{r+1}| = |A_r| - floor(|A_r| / 2)``."""
    sizes, k = [], int(K)
    for _ in range(halving_rounds(K)):
        sizes.append(k)
        k -= k // 2
    return np.asarray(sizes, np.int64)


def halving_targets(K: int, T, xp=jnp):
    """EGE-SH's cumulative targets ``n_r = sum_{s <= r} t_s``, ``t_s = floor(T / (|A_s| ceil(log2 K)))``.

    With ``xp = numpy`` and an int ``T``, exact Python ints (the static bound ``jmax = n_R``).
    """
    L = max(1, halving_rounds(K))
    sizes = halving_sizes(K)
    if xp is np:
        return np.cumsum([int(T) // (int(k) * L) for k in sizes], dtype=np.int64)
    t = jnp.floor(T / jnp.asarray(sizes * L, float)).astype(jnp.int32)
    return jnp.cumsum(t)


def logbar(K: int) -> float:
    """Successive-rejects constant ``1/2 + sum_{i=2}^K 1/i``."""
    return 0.5 + sum(1.0 / i for i in range(2, K + 1))


# --------------------------------------------------------------------------------------------
# Factories
# --------------------------------------------------------------------------------------------

class IdentParams(NamedTuple):
    """Sweepable params: budget ``B``, allocation costs ``c_i`` (K,), cost floor ``lambda``, the
    bound ``jmax`` on any arm's pulls that the budget implies (int32; at most the static table length)
    and the unit pulls ``T = floor(B / c_bar)`` (int32, :func:`unit_pulls`)."""

    budget: jnp.ndarray
    costs: jnp.ndarray
    cost_floor: jnp.ndarray
    jmax: jnp.ndarray
    unit_pulls: jnp.ndarray


def ident_params(budget, costs, cost_floor, jmax) -> IdentParams:
    """:class:`IdentParams` in the default float dtype (float32; float64 under ``jax_enable_x64``)."""
    return IdentParams(jnp.asarray(budget, float), jnp.asarray(costs, float), jnp.asarray(cost_floor, float),
                       jnp.asarray(int(jmax), jnp.int32), jnp.asarray(unit_pulls(budget, costs), jnp.int32))


def table_length(jmax: int) -> int:
    """The static number of pulls per arm drawn for a bound ``jmax``: the next power of two (at least 16),
    so that budgets within a factor of two share one compiled program. A pull's value does not depend on
    how many are drawn, and the prefix sums of the first ``jmax`` are the same bits in a longer table."""
    return max(16, 1 << (max(1, int(jmax)) - 1).bit_length())


class Schedule(NamedTuple):
    """A method's phases, read by its bulk run and its step-wise form alike: ``target(p) -> fn(r, k_r, C_r)`` the
    pulls per active arm at the end of phase ``r`` (``k_r`` active arms of allocation cost ``C_r``); ``phases``
    (static); ``removals``: None (one arm a phase) or ``f(k_r)`` arms removed a phase; ``final``: ``"elimination"``
    (the accepted arms and those still active) or ``"pareto"`` (the empirical Pareto set of the active arms)."""

    target: Callable
    phases: int
    removals: Callable | None = None
    final: str = "elimination"


def _identifier(schedule: Schedule, num_arms: int, prefix_table, length: int, dim: int | None) -> Identifier:
    length = int(max(1, length))
    K = num_arms

    def identify(key_env, key_pol, env_params, p: IdentParams) -> IdentifyResult:
        """Run the method once on the common stream ``key_env``."""
        P = prefix_table(key_env, env_params, length)
        if schedule.final == "pareto":  # one phase of the whole set, then its empirical Pareto set
            active = jnp.ones(K, bool)
            N, spent, sums = top_up(P, jnp.zeros(K, jnp.int32), active, schedule.target(p)(1, K, None),
                                    jnp.zeros((), P.levels[0].dtype), p.budget, p.jmax)
            return IdentifyResult(empirical_pareto(_means(sums, N), active), spent, N)
        return IdentifyResult(*elimination(P, p.costs, p.budget, schedule.target(p), p.jmax,
                                           phases=schedule.phases, removals=schedule.removals))

    return Identifier(identify, stepwise=None if dim is None else stepwise_elimination(schedule, K, int(dim)))


def copsi_schedule(K: int) -> Schedule:
    """CoPSI's targets ``n_r = floor(B / (L_{K,lambda} C_r))``, ``K - 1`` phases."""
    def target(p):
        Lp = l_k_lambda(K, p.cost_floor)
        return lambda r, k_r, C_r: jnp.floor(p.budget / (Lp * C_r)).astype(jnp.int32)

    return Schedule(target, K - 1)


SCHEDULES = ("sr", "equal_costs")  # PSI-SR's targets: successive rejects (the default), or CoPSI's at c_bar


def psi_sr_schedule(K: int, schedule: str = "sr") -> Schedule:
    """PSI-SR's targets (:func:`psi_sr`), ``K - 1`` phases."""
    if schedule == SCHEDULES[0]:
        lb = logbar(K)

        def target(p):
            return lambda r, k_r, C_r: jnp.ceil(jnp.maximum(p.unit_pulls - K, 0) / (lb * (K + 1 - r))).astype(jnp.int32)
    else:
        def target(p):
            Lp = l_k_lambda(K, p.cost_floor)
            return lambda r, k_r, C_r: jnp.floor(p.budget / (Lp * k_r * jnp.mean(p.costs))).astype(jnp.int32)

    return Schedule(target, K - 1)


def ege_sh_schedule(K: int) -> Schedule:
    """EGE-SH's cumulative halving targets, ``ceil(log2 K)`` rounds removing ``floor(|A_r| / 2)`` arms each."""
    rounds = halving_rounds(K)

    def target(p):
        n = halving_targets(K, p.unit_pulls) if rounds else jnp.zeros(1, jnp.int32)
        return lambda r, k_r, C_r: n[r - 1]

    return Schedule(target, rounds, removals=lambda k_r: k_r // 2)


def uniform_schedule(K: int) -> Schedule:
    """Uniform allocation: one phase to ``jmax`` pulls of every arm, then the empirical Pareto set."""
    return Schedule(lambda p: (lambda r, k_r, C_r: p.jmax), 1, removals=lambda k_r: 0, final="pareto")


def copsi(num_arms: int, length: int, prefix_table, dim: int | None = None) -> Identifier:
    """CoPSI (Algorithm 2): targets ``n_r = floor(B / (L_{K,lambda} C_r))`` from the costs ``c_i``.

    ``length`` (static, at least the params' ``jmax``) is the number of pulls per arm that
    ``prefix_table``, the environment's bulk sampler, draws.
    """
    return _identifier(copsi_schedule(num_arms), num_arms, prefix_table, length, dim)


def psi_sr(num_arms: int, length: int, prefix_table, schedule: str, dim: int | None = None) -> Identifier:
    """PSI-SR; ``schedule="sr"``: successive-rejects targets for ``T = floor(B / c_bar)`` unit pulls;
    ``schedule="equal_costs"``: CoPSI's targets with every ``c_i`` replaced by ``c_bar``."""
    return _identifier(psi_sr_schedule(num_arms, schedule), num_arms, prefix_table, length, dim)


def ege_sh(num_arms: int, length: int, prefix_table, dim: int | None = None) -> Identifier:
    """EGE-SH (Kone et al., 2024): ``ceil(log2 K)`` rounds of successive halving on the empirical gaps.

    Round ``r`` brings the ``|A_r|`` active arms to ``n_r = sum_{s <= r} t_s`` pulls,
    ``t_s = floor(T / (|A_s| ceil(log2 K)))`` with ``T = floor(B / c_bar)`` unit pulls (cost insensitive,
    as PSI-SR), then removes the ``floor(|A_r| / 2)`` arms with the largest gaps of Eq. (1) over ``A_r``,
    each accepted iff it is empirically not dominated in ``A_r``; the last arm is accepted.
    """
    return _identifier(ege_sh_schedule(num_arms), num_arms, prefix_table, length, dim)


def uniform_alloc(num_arms: int, length: int, prefix_table, dim: int | None = None) -> Identifier:
    """Uniform allocation: ``jmax`` complete rounds (as the budget affords), then the empirical Pareto set."""
    return _identifier(uniform_schedule(num_arms), num_arms, prefix_table, length, dim)


# --------------------------------------------------------------------------------------------
# Step-wise form: the caller owns the pulls (a live study)
# --------------------------------------------------------------------------------------------

class EliminationState(NamedTuple):
    """Phase ``r`` (1-based), whether it was cut short (``short``), the active and accepted sets (K,) bool, pulls (K,)
    int32, the sums (K, d + 1) of each arm's rewards and costs, the cost spent, and whether the last phase has ended.
    A phase's target is read from the params when it is needed, so params re-planned between calls (:func:`replan`)
    move the targets of the current phase and the next ones."""

    r: Any
    cut: Any
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
        target = jnp.where(s.cut, n0, phase_target(s.r, s.active, p))
        need = jnp.clip(target - n0, 0, p.jmax - n0)
        return jnp.where(s.active & ~s.done, need, 0).astype(jnp.int32)

    def close(s: EliminationState, p: IdentParams) -> EliminationState:
        active, accepted = s.active, s.accepted
        if schedule.final == "elimination":
            gamma, dominated = empirical_gaps(_means(s.sums, s.N), active)
            active, accepted = close_phase(gamma, dominated, active, accepted, schedule.removals)
        r = s.r + 1
        return s._replace(r=r, cut=jnp.zeros((), bool), active=active, accepted=accepted, done=r > schedule.phases)

    def advance(s: EliminationState, p: IdentParams) -> EliminationState:
        """Close every phase whose target is reached (a phase may need no pulls at all)."""
        return jax.lax.while_loop(lambda s: ~s.done & ~jnp.any(remaining(s, p) > 0), lambda s: close(s, p), s)

    def init(p: IdentParams) -> EliminationState:
        dtype = p.budget.dtype
        s = EliminationState(jnp.ones((), jnp.int32), jnp.zeros((), bool), jnp.ones(K, bool), jnp.zeros(K, bool),
                             jnp.zeros(K, jnp.int32), jnp.zeros((K, dim + 1), dtype), jnp.zeros((), dtype),
                             jnp.asarray(schedule.phases < 1))
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
        return advance(s._replace(cut=jnp.ones((), bool)), p)

    def recommend(s: EliminationState, p: IdentParams):
        if schedule.final == "pareto":
            return empirical_pareto(_means(s.sums, s.N), s.active)
        return s.accepted | s.active

    def stopped(s: EliminationState, p: IdentParams):
        return s.done

    _SCHEDULES[select] = schedule
    return Stepwise(init, select, update, short, recommend, stopped)


_SCHEDULES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a step-wise form's select -> its Schedule


def schedule_of(stepwise: Stepwise) -> Schedule | None:
    """The :class:`Schedule` of a step-wise form built by :func:`stepwise_elimination`.

    Args:
      stepwise: a :class:`~mobandit_jax.types.Stepwise`.

    Returns:
      Its :class:`Schedule` (what :func:`replan` re-plans), or None for a step-wise form of another kind.
    """
    return _SCHEDULES.get(stepwise.select)


def replan(schedule: Schedule, state: EliminationState, p: IdentParams, costs, left: float, pulls=None) -> IdentParams:
    """Params that re-plan the rest of a method's phases at a barrier of a live study from measured costs.

    The phases keep their shape (targets ``schedule.target``, removals per phase); what changes is the budget they
    are planned with: the largest ``B_v`` whose planned pulls from the current counts to the end, charged the
    measured mean costs, fit in the budget left. The current phase is charged its active arms' costs; a later phase
    of ``k_s`` arms ``k_s`` times their mean cost (which arms stay is not known yet). Re-planned at every barrier, the
    last phase's plan is exact; it plans one sweep more than fits, which a study hands out arm by arm while the
    budget lasts, so a study whose evaluations cost what was measured leaves less than one evaluation unspent.

    Args:
      schedule: the method's :class:`Schedule`.
      state: its :class:`EliminationState` at the barrier.
      p: its params (the budget and costs it was configured with).
      costs: ``(K,)`` each arm's measured mean cost (its expected cost before it was told one), in ``p``'s units.
      left: the budget left, in ``p``'s units.
      pulls: ``(K,)`` pulls told since ``state`` (default none), counted as made.

    Returns:
      The re-planned :class:`IdentParams` (``p`` itself once the method has ended).
    """
    if bool(state.done):
        return p
    costs = np.asarray(costs, float)
    N = np.asarray(state.N, np.int64) + (0 if pulls is None else np.asarray(pulls, np.int64))
    active = np.asarray(state.active, bool)
    r, c_act = int(state.r), costs[active]
    big = 2 ** 30

    def params(b):
        jmax = _floor(b / float(costs.sum())) if schedule.final == "pareto" else big
        return IdentParams(jnp.asarray(b, p.budget.dtype), jnp.asarray(costs, p.costs.dtype),
                           jnp.asarray(costs.min(), p.cost_floor.dtype), jnp.asarray(min(jmax, big), jnp.int32),
                           jnp.asarray(min(unit_pulls(b, costs), big), jnp.int32))

    def spend(b) -> float:
        pv = params(b)
        fn = schedule.target(pv)
        k, level, total = int(active.sum()), int(N[active].max()), 0.0
        for s in range(r, schedule.phases + 1):
            C = float(c_act.sum()) if s == r else k * float(c_act.mean())
            n = min(int(fn(s, jnp.asarray(k), jnp.asarray(C, pv.costs.dtype))), int(pv.jmax))
            if s == r:
                total += float(np.sum(np.maximum(n - N[active], 0) * c_act))
            else:
                total += k * max(n - level, 0) * float(c_act.mean())
            level = max(level, n)
            k -= 1 if schedule.removals is None else int(schedule.removals(k))
        return total

    lo, hi = 0.0, max(float(p.budget), float(costs.sum()))
    while spend(hi) <= left and hi < 1e12:
        lo, hi = hi, 2 * hi
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if spend(mid) <= left else (lo, mid)
    # the last phase plans one sweep more than fits: the caller hands it out arm by arm while the budget lasts
    return params(hi if r == schedule.phases else lo)


# --------------------------------------------------------------------------------------------
# Registry rows: the pull bound jmax, its static table length and the params from an experiment context
# --------------------------------------------------------------------------------------------

def _floor(x: float) -> int:
    """``floor(x)`` of a ratio that is an integer up to float64 rounding (``B / sum_i c_i = rho``)."""
    return int(math.floor(x * (1 + 1e-9)))


def _checked(ctx, method):
    """``(lambda, c, B)`` of the context, validated; lambda = min_i c_i (the allocation floor)."""
    env = ctx.env
    if env is None or env.prefix_table is None or ctx.alloc_costs is None or ctx.min_costs is None:
        raise ValueError(f"{method}: the environment must provide a bulk sampler and allocation costs "
                         "(use env kind 'llm_configs')")
    if ctx.cost_floor is None or ctx.budget is None:
        raise ConfigError(f"policy {method!r}: fixed-budget identification needs a budget: add a [budget] table "
                          "with rho (B = rho * K * mean cost) or B (in units of the largest cost)")
    lam, det = float(ctx.cost_floor), np.asarray(ctx.alloc_costs, float)
    if not 0 < lam <= 1:
        raise ValueError(f"{method}: cost floor lambda must satisfy 0 < lambda <= 1, got {lam}")
    validate_costs(det, lam)
    budget = float(ctx.budget)
    if not math.isfinite(budget):
        validate_budget(budget, float(np.min(ctx.min_costs)))
    # a finite budget below a pull of every arm is refused by each method's _first_phase, naming its smallest budget
    # The allocation uses the profiling costs c_i only (Appendix A, robustness protocol), so
    # L_{K,lambda} takes lambda = min_i c_i, the floor of the allocation costs, whatever is charged.
    return float(det.min()), det, budget


def _one_sweep(ctx) -> float:
    """One pull of every arm at its cheapest, as the program sums it: the float64 sum, or the default float's sum
    where that rounds above it (a simulated sweep is charged in that precision)."""
    costs = np.asarray(ctx.min_costs, float)
    if ctx.instance.info.get("budget_key") == "budget.B":  # a study sums its costs in float64 (Study.affordable)
        return float(costs.sum())
    dtype = np.dtype(jax.dtypes.canonicalize_dtype(jnp.float64))
    low = costs.astype(dtype)
    sequential = low[0]
    for c in low[1:]:
        sequential = dtype.type(sequential + c)
    return max(float(costs.sum()), float(sequential), float(np.sum(low)))


def smallest_budget(schedule: Schedule, ctx, first: float) -> float:
    """The smallest budget (``ctx``'s units) at which a method's first phase gives every arm a pull.

    Args:
      schedule: the method's :class:`Schedule`.
      ctx: the experiment's context (costs, cost floor).
      first: the budget the method's first-phase target reaches one pull at, in exact arithmetic (e.g. CoPSI's
        ``L_{K,lambda} C_1``).

    Returns:
      The larger of ``first`` and one pull of every arm, raised by the last bits the program's float needs for its
      first target to be at least 1 (the target is computed as the program computes it).
    """
    K, det = ctx.num_arms, np.asarray(ctx.alloc_costs, float)
    lam = float(det.min())
    need = max(float(first), _one_sweep(ctx))
    for _ in range(64):
        p = ident_params(need, det, lam, 1)
        C_1 = jnp.sum(p.costs)
        if schedule.phases < 1 or int(schedule.target(p)(1, jnp.asarray(K), C_1)) >= 1:
            return need
        need = float(np.nextafter(np.float32(need), np.float32(np.inf)))
    return need


def _plain(x: float, up: bool = False) -> str:
    """``x`` to 6 significant digits; with ``up``, rounded up where the nearest would fall short of ``x`` by more
    than the refusal's tolerance (so that the number shown is enough)."""
    if up and x > 0 and float(f"{x:.6g}") < x * (1 - 1e-12):
        q = Decimal(1).scaleb(math.floor(math.log10(x)) - 5)
        x = float(Decimal(x).quantize(q, rounding=ROUND_CEILING))
    return f"{x:.6g}"


FIRST = "its first phase needs to evaluate each of the {K} arms once"


def _first_phase(ctx, method: str, budget: float, need: float, literal: bool = False):
    """Refuse a budget below ``need`` (:func:`smallest_budget`) in one line naming it in the data's own cost units.

    ``literal`` (CoPSI's paper schedule, ``experiment.paper_schedule``) runs a budget below ``need`` instead, with a
    :class:`BudgetWarning` that arms may be recommended unevaluated, and refuses only one below a pull of every arm.
    """
    if budget >= need * (1 - 1e-12):
        return
    sweep = _one_sweep(ctx)
    if literal and budget >= sweep * (1 - 1e-12):
        warnings.warn(_too_small(ctx, method, budget, need, FIRST) + ": the paper's schedule runs "
                      "as it is, and may recommend arms it never evaluated", BudgetWarning, stacklevel=3)
        return
    need, what = (sweep, "one evaluation of each of the {K} arms costs") if literal else (need, FIRST)
    scale = ctx.instance.cost_unit[0]
    if ctx.instance.info.get("budget_key") == "budget.B":  # a study: B and the costs in the user's own units
        hint = f"give budget.B >= {_plain(need * scale, True)}"
    else:
        rho = need / (ctx.num_arms * float(np.mean(ctx.alloc_costs)))
        hint = (f"give budget.B >= {_plain(need, True)} or budget.rho >= {_plain(rho, True)} (env.rho for kind "
                "'llm_configs')")
    raise ConfigError(f"{_too_small(ctx, method, budget, need, what)}: {hint}")


def _too_small(ctx, method: str, budget: float, need: float, what: str) -> str:
    """``policy 'name': budget B = ... is below the ... <what>`` (in the data's own cost units too)."""
    scale, unit = ctx.instance.cost_unit
    K = ctx.num_arms
    if ctx.instance.info.get("budget_key") == "budget.B":
        return (f"policy {method!r}: budget.B = {_plain(budget * scale)} {unit} is below the "
                f"{_plain(need * scale, True)} {unit} {what.format(K=K)}")
    own = (scale, unit) != (1.0, "cost units")
    return (f"policy {method!r}: budget B = {_plain(budget)}{f' ({_plain(budget * scale)} {unit})' if own else ''} "
            f"is below the {_plain(need, True)}{f' ({_plain(need * scale, True)} {unit})' if own else ''} "
            f"{what.format(K=K)} (B in units of the largest cost)")


class BudgetWarning(UserWarning):
    """A fixed-budget method runs its literal schedule at a budget below its first phase (some arms get no pull)."""


def _configure_copsi(ctx):
    lam, det, budget = _checked(ctx, "copsi")
    K = ctx.num_arms
    first = l_k_lambda(K, lam, np) * float(det.sum())  # n_1 = floor(B / (L C_1))
    # the paper's own settings (Figure 5 at rho = 10 over K = 132) are below it: a run asking for the paper's
    # schedule (experiment.paper_schedule) keeps it there, with a warning
    _first_phase(ctx, "copsi", budget, smallest_budget(copsi_schedule(K), ctx, first),
                 literal=ctx.instance.info.get("paper_schedule", False))
    two = np.sort(det)[:2].sum() if K >= 2 else det.sum()
    jmax = max(1, _floor(budget / (l_k_lambda(K, lam, np) * two)))
    return (dict(num_arms=K, length=table_length(jmax), prefix_table=ctx.env.prefix_table, dim=ctx.dim),
            ident_params(budget, det, lam, jmax))


def _configure_psi_sr(ctx, schedule):
    """PSI-SR's sizes and params.

    Options:
      schedule: how the budget is split over the phases: successive rejects' schedule, or one for equal costs.
        Allowed: 'sr' or 'equal_costs'.
    """
    if schedule not in SCHEDULES:
        raise ValueError(f"psi_sr: option schedule must be one of {list(SCHEDULES)}, got {schedule!r}")
    lam, det, budget = _checked(ctx, "psi_sr")
    K = ctx.num_arms
    c_bar = float(det.mean())
    # sr: n_1 = ceil((T - K) / (logbar K)) needs T > K; equal costs: n_1 = floor(B / (L K c_bar))
    first = (K + 1) * c_bar if schedule == SCHEDULES[0] else l_k_lambda(K, lam, np) * K * c_bar
    _first_phase(ctx, "psi_sr", budget, smallest_budget(psi_sr_schedule(K, schedule), ctx, first))
    if schedule == SCHEDULES[0]:
        jmax = int(math.ceil(max(unit_pulls(budget, det) - K, 0) / (logbar(K) * 2)))
    else:
        jmax = _floor(budget / (l_k_lambda(K, lam, np) * 2 * c_bar))
    jmax = int(max(1, jmax))
    kwargs = dict(num_arms=K, length=table_length(jmax), prefix_table=ctx.env.prefix_table, schedule=schedule,
                  dim=ctx.dim)
    return kwargs, ident_params(budget, det, lam, jmax)


def _configure_ege_sh(ctx):
    lam, det, budget = _checked(ctx, "ege_sh")
    K = ctx.num_arms
    first = K * max(1, halving_rounds(K)) * float(det.mean())  # t_1 = floor(T / (K ceil(log2 K)))
    _first_phase(ctx, "ege_sh", budget, smallest_budget(ege_sh_schedule(K), ctx, first))
    targets = halving_targets(K, unit_pulls(budget, det), np)  # the last round's target bounds every count
    jmax = int(max(1, targets[-1] if len(targets) else 1))
    return (dict(num_arms=K, length=table_length(jmax), prefix_table=ctx.env.prefix_table, dim=ctx.dim),
            ident_params(budget, det, lam, jmax))


def _configure_uniform_alloc(ctx):
    lam, det, budget = _checked(ctx, "uniform_alloc")
    _first_phase(ctx, "uniform_alloc", budget, smallest_budget(uniform_schedule(ctx.num_arms), ctx, 0.0))
    jmax = max(1, _floor(budget / float(np.sum(ctx.min_costs))))
    return (dict(num_arms=ctx.num_arms, length=table_length(jmax), prefix_table=ctx.env.prefix_table,
                 dim=ctx.dim),
            ident_params(budget, det, lam, jmax))


register_policy("copsi", "identification", copsi, _configure_copsi,
         "CoPSI, cost-aware Pareto set identification (Xue et al., Algorithm 2)")
register_policy("psi_sr", "identification", psi_sr, _configure_psi_sr,
         "PSI-SR: cost-insensitive EGE successive rejects (Kone et al., 2024)", schedule=SCHEDULES[0])
register_policy("ege_sh", "identification", ege_sh, _configure_ege_sh,
         "EGE-SH: cost-insensitive empirical gap elimination by successive halving (Kone et al., 2024)")
register_policy("uniform_alloc", "identification", uniform_alloc, _configure_uniform_alloc,
         "Uniform allocation, then the empirical Pareto set (Xue et al., Section 5.1)")
