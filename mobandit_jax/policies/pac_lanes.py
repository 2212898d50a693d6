"""A step-wise fixed-confidence method run on lanes laid out last, the seeds of a batch taking them in turn.

A method whose functions take states with trailing lane axes (Auer et al., :mod:`.pac_auer`, and APE,
:mod:`.pac_ape`: every statistic is an array whose first axes are arms and objectives, its last the lanes) runs
``L`` seeds at once as one state with a last axis of ``L``: a round of every lane is one pass of elementwise kernels
over arrays such as ``(K, K, L)``, each vectorized along the lanes. (Mapping a one-seed method with ``vmap`` puts the
lanes first instead, so that every reduction over arms or objectives runs along the contiguous axis, element by
element: about four times slower on the CPU.)

:func:`lanes_identifier` gives the method's :class:`~mobandit_jax.types.Identifier`. Its ``identify_in_turn`` runs
``S`` seeds on ``lanes`` lanes of one ``lax.while_loop`` a stage: lane ``l`` starts on the stage's ``l``-th seed; a
lane whose seed leaves the stage (its rule, the round cap or the budget stopped it, or it narrows) hands its run over
and takes the stage's next seed not yet started (lanes whose seeds leave in the same iteration take them in lane
order); each iteration plays one round of every lane with a seed. The hand-over runs only in iterations where some
lane's seed leaves (``lax.cond``). The first stage gives each lane the method on all ``K`` arms and plays a new seed's
first round (every arm once) as it starts.

An elimination method (Auer et al.: an arm that left the active set is read by no later test) narrows
(:class:`Narrowing`): once a seed's active arms fit in fewer slots (``widths``, e.g. 8, 4, 2 of ``K = 20``), the seed
leaves the stage and the next stage runs it with its active arms packed into that many slots, the method on that
many arms, until it stops or narrows again. A round then costs what its active arms need (in Auer et al.'s runs most
rounds have two arms left), as the authors' loop over the active set does, rather than ``K x K`` tests. A narrowed
stage's last seeds, once every seed has started and at most :data:`TAIL_LANES` hold a lane, go on on that many lanes
(:func:`_tail_stage`): a round's work is that of all its lanes, and a seed on two arms a hair apart can take a hundred
times the others' rounds.

``identify`` is one seed on one lane, so a seed's result is the same alone or in turn, whichever lane runs it and
when. Rewards are drawn from the environment's counter stream where it has one (:func:`~.pac_stepwise.pull_sampler`)
and seen through the cone, ``W y``; a round's pulls are charged their costs, and a round that would exceed the budget
is not played (the seed ends, ``stopped`` False).
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..kernels.lanes import packed_indices
from ..types import Identifier
from .pac import PacResult
from .pac_stepwise import StepwiseMethod, StepwiseParams, as_steps, in_memory, pull_sampler

TAIL_LANES = 8  # lanes a narrowed stage's last seeds move to (:func:`_tail_stage`)


class Narrowing(NamedTuple):
    """How an elimination method's seed moves onto fewer arm slots.

    ``method(width)``: the method on ``width`` arms; ``needed(state) -> (K, ...) bool``: the arms its later rounds read
    (Auer et al.: the active arms); ``pack(state, arms) -> state``: one seed's state on the slots ``arms (w,)`` (``K``
    for an empty slot); ``unpack(state, arms, slots) -> state``: its state on the ``K`` arms with the slots' written
    back; ``widths``: the slot counts, decreasing (those below ``K`` are used)."""

    method: Callable
    needed: Callable
    pack: Callable
    unpack: Callable
    widths: tuple


class Record(NamedTuple):
    """Every seed's run so far, the seeds first: the method's state on ``K`` arms, pulls ``(S, K)``, rounds, cost
    spent, whether the budget halted it and whether it is done (stopped, capped or halted)."""

    state: Any
    counts: jnp.ndarray
    t: jnp.ndarray
    spent: jnp.ndarray
    halted: jnp.ndarray
    done: jnp.ndarray


class Lanes(NamedTuple):
    """``L`` lanes of a stage, the lanes last: the seed each runs (``S``: none), its rounds, the arm of each of its
    ``w`` slots (``K``: none) and their pulls ``(w, L)``, the method's state on the slots, cost spent, whether the
    budget halted it and whether its seed leaves the stage."""

    seed: jnp.ndarray
    t: jnp.ndarray
    arms: jnp.ndarray
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


def _to_last(tree):
    return jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, 0, -1), tree)


def _to_first(tree):
    return jax.tree_util.tree_map(lambda x: jnp.moveaxis(x, -1, 0), tree)


def _first_slots(pull, width: int):
    """``(width, L)`` int32: each lane's first ``width`` slots of ``pull (w, L)``, in order, then ``w`` (none)."""
    w = pull.shape[0]
    slots = jnp.arange(w)[:, None]
    picked = []
    for _ in range(width):
        a = jnp.where(jnp.any(pull, axis=0), jnp.argmax(pull, axis=0), w)
        picked.append(a)
        pull = pull & (slots != a)
    return jnp.stack(picked).astype(jnp.int32)


