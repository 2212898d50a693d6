"""The engine: one ``lax.scan`` over rounds per run, vmapped over grid points and seeds, jitted once.

``make_run(env, policy, metrics, horizon, record_every)`` returns ``run(params, seed_key)``:

- keys: ``key_env = fold_in(seed_key, 0)`` (the reward streams, shared by every policy: common
  random numbers), ``key_pol = fold_in(seed_key, 1)`` (the policy's own randomness; round ``t``
  gets ``fold_in(key_pol, t)``), ``fold_in(seed_key, 2)`` for the environment's optional
  per-seed ``reset``;
- arm ``i``'s ``j``-th pull is ``env.sample(key_env, i, j, t, env_params)``; a slate is sampled arm
  by arm;
- budgets: a lane stops for good once the next pull's cost would exceed ``params.budget``
  (its state is frozen and its metrics add zero), so many budgets share one compiled scan; runs
  built with ``budgeted=False`` (no budget anywhere in the group) skip the freeze;
- output: cumulative metric sums every ``record_every`` rounds (``(n_checkpoints,)`` per name),
  plus ``rounds`` (rounds played) and ``spent`` (cumulative cost) at the same checkpoints; with a
  ``recommend`` function (the plan gives its family's, :func:`mobandit_jax.registry.register_family`),
  also ``recommended``, the ``(K,)`` bool set the run recommends from how it ended
  (:class:`~mobandit_jax.types.Final`: the final policy state, the last action played, the pulls and the
  empirical mean reward per arm, which the scan then sums beside the pulls; an identifier's
  ``IdentifyResult``, its mask and pulls, and zero means). The metrics do not depend on it;
- progress: ``run(params, seed_key, report=f)`` also calls ``f(c)`` on the host as checkpoint ``c``
  begins, i.e. once ``c`` checkpoints are done (``jax.debug.callback``, unordered; its only operand
  is the checkpoint index, which no vmap batches, so it fires once per checkpoint per program call,
  however many seeds and grid points the call maps over). The numbers do not depend on ``report``.

The carry of the scan over rounds is ``(policy state, pulls per arm, spent, done, cumulative
metrics, rounds played)``: pulls and rounds in int32, ``done`` a bool, ``spent`` and the cumulative
metrics in the default float dtype (:func:`float_dtype`). Precision rule: every round's cost and
metric values are cast to that dtype and added to the carry, so the sums, and the arrays of
``curves.npz``, are float64 under ``jax_enable_x64`` (``--x64``) and float32 otherwise. In float32,
the plain running sum of ``n`` rounds has a relative error up to about ``n u`` (``u = 2**-24``; a
constant per-round value comes close to it: ``2**17`` rounds of ``0.1`` are off by ``1e-3``
relative, ``1e6`` rounds by ``1e-2``), so a horizon above :data:`COMPENSATED_HORIZON` rounds
(``2**17``; every shipped spec's horizon is at most that) keeps a compensation term beside each sum
(``spent`` included; :func:`_add`): a sum is then off by at most about ``u + n u**2`` relative
(``1e6`` rounds: ``1e-7``; measured ``4e-9`` on ``0.1`` / ``0.11`` per round, against ``2e-3``
uncompensated), and at most ``2**17 u = 0.8%`` below the threshold. Float64's ``n u``
(``u = 2**-53``) is ``1e-10`` for a million rounds, so float64 sums are never compensated.

An :class:`~mobandit_jax.types.Identifier` runs as one call instead of a scan, and its
metrics (given its :class:`~mobandit_jax.types.IdentifyResult` as the observation) are recorded as a
single checkpoint. A fixed-confidence identifier (the ``pac`` family) runs its rounds in a
``lax.while_loop`` capped at the horizon: batched by ``vmap``, the loop goes on while any lane's
stopping rule has not fired, and a lane whose rule fired keeps its state (per-lane stop in one
compiled program; ``IdentifyResult.stopped`` says whether the rule fired before the cap). An identifier with
``identify_in_turn`` (the step-wise methods of the pac family) runs a large batch on ``S / seeds_per_lane(S)`` lanes
that share its seeds (:func:`seeds_per_lane`): a lane whose seed stopped takes the next seed not yet started, so
that a lane does not idle from its seed's stop to the slowest seed's. Each seed draws the same rewards either way;
Auer et al.'s and APE's results are the same bit for bit, Track-and-Stop's in float64 (in float32 its Hedge weights,
computed in another program, can round otherwise after many rounds: 456.1 against 455.4 mean samples at 1,000
seeds, within sampling error).

``batch(run)`` maps ``run`` over a leading grid axis of ``params`` and a seed axis of keys, and
:func:`seed_keys` derives each seed's key by ``fold_in(PRNGKey(base), seed_index)``, so a seed's
result does not depend on the chunking or batch size.
"""
from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from .types import Final, Identifier, Observation, RunParams  # noqa: F401  (RunParams re-exported)

