"""Step-wise fixed-confidence Pareto set identification methods, and their run as one batched identifier.

Auer et al., APE and Track-and-Stop (:mod:`.pac_auer`, :mod:`.pac_ape`, :mod:`.pac_track_and_stop`) are
written as a :class:`StepwiseMethod`: pure ``init`` / ``select`` / ``update`` plus ``recommend`` and
``stopped``, so a caller that owns the pulls (an ask/tell study) can drive one directly. A round's
``select`` returns the ``(K,)`` mask of the arms to pull once each (Auer: every active arm; APE: ``b_t``
and ``c_t``, or the less pulled one; Track-and-Stop: one arm), and ``update`` takes their rewards.

:func:`stepwise_identifier` runs a method as an :class:`~mobandit_jax.types.Identifier` of the pac
family (Track-and-Stop), in one ``lax.while_loop`` capped at ``horizon`` rounds (under ``vmap`` a lane whose rule
fired is frozen while the others go on; ``stopped`` is False for a lane that reached the cap or the budget); a method
whose functions also take trailing lane axes (Auer et al., APE) runs on lanes laid out last
(:func:`~.pac_lanes.lanes_identifier`), with the same rules:

- the cone: every reward ``y`` is seen as ``W y``, so the method identifies the componentwise Pareto
  set of the projected means ``W mu``, which is the cone-optimal set (``W (mu_j - mu_i) >= 0`` is
  componentwise dominance of the projections); the noise scale of projected objective ``n`` is
  ``sigma ||w_n||`` and the methods use the largest, :func:`projected_sigma`;
- costs: the round's pulls are charged their costs (``spent``); a round whose pulls would exceed the
  budget is not played and the run ends with ``stopped = False``;
- rewards: arm ``i``'s ``j``-th pull comes from the environment's counter stream where it has one (a stochastic
  mean table's, one hash a pull: :func:`pull_sampler`), else from its ``sample``; a function of
  ``(seed, i, j)`` either way, so the three methods face the same rewards, whatever the batch.

The confidence radius of Auer et al. and APE is the authors' (``cyrille-kone/linear_psi``,
``utils.hpp``): ``beta_ij = sigma sqrt(2 (2 C^g(delta) + log(1 + log T_i) + log(1 + log T_j)) (1/T_i + 1/T_j))``
with ``C^g(delta) = log(1/delta)/2 + max(log(log(1/delta)/2), 0)`` (:func:`radius_between`, ``radius =
"authors"``). It takes no union over the pairs and objectives; ``radius = "union"`` puts
``delta / (K (K - 1) M)`` in ``C^g``, the union bound that the correctness proofs spend.

References:
- P. Auer, C.-K. Chiang, R. Ortner and M. M. Drugan (2016), Pareto Front Identification from Stochastic Bandit
  Feedback, AISTATS 2016, https://proceedings.mlr.press/v51/auer16.html
- C. Kone, E. Kaufmann and L. Richert (2023), Adaptive Algorithms for Relaxed Pareto Set Identification,
  NeurIPS 2023, https://arxiv.org/abs/2307.00424
- E. Crepon, A. Garivier and W. M. Koolen (2024), Sequential Learning of the Pareto Front for Multi-objective
  Bandits, AISTATS 2024, https://arxiv.org/abs/2501.17513
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels.lanes import packed_indices
from ..types import Identifier, Stepwise
from .pac import PacResult, _common, _draw, _pulls, _sigma

RADII = ("authors", "union")


class StepwiseMethod(NamedTuple):
    """A fixed-confidence method as pure steps (module docstring); ``params`` is its params pytree.

    ``init(params) -> state``; ``select(key, state, params) -> (K,) bool`` arms to pull this round;
    ``update(state, pulled (K,) bool, rewards (K, M), params) -> state`` (rows of unpulled arms are
    ignored); ``recommend(state, params) -> (K,) bool``; ``stopped(state, params) -> () bool``."""

    init: Callable
    select: Callable
    update: Callable
    recommend: Callable
    stopped: Callable


class StepwiseParams(NamedTuple):
    """What the identifier adds to a method's params: the cone ``W (M, d)``, the round cap, the budget and the
    ``epsilon`` and ``delta`` the result is scored at."""

    method: Any
    W: jnp.ndarray
    cap: jnp.ndarray
    budget: jnp.ndarray
    epsilon: jnp.ndarray
    delta: jnp.ndarray


class Counts(NamedTuple):
    """Pull counts ``(K,)`` int32 and reward sums ``(K, M)``: the statistics every method here keeps (with trailing lane
    axes where a method runs lanes last: ``(K, L)`` and ``(K, M, L)``)."""

    n: jnp.ndarray
    sums: jnp.ndarray

    @classmethod
    def zeros(cls, K: int, M: int, dtype):
        return cls(jnp.zeros(K, jnp.int32), jnp.zeros((K, M), dtype))

    def add(self, pulled, rewards):
        """The counts after one pull of each arm of ``pulled`` with these rewards."""
        return Counts(self.n + pulled.astype(jnp.int32),
                      self.sums + jnp.where(pulled[:, None], rewards.astype(self.sums.dtype), 0.0))

    @property
    def means(self):
        """``sums / max(n, 1)``, a true division (the authors'): through the barrier XLA sees no broadcast of ``n``
        to turn into a product with ``1 / n``, which it would compute again in every kernel that reads the means and
        could contract into the differences taken of them (one rounding in one program, two in another)."""
        n = jnp.broadcast_to(jnp.maximum(self.n, 1)[:, None].astype(self.sums.dtype), self.sums.shape)
        return self.sums / jax.lax.optimization_barrier(n)


def cg(delta):
    """``C^g(delta) = log(1/delta)/2 + max(log(log(1/delta)/2), 0)`` (linear_psi's ``Cg``)."""
    half = jnp.log(1.0 / delta) / 2
    return half + jnp.maximum(jnp.log(half), 0.0)


def off_diagonal(K: int, lanes: int):
    """``(K, K)`` bool, True off the diagonal, with ``lanes`` trailing axes of size 1 (to broadcast over lanes)."""
    return (~jnp.eye(K, dtype=bool)).reshape((K, K) + (1,) * lanes)


class ArmTerms(NamedTuple):
    """What the pair statistics read of each arm: its mean ``(K, M)``, ``1 / T_i`` and ``log(1 + log T_i)`` (``(K,)``;
    trailing lane axes as the counts'), ``T_i`` the pulls (at least 1)."""

    means: jnp.ndarray
    inverse: jnp.ndarray
    loglog: jnp.ndarray


def arm_terms(counts: Counts) -> ArmTerms:
    """:class:`ArmTerms` of the counts."""
    n = jnp.maximum(counts.n, 1).astype(counts.sums.dtype)
    return ArmTerms(counts.means, 1 / n, jnp.log1p(jnp.log(n)))


def radius_between(inverse_i, loglog_i, inverse_j, loglog_j, c, sigma):
    """``beta_ij`` (module docstring) from the two arms' :class:`ArmTerms`, broadcast against each other."""
    # sigma inside the root: the radius ends in a square root, which XLA cannot contract into the additions that
    # read it (a product can become one rounding of a multiply-add in one program and two in another)
    return jnp.sqrt(2 * sigma * sigma * (2 * c + loglog_i + loglog_j) * (inverse_i + inverse_j))


def radius_delta(radius: str, delta: float, K: int, M: int) -> float:
    """The ``delta`` inside ``C^g``: ``delta`` (``"authors"``) or ``delta / (K (K - 1) M)`` (``"union"``)."""
    return delta if radius == "authors" else delta / (K * (K - 1) * M)


def margins(mu):
    """``(M, M^T)``: ``M(i, j) = max_n (mu_in - mu_jn)`` and ``M(j, i)``, each ``(K, K)``, for means ``mu (K, M)``
    (``(K, K, ...)`` for ``mu (K, M, ...)`` with trailing lane axes). The other margin of the module docstrings is
    ``m(i, j) = min_n (mu_jn - mu_in) = -M(i, j)``.

    One pass over the objectives, unrolled (a reduction over the small objective axis of ``(K, K, M, L)`` is about
    seven times slower on the CPU).
    """
    diffs = [mu[:, None, n] - mu[None, :, n] for n in range(mu.shape[1])]
    return functools.reduce(jnp.maximum, diffs), -functools.reduce(jnp.minimum, diffs)


def in_memory(fn, *args):
    """``fn(*args)`` between optimization barriers on its arguments and its results: XLA's algebraic rewrites do not
    cross them, so a product computed inside is not contracted into a sum that a kernel reading the results makes (a
    multiply-add rounds once, and whether XLA makes one depends on how it fuses the program: a seed's run would depend
    on its batch). Unlike a ``lax.cond``, a barrier stays one whether the params are arguments, constants XLA can fold
    or mapped by ``vmap`` (a ``cond`` on a folded or mapped predicate is inlined, and the fused program ran 2 to 20
    times slower on the CPU). A barrier does not by itself keep a cheap result in memory: the CPU compiler may still
    compute it again inside each kernel that reads it; an expensive one (a division, a logarithm) it computes once
    (:attr:`Counts.means`).

    Args:
      fn: a function of ``args``.
      *args: its arrays.

    Returns:
      ``fn(*args)``.
    """
    return jax.lax.optimization_barrier(fn(*jax.lax.optimization_barrier(args)))


class PairStatistics(NamedTuple):
    """Each ``(K, K)``: ``M(i, j)``, ``M(j, i)`` (:func:`margins`) and ``beta_ij`` (:func:`radius_between`), with the
    same trailing lane axes as the arms' terms."""

    big: jnp.ndarray
    big_t: jnp.ndarray
    beta: jnp.ndarray


def pair_statistics(t: ArmTerms, c, sigma) -> PairStatistics:
    """:class:`PairStatistics` of the arms' terms."""
    beta = radius_between(t.inverse[:, None], t.loglog[:, None], t.inverse[None, :], t.loglog[None, :], c, sigma)
    return PairStatistics(*margins(t.means), beta)


def empirical_pareto(mu):
    """``(K,)`` bool: arms no other arm Pareto-dominates (``>=`` everywhere, ``>`` somewhere; linear_psi's), for
    ``mu (K, M)`` (``(K, ...)`` for ``mu (K, M, ...)``); an arm whose row is ``-inf`` dominates none.

    The means are compared directly, not through their differences: XLA may contract a product of the means into
    the subtraction (an FMA), which leaves ``mu_i - mu_i`` a rounding error away from 0, enough for an arm to
    dominate itself.
    """
    objectives = range(mu.shape[1])
    at_least = functools.reduce(jnp.logical_and, [mu[None, :, n] >= mu[:, None, n] for n in objectives])
    above = functools.reduce(jnp.logical_or, [mu[None, :, n] > mu[:, None, n] for n in objectives])
    return ~jnp.any(at_least & above, axis=1)  # [i, j]: j dominates i


def pull_sampler(sample):
    """What the step-wise methods draw from: the environment's counter stream where its sampler has one
    (``sample.counter_sampler``, :func:`mobandit_jax.problems.stochastic.counter_sampler`: one hash a pull), else
    ``sample``."""
    return getattr(sample, "counter_sampler", sample)


def projected_sigma(sigma: float, W) -> float:
    """The noise scale of the projected objectives ``W y``: ``sigma max_n ||w_n||``."""
    return float(sigma * np.max(np.linalg.norm(np.asarray(W, float), axis=1)))


def _draw_at_most(sample, key_env, env_params, counts, t, pull, width: int):
    """Every arm's next pull where ``pull`` (``(K,)`` bool, at most ``width`` True) says, zeros elsewhere: the first
    ``width`` arms of ``pull`` are drawn (:func:`~.pac._draw` draws every arm when ``width`` is ``K``)."""
    K = counts.shape[0]
    if width >= K:
        y, c = _draw(sample, key_env, env_params, counts, t)
        return jnp.where(pull[:, None], y, 0), jnp.where(pull, c, 0)
    arms = packed_indices(pull, width)[:width]
    at = jnp.minimum(arms, K - 1)
    y, c = _pulls(sample, key_env, env_params, at, counts[at], t)
    return (jnp.zeros((K,) + y.shape[1:], y.dtype).at[arms].set(y, mode="drop"),
            jnp.zeros((K,) + c.shape[1:], c.dtype).at[arms].set(c, mode="drop"))


def stepwise_identifier(method: StepwiseMethod, num_arms: int, dim: int, sample, width: int,
                        in_turn: bool = True) -> Identifier:
    """Run ``method`` as an Identifier (module docstring): one pull of every arm, then rounds of at most ``width``
    pulls (the methods here pull every arm first; APE two arms a round after it, Track-and-Stop one).

    Args:
      method: the step-wise method.
      num_arms: ``K``.
      dim: the objectives the method sees (the cone's rows).
      sample: the environment's sampler (the method draws from :func:`pull_sampler` of it).
      width: the most arms a round after the first pulls.
      in_turn: whether to give it an ``identify_in_turn`` (:func:`_in_turn`), which runs seeds one after another
        in one lane.

    Returns:
      An :class:`~mobandit_jax.types.Identifier` whose ``identify`` runs one seed.
    """
    K, sample = num_arms, pull_sampler(sample)

    def identify(key_env, key_pol, env_params, p: StepwiseParams) -> PacResult:
        dtype = p.W.dtype

        def play(t, counts, state, spent, pull, draw):
            y, c = draw(sample, key_env, env_params, counts, t, pull)
            cost = jnp.sum(jnp.where(pull, c.astype(dtype), 0.0))
            ok = spent + cost <= p.budget
            new = (t + 1, counts + pull.astype(jnp.int32),
                   method.update(state, pull, y.astype(dtype) @ p.W.T, p.method), spent + cost, ~ok)
            return jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), new, (t, counts, state, spent, ~ok))

        every = lambda sample, key_env, env_params, counts, t, pull: _draw(sample, key_env, env_params, counts, t)
        first = play(jnp.zeros((), jnp.int32), jnp.zeros(K, jnp.int32), method.init(p.method), jnp.zeros((), dtype),
                     jnp.ones(K, bool), every)
        few = lambda *a: _draw_at_most(*a, width)

        def cond(s):
            t, _, state, _, halted = s
            return ~method.stopped(state, p.method) & (t < p.cap) & ~halted

        def body(s):
            t, counts, state, spent, _ = s
            return play(t, counts, state, spent, method.select(jax.random.fold_in(key_pol, t), state, p.method), few)

        _, counts, state, spent, _ = jax.lax.while_loop(cond, body, first)
        return PacResult(method.recommend(state, p.method), spent, counts, method.stopped(state, p.method),
                         p.epsilon, p.delta)

    return Identifier(identify, _in_turn(method, K, sample, width) if in_turn else None, as_steps(method, K))