def lanes_sampler(sample, num_arms: int):
    """``draw(keys (L,), env (lanes first), arms (n, L) or None, pull_index (n, L), t (L,)) -> (rewards (n, d, L),
    costs (n, L))``: the pulls of ``L`` seeds, the seeds last (``arms = None``: every arm in order), from the
    environment's counter stream (its sampler's ``counter_lanes``, elementwise along the lanes) where it has one,
    else its :func:`~.pac_stepwise.pull_sampler` mapped over the pulls and the lanes."""
    batched = getattr(sample, "counter_lanes", None)
    if batched is not None:
        return lambda keys, env, arms, index, t: batched(keys, arms, index, env)
    one = pull_sampler(sample)
    each = jax.vmap(lambda key, env, a, j, t: jax.vmap(lambda a, j: one(key, a, j, t, env))(a, j),
                    in_axes=(0, 0, 1, 1, 0), out_axes=-1)
    every = lambda index: jnp.broadcast_to(jnp.arange(num_arms)[:, None], index.shape)  # noqa: E731
    return lambda keys, env, arms, index, t: each(keys, env, every(index) if arms is None else arms, index, t)


class Stage(NamedTuple):
    """One stage of a call (static): the method on ``width`` slots, the next stage's width (None: the last), whether
    it is the first (seeds start there) and the narrowing (None: one stage)."""

    method: StepwiseMethod
    width: int
    narrower: int | None
    first: bool
    narrowing: Narrowing | None


class Batch(NamedTuple):
    """What every stage of one call reads: the sizes ``K``, ``S`` seeds and ``L`` lanes (static), the params and the
    cone ``W``, the seeds' keys and environment params (the seeds first), the lanes' draw (:func:`lanes_sampler`) and
    the most arms a round after the first pulls."""

    K: int
    S: int
    L: int
    p: StepwiseParams
    W: jnp.ndarray
    keys_env: Any
    keys_pol: Any
    env_params: Any
    pulls: Callable
    width: int


def _draw(b: Batch, lanes: Lanes, src: Sources, pull, every: bool):
    """Projected rewards ``(w, M, L)`` and costs ``(w, L)`` of the slots ``pull (w, L)`` of every lane (zeros
    elsewhere); ``every``: all slots, else at most ``b.width`` slots a lane."""
    w = pull.shape[0]
    if every or b.width >= w:  # the first stage's slots are the arms in order
        arms, index, back = (None if w == b.K else jnp.minimum(lanes.arms, b.K - 1)), lanes.counts, None
    else:
        back = _first_slots(pull, b.width)
        at = jnp.minimum(back, w - 1)
        arms, index = (jnp.take_along_axis(x, at, axis=0) for x in (jnp.minimum(lanes.arms, b.K - 1), lanes.counts))
    # kept in memory: in one fused kernel with W y, XLA would draw every pull again for each row of W
    draws = lambda key, env, index, t: b.pulls(key, env, arms, index, t)  # noqa: E731
    y, c = in_memory(draws, src.key_env, src.env, index, lanes.t)
    y = _project(b.W, y.astype(b.W.dtype))
    if back is not None:  # each lane's rows back at its slots
        hit = back[:, None, :] == jnp.arange(w)[None, :, None]  # (n, w, L)
        y = jnp.sum(jnp.where(hit[:, :, None], y[:, None], 0), axis=0)
        c = jnp.sum(jnp.where(hit, c[:, None], 0), axis=0)
    return jnp.where(pull[:, None], y, 0), jnp.where(pull, c, 0)


