"""The environment protocol, the experiment context and the environment registry.

An environment is pure (gymnax style): the reward of arm ``i`` at its ``j``-th pull is a pure
function of ``(key, i, j)`` (or of the round ``t`` for time-series replays), so every policy in a
comparison faces the same reward stream (common random numbers).

    reward, cost = env.sample(key, arm, pull_index, t, params)   # (d,), ()

``params`` is a pytree of arrays (sweepable); ``num_arms`` and ``dim`` are static. An optional
``reset(key, params) -> params`` redraws per-seed parts (e.g. a random instance per seed).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple, Optional

import numpy as np


class Env(NamedTuple):
    """A pure environment: static sizes, a ``sample`` function and an optional per-seed ``reset``.

    ``reset(key, params) -> params`` (if given) is called once at the start of every seed's run
    with the seed's environment key, e.g. to draw a fresh problem instance per seed.
    """

    sample: Callable[..., tuple]
    num_arms: int
    dim: int
    reset: Optional[Callable[..., Any]] = None


class EnvInstance(NamedTuple):
    """A built environment: the pure ``Env``, its params pytree and the ground truth."""

    env: Env
    params: Any
    means: np.ndarray  # (K, d) true mean rewards (regret reference)
    mean_costs: Optional[np.ndarray] = None  # (K,) true mean costs, if pulls cost
    static_key: tuple = ()
    info: dict = {}


@dataclass
class Context:
    """Everything a policy or metric builder may read about one resolved experiment."""

    num_arms: int
    dim: int
    horizon: int
    means: np.ndarray
    config: dict
    W: Optional[np.ndarray] = None
    ref: Optional[np.ndarray] = None
    mean_costs: Optional[np.ndarray] = None
    budget: Optional[float] = None
    cost_floor: Optional[float] = None
    slate_size: int = 0
    info: dict = field(default_factory=dict)


class EnvEntry(NamedTuple):
    """A registry row: ``build(section, config) -> EnvInstance``, with its allowed keys."""

    name: str
    build: Callable[..., EnvInstance]
    doc: str
    keys: tuple


ENVS: dict[str, EnvEntry] = {}


def register(name: str, doc: str, keys: tuple):
    """Decorator registering an environment builder under ``name`` (``keys``: allowed config keys)."""

    def deco(build):
        if name in ENVS:
            raise ValueError(f"environment {name!r} registered twice")
        ENVS[name] = EnvEntry(name, build, doc, tuple(keys))
        return build

    return deco


def make(section: dict, config: dict | None = None) -> EnvInstance:
    """Build the environment named by ``section['kind']``, rejecting unknown keys by name."""
    kind = section.get("kind")
    if kind not in ENVS:
        raise KeyError(f"unknown env kind {kind!r}; registered kinds: {sorted(ENVS)}")
    entry = ENVS[kind]
    unknown = sorted(set(section) - set(entry.keys) - {"kind"})
    if unknown:
        raise KeyError(f"env kind {kind!r} got unknown key(s) {unknown}; allowed: {sorted(entry.keys)}")
    return entry.build(section, config or {})