RESET_STREAM = 2
# Float32 sums of horizons above this many rounds are compensated (module docstring). It is at least
# the largest engine horizon of a shipped spec (configs/cost_aware/stochastic_costs.toml: 128,736
# rounds), so every shipped spec sums exactly as it did before compensation existed.
COMPENSATED_HORIZON = 2 ** 17


def float_dtype():
    """The dtype of ``spent`` and the cumulative metrics.

    Returns:
      ``float64`` under ``jax_enable_x64``, else ``float32``.
    """
    return jax.dtypes.canonicalize_dtype(jnp.float64)


def compensated(horizon: int) -> bool:
    """Whether a run keeps compensation terms beside its sums (module docstring).

    Args:
      horizon: the run's rounds.

    Returns:
      True for float32 runs of more than :data:`COMPENSATED_HORIZON` rounds.
    """
    return horizon > COMPENSATED_HORIZON and float_dtype() == jnp.float32


def _zeros(shape, exact: bool):
    """A running sum: an array, or ``(sum, compensation)`` when ``exact``."""
    zero = jnp.zeros(shape, float_dtype())
    return (zero, zero) if exact else zero


def _add(acc, x):
    """The running sum ``acc`` (of :func:`_zeros`) plus ``x``. A compensated sum ``(s, c)`` adds the exact
    rounding error of ``s + x`` (Neumaier's branch of the two-sum) to ``c``, then folds ``c`` into ``s`` and
    keeps the part that ``s`` cannot hold (fast two-sum), so that ``c`` stays within an ulp of ``s``."""
    if not isinstance(acc, tuple):
        return acc + x
    s, comp = acc
    t = s + x
    comp = comp + jnp.where(jnp.abs(s) >= jnp.abs(x), (s - t) + x, (x - t) + s)
    s = t + comp
    return s, comp - (s - t)


def _value(acc):
    """The value of a running sum."""
    return acc[0] + acc[1] if isinstance(acc, tuple) else acc


def num_checkpoints(horizon: int, record_every: int) -> int:
    """The number of checkpoints a run records.

    Args:
      horizon: the run's rounds.
      record_every: rounds between checkpoints.

    Returns:
      ``ceil(horizon / record_every)``.
    """
    return math.ceil(horizon / record_every)


def checkpoint_rounds(horizon: int, record_every: int):
    """The round counts at which cumulative sums are recorded.

    Args:
      horizon: the run's rounds.
      record_every: rounds between checkpoints.

    Returns:
      A list of :func:`num_checkpoints` round counts, the last one ``horizon``.
    """
    return [min((c + 1) * record_every, horizon) for c in range(num_checkpoints(horizon, record_every))]


def full_precision_dots(fn):
    """``fn`` traced with every matrix product at full precision (``jax.default_matmul_precision("highest")``).

    On NVIDIA GPUs JAX's default precision multiplies float32 matrices in TF32 (operands rounded to 10 of
    float32's 23 mantissa bits), which rounds every cone projection ``r W^T``; on the CPU every precision
    computes the same float32 products, so CPU results are unchanged. Applied to every run, so a plugin's
    own policy, environment or metric gets float32 (or float64) products on a GPU too.

    Args:
      fn: a function JAX traces.

    Returns:
      ``fn`` wrapped.
    """

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        with jax.default_matmul_precision("highest"):
            return fn(*args, **kwargs)

    return wrapped


def _streams(seed_key):
    return jax.random.fold_in(seed_key, 0), jax.random.fold_in(seed_key, 1)


def prepare(env, metrics, params, seed_key):
    """A seed's environment params and metric params, as every run starts: the environment's ``reset`` (if any)
    on the seed's reset stream, then the metric set's ``prepare`` (if any).

    Args:
      env: the pure :class:`~mobandit_jax.types.Env`.
      metrics: the :class:`~mobandit_jax.types.MetricSet`.
      params: the run's :class:`~mobandit_jax.types.RunParams` (its ``env`` and ``metric``).
      seed_key: the seed's key (unused where ``env.reset`` is None).

    Returns:
      ``(env_params, mparams)``.
    """
    env_params = params.env
    if env.reset is not None:
        env_params = env.reset(jax.random.fold_in(seed_key, RESET_STREAM), env_params)
    mparams = params.metric if metrics.prepare is None else metrics.prepare(params.metric, env_params)
    return env_params, mparams


