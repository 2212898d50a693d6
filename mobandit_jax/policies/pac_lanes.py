"""A step-wise fixed-confidence method run on lanes laid out last, the seeds of a batch taking them in turn.

A method whose functions take states with trailing lane axes (Auer et al., :mod:`.pac_auer`, and APE,
:mod:`.pac_ape`: every statistic is an array whose first axes are arms and objectives, its last the lanes) runs
``L`` seeds at once as one state with a last axis of ``L``: a round of every lane is one pass of elementwise kernels
over arrays such as ``(K, K, L)``, each vectorized along the lanes. (Mapping a one-seed method with ``vmap`` puts the
lanes first instead, so that every reduction over arms or objectives runs along the contiguous axis, element by
element: about four times slower on the CPU.)

:func:`lanes_identifier` gives the method's :class:`~mobandit_jax.types.Identifier`. Its ``identify_in_turn`` runs
``S`` seeds on ``lanes`` lanes of one ``lax.while_loop``: lane ``l`` starts on seed ``l``; a lane whose seed stopped
(the rule, the round cap or the budget) hands its result over and takes the next seed not yet started (lanes whose
seeds stop in the same iteration take them in lane order), and plays the new seed's first round (every arm once) in
that iteration; each later iteration plays one round of every lane with a seed. The hand-over runs only in
iterations where some lane's seed stopped (``lax.cond``). ``identify`` is one seed on one lane, so a seed's result is
the same alone or in turn, whichever lane runs it and when. Rewards are drawn from the environment's counter stream
where it has one (:func:`~.pac_stepwise.pull_sampler`) and seen through the cone, ``W y``; a round's pulls are
charged their costs, and a round that would exceed the budget is not played (the seed ends, ``stopped`` False).
"""
from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..types import Identifier
from .pac import PacResult
from .pac_stepwise import StepwiseMethod, StepwiseParams, as_steps, pull_sampler


class Lanes(NamedTuple):
    """``L`` lanes, the lanes last: the seed each runs (``S``: none left), its rounds played, pulls ``(K, L)``, the
    method's state, cost spent, whether the budget halted it and whether its seed is over (it stopped and waits to
    hand its result over)."""

    seed: jnp.ndarray
    t: jnp.ndarray
    counts: jnp.ndarray
    state: Any
    spent: jnp.ndarray
    halted: jnp.ndarray
    over: jnp.ndarray


class Sources(NamedTuple):
    """What each lane's seed draws with, the lanes first: its environment and policy keys and environment params."""

    key_env: Any
    key_pol: Any
    env: Any


def _last(mask, new, old):
    """``new`` where the lane ``mask (L,)`` is True, else ``old``; the lanes are the arrays' last axis."""
    return jnp.where(mask.reshape((1,) * (jnp.ndim(new) - 1) + mask.shape), new, old)


def _first(mask, new, old):
    """:func:`_last` for arrays whose first axis is the lanes."""
    return jnp.where(mask.reshape(mask.shape + (1,) * (jnp.ndim(new) - 1)), new, old)


def _first_arms(pull, width: int):
    """``(width, L)`` int32: each lane's first ``width`` arms of ``pull (K, L)``, in order, then ``K`` (none)."""
    K = pull.shape[0]
    arms = jnp.arange(K)[:, None]
    picked = []
    for _ in range(width):
        a = jnp.where(jnp.any(pull, axis=0), jnp.argmax(pull, axis=0), K)
        picked.append(a)
        pull = pull & (arms != a)
    return jnp.stack(picked).astype(jnp.int32)


