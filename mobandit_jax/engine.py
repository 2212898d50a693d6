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
  plus ``rounds`` (rounds played) and ``spent`` (cumulative cost) at the same checkpoints.

An :class:`~mobandit_jax.types.Identifier` runs as one call instead of a scan, and its
metrics (given its :class:`~mobandit_jax.types.IdentifyResult` as the observation) are recorded as a
single checkpoint.

``batch(run)`` maps ``run`` over a leading grid axis of ``params`` and a seed axis of keys, and
:func:`seed_keys` derives each seed's key by ``fold_in(PRNGKey(base), seed_index)``, so a seed's
result does not depend on the chunking or batch size.
"""
from __future__ import annotations

import math
import jax
import jax.numpy as jnp

from .types import Identifier, Observation, RunParams  # noqa: F401  (RunParams re-exported)

RESET_STREAM = 2


def num_checkpoints(horizon: int, record_every: int) -> int:
    """Number of recorded checkpoints for a horizon."""
    return math.ceil(horizon / record_every)


def checkpoint_rounds(horizon: int, record_every: int):
    """The round counts at which cumulative sums are recorded (the last one is ``horizon``)."""
    return [min((c + 1) * record_every, horizon) for c in range(num_checkpoints(horizon, record_every))]


def _streams(seed_key):
    return jax.random.fold_in(seed_key, 0), jax.random.fold_in(seed_key, 1)


def _prepare(env, metrics, params, seed_key):
    env_params = params.env
    if env.reset is not None:
        env_params = env.reset(jax.random.fold_in(seed_key, RESET_STREAM), env_params)
    mparams = params.metric if metrics.prepare is None else metrics.prepare(params.metric, env_params)
    return env_params, mparams


def make_run(env, policy, metrics, horizon: int, record_every: int, budgeted: bool = True):
    """Build ``run(params: RunParams, seed_key) -> dict`` of per-checkpoint cumulative values.

    ``budgeted=False`` promises that ``params.budget`` is infinite: when, in addition, the horizon
    is a whole number of checkpoints, no lane can stop early and the per-round freeze of the
    policy state (a select over the whole state) is left out of the compiled round.
    """
    if horizon < 1:
        raise ValueError(f"horizon = {horizon}: it must be at least 1 round")
    if record_every < 1:
        raise ValueError(f"record_every = {record_every}: it must be at least 1")
    if isinstance(policy, Identifier):
        return _make_identify_run(env, policy, metrics)
    n_ckpt = num_checkpoints(horizon, record_every)
    n_metrics = len(metrics.names)
    may_stop = budgeted or n_ckpt * record_every != horizon

    def run(params, seed_key):
        key_env, key_pol = _streams(seed_key)
        env_params, mparams = _prepare(env, metrics, params, seed_key)
        state = policy.init(params.policy)
        carry = (
            state,
            jnp.zeros((env.num_arms,), jnp.int32),  # pulls per arm (reward-stream index)
            jnp.zeros((), jnp.float32),  # spent
            jnp.zeros((), bool),  # done (budget exhausted)
            jnp.zeros((n_metrics,), jnp.float32),  # cumulative metrics
            jnp.zeros((), jnp.int32),  # rounds played
        )

        def one_round(carry, t):
            state, pulls, spent, done, cum, rounds = carry
            action = policy.select(jax.random.fold_in(key_pol, t), state, params.policy)
            arms = jnp.reshape(action, (-1,))
            if jnp.ndim(action) == 0:
                reward, cost = env.sample(key_env, action, pulls[action], t, env_params)
            else:
                reward, cost = jax.vmap(lambda a: env.sample(key_env, a, pulls[a], t, env_params))(arms)
            obs = Observation(reward, cost)
            total = jnp.sum(cost).astype(jnp.float32)
            active = ~done & (spent + total <= params.budget) & (t < horizon)
            new_state = policy.update(state, action, obs, params.policy)
            if may_stop:
                state = jax.tree_util.tree_map(lambda n, o: jnp.where(active, n, o), new_state, state)
            else:
                state = new_state
            values = jnp.stack([jnp.asarray(v, jnp.float32) for v in metrics.step(mparams, action, obs)])
            carry = (
                state,
                pulls.at[arms].add(active.astype(jnp.int32)),
                spent + jnp.where(active, total, 0.0),
                done | ~active,
                cum + jnp.where(active, values, 0.0),
                rounds + active.astype(jnp.int32),
            )
            return carry, None

        def one_checkpoint(carry, c):
            carry, _ = jax.lax.scan(one_round, carry, c * record_every + jnp.arange(record_every))
            _, _, spent, _, cum, rounds = carry
            return carry, (cum, rounds, spent)

        _, (cum, rounds, spent) = jax.lax.scan(one_checkpoint, carry, jnp.arange(n_ckpt))
        out = {name: cum[:, i] for i, name in enumerate(metrics.names)}
        out["rounds"], out["spent"] = rounds, spent
        return out

    return run


def _make_identify_run(env, policy, metrics):
    def run(params, seed_key):
        key_env, key_pol = _streams(seed_key)
        env_params, mparams = _prepare(env, metrics, params, seed_key)
        result = policy.identify(key_env, key_pol, env_params, params.policy)
        values = metrics.step(mparams, result.recommended, result)
        out = {name: jnp.reshape(jnp.asarray(v, jnp.float32), (1,)) for name, v in zip(metrics.names, values)}
        out["rounds"] = jnp.ones((1,), jnp.int32)
        out["spent"] = jnp.zeros((1,), jnp.float32)
        return out

    return run


def seed_keys(base_seed: int, indices):
    """Per-seed keys ``fold_in(PRNGKey(base_seed), i)`` for seed indices ``i``."""
    base = jax.random.PRNGKey(base_seed)
    return jax.vmap(lambda i: jax.random.fold_in(base, i))(jnp.asarray(indices, jnp.uint32))


def batch(run):
    """``run`` mapped over grid points (leading axis of params) and seeds: ``(G, S, ...)`` outputs.

    A grid of one point is mapped over the seeds only (the same values; JAX then batches the scans
    once, not twice, which makes tracing and lowering cheaper).
    """
    over_seeds = jax.vmap(run, in_axes=(None, 0))
    over_grid = jax.vmap(over_seeds, in_axes=(0, None))

    def batched(params, keys):
        if {jnp.shape(x)[0] for x in jax.tree_util.tree_leaves(params)} != {1}:
            return over_grid(params, keys)
        out = over_seeds(jax.tree_util.tree_map(lambda x: x[0], params), keys)
        return jax.tree_util.tree_map(lambda x: x[None], out)

    return batched


def stack_params(points):
    """Stack a list of same-structure params pytrees along a new leading grid axis."""
    return jax.tree_util.tree_map(lambda *xs: jnp.stack([jnp.asarray(x) for x in xs]), *points)
