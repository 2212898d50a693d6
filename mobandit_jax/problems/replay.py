"""Bootstrap replay of recorded per-instance observations (``[env] kind = "replay"``).

The environment of Xue et al. (Appendix A: "arm-wise bootstrap replays shared by all
methods of a repetition") for any long CSV with one row per (arm, instance) observation::

    [env]
    kind = "replay"
    path = "logs.csv"           # relative to the spec file
    arm = "config"              # column naming the arms
    instance = "question"       # column naming the instances
    objectives = ["correct", "inv_latency"]
    cost = "tokens"             # optional: cost of each observation
    normalize = false           # or true / a list of objectives: min-max scale raw scores
    minimize = []               # objectives where lower is better

Pull ``j`` of arm ``i`` returns the observation ``q = hash(key, i, j) mod n_i`` of that arm's own
``n_i`` recorded instances (:func:`instance_index`), so every policy of a seed sees the same rewards
(common random numbers) and the truth is the per-arm mean of its rows. Arms may have different
numbers of instances: the table is padded and ``ReplayParams.counts`` holds each arm's count.
Costs are divided by the largest recorded cost, so they lie in (0, 1]; the cost floor lambda is
the smallest normalized cost. A row whose objective cells are all empty is a placeholder (an arm
listed but not observed); an arm with only such rows has no instances and is an error.

Xue, Hong, Li, Wan, Cheng & Qiu, "Cost-Aware Multi-Objective Bandits: Theory and Application to
Budgeted LLM Configuration Evaluation" (preprint).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels.prefix import prefix_sums, tiled_length
from ..registry import register_env
from ..types import Env, EnvInstance, PrefixSums
from . import columns
from .costs import validate_costs


class ReplayParams(NamedTuple):
    """``table`` (K, N, d + 1): per-instance (objectives, cost); ``counts`` (K,) instances per arm.

    ``counts = None`` means every arm has all ``N`` instances (the modulus is then a constant).
    """

    table: jnp.ndarray
    counts: jnp.ndarray | None = None


def _mix32(x):
    """The ``lowbias32`` integer finalizer (a bijective avalanche hash of uint32)."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def arm_stream_key(key, arm):
    """A uint32 stream id of ``arm`` derived from the environment key (shared by every method).

    Args:
      key: the environment's PRNG key.
      arm: arm index (int or ``()`` array).

    Returns:
      ``()`` uint32.
    """
    words = jnp.ravel(jax.random.key_data(key)).astype(jnp.uint32)
    a = jnp.asarray(arm).astype(jnp.uint32)
    return _mix32(words[0] ^ _mix32(words[-1] ^ _mix32(a * jnp.uint32(0x9E3779B9) + jnp.uint32(0x85EBCA6B))))


def instance_index(key, arm, pull_index, num_instances):
    """The bootstrapped instance of pull ``pull_index`` of ``arm`` (common stream).

    A counter-based hash: ``mix(arm_key ^ mix(j * 0x9E3779B1 + 0x7F4A7C15)) mod N`` with the
    ``lowbias32`` finalizer, so one pull costs a few integer operations and the bulk sampler can
    evaluate any pull directly (modulo bias below ``N / 2^32``).

    Args:
      key: the environment's PRNG key.
      arm: arm index.
      pull_index: the arm's pull count ``j`` (broadcasts).
      num_instances: the arm's number of instances ``N`` (int or array).

    Returns:
      int32 instance index in ``[0, N)``, shaped like ``pull_index``.
    """
    return _index_from_arm_key(arm_stream_key(key, arm), pull_index, num_instances)


def _index_from_arm_key(arm_key, pull_index, num_instances):
    j = jnp.asarray(pull_index).astype(jnp.uint32)
    h = _mix32(arm_key ^ _mix32(j * jnp.uint32(0x9E3779B1) + jnp.uint32(0x7F4A7C15)))
    n = jnp.uint32(num_instances) if isinstance(num_instances, int) else jnp.asarray(num_instances).astype(jnp.uint32)
    return (h % n).astype(jnp.int32)


def _count(params: ReplayParams, arm):
    return params.table.shape[1] if params.counts is None else params.counts[arm]


def sample(key, arm, pull_index, t, params: ReplayParams):
    """One bootstrapped pull: the recorded objectives and cost of one of ``arm``'s instances.

    Args:
      key: the environment's PRNG key.
      arm: arm index.
      pull_index: the arm's pull count ``j``.
      t: the round (not read).
      params: the :class:`ReplayParams`.

    Returns:
      ``(reward, cost)``: ``(d,)`` objectives and ``()`` cost.
    """
    row = params.table[arm, instance_index(key, arm, pull_index, _count(params, arm))]
    return row[:-1], row[-1]


def pull_values(key, params: ReplayParams, jmax: int):
    """``(K, jmax, d + 1)``: (objectives, cost) of pulls ``0 .. jmax-1`` of every arm.

    Args:
      key: the environment's PRNG key.
      params: the :class:`ReplayParams`, ``K`` arms.
      jmax: number of pulls per arm (static).

    Returns:
      ``(K, jmax, d + 1)`` values.
    """
    K = params.table.shape[0]
    j = jnp.arange(jmax)

    def arm_rows(arm):
        return params.table[arm, _index_from_arm_key(arm_stream_key(key, arm), j, _count(params, arm))]

    return jax.vmap(arm_rows)(jnp.arange(K))


