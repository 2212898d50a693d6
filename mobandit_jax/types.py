"""Every protocol and shared type of the engine, in one place.

The engine composes three kinds of pure functions, each closed over static sizes by a factory,
with every sweepable number in a params pytree (so ``jax.vmap`` batches a grid of them):

    env_params = env.reset(key, env_params)                          # optional, once per seed
    state  = policy.init(params)
    action = policy.select(key, state, params)                       # () int32, or (k,) slate
    reward, cost = env.sample(key_env, arm, pull_index, t, env_params)
    state  = policy.update(state, action, Observation(reward, cost), params)
    values = metrics.step(mparams, action, obs)                      # {metric name: scalar}

An :class:`Identifier` replaces ``init/select/update`` by one call that returns an
:class:`IdentifyResult`. An :class:`EnvInstance` is a built environment: the pure :class:`Env`, its
params and, as typed fields, everything policies and metrics may read about it (the truth, the
budget and costs, the reference point, the slate size). ``EnvInstance.info`` is descriptive
metadata for reports only (labels, sources, names): plain data, read by no policy or metric.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import jax
import numpy as np

from .errors import ConfigError

Array = jax.Array
PRNGKey = jax.Array
Params = Any  # a pytree of arrays
State = Any  # a pytree of arrays


class Observation(NamedTuple):
    """What the learner sees after a pull: ``reward`` (d,) or (k, d), ``cost`` () or (k,)."""

    reward: Array
    cost: Array


# ----------------------------------------------------------------------------- policies


class InitFn(Protocol):
    def __call__(self, params: Params) -> State:
        """The state before the first round.

        Args:
          params: the policy's params pytree.
        """


class SelectFn(Protocol):
    def __call__(self, key: PRNGKey, state: State, params: Params) -> Array:
        """The action of this round: an int32 arm, or a (k,) int32 slate of distinct arms.

        Args:
          key: this round's policy key (``fold_in(key_pol, t)``).
          state: the current state.
          params: the policy's params pytree.
        """


class UpdateFn(Protocol):
    def __call__(self, state: State, action: Array, obs: Observation, params: Params) -> State:
        """The state after observing ``obs`` for ``action``.

        Args:
          state: the state ``action`` was selected in.
          action: the arm or slate played.
          obs: its reward(s) and cost(s).
          params: the policy's params pytree.
        """


class Policy(NamedTuple):
    """Pure ``init`` / ``select`` / ``update``; ``slate_size`` is 0 for single-arm policies."""

    init: InitFn
    select: SelectFn
    update: UpdateFn
    slate_size: int = 0


class IdentifyResult(NamedTuple):
    """What a fixed-budget identification run returns."""

    recommended: Array  # (K,) bool, the recommended set
    spent: Array  # () budget spent
    pulls: Array  # (K,) int32 pulls per arm
    stopped: Any = True  # () bool: the stopping rule fired before the round cap (fixed-confidence methods)


class IdentifyFn(Protocol):
    def __call__(self, key_env: PRNGKey, key_pol: PRNGKey, env_params: Params, params: Params) -> IdentifyResult:
        """Run the method once.

        Args:
          key_env: the environment's common reward stream (shared by every method of a seed).
          key_pol: the method's own randomness.
          env_params: the environment's params (after ``reset``).
          params: the method's params pytree.
        """


class Stepwise(NamedTuple):
    """An identifier as pure steps, for a caller that owns the pulls (an ask/tell study, :mod:`mobandit_jax.study`).

    ``init(params) -> state``; ``select(key, state, params) -> (K,) int32``: the pulls of each arm the method needs
    before its next barrier (a phase's remaining allocation, or a round's arms once each); ``update(state, pulls (K,)
    int32, reward_sums (K, d), cost_sums (K,), params) -> state`` takes them all at once (sums over each arm's pulls);
    ``short(state, params) -> state``: the caller cannot afford the pulls ``select`` asked for, and the method does
    what it does when its budget stops it (a phase ends with the pulls made; a round-based method halts);
    ``recommend(state, params) -> (K,) bool``; ``stopped(state, params) -> () bool`` (no more pulls wanted);
    ``confident(state, params) -> () bool``: a fixed-confidence stopping rule fired (else ``stopped``)."""

    init: Callable
    select: Callable
    update: Callable
    short: Callable
    recommend: Callable
    stopped: Callable
    confident: Callable | None = None


class Identifier(NamedTuple):
    """An identification algorithm run as one pure call per seed (phases drawn in bulk).

    ``identify_in_turn`` (optional): ``(keys_env (S,), keys_pol (S,), env_params (leading S), params, lanes=1) ->
    IdentifyResult (leading S)``, the same results for ``S`` seeds sharing ``lanes`` lanes, a lane taking the next
    seed not yet started when its seed stops (``lanes = 1``: one after another in one lane); the engine gives
    several seeds to a lane with it when a batch is large (a fixed-confidence method whose seeds stop at
    very different rounds then costs the sum of their rounds, not the batch times the slowest). ``stepwise``
    (optional): the method as a :class:`Stepwise` on the same params, which gives the same recommendation on the
    same pulls; a live study needs it."""

    identify: IdentifyFn
    identify_in_turn: Callable | None = None
    stepwise: Stepwise | None = None  # the same method as pure steps on the same params (a live study drives it)


# ----------------------------------------------------------------------------- environments


class SampleFn(Protocol):
    def __call__(self, key: PRNGKey, arm: Array, pull_index: Array, t: Array, params: Params) -> tuple:
        """``(reward (d,), cost ())`` of pull ``pull_index`` of ``arm`` at round ``t``.

        Args:
          key: the environment stream ``key_env`` (common random numbers across policies).
          arm: the arm pulled.
          pull_index: how many times ``arm`` was pulled before.
          t: the round (for time-series replays).
          params: the environment's params pytree.
        """


class ResetFn(Protocol):
    def __call__(self, key: PRNGKey, params: Params) -> Params:
        """The params of one seed's instance (e.g. a fresh random instance per seed).

        Args:
          key: the seed's reset key.
          params: the environment's params pytree.
        """


class PrefixSums(NamedTuple):
    """Each arm's pulls, read as prefix sums with ``kernels.prefix.prefix_at``.

    ``levels[0]`` (K, ceil(n / 16), 16, m): the per-pull values in tiles of 16 (zero padded);
    ``levels[L]``: the sums of the tiles of level ``L - 1``, in tiles of 16; the last level is one tile.
    """

    levels: tuple


class PrefixTableFn(Protocol):
    def __call__(self, key: PRNGKey, params: Params, jmax: int) -> PrefixSums:
        """Prefix sums of (rewards, cost) over each arm's first ``jmax`` pulls.

        ``prefix_sums(values)`` of the ``(K, n, d + 1)`` per-pull values of pulls ``0 .. n-1``,
        ``n >= jmax``, on the stream ``key``: the same values ``sample`` returns one at a time.
        ``prefix_at(P, counts)`` reads the sum of arm ``i``'s first ``counts[i] <= jmax`` pulls
        (:mod:`mobandit_jax.kernels.prefix`).

        Args:
          key: the environment stream ``key_env``.
          params: the environment's params pytree.
          jmax: the largest number of pulls per arm (static).
        """


class Env(NamedTuple):
    """A pure environment: static sizes, ``sample``, an optional per-seed ``reset`` and bulk sampler."""

    sample: SampleFn
    num_arms: int
    dim: int
    reset: ResetFn | None = None
    prefix_table: PrefixTableFn | None = None


class EnvInstance(NamedTuple):
    """A built environment: the pure ``Env``, its params pytree and what policies and metrics read.

    ``static_key`` identifies the compiled code of ``env`` (instances with equal keys share it);
    ``info`` is descriptive metadata for reports (plain data, never read by policies or metrics).
    """

    env: Env
    params: Any
    means: np.ndarray  # (K, d) true mean rewards
    mean_costs: np.ndarray | None = None  # (K,) true mean costs, if pulls cost
    static_key: tuple = ()
    info: dict = {}
    budget: float | None = None  # B: the run stops once the next pull's cost would exceed it
    cost_floor: float | None = None  # lambda: the smallest cost a pull can be charged
    alloc_costs: np.ndarray | None = None  # (K,) fixed per-arm costs c_i that allocations plan with
    min_costs: np.ndarray | None = None  # (K,) the smallest cost each arm can be charged
    budget_ratio: float | None = None  # rho = B / (K c_bar)
    ref: np.ndarray | None = None  # (d,) hypervolume reference point
    slate_size: int = 0  # k, for top-k slate problems
    horizon: int = 0  # rounds the instance needs at least (0: the spec decides)
    noise_sigma: float | None = None  # reward noise standard deviation, if known
    bounded: bool = True  # every reward lies in [0, 1]^d (False: e.g. unclipped Gaussian noise)

    @property
    def arm_names(self) -> list:
        """The arms' names: the environment's own (``info["arms"]``: a CSV's arm column, a data set's labels),
        else ``"arm 0"`` .. ``"arm K-1"``."""
        names = self.info.get("arms")
        if names is not None and len(names) == self.env.num_arms:
            return [str(n) for n in names]
        return [f"arm {i}" for i in range(self.env.num_arms)]

    @property
    def cost_unit(self) -> tuple:
        """``(scale, name)``: one unit of this instance's costs and budget is ``scale`` of the data's own cost unit
        ``name`` (``info["cost_scale"]``, ``info["cost_name"]``: a CSV's largest cost and its cost column), else
        ``(1.0, "cost units")``."""
        return float(self.info.get("cost_scale", 1.0)), str(self.info.get("cost_name", "cost units"))


@dataclass
class Context:
    """Everything a policy or metric builder may read about one resolved experiment: the instance it runs on
    (``ctx.means``, ``ctx.budget``, ``ctx.ref``, ... read that :class:`EnvInstance`'s fields), the horizon and the
    preference cone ``W`` (None: the family does not read a cone; a family that reads one gets ``W = I``, the Pareto
    order, where the spec gives none: :meth:`~mobandit_jax.registry.FamilyEntry.cone`)."""

    instance: EnvInstance
    horizon: int
    W: np.ndarray | None = None  # (M, d) preference cone

    @classmethod
    def of(cls, inst: EnvInstance, horizon: int, W=None) -> Context:
        """The context of an instance run for ``horizon`` rounds with preference cone ``W``.

        Args:
          inst: the built environment.
          horizon: the rounds of the run (an identifier's round cap).
          W: the ``(M, d)`` preference cone, or None.

        Returns:
          The :class:`Context`.
        """
        return cls(inst, horizon, W)

    @classmethod
    def make(cls, num_arms: int, dim: int, horizon: int, means, W=None, **fields) -> Context:
        """A context of true ``means`` and no sampler (a test of a builder that reads only the instance's fields).

        Args:
          num_arms: K.
          dim: d.
          horizon: the rounds of the run.
          means: the ``(K, d)`` true means.
          W: the preference cone, or None.
          **fields: other :class:`EnvInstance` fields by name (``mean_costs``, ``budget``, ``ref``, ...; an
            ``env`` of the same sizes gives the instance its sampler).

        Returns:
          The :class:`Context` of an instance (whose ``env`` has no ``sample`` unless one is given).
        """
        env = fields.pop("env", None) or Env(sample=None, num_arms=num_arms, dim=dim)
        return cls(EnvInstance(env=env, params=None, means=np.asarray(means), **fields), horizon, W)

    @property
    def num_arms(self) -> int:
        """K, the number of arms."""
        return self.instance.env.num_arms

    @property
    def dim(self) -> int:
        """d, the number of objectives."""
        return self.instance.env.dim

    @property
    def means(self) -> np.ndarray:
        """The ``(K, d)`` true means, as a numpy array."""
        return np.asarray(self.instance.means)

    @property
    def env(self) -> Env | None:
        """The pure environment, or None where it has no sampler (:meth:`make`)."""
        return self.instance.env if self.instance.env.sample is not None else None

    def __getattr__(self, name: str):
        if name == "instance":  # not yet set (copy, pickle): no recursion
            raise AttributeError(name)
        if name in EnvInstance._fields:  # ref, mean_costs, budget, cost_floor, slate_size, noise_sigma, bounded, ...
            return getattr(self.instance, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def require_bounded(self, policy: str, reason: str):
        """Refuse, in one line, to run ``policy`` (which needs rewards in [0, 1] for ``reason``) here."""
        if not self.bounded:
            raise ConfigError(f"policy {policy!r} needs rewards in [0, 1] ({reason}), but this environment's "
                              "rewards are unbounded (noise = 'gaussian' with clip = false); use clip = true or a "
                              "policy that takes any real rewards")


# ----------------------------------------------------------------------------- metrics and runs


class MetricStepFn(Protocol):
    def __call__(self, mparams: Params, action: Array, obs: Observation | None) -> dict:
        """This round's value of every metric, by name (``obs`` is the IdentifyResult for an Identifier).

        Args:
          mparams: the metric params (after ``prepare``).
          action: the arm, slate, or an Identifier's recommended (K,) mask.
          obs: what the round observed (an Identifier's IdentifyResult).

        Returns:
          ``{name: scalar}`` for every metric of the set.
        """


class Metric(NamedTuple):
    """One metric of a set: its name, how its per-round values are summarised, and its meaning in one line.

    ``reduce``: ``"sum"`` (value at the horizon), ``"mean"`` (per round played) or ``"lastN"`` (mean over
    the last N rounds). ``bounds``: ``(low, high)`` that every per-seed value lies within (None: unbounded
    on that side); ``(0, 1)`` marks a rate, whose interval is Wilson's and stays within [0, 1], and a
    lower bound clips the figures' bands. ``goal``: ``"min"`` or ``"max"`` when lower or higher is better
    (the best policy of a paired comparison and a grid's winner), ``""`` when neither is.
    """

    name: str
    reduce: str
    doc: str = ""
    bounds: tuple = (None, None)
    goal: str = ""


class MetricSet(NamedTuple):
    """A family's metrics, each declared once, and the pure per-round function that values them by name.

    ``prepare(mparams, env_params) -> mparams`` (optional) runs once per seed after the environment's
    ``reset``, inside the compiled run.
    """

    metrics: tuple  # Metric per metric, in the order the results list them
    step: MetricStepFn
    prepare: Callable[[Params, Params], Params] | None = None

    @property
    def names(self) -> tuple:
        """The metric names, in order."""
        return tuple(m.name for m in self.metrics)

    @property
    def reduce(self) -> tuple:
        """Each metric's reducer, in the order of :attr:`names`."""
        return tuple(m.reduce for m in self.metrics)

    def values(self, mparams: Params, action: Array, obs) -> tuple:
        """This round's values in the order of :attr:`names` (``step``'s mapping, checked to name every metric).

        Args:
          mparams: the metric params (after ``prepare``).
          action: the arm, slate, or an Identifier's recommended (K,) mask.
          obs: what the round observed (an Identifier's IdentifyResult).

        Returns:
          A tuple of scalars, one per metric.
        """
        out = self.step(mparams, action, obs)
        if not isinstance(out, dict) or set(out) != set(self.names):
            got = sorted(out) if isinstance(out, dict) else type(out).__name__
            raise TypeError(f"a metric set's step must return {{name: value}} for exactly {list(self.names)}; "
                            f"got {got}")
        return tuple(out[name] for name in self.names)


class Final(NamedTuple):
    """How a run ends, what a family's ``recommended`` reads (:func:`mobandit_jax.registry.register_family`)."""

    result: Any  # the policy's final state (online), or the Identifier's IdentifyResult
    action: Array  # the last action: an arm, a (k,) slate, or an Identifier's recommended (K,) mask
    pulls: Array  # (K,) int32 pulls per arm
    means: Array  # (K, d) empirical mean reward per arm (0 where never pulled)


class RunParams(NamedTuple):
    """Everything one run may sweep: environment, policy and metric params, and the budget."""

    env: Any
    policy: Any
    metric: Any
    budget: Any
    cone: Any = None  # (M, d) the grid point's cone W, for a family that reads it: what its ``recommended`` reads