def make_run(env, policy, metrics, horizon: int, record_every: int, budgeted: bool = True, recommend=None):
    """Build one seed's run of ``policy`` on ``env``, scored by ``metrics``.

    Args:
      env: the :class:`~mobandit_jax.types.Env`.
      policy: a :class:`~mobandit_jax.types.Policy` (a ``lax.scan`` over rounds) or an
        :class:`~mobandit_jax.types.Identifier` (one call, one checkpoint).
      metrics: the :class:`~mobandit_jax.types.MetricSet`.
      horizon: rounds (an identifier's round cap is its own param).
      record_every: rounds between checkpoints.
      budgeted: ``False`` promises that ``params.budget`` is infinite: when, in addition, the horizon is a whole
        number of checkpoints, no lane can stop early and the per-round freeze of the policy state (a select
        over the whole state) is left out of the compiled round.
      recommend: ``recommend(final: Final, params: RunParams) -> (K,) bool``, the set the run recommends (static;
        None: the run records none, and keeps no per-arm reward sums).

    Returns:
      ``run(params: RunParams, seed_key, report=None) -> {name: (checkpoints,)}``: each metric's cumulative value
      at every checkpoint, with ``rounds`` and ``spent`` (and, with ``recommend``, ``recommended``: ``(K,)``
      bool). ``report`` (static) is a host function called with the index of each checkpoint as it begins
      (module docstring). ``run.checkpoints`` is the number of checkpoints;
      an identifier with ``identify_in_turn`` also gives ``run.in_turn(params, seed_keys (S,), lanes=1)``, the same
      outputs for ``S`` seeds sharing ``lanes`` lanes, each lane's seeds run in turn.
    """
    if horizon < 1:
        raise ValueError(f"horizon = {horizon}: it must be at least 1 round")
    if record_every < 1:
        raise ValueError(f"record_every = {record_every}: it must be at least 1")
    if isinstance(policy, Identifier):
        return _make_identify_run(env, policy, metrics, recommend)
    n_ckpt = num_checkpoints(horizon, record_every)
    may_stop = budgeted or n_ckpt * record_every != horizon

    @full_precision_dots
    def run(params, seed_key, report=None):
        key_env, key_pol = _streams(seed_key)
        env_params, mparams = prepare(env, metrics, params, seed_key)
        carry = _initial_carry(env, policy, metrics, horizon, params, key_pol, recommend is not None)
        one_round = _round_step(env, policy, metrics, horizon, may_stop, params, (key_env, key_pol), env_params,
                                mparams)

        def one_checkpoint(carry, c):
            if report is not None:
                jax.debug.callback(report, c)  # c is not batched: once per checkpoint per call
            carry, _ = jax.lax.scan(one_round, carry, c * record_every + jnp.arange(record_every))
            _, _, spent, _, cum, rounds, *_ = carry
            return carry, (_value(cum), rounds, _value(spent))

        carry, (cum, rounds, spent) = jax.lax.scan(one_checkpoint, carry, jnp.arange(n_ckpt))
        out = {name: cum[:, i] for i, name in enumerate(metrics.names)}
        out["rounds"], out["spent"] = rounds, spent
        if recommend is not None:
            state, pulls, *_, sums, last = carry
            means = _value(sums) / jnp.maximum(pulls, 1).astype(float_dtype())[:, None]
            out["recommended"] = jnp.asarray(recommend(Final(state, last, pulls, means), params), bool)
        return out

    run.checkpoints = n_ckpt
    return run


def _initial_carry(env, policy, metrics, horizon: int, params, key_pol, recommends: bool) -> tuple:
    """The scan's carry before round 0 (module docstring): the policy's initial state, zero pulls, nothing spent,
    not done, zero metrics and rounds; with ``recommends``, zero reward sums per arm and a last action of the shape
    the policy plays."""
    state = policy.init(params.policy)
    exact = compensated(horizon)
    carry = (
        state,
        jnp.zeros((env.num_arms,), jnp.int32),  # pulls per arm (reward-stream index)
        _zeros((), exact),  # spent
        jnp.zeros((), bool),  # done (budget exhausted)
        _zeros((len(metrics.names),), exact),  # cumulative metrics
        jnp.zeros((), jnp.int32),  # rounds played
    )
    if recommends:
        played = jax.eval_shape(policy.select, key_pol, state, params.policy)
        carry += (
            _zeros((env.num_arms, env.dim), exact),  # reward sums per arm (Final.means)
            jnp.zeros(played.shape, played.dtype),  # the last action played (Final.action)
        )
    return carry