def _project(W, y):
    """``W y`` of rewards ``y (n, d, L)``: ``(n, M, L)``, summed in the objectives' order in elementwise code (a
    reduction could go to another library for large batches and round otherwise, making a seed's rewards depend on
    its batch)."""
    terms = [W[None, :, n, None] * y[:, None, n] for n in range(y.shape[1])]
    return functools.reduce(jnp.add, terms)


def _narrow(st: Stage, state):
    """``(L,)`` bool: the lanes whose needed arms fit the next stage's slots."""
    return jnp.sum(st.narrowing.needed(state), axis=0) <= st.narrower


def _leaves(b: Batch, st: Stage, seed, state, t, halted):
    """``(L,)`` bool: the lanes whose seed leaves the stage: stopped, capped, halted or, but in the last, narrow."""
    out = st.method.stopped(state, b.p.method) | (t >= b.p.cap) | halted
    return (seed < b.S) & (out if st.narrower is None else out | _narrow(st, state))


def _play(b: Batch, st: Stage, lanes: Lanes, src: Sources, pull, playing, every: bool) -> Lanes:
    """One round of the lanes where ``playing (L,)``: the slots ``pull (w, L)``, charged, unless over the budget."""
    y, c = _draw(b, lanes, src, pull, every)
    cost = functools.reduce(jnp.add, list(c.astype(b.W.dtype)))  # in the slots' order, as _project
    ok = lanes.spent + cost <= b.p.budget
    go = playing & ok
    state = jax.tree_util.tree_map(lambda new, old: _last(go, new, old),
                                   st.method.update(lanes.state, pull, y, b.p.method), lanes.state)
    t = lanes.t + go.astype(jnp.int32)
    halted = lanes.halted | (playing & ~ok)
    return lanes._replace(t=t, counts=lanes.counts + (pull & go).astype(jnp.int32), state=state,
                          spent=jnp.where(go, lanes.spent + cost, lanes.spent), halted=halted,
                          over=_leaves(b, st, lanes.seed, state, t, halted))


def _write_back(b: Batch, st: Stage, record: Record, lanes: Lanes) -> Record:
    """The runs of the lanes whose seed leaves the stage, into the record (the slots' state unpacked)."""
    at = jnp.where(lanes.over, lanes.seed, b.S)  # S: out of range, dropped
    rows, arms = jnp.minimum(lanes.seed, b.S - 1), lanes.arms.T
    state = _to_first(lanes.state)
    if not st.first:
        state = jax.vmap(st.narrowing.unpack)(jax.tree_util.tree_map(lambda x: x[rows], record.state), arms, state)
    counts = record.counts[rows].at[jnp.arange(b.L)[:, None], arms].set(lanes.counts.T, mode="drop")
    done = st.method.stopped(lanes.state, b.p.method) | (lanes.t >= b.p.cap) | lanes.halted
    put = lambda rows, v: rows.at[at].set(v, mode="drop")  # noqa: E731
    return Record(jax.tree_util.tree_map(put, record.state, state), put(record.counts, counts), put(record.t, lanes.t),
                  put(record.spent, lanes.spent), put(record.halted, lanes.halted), put(record.done, done))


def _start(b: Batch, st: Stage):
    """The method's first state on every lane, the lanes last."""
    return _to_last(jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (b.L,) + x.shape),
                                           st.method.init(b.p.method)))


