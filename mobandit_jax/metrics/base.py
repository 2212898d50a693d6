"""The per-family metric registry (the :class:`MetricSet` type is in :mod:`mobandit_jax.types`)."""
from __future__ import annotations

from typing import Callable

from ..types import MetricSet  # noqa: F401  (re-exported)

METRICS: dict[str, Callable] = {}


def register(family: str):
    """Decorator registering ``build(ctx) -> (MetricSet, mparams)`` for a policy family."""

    def deco(build):
        if family in METRICS:
            raise ValueError(f"metrics for family {family!r} registered twice")
        METRICS[family] = build
        return build

    return deco


def make(family: str, ctx):
    """Build the metric set of ``family`` for the context ``ctx``."""
    if family not in METRICS:
        raise KeyError(f"no metrics for family {family!r}; families: {sorted(METRICS)}")
    return METRICS[family](ctx)
