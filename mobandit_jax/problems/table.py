"""A user's per-arm table as a stochastic environment (``[env] kind = "table"``).

A CSV with one row per arm gives the mean vector ``r(a)`` in ``[0, 1]^d`` of each arm (PDMOB,
Section 2.2) and, optionally, its mean cost; pulls draw from the feedback models of
``kind = "stochastic"`` (:mod:`mobandit_jax.problems.stochastic`, same sampler and validation)::

    [env]
    kind = "table"
    path = "my_models.csv"      # relative to the spec file
    arm = "model"               # column naming the arms
    objectives = ["accuracy", "speed", "safety"]
    cost = "price"              # optional: mean cost per pull
    noise = "bernoulli"         # "beta" (default, + concentration), "bernoulli", "gaussian" (+ sigma)
    normalize = false           # or true / a list of objectives: min-max scale raw scores to [0, 1]
    minimize = []               # objectives where lower is better (latency, price)
    k = 3                       # slate size, for the slate family

Costs are divided by the largest one (Xue et al., Appendix A: costs in units of ``c_max``), so they
lie in (0, 1]; each pull of arm ``i`` is charged ``c_i`` and the cost floor lambda is ``min_i c_i``.
A budget comes from the spec's ``[budget]`` table.

References:
  - PDMOB: Ma, Zhang, Sugiyama & Zhou, "Selective Ensemble Based on Preference-Directed
    Multi-Objective Bandits", arXiv 2026, https://arxiv.org/abs/2606.21929.
  - Xue, Hong, Li, Wan, Cheng & Qiu, "Cost-Aware Multi-Objective Bandits: Theory and Application to
    Budgeted LLM Configuration Evaluation" (preprint).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import plain
from ..kernels.prefix import prefix_sums, tiled_length
from ..registry import register_env
from ..types import Env, EnvInstance
from . import columns
from .costs import validate_costs
from .stochastic import make_stochastic


class TableParams(NamedTuple):
    """The stochastic env's params (mean table, concentration, sigma) plus per-arm costs (K,)."""

    means: jnp.ndarray
    concentration: jnp.ndarray
    sigma: jnp.ndarray
    costs: jnp.ndarray


def costed_sampler(reward_sample):
    """``sample`` returning ``reward_sample``'s rewards and the arm's fixed cost ``params.costs[arm]``.

    Args:
      reward_sample: a per-pull sampler ``(key, arm, pull_index, t, params) -> (reward, cost)``.

    Returns:
      The sampler over :class:`TableParams`.
    """

    def sample(key, arm, pull_index, t, params: TableParams):
        y, _ = reward_sample(key, arm, pull_index, t, params)
        return y, params.costs[arm]

    return sample


def sampled_prefix_table(sample):
    """The bulk sampler of a per-pull ``sample``: prefix sums of (rewards, cost) over pulls ``0 .. jmax-1``
    (drawn to the end of the last tile of 16).

    Args:
      sample: a per-pull sampler ``(key, arm, pull_index, t, params) -> (reward (d,), cost ())``.

    Returns:
      ``prefix_table(key, params, jmax)``, returning the :class:`~mobandit_jax.types.PrefixSums` of the
      ``(K, tiled_length(jmax), d + 1)`` per-pull values.
    """

    def prefix_table(key, params, jmax: int):
        def arm_rows(arm):
            def one(j):
                y, c = sample(key, arm, j, 0, params)
                return jnp.concatenate([y, c[None]])

            return jax.vmap(one)(jnp.arange(tiled_length(jmax)))

        return prefix_sums(jax.vmap(arm_rows)(jnp.arange(params.means.shape[0])))

    return prefix_table


def read_table(path, arm, objectives, cost=None, normalize=False, minimize=(), bounded=True):
    """``(arm names, (K, d) means in [0, 1] (any real if not ``bounded``), (K,) costs / c_max or None, c_max or
    None)`` from a per-arm CSV (``c_max``: the largest cost, in the cost column's units).

    Args:
      path: the CSV's path.
      arm: the column naming the arms.
      objectives: the objective columns, ``d`` of them.
      cost: optional column of each arm's mean cost.
      normalize: ``True``, ``False`` or a list of objectives to min-max scale.
      minimize: a list of lower-is-better objectives (or ``True`` / ``False``).
      bounded: require objective values in ``[0, 1]``.

    Returns:
      ``(arms, means, costs, c_max)``: ``K`` names, ``(K, d)`` float64 numpy means, ``(K,)`` costs over
      ``c_max`` or ``None``, and the largest cost ``c_max`` or ``None``.

    Raises:
      ValueError: a bad file, cell, or a missing or repeated arm, naming the row.
    """
    names = {arm: "env.arm", **{c: "env.objectives" for c in objectives}}
    if cost is not None:
        names[cost] = "env.cost"
    cols = columns.read(path, names)
    arms = cols.text(arm)
    empty = next((i for i, a in enumerate(arms) if not a), None)
    if empty is not None:
        raise ValueError(f"{cols.path}: column {arm!r}, {columns.where(int(cols.rows[empty]))}: empty arm name")
    repeat = columns.first_repeat(arms)
    if repeat is not None:
        i, j = repeat
        raise ValueError(f"{cols.path}: column {arm!r}, {columns.where(int(cols.rows[i]))}: duplicate arm "
                         f"{columns.shown(arms[i])} (first at {columns.where(int(cols.rows[j]))}); a table has one row "
                         "per arm")
    if len(arms) < 2:
        raise ValueError(f"{cols.path}: column {arm!r} names {len(arms)} arm(s); a bandit needs at least 2")
    means = columns.objective_matrix(cols, objectives, normalize, minimize, bounded=bounded)
    costs = None if cost is None else columns.normalized_costs(cols, cost)
    return tuple(arms), means, costs, None if cost is None else columns.cost_scale(cols, cost)