class RoundState(NamedTuple):
    """:func:`as_steps`'s state: rounds played, pulls per arm, the method's state and whether the budget halted it."""

    t: Any
    counts: Any
    state: Any
    halted: Any


def as_steps(method: StepwiseMethod, num_arms: int) -> Stepwise:
    """``method`` as a :class:`~mobandit_jax.types.Stepwise` on :class:`StepwiseParams`: round 0 pulls every arm, round
    ``t`` the arms of ``method.select`` (its key ``fold_in(key_pol, t)``, as :func:`stepwise_identifier`); rewards are
    projected by the cone, ``short`` halts (the budget), and it stops on the rule, the round cap or the halt."""
    K = num_arms

    def init(p: StepwiseParams) -> RoundState:
        return RoundState(jnp.zeros((), jnp.int32), jnp.zeros(K, jnp.int32), method.init(p.method), jnp.zeros((), bool))

    def stopped(s: RoundState, p: StepwiseParams):
        return method.stopped(s.state, p.method) | (s.t >= p.cap) | s.halted

    def select(key, s: RoundState, p: StepwiseParams):
        pull = jnp.where(s.t == 0, jnp.ones(K, bool), method.select(key, s.state, p.method))
        return jnp.where(stopped(s, p), 0, pull.astype(jnp.int32))

    def update(s: RoundState, pulls, reward_sums, cost_sums, p: StepwiseParams) -> RoundState:
        pulled = pulls > 0
        y = reward_sums.astype(p.W.dtype) @ p.W.T
        return RoundState(s.t + 1, s.counts + pulls.astype(jnp.int32), method.update(s.state, pulled, y, p.method),
                          s.halted)

    def short(s: RoundState, p: StepwiseParams) -> RoundState:
        return s._replace(halted=jnp.ones((), bool))

    return Stepwise(init, select, update, short, lambda s, p: method.recommend(s.state, p.method), stopped,
                    lambda s, p: method.stopped(s.state, p.method))


