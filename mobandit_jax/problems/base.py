"""The environment registry (the :class:`Env`, :class:`EnvInstance` and :class:`Context` types are in
:mod:`mobandit_jax.types`).

An environment is pure (gymnax style): the reward of arm ``i`` at its ``j``-th pull is a pure
function of ``(key, i, j)`` (or of the round ``t`` for time-series replays), so every policy in a
comparison faces the same reward stream (common random numbers).

    reward, cost = env.sample(key, arm, pull_index, t, params)   # (d,), ()

``params`` is a pytree of arrays (sweepable); ``num_arms`` and ``dim`` are static. An optional
``reset(key, params) -> params`` redraws per-seed parts (e.g. a random instance per seed).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from ..types import Context, Env, EnvInstance  # noqa: F401  (re-exported)


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