def build_instance(path, arm, objectives, cost=None, noise="beta", concentration=1.0, sigma=0.1,
                   normalize=False, minimize=(), k=0, clip=True) -> EnvInstance:
    """Build the table :class:`EnvInstance` (see the module docstring).

    Args:
      path: the CSV's path.
      arm: the column naming the arms.
      objectives: the objective columns.
      cost: optional cost column.
      noise: one of :data:`~mobandit_jax.problems.stochastic.NOISES`.
      concentration: Beta concentration.
      sigma: Gaussian standard deviation.
      normalize: ``True``, ``False`` or a list of objectives to min-max scale.
      minimize: a list of lower-is-better objectives (or ``True`` / ``False``).
      k: slate size, ``0`` for none.
      clip: clip Gaussian draws to ``[0, 1]``.

    Returns:
      The stochastic :class:`~mobandit_jax.types.EnvInstance` (reference point 0), with fixed costs where
      ``cost`` is given.

    Raises:
      ValueError: a bad file or option, naming it.
    """
    arms, means, costs, c_max = read_table(path, arm, objectives, cost, normalize, minimize,
                                          bounded=clip is not False)
    base = make_stochastic(means, noise, concentration, sigma, clip=clip, arms=arms, objectives=objectives)
    K, d = means.shape
    if not (isinstance(k, int) and not isinstance(k, bool) and 0 <= k <= K):
        raise ValueError(f"env.k = {plain(k)!r} (slate size) must be an integer in [1, {K}], or 0 for no slate")
    info = dict(base.info, label=f"table {path}", source=path, arms=arms)
    if cost is not None:  # costs (and a budget) in units of c_max; cost_scale c_max gives the column's own units
        info.update(cost_scale=c_max, cost_name=cost)
    base = base._replace(static_key=("table",) + base.static_key, info=info, ref=np.zeros(d), slate_size=k)
    return base if costs is None else with_fixed_costs(base, costs)


def with_fixed_costs(base: EnvInstance, costs) -> EnvInstance:
    """A stochastic instance ``base`` whose pulls of arm ``i`` cost ``costs[i]`` (in (0, 1], floor ``min_i c_i``),
    with the bulk sampler the identification family draws from.

    Args:
      base: a stochastic instance (params :class:`~mobandit_jax.problems.stochastic.StochasticParams`).
      costs: ``(K,)`` costs in ``(0, 1]``.

    Returns:
      The instance with :class:`TableParams`, costs, cost floor and bulk sampler set.

    Raises:
      ValueError: a cost outside ``[min_i c_i, 1]``.
    """
    costs = np.asarray(costs, float)
    lam = float(costs.min())
    validate_costs(costs, lam)
    sample = costed_sampler(base.env.sample)
    env = Env(sample=sample, num_arms=base.env.num_arms, dim=base.env.dim, prefix_table=sampled_prefix_table(sample))
    params = TableParams(*base.params, jnp.asarray(costs, base.params.means.dtype))
    return base._replace(env=env, params=params, mean_costs=costs, cost_floor=lam, alloc_costs=costs, min_costs=costs)


KEYS = ("path", "arm", "objectives", "cost", "noise", "concentration", "sigma", "clip", "normalize", "minimize", "k")


@register_env("table", doc="a CSV with one row per arm: mean objectives (raw scores: normalize, minimize) and optional "
          "cost; stochastic feedback as kind 'stochastic'", keys=KEYS)
def build(section: dict, config: dict) -> EnvInstance:
    """Registry builder for ``[env] kind = "table"``.

    Args:
      section: the spec's ``[env]`` table (:data:`KEYS`).
      config: the whole spec (not read).

    Returns:
      The :class:`~mobandit_jax.types.EnvInstance` of :func:`build_instance`.
    """
    return build_instance(section.get("path"), columns.column_name(section, "arm"), columns.objective_names(section),
                          columns.column_name(section, "cost", required=False), section.get("noise", "beta"),
                          float(section.get("concentration", 1.0)), float(section.get("sigma", 0.1)),
                          section.get("normalize", False), section.get("minimize", []), section.get("k", 0),
                          section.get("clip", True))