def prefix_table(key, params: ReplayParams, jmax: int) -> PrefixSums:
    """The prefix sums of (objectives, cost) over the first ``jmax`` pulls of every arm.

    Args:
      key: the environment's PRNG key.
      params: the :class:`ReplayParams`.
      jmax: number of pulls per arm (static).

    Returns:
      The :class:`~mobandit_jax.types.PrefixSums` of :func:`pull_values` (``jmax`` rounded up to whole
      tiles).
    """
    return prefix_sums(pull_values(key, params, tiled_length(jmax)))


def bulk_sum(key, arm, j0, n, params: ReplayParams, jmax: int):
    """Sum of (objectives, cost) over pulls ``j0 .. j0+n-1`` of ``arm`` (``j0+n <= jmax``).

    Args:
      key: the environment's PRNG key.
      arm: arm index.
      j0: first pull.
      n: number of pulls.
      params: the :class:`ReplayParams`.
      jmax: static bound on ``j0 + n``.

    Returns:
      ``(d + 1,)`` sum.
    """
    j = jnp.arange(jmax)
    q = _index_from_arm_key(arm_stream_key(key, arm), j, _count(params, arm))
    mask = (j >= j0) & (j < j0 + n)
    return jnp.sum(jnp.where(mask[:, None], params.table[arm, q], 0.0), axis=0)


def replay_env(num_arms: int, dim: int) -> Env:
    """The pure replay :class:`Env` (per-pull sampler and bulk prefix-table sampler).

    Args:
      num_arms: ``K``.
      dim: ``d``, the number of objectives.

    Returns:
      The :class:`~mobandit_jax.types.Env` over :class:`ReplayParams`.
    """
    return Env(sample=sample, num_arms=num_arms, dim=dim, prefix_table=prefix_table)


def constant_instance(means, costs, rows: int = 3, **fields) -> EnvInstance:
    """A replay whose every pull of arm ``i`` returns its mean reward and cost (a small example instance).

    Args:
      means: the ``(K, d)`` rewards.
      costs: the ``(K,)`` costs per pull.
      rows: instances per arm in the table.
      **fields: further :class:`EnvInstance` fields (``budget``, ...).

    Returns:
      The :class:`EnvInstance`, with ``mean_costs``, ``alloc_costs``, ``min_costs`` and ``cost_floor`` set from
      ``costs``.
    """
    means, costs = np.asarray(means, float), np.asarray(costs, float)
    table = np.concatenate([np.repeat(means[:, None, :], rows, 1), np.repeat(costs[:, None, None], rows, 1)], -1)
    return EnvInstance(env=replay_env(*means.shape), params=ReplayParams(jnp.asarray(table, jnp.float32)),
                       means=means, mean_costs=costs, alloc_costs=costs, min_costs=costs,
                       cost_floor=float(costs.min()), static_key=("replay",), **fields)


def padded(groups, width: int) -> tuple:
    """Stack per-arm ``(n_i, width)`` blocks into ``(K, max n_i, width)`` (zero padding) and ``(K,)`` counts.

    Args:
      groups: ``K`` arrays, each ``(n_i, width)``.
      width: the row width.

    Returns:
      ``(table, counts)``: ``(K, max n_i, width)`` float numpy and ``(K,)`` int numpy.
    """
    counts = np.array([len(g) for g in groups])
    table = np.zeros((len(groups), counts.max(), width))
    for i, g in enumerate(groups):
        table[i, : len(g)] = g
    return table, counts


def check_one_row_per_pair(cols, arms, instances, observed) -> None:
    """Each (arm, instance) pair is observed on one row at most; a repeat is an error naming both rows.

    Args:
      cols: the :class:`~mobandit_jax.problems.columns.Columns` read.
      arms: the arm name of each row.
      instances: the instance name of each row.
      observed: ``(n,)`` bool, the rows that are observations (not placeholders).

    Returns:
      None.

    Raises:
      ValueError: a pair appears on two observed rows.
    """
    kept = np.flatnonzero(observed)
    arm_code = np.unique(np.asarray(arms)[kept], return_inverse=True)[1].ravel()
    inst_code = np.unique(np.asarray(instances)[kept], return_inverse=True)[1].ravel()
    repeat = columns.first_repeat(arm_code.astype(np.int64) * (int(inst_code.max(initial=0)) + 1) + inst_code)
    if repeat is not None:
        i, j = kept[repeat[0]], kept[repeat[1]]
        pair = f"arm {columns.shown(arms[i])}, instance {columns.shown(instances[i])}"
        raise ValueError(f"{cols.path}: {columns.where(int(cols.rows[i]))} repeats {pair} of "
                         f"{columns.where(int(cols.rows[j]))}; a replay has one row per (arm, instance) observation")