def lanes_identifier(method: StepwiseMethod, num_arms: int, dim: int, sample, width: int) -> Identifier:
    """Run ``method``, whose functions take trailing lane axes, as an Identifier (module docstring).

    Args:
      method: the step-wise method (its states may carry trailing lane axes).
      num_arms: ``K``.
      dim: the objectives the method sees (the cone's rows).
      sample: the environment's sampler (the method draws from :func:`~.pac_stepwise.pull_sampler` of it).
      width: the most arms a round after the first pulls.

    Returns:
      An :class:`~mobandit_jax.types.Identifier` with ``identify``, ``identify_in_turn`` and the method's step-wise
      form (:func:`~.pac_stepwise.as_steps`).
    """
    K, draw_one = num_arms, pull_sampler(sample)

    def draw(lanes: Lanes, src: Sources, pull, W, every: bool):
        """Projected rewards ``(K, M, L)`` and costs ``(K, L)`` of the pulls ``pull (K, L)`` of every lane (zeros
        elsewhere); ``every``: all arms, else at most ``width`` arms a lane."""
        arms = jnp.broadcast_to(jnp.arange(K)[:, None], pull.shape) if every or width >= K else _first_arms(pull, width)
        at = jnp.minimum(arms, K - 1)
        index = lanes.counts if arms.shape[0] == K else jnp.take_along_axis(lanes.counts, at, axis=0)
        pulls = jax.vmap(lambda key, ep, a, j, t: jax.vmap(lambda a, j: draw_one(key, a, j, t, ep))(a, j),
                         in_axes=(0, 0, 1, 1, 0), out_axes=-1)
        y, c = pulls(src.key_env, src.env, at, index, lanes.t)  # (w, d, L), (w, L)
        y = jnp.sum(W[None, :, :, None] * y[:, None].astype(W.dtype), axis=2)  # (w, M, L): W y
        if arms.shape[0] < K:  # each lane's rows back at its arms
            hit = arms[:, None, :] == jnp.arange(K)[None, :, None]  # (w, K, L)
            y = jnp.sum(jnp.where(hit[:, :, None], y[:, None], 0), axis=0)
            c = jnp.sum(jnp.where(hit, c[:, None], 0), axis=0)
        return jnp.where(pull[:, None], y, 0), jnp.where(pull, c, 0)

    def identify_in_turn(keys_env, keys_pol, env_params, p: StepwiseParams, lanes: int = 1) -> PacResult:
        S, dtype = keys_env.shape[0], p.W.dtype
        L = max(1, min(int(lanes), S))
        W = p.W.astype(dtype)
        start = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x[..., None], x.shape + (L,)), method.init(p.method))

        def play(lanes: Lanes, src: Sources, pull, playing, every: bool) -> Lanes:
            """One round of the lanes where ``playing (L,)``: ``pull (K, L)``, charged, unless over the budget."""
            y, c = draw(lanes, src, pull, W, every)
            cost = jnp.sum(c.astype(dtype), axis=0)
            ok = lanes.spent + cost <= p.budget
            go = playing & ok
            state = jax.tree_util.tree_map(lambda a, b: _last(go, a, b), method.update(lanes.state, pull, y, p.method),
                                           lanes.state)
            t = lanes.t + go.astype(jnp.int32)
            halted = lanes.halted | (playing & ~ok)
            over = (lanes.seed < S) & (method.stopped(state, p.method) | (t >= p.cap) | halted)
            return Lanes(lanes.seed, t, lanes.counts + (pull & go).astype(jnp.int32), state,
                         jnp.where(go, lanes.spent + cost, lanes.spent), halted, over)

        def hand_over(lanes: Lanes, src: Sources, finals, waiting):
            """The results of the lanes whose seed is over, and the next seeds started on them (first round played)."""
            over = lanes.over
            at = jnp.where(over & (lanes.seed < S), lanes.seed, S)  # S: out of range, dropped
            rec, stop = method.recommend(lanes.state, p.method), method.stopped(lanes.state, p.method)
            finals = tuple(rows.at[at].set(v, mode="drop") for rows, v in
                           zip(finals, (rec.T, lanes.spent, lanes.counts.T, stop), strict=True))
            seed = jnp.where(over, jnp.minimum(waiting + jnp.cumsum(over.astype(jnp.int32)) - 1, S), lanes.seed)
            r = jnp.minimum(seed, S - 1)
            fresh_src = Sources(keys_env[r], keys_pol[r], jax.tree_util.tree_map(lambda x: x[r], env_params))
            src = jax.tree_util.tree_map(lambda a, b: _first(over, a, b), fresh_src, src)
            none = jnp.zeros(L, bool)
            fresh = Lanes(seed, jnp.zeros(L, jnp.int32), jnp.zeros((K, L), jnp.int32), start, jnp.zeros(L, dtype),
                          none, none)
            fresh = play(fresh, src, jnp.ones((K, L), bool), seed < S, every=True)
            lanes = jax.tree_util.tree_map(lambda a, b: _last(over, a, b), fresh, lanes._replace(seed=seed))
            return lanes, src, finals, waiting + jnp.sum(over, dtype=jnp.int32)

        def body(carry):
            lanes, src, finals, waiting = carry
            lanes, src, finals, waiting = jax.lax.cond(jnp.any(lanes.over), hand_over, lambda *a: a,
                                                       lanes, src, finals, waiting)
            keys = jax.vmap(jax.random.fold_in)(src.key_pol, lanes.t)
            pull = method.select(keys, lanes.state, p.method)
            return play(lanes, src, pull, (lanes.seed < S) & ~lanes.over, every=False), src, finals, waiting

        finals = (jnp.zeros((S, K), bool), jnp.zeros(S, dtype), jnp.zeros((S, K), jnp.int32), jnp.zeros(S, bool))
        idle = Lanes(jnp.full(L, S, jnp.int32), jnp.zeros(L, jnp.int32), jnp.zeros((K, L), jnp.int32), start,
                     jnp.zeros(L, dtype), jnp.zeros(L, bool), jnp.ones(L, bool))
        src = Sources(keys_env[:L], keys_pol[:L], jax.tree_util.tree_map(lambda x: x[:L], env_params))
        first = hand_over(idle, src, finals, jnp.zeros((), jnp.int32))
        _, _, (recommended, spent, pulls, stopped), _ = jax.lax.while_loop(
            lambda carry: jnp.any(carry[0].seed < S), body, first)
        return PacResult(recommended, spent, pulls, stopped, jnp.broadcast_to(p.epsilon, (S,)),
                         jnp.broadcast_to(p.delta, (S,)))

    def identify(key_env, key_pol, env_params, p: StepwiseParams) -> PacResult:
        """One seed on one lane."""
        one = identify_in_turn(key_env[None], key_pol[None], jax.tree_util.tree_map(lambda x: x[None], env_params), p)
        return jax.tree_util.tree_map(lambda x: x[0], one)

    return Identifier(identify, identify_in_turn, as_steps(method, K))
