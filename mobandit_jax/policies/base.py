"""The policy registry: a table from names to public factories (types in :mod:`mobandit_jax.types`).

A row pairs a factory (static sizes and options -> :class:`Policy` or :class:`Identifier`) with a
``configure(ctx, **options) -> (factory_kwargs, params)`` that reads the experiment context. The
compile key of a built policy is derived here from the row name and the factory's arguments, so two
grid points share one compiled function exactly when they call the factory with equal arguments.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from ..types import Identifier, IdentifyResult, Observation, Policy  # noqa: F401  (re-exported)


class PolicyEntry(NamedTuple):
    """A registry row: the factory, how to configure it from a context, and its option defaults."""

    name: str
    family: str
    factory: Callable
    configure: Callable[..., tuple]
    doc: str
    defaults: dict


POLICIES: dict[str, PolicyEntry] = {}


def register(name: str, family: str, factory: Callable, configure: Callable, doc: str, **defaults):
    """Add a row: ``configure(ctx, **options) -> (factory_kwargs, params)`` feeds ``factory``."""
    if name in POLICIES:
        raise ValueError(f"policy {name!r} registered twice")
    POLICIES[name] = PolicyEntry(name, family, factory, configure, doc, dict(defaults))


def make(name: str, ctx, **options):
    """Build ``(policy, params, compile_key)`` for a registered policy, validating option names."""
    if name not in POLICIES:
        raise KeyError(f"unknown policy {name!r}; registered policies: {sorted(POLICIES)}")
    entry = POLICIES[name]
    unknown = sorted(set(options) - set(entry.defaults))
    if unknown:
        raise KeyError(
            f"policy {name!r} got unknown option(s) {unknown}; allowed: {sorted(entry.defaults)}"
        )
    kwargs, params = entry.configure(ctx, **{**entry.defaults, **options})
    return entry.factory(**kwargs), params, (name,) + tuple(sorted(kwargs.items()))
