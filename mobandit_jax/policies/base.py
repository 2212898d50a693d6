"""The policy protocol and the policy registry.

A policy is a NamedTuple of three pure functions over an immutable state pytree (optax's
``GradientTransformation`` shape). Static sizes (number of arms, dimension, slate size, number of
directions) are closed over by the factory; every sweepable hyperparameter lives in a ``params``
pytree so that ``jax.vmap`` can batch it.

    state  = policy.init(params)
    action = policy.select(key, state, params)        # int32 scalar, or (k,) int32 slate
    state  = policy.update(state, action, obs, params)

``obs`` is an :class:`Observation` with ``reward`` of shape ``(d,)`` (or ``(k, d)`` for a slate)
and ``cost`` of shape ``()`` (or ``(k,)``). Rounds are counted by the policy itself (``state.t``).
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax.numpy as jnp


class Observation(NamedTuple):
    """What the learner sees after a pull: reward vector(s) and cost(s)."""

    reward: jnp.ndarray
    cost: jnp.ndarray


class Policy(NamedTuple):
    """Pure ``init`` / ``select`` / ``update`` functions; ``slate_size`` is 0 for single-arm policies."""

    init: Callable[[Any], Any]
    select: Callable[[Any, Any, Any], jnp.ndarray]
    update: Callable[[Any, jnp.ndarray, Observation, Any], Any]
    slate_size: int = 0


class Identifier(NamedTuple):
    """A fixed-budget identification algorithm run as one pure call (phases drawn in bulk).

    ``identify(key_env, key_pol, env_params, params) -> (K,) bool`` recommended set. Rewards come
    from the environment's common streams (``key_env``, shared by every method in a repetition)
    through its ``sample`` or bulk functions, which the factory closes over (``ctx.info["env"]``);
    ``key_pol`` is the method's own randomness.
    """

    identify: Callable[[Any, Any, Any, Any], jnp.ndarray]


class PolicyEntry(NamedTuple):
    """A registry row: how to build a policy and its params from an experiment context."""

    name: str
    family: str
    build: Callable[..., tuple]
    doc: str
    defaults: dict


POLICIES: dict[str, PolicyEntry] = {}


def register(name: str, family: str, doc: str, **defaults):
    """Decorator registering ``build(ctx, **options) -> (Policy, params, static_key)`` under ``name``.

    ``ctx`` is a :class:`mobandit_jax.problems.base.Context` (the resolved experiment: sizes, true
    means, preference matrix, costs, ...). ``options`` are the policy's config keys, defaulted from
    ``defaults``; unknown keys are rejected by :func:`make`.
    """

    def deco(build):
        if name in POLICIES:
            raise ValueError(f"policy {name!r} registered twice")
        POLICIES[name] = PolicyEntry(name, family, build, doc, dict(defaults))
        return build

    return deco


def make(name: str, ctx, **options):
    """Build ``(Policy, params, static_key)`` for a registered policy, validating option names."""
    if name not in POLICIES:
        raise KeyError(f"unknown policy {name!r}; registered policies: {sorted(POLICIES)}")
    entry = POLICIES[name]
    unknown = sorted(set(options) - set(entry.defaults))
    if unknown:
        raise KeyError(
            f"policy {name!r} got unknown option(s) {unknown}; allowed: {sorted(entry.defaults)}"
        )
    return entry.build(ctx, **{**entry.defaults, **options})