def _round_step(env, policy, metrics, horizon: int, may_stop: bool, params, keys: tuple, env_params, mparams):
    """``one_round(carry, t) -> (carry, None)``: round ``t`` of one seed's run, its keys ``(key_env, key_pol)``
    (:func:`_streams`); a lane that is done, over its budget or past the horizon adds nothing (its state frozen
    where it ``may_stop``)."""
    key_env, key_pol = keys
    dtype = float_dtype()

    def one_round(carry, t):
        state, pulls, spent, done, cum, rounds, *seen = carry
        action = policy.select(jax.random.fold_in(key_pol, t), state, params.policy)
        arms = jnp.reshape(action, (-1,))
        if jnp.ndim(action) == 0:
            reward, cost = env.sample(key_env, action, pulls[action], t, env_params)
        else:
            reward, cost = jax.vmap(lambda a: env.sample(key_env, a, pulls[a], t, env_params))(arms)
        obs = Observation(reward, cost)
        total = jnp.sum(cost).astype(dtype)
        active = ~done & (_value(spent) + total <= params.budget) & (t < horizon)
        new_state = policy.update(state, action, obs, params.policy)
        if may_stop:
            state = jax.tree_util.tree_map(lambda n, o: jnp.where(active, n, o), new_state, state)
        else:
            state = new_state
        values = jnp.stack([jnp.asarray(v, dtype) for v in metrics.values(mparams, action, obs)])
        carry = (
            state,
            pulls.at[arms].add(active.astype(jnp.int32)),
            _add(spent, jnp.where(active, total, 0.0)),
            done | ~active,
            _add(cum, jnp.where(active, values, 0.0)),
            rounds + active.astype(jnp.int32),
        )
        if seen:
            sums, last = seen
            gained = jnp.reshape(jnp.asarray(reward, dtype), (-1, env.dim))
            gained = jnp.zeros((env.num_arms, env.dim), dtype).at[arms].add(jnp.where(active, gained, 0.0))
            carry += (_add(sums, gained), jnp.where(active, action, last))
        return carry, None

    return one_round


def _make_identify_run(env, policy, metrics, recommend=None):
    def outputs(mparams, result, params):
        values = metrics.values(mparams, result.recommended, result)
        dtype = float_dtype()
        out = {name: jnp.reshape(jnp.asarray(v, dtype), (1,)) for name, v in zip(metrics.names, values, strict=True)}
        out["rounds"] = jnp.ones((1,), jnp.int32)
        out["spent"] = jnp.zeros((1,), dtype)
        if recommend is not None:
            final = Final(result, result.recommended, result.pulls, jnp.zeros((env.num_arms, env.dim), dtype))
            out["recommended"] = jnp.asarray(recommend(final, params), bool)
        return out

    @full_precision_dots
    def run(params, seed_key, report=None):
        key_env, key_pol = _streams(seed_key)
        env_params, mparams = prepare(env, metrics, params, seed_key)
        return outputs(mparams, policy.identify(key_env, key_pol, env_params, params.policy), params)

    run.checkpoints = 1
    if policy.identify_in_turn is not None:
        @full_precision_dots
        def in_turn(params, seed_keys, lanes=1):
            """``run`` of ``S`` seeds (``seed_keys (S,)``) sharing ``lanes`` lanes, each lane's seeds one after another
            (``lanes = 1``: all of them in one lane): the same outputs."""
            key_env, key_pol = jax.vmap(_streams)(seed_keys)
            env_params, mparams = jax.vmap(lambda k: prepare(env, metrics, params, k))(seed_keys)
            results = policy.identify_in_turn(key_env, key_pol, env_params, params.policy, lanes)
            return jax.vmap(lambda m, r: outputs(m, r, params))(mparams, results)

        run.in_turn = in_turn
    return run