def build_instance(path, arm, instance, objectives, cost=None, normalize=False, minimize=()) -> EnvInstance:
    """Build the replay :class:`EnvInstance` from a long CSV (see the module docstring).

    Args:
      path: the CSV's path.
      arm: the column naming the arms.
      instance: the column naming the instances.
      objectives: the objective columns, ``d`` of them.
      cost: optional column of each observation's cost.
      normalize: ``True``, ``False`` or a list of objectives to min-max scale.
      minimize: a list of lower-is-better objectives (or ``True`` / ``False``).

    Returns:
      The :class:`~mobandit_jax.types.EnvInstance`: ``K`` arms in order of first appearance, truth the
      per-arm means, reference point 0; with ``cost``, the costs and cost floor.

    Raises:
      ValueError: a bad file, cell or layout, naming the row.
    """
    names = {arm: "env.arm", instance: "env.instance", **{c: "env.objectives" for c in objectives}}
    if cost is not None:
        names[cost] = "env.cost"
    cols = columns.read(path, names)
    arms = cols.text(arm)
    values = columns.objective_matrix(cols, objectives, normalize, minimize, allow_empty=True)
    empty = np.isnan(values)
    partial = np.flatnonzero(empty.any(1) & ~empty.all(1))
    if partial.size:
        i = int(partial[0])
        col = objectives[int(np.flatnonzero(empty[i])[0])]
        raise ValueError(f"{cols.path}: column {col!r}, {columns.where(int(cols.rows[i]))}: empty value "
                         "(a row is an observation with every objective, or a placeholder with none)")
    observed = ~empty.all(1)
    instances = cols.text(instance)
    for col, text in ((arm, arms), (instance, instances)):
        blank = np.flatnonzero((np.fromiter(map(len, text), np.int64, len(text)) == 0) & (observed | (col == arm)))
        if blank.size:
            raise ValueError(f"{cols.path}: column {col!r}, {columns.where(int(cols.rows[blank[0]]))}: empty name")
    check_one_row_per_pair(cols, arms, instances, observed)
    order = list(dict.fromkeys(arms))  # arms in order of first appearance
    if len(order) < 2:
        raise ValueError(f"{cols.path}: column {arm!r} names {len(order)} arm(s); a bandit needs at least 2")
    pos = {a: i for i, a in enumerate(order)}
    code = np.array([pos[a] for a in arms])
    seen = np.bincount(code[observed], minlength=len(order))
    if (seen == 0).any():
        a = int(np.flatnonzero(seen == 0)[0])
        first = int(cols.rows[np.flatnonzero(code == a)[0]])
        raise ValueError(f"{cols.path}: arm {columns.shown(order[a])} (column {arm!r}) has no instances: its "
                         f"{columns.where(first)} and any other rows have no objective values")
    costs = np.zeros(observed.sum()) if cost is None else columns.normalized_costs(cols, cost, observed)
    obs = np.concatenate([values[observed], costs[:, None]], 1)
    code = code[observed]
    by_arm = np.argsort(code, kind="stable")
    groups = np.split(obs[by_arm], np.cumsum(seen)[:-1])
    table, counts = padded(groups, obs.shape[1])
    means = np.stack([g[:, :-1].mean(0) for g in groups])
    K, d = means.shape
    info = dict(label=f"replay of {cols.path}", source=cols.path, arms=tuple(order), instances=counts.tolist())
    params = ReplayParams(jnp.asarray(table, jnp.float32),
                          None if (counts == counts[0]).all() else jnp.asarray(counts, jnp.int32))
    static = ("replay", K, d, table.shape[1], params.counts is None)
    if cost is None:
        return EnvInstance(env=replay_env(K, d), params=params, means=means, static_key=static, info=info,
                           ref=np.zeros(d))
    lam = float(min(g[:, -1].min() for g in groups))
    validate_costs(np.concatenate([g[:, -1] for g in groups]), lam)
    mean_costs = np.array([g[:, -1].mean() for g in groups])
    return EnvInstance(env=replay_env(K, d), params=params, means=means, mean_costs=mean_costs, static_key=static,
                       info=info, cost_floor=lam, alloc_costs=mean_costs,
                       min_costs=np.array([g[:, -1].min() for g in groups]), ref=np.zeros(d))


KEYS = ("path", "arm", "instance", "objectives", "cost", "normalize", "minimize")


@register_env("replay", doc="bootstrap replay of a long CSV of per-(arm, instance) observations; truth = per-arm means "
          "(Xue et al., Appendix A)", keys=KEYS)
def build(section: dict, config: dict) -> EnvInstance:
    """Registry builder for ``[env] kind = "replay"``.

    Args:
      section: the spec's ``[env]`` table (:data:`KEYS`).
      config: the whole spec (not read).

    Returns:
      The :class:`~mobandit_jax.types.EnvInstance` of :func:`build_instance`.
    """
    return build_instance(section.get("path"), columns.column_name(section, "arm"),
                          columns.column_name(section, "instance"), columns.objective_names(section),
                          columns.column_name(section, "cost", required=False), section.get("normalize", False),
                          section.get("minimize", []))
