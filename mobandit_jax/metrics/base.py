"""The metric protocol and the per-family metric registry.

A metric set is evaluated once per round inside the scan: ``step(mparams, action, obs)`` returns a
tuple of scalars, one per name. The engine accumulates them and records cumulative sums at
checkpoints; ``reduce`` says how the final summary value is read off the cumulative curve:

- ``"sum"``: the cumulative value at the horizon (regrets);
- ``"mean"``: the cumulative value divided by the rounds played (ratios, average rewards);
- ``"lastN"`` (e.g. ``"last100"``): the mean over the last N rounds played.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional


class MetricSet(NamedTuple):
    """Names, summary reducers and the pure per-round function of a family's metrics.

    ``prepare(mparams, env_params) -> mparams`` (optional) runs once per seed after the
    environment's ``reset``, inside the compiled run, e.g. to compute a per-instance benchmark.
    """

    names: tuple
    reduce: tuple
    step: Callable[[Any, Any, Any], tuple]
    prepare: Optional[Callable[[Any, Any], Any]] = None


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