class _Lane(NamedTuple):
    """One lane of :func:`_in_turn`: the seed it runs (the seed count once none is left for it), that seed's round,
    counts, state, spending and halt, and the first round's draws so far (``drawn`` arms, their projected rewards and
    costs)."""

    seed: jnp.ndarray
    t: jnp.ndarray
    counts: jnp.ndarray
    state: Any
    spent: jnp.ndarray
    halted: jnp.ndarray
    drawn: jnp.ndarray
    first_y: jnp.ndarray
    first_c: jnp.ndarray


def _in_turn(method: StepwiseMethod, K: int, sample, width: int):
    """``identify_in_turn(keys_env (S,), keys_pol (S,), env_params (leading S), p, lanes=1) -> PacResult (leading
    S)``: the ``S`` seeds share ``lanes`` lanes of one ``while_loop``; lane ``l`` starts on seed ``l``, and a lane
    whose seed stopped takes the next seed not yet started on the following iteration (lanes that stop on the same
    iteration take them in lane order). A batch then costs about the sum of its seeds' rounds over the lanes, rather
    than the batch size times the slowest seed's; a lane idles only once no seed is left to start.

    Each seed's result is the one :func:`stepwise_identifier`'s ``identify`` gives it: the first round's pulls
    (every arm, at round 0) are drawn ``width`` arms an iteration into a buffer and passed to one ``update``, and
    each later round is one iteration. Which lane runs a seed, and when, changes nothing in its result."""

    def identify_in_turn(keys_env, keys_pol, env_params, p: StepwiseParams, lanes: int = 1) -> PacResult:
        S, dtype = keys_env.shape[0], p.W.dtype
        L = max(1, min(int(lanes), S))
        start = method.init(p.method)
        _, c_shape = jax.eval_shape(lambda: sample(keys_env[0], 0, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32),
                                                   jax.tree_util.tree_map(lambda x: x[0], env_params)))
        fresh = dict(t=jnp.zeros((), jnp.int32), counts=jnp.zeros(K, jnp.int32), state=start,
                     spent=jnp.zeros((), dtype), halted=jnp.zeros((), bool), drawn=jnp.zeros(K, bool),
                     first_y=jnp.zeros((K, p.W.shape[0]), dtype),
                     first_c=jnp.zeros((K,) + c_shape.shape, c_shape.dtype))

        def step(lane: _Lane):
            """One iteration of one lane: ``(the lane after it, whether its seed stopped)``."""
            r = jnp.minimum(lane.seed, S - 1)
            key_env, key_pol = keys_env[r], keys_pol[r]
            ep = jax.tree_util.tree_map(lambda x: x[r], env_params)
            starting = ~jnp.all(lane.drawn)
            chosen = method.select(jax.random.fold_in(key_pol, lane.t), lane.state, p.method)
            next_first = (~lane.drawn) & (jnp.cumsum(~lane.drawn) <= width)
            pull = jnp.where(starting, next_first, chosen)
            y, c = _draw_at_most(sample, key_env, ep, lane.counts, jnp.where(starting, 0, lane.t), pull, width)
            # the draws projected at once: the product is their one use (XLA computes the draws again inside each
            # elementwise use), and the first round's buffer keeps projected rows
            y = y.astype(dtype) @ p.W.T
            drawn = lane.drawn | (starting & pull)
            first_y = jnp.where((starting & pull)[:, None], y, lane.first_y)
            first_c = jnp.where(starting & pull, c, lane.first_c)
            played = ~starting | jnp.all(drawn)  # a round ends: a later round, or the first one fully drawn
            pulled = jnp.where(starting, jnp.ones(K, bool), pull)
            y = jnp.where(starting, first_y, y)
            cost = jnp.sum(jnp.where(pulled, jnp.where(starting, first_c, c).astype(dtype), 0.0))
            ok = lane.spent + cost <= p.budget
            after = (lane.t + 1, lane.counts + pulled.astype(jnp.int32),
                     method.update(lane.state, pulled, y, p.method), lane.spent + cost)
            keep = (lane.t, lane.counts, lane.state, lane.spent)
            t, counts, state, spent = jax.tree_util.tree_map(lambda a, b: jnp.where(played & ok, a, b), after, keep)
            halted = lane.halted | (played & ~ok)
            done = (lane.seed < S) & played & (method.stopped(state, p.method) | (t >= p.cap) | halted)
            return _Lane(lane.seed, t, counts, state, spent, halted, drawn, first_y, first_c), done

        def body(carry):
            lanes_now, waiting, finals = carry
            ongoing, done = jax.vmap(step)(lanes_now)
            at = jnp.where(done, ongoing.seed, S)  # S: out of range, dropped
            states, spents, pulls = finals
            finals = (jax.tree_util.tree_map(lambda rows, v: rows.at[at].set(v, mode="drop"), states, ongoing.state),
                      spents.at[at].set(ongoing.spent, mode="drop"), pulls.at[at].set(ongoing.counts, mode="drop"))
            order = jnp.cumsum(done.astype(jnp.int32)) - 1
            seed = jnp.where(done, jnp.minimum(waiting + order, S), ongoing.seed)
            restart = jax.vmap(lambda s: _Lane(s, **fresh))(seed)
            moved = jax.tree_util.tree_map(
                lambda a, b: jnp.where(jnp.reshape(done, done.shape + (1,) * (a.ndim - 1)), a, b), restart, ongoing)
            return moved, waiting + jnp.sum(done, dtype=jnp.int32), finals

        finals = (jax.tree_util.tree_map(lambda x: jnp.zeros((S,) + x.shape, x.dtype), start),
                  jnp.zeros((S,), dtype), jnp.zeros((S, K), jnp.int32))
        first = jax.vmap(lambda s: _Lane(s, **fresh))(jnp.arange(L, dtype=jnp.int32))
        _, _, (states, spent, pulls) = jax.lax.while_loop(lambda carry: jnp.any(carry[0].seed < S), body,
                                                          (first, jnp.asarray(L, jnp.int32), finals))
        recommended = jax.vmap(method.recommend, in_axes=(0, None))(states, p.method)
        stopped = jax.vmap(method.stopped, in_axes=(0, None))(states, p.method)
        return PacResult(recommended, spent, pulls, stopped, jnp.broadcast_to(p.epsilon, (S,)),
                         jnp.broadcast_to(p.delta, (S,)))

    return identify_in_turn


def configure_stepwise(ctx, policy: str, epsilon, delta, radius=None):
    """``(W, sigma of the projections, epsilon, delta, cap, budget)`` of a step-wise method; one-line errors."""
    W, eps, dlt, cap, budget = _common(ctx, policy, epsilon, delta, need_epsilon=False)
    if radius is not None and radius not in RADII:
        raise ValueError(f"policy {policy!r}: radius = {radius!r} must be 'authors' (linear_psi's beta_ij) or "
                         "'union' (delta / (K (K - 1) M) inside C^g)")
    return W, projected_sigma(_sigma(ctx, policy), W), eps, dlt, cap, budget


def wrap(ctx, W, eps, dlt, cap, budget, method_params):
    """The :class:`StepwiseParams` of a configured method."""
    return StepwiseParams(method_params, jnp.asarray(W, float), cap, budget, jnp.asarray(eps, float),
                          jnp.asarray(dlt, float))