def _enter(b: Batch, st: Stage, record: Record, seed, src: Sources) -> Lanes:
    """Lanes starting on ``seed (L,)`` (``S``: none): every arm's first pull in the first stage, else the seed's needed
    arms packed into the slots."""
    K, L, S, none = b.K, b.L, b.S, jnp.zeros(b.L, bool)
    if st.first:
        fresh = Lanes(seed, jnp.zeros(L, jnp.int32), jnp.broadcast_to(jnp.arange(K)[:, None], (K, L)),
                      jnp.zeros((K, L), jnp.int32), _start(b, st), jnp.zeros(L, b.W.dtype), none, none)
        return _play(b, st, fresh, src, jnp.ones((K, L), bool), seed < S, every=True)
    rows = jnp.minimum(seed, S - 1)
    full = jax.tree_util.tree_map(lambda x: x[rows], record.state)
    needed = _to_first(st.narrowing.needed(_to_last(full)))
    arms = jax.vmap(lambda need: packed_indices(need, 0)[:st.width])(needed)
    counts = jnp.take_along_axis(record.counts[rows], jnp.minimum(arms, K - 1), axis=1)
    fresh = Lanes(seed, record.t[rows], arms.T, jnp.where(arms < K, counts, 0).T,
                  _to_last(jax.vmap(st.narrowing.pack)(full, arms)), record.spent[rows], record.halted[rows], none)
    return fresh._replace(over=_leaves(b, st, seed, fresh.state, fresh.t, fresh.halted))


def _hand_over(b: Batch, st: Stage, queue, lanes: Lanes, src: Sources, record: Record, waiting):
    """The runs of the lanes whose seed leaves, then the stage's next seeds (``queue``: their order and number)
    started on them."""
    order, count = queue
    record = _write_back(b, st, record, lanes)
    over = lanes.over
    position = waiting + jnp.cumsum(over.astype(jnp.int32)) - 1
    seed = jnp.where(over, jnp.where(position < count, order[jnp.minimum(position, b.S - 1)], b.S), lanes.seed)
    r = jnp.minimum(seed, b.S - 1)
    fresh_src = Sources(b.keys_env[r], b.keys_pol[r], jax.tree_util.tree_map(lambda x: x[r], b.env_params))
    src = jax.tree_util.tree_map(lambda new, old: _first(over, new, old), fresh_src, src)
    fresh = _enter(b, st, record, jnp.where(over, seed, b.S), src)
    lanes = jax.tree_util.tree_map(lambda new, old: _last(over, new, old), fresh, lanes)
    return lanes, src, record, waiting + jnp.sum(over, dtype=jnp.int32)


def _run_stage(b: Batch, st: Stage, record: Record, tail: int = 0) -> Record:
    """The stage's seeds (every seed in the first; the others not done whose needed arms fit its slots and, but in the
    last stage, not the next one's) on ``L`` lanes of ``st.width`` slots, in one ``lax.while_loop``; ``tail > 0``:
    once every seed has started and at most ``tail`` lanes hold one, their runs so far go back into the record and
    the loop ends (the stage's last seeds then go on, on fewer lanes: :func:`_tail_stage`)."""
    S, L = b.S, b.L
    todo = jnp.ones(S, bool) if st.first else ~record.done
    if not st.first and st.narrower is not None:  # a seed that fits the next stage's slots skips this one
        todo = todo & ~_narrow(st, _to_last(record.state))
    queue = (packed_indices(todo, 0), jnp.sum(todo, dtype=jnp.int32))

    def body(carry):
        lanes, src, record, waiting = carry
        lanes, src, record, waiting = jax.lax.cond(jnp.any(lanes.over), lambda *a: _hand_over(b, st, queue, *a),
                                                   lambda *a: a, lanes, src, record, waiting)
        pull = st.method.select(jax.vmap(jax.random.fold_in)(src.key_pol, lanes.t), lanes.state, b.p.method)
        return _play(b, st, lanes, src, pull, (lanes.seed < S) & ~lanes.over, every=False), src, record, waiting

    idle = Lanes(jnp.full(L, S, jnp.int32), jnp.zeros(L, jnp.int32), jnp.full((st.width, L), b.K, jnp.int32),
                 jnp.zeros((st.width, L), jnp.int32), _start(b, st), jnp.zeros(L, b.W.dtype), jnp.zeros(L, bool),
                 jnp.ones(L, bool))
    src = Sources(b.keys_env[:L], b.keys_pol[:L], jax.tree_util.tree_map(lambda x: x[:L], b.env_params))
    first = _hand_over(b, st, queue, idle, src, record, jnp.zeros((), jnp.int32))

    def going(carry):
        held, waiting = carry[0].seed < S, carry[3]
        return jnp.any(held) & ((tail == 0) | (waiting < queue[1]) | (jnp.sum(held) > tail))

    lanes, _, record, _ = jax.lax.while_loop(going, body, first)
    return _write_back(b, st, record, lanes._replace(over=lanes.seed < S)) if tail else record