def seeds_per_lane(seeds: int) -> int:
    """How many seeds :func:`batch` gives one lane, on average, of an identifier that runs seeds in turn.

    At least 64 lanes a batch and at most 16 seeds a lane (measured best for Auer et al. and APE at 1,000 seeds on
    one core: fewer lanes leave the loop's fixed cost to fewer seeds, more lanes make the loop's last rounds, when
    lanes have no seed left to start, a larger share).

    Args:
      seeds: the batch's seeds.

    Returns:
      One up to 127 seeds, then ``seeds // 64`` up to 16.
    """
    return max(1, min(16, seeds // 64))


def lanes_in_turn(in_turn, params, keys):
    """``in_turn`` with its seeds shared by ``ceil(S / seeds_per_lane(S))`` lanes (:func:`seeds_per_lane`).

    Args:
      in_turn: ``in_turn(params, keys (S, ...), lanes) -> pytree of (S, ...)``: the seeds shared by ``lanes``
        lanes, a lane taking the next seed not yet started when its seed stops.
      params: passed to it.
      keys: ``(S, ...)`` seed keys.

    Returns:
      The outputs ``(S, ...)``, in the seeds' order.
    """
    seeds = keys.shape[0]
    return in_turn(params, keys, -(-seeds // seeds_per_lane(seeds)))


def seed_keys(base_seed: int, indices):
    """Per-seed keys.

    Args:
      base_seed: the experiment's seed.
      indices: seed indices ``i``.

    Returns:
      ``(len(indices), 2)`` uint32 keys ``fold_in(PRNGKey(base_seed), i)``.
    """
    base = jax.random.PRNGKey(base_seed)
    return jax.vmap(lambda i: jax.random.fold_in(base, i))(jnp.asarray(indices, jnp.uint32))


def batch(run, report=None):
    """``run`` mapped over grid points (leading axis of params) and seeds: ``(G, S, ...)`` outputs.

    A grid of one point is mapped over the seeds only (the same values; JAX then batches the scans
    once, not twice, which makes tracing and lowering cheaper). A leaf of leading axis 1 in a grid of
    ``G > 1`` points (:func:`stack_grid`: the same at every point) is not mapped over the grid, so what
    depends only on such leaves and the seed (an environment's draws, say) is computed once per seed.
    An identifier's run with ``run.in_turn`` gets :func:`seeds_per_lane` seeds a lane on average
    (:func:`lanes_in_turn`).

    Args:
      run: a run of :func:`make_run`.
      report: passed to ``run``; it is called once per checkpoint of each call of the batched function.

    Returns:
      ``batched(params, keys) -> {name: (G, S, checkpoints)}`` for grid params of leading axis ``G`` (or 1) and
      ``S`` seed keys.
    """
    in_turn = getattr(run, "in_turn", None)
    if report is not None:
        run = functools.partial(run, report=report)
    over_seeds = jax.vmap(run, in_axes=(None, 0))
    if in_turn is not None:
        plain = over_seeds
        over_seeds = lambda params, keys: (plain(params, keys) if seeds_per_lane(keys.shape[0]) == 1
                                           else lanes_in_turn(in_turn, params, keys))

    def batched(params, keys):
        size = max(jnp.shape(x)[0] for x in jax.tree_util.tree_leaves(params))
        axes = jax.tree_util.tree_map(lambda x: 0 if jnp.shape(x)[0] == size > 1 else None, params)
        once = jax.tree_util.tree_map(lambda x, a: x if a == 0 else x[0], params, axes)
        if size > 1:
            return jax.vmap(over_seeds, in_axes=(axes, None))(once, keys)
        return jax.tree_util.tree_map(lambda x: x[None], over_seeds(once, keys))

    return batched


def _stacked(xs):
    return jnp.stack([jnp.asarray(x) for x in xs])


def stack_params(points):
    """Stack params along a new leading grid axis.

    Args:
      points: params pytrees of one structure.

    Returns:
      One pytree whose leaves have a leading axis of ``len(points)``.
    """
    return jax.tree_util.tree_map(lambda *xs: _stacked(xs), *points)


def stack_grid(points):
    """:func:`stack_params` for :func:`batch`, but a leaf equal at every point is stacked once (leading axis 1),
    so that :func:`batch` does not map it; if every leaf is, all are stacked (the leading axis counts the points).

    Args:
      points: params pytrees of one structure.

    Returns:
      One pytree for :func:`batch`.
    """
    treedef = jax.tree_util.tree_structure(points[0])
    columns = list(zip(*(treedef.flatten_up_to(p) for p in points), strict=False))
    same = [all(np.array_equal(np.asarray(col[0]), np.asarray(x)) for x in col[1:]) for col in columns]
    if all(same):
        return stack_params(points)
    stacked = [_stacked(col[:1] if s else col) for col, s in zip(columns, same, strict=False)]
    return jax.tree_util.tree_unflatten(treedef, stacked)