def _tail_stage(b: Batch, st: Stage, record: Record) -> Record:
    """A narrowed stage whose last seeds, once at most :data:`TAIL_LANES` hold a lane, go on on that many lanes: a
    round's work is that of its lanes, held or idle, so that a seed far slower than the others (Auer et al. on two
    arms a hair apart: hundreds of thousands of rounds) does not keep every lane of the batch turning."""
    if b.L <= TAIL_LANES:
        return _run_stage(b, st, record)
    record = _run_stage(b, st, record, tail=TAIL_LANES)
    return _run_stage(b._replace(L=TAIL_LANES), st, record)


def lanes_identifier(method: StepwiseMethod, num_arms: int, dim: int, sample, width: int,
                     narrowing: Narrowing | None = None) -> Identifier:
    """Run ``method``, whose functions take trailing lane axes, as an Identifier (module docstring).

    Args:
      method: the step-wise method on the ``K`` arms (its states may carry trailing lane axes).
      num_arms: ``K``.
      dim: the objectives the method sees (the cone's rows).
      sample: the environment's sampler (the method draws from :func:`lanes_sampler` of it).
      width: the most arms a round after the first pulls.
      narrowing: how the method moves onto fewer slots (None: it keeps the ``K`` arms).

    Returns:
      An :class:`~mobandit_jax.types.Identifier` with ``identify``, ``identify_in_turn`` and the method's step-wise
      form (:func:`~.pac_stepwise.as_steps`).
    """
    K, pulls = num_arms, lanes_sampler(sample, num_arms)
    widths = (K,) + (() if narrowing is None else tuple(w for w in narrowing.widths if w < K))
    stages = tuple(Stage(method if s == 0 else narrowing.method(w), w, widths[s + 1] if s + 1 < len(widths) else None,
                         s == 0, narrowing) for s, w in enumerate(widths))

    def identify_in_turn(keys_env, keys_pol, env_params, p: StepwiseParams, lanes: int = 1) -> PacResult:
        S, dtype = keys_env.shape[0], p.W.dtype
        b = Batch(K, S, max(1, min(int(lanes), S)), p, p.W.astype(dtype), keys_env, keys_pol, env_params, pulls,
                  width)
        record = Record(jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (S,) + x.shape), method.init(p.method)),
                        jnp.zeros((S, K), jnp.int32), jnp.zeros(S, jnp.int32), jnp.zeros(S, dtype), jnp.zeros(S, bool),
                        jnp.zeros(S, bool))
        for st in stages:
            record = _run_stage(b, st, record) if st.first else _tail_stage(b, st, record)
        state = _to_last(record.state)
        return PacResult(method.recommend(state, p.method).T, record.spent, record.counts,
                         method.stopped(state, p.method), jnp.broadcast_to(p.epsilon, (S,)),
                         jnp.broadcast_to(p.delta, (S,)))

    def identify(key_env, key_pol, env_params, p: StepwiseParams) -> PacResult:
        """One seed on one lane."""
        one = identify_in_turn(key_env[None], key_pol[None], jax.tree_util.tree_map(lambda x: x[None], env_params), p)
        return jax.tree_util.tree_map(lambda x: x[0], one)

    return Identifier(identify, identify_in_turn, as_steps(method, K))
