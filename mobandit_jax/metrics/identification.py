"""Fixed-budget Pareto identification metrics of Xue et al. (Section 3.2; Appendix A, F1).

For a recommended set ``P_hat`` (a (K,) bool mask returned by an Identifier) and the true Pareto
set ``P*`` (Section 3.2: arms not strictly dominated in every coordinate by another arm, computed
from the environment's true means):

- ``misidentification``: ``1{P_hat != P*}``; its mean over replays estimates
  ``Pr(P_hat_B != P*)``;
- ``f1``: ``2 |P_hat & P*| / (|P_hat| + |P*|)`` (Appendix A, "Supplementary evaluation metrics");
- ``budget_spent``: the fraction of the budget the method spent, ``IdentifyResult.spent / B``
  (Algorithm 2 guarantees at most 1; Lemma 4 of Appendix B).

All reduce by ``"mean"`` (the engine records one checkpoint for an Identifier, whose
:class:`~mobandit_jax.types.IdentifyResult` it passes as the observation).
"""
from __future__ import annotations

import numpy as np
import jax.numpy as jnp

from ..kernels.gaps import strict_pareto_mask_np
from ..engine import float_dtype
from ..registry import register_metrics
from ..types import MetricSet

NAMES = ("misidentification", "f1", "budget_spent")
REDUCE = ("mean", "mean", "mean")


def true_pareto_mask(means) -> np.ndarray:
    """``P*`` of Section 3.2: no other arm is strictly better in every coordinate."""
    return strict_pareto_mask_np(means)


def set_scores(recommended, truth):
    """``(1{P_hat != P*}, F1)`` for boolean masks."""
    rec, tru = jnp.asarray(recommended, bool), jnp.asarray(truth, bool)
    mis = jnp.any(rec != tru).astype(float_dtype())
    inter = jnp.sum(rec & tru).astype(float_dtype())
    denom = (jnp.sum(rec) + jnp.sum(tru)).astype(float_dtype())
    return mis, jnp.where(denom > 0, 2.0 * inter / jnp.maximum(denom, 1.0), 1.0)


@register_metrics("identification")
def build(ctx):
    """Metric set of the identification family; ``mparams`` is (true Pareto mask, budget ``B``).

    ``obs`` is the run's :class:`~mobandit_jax.types.IdentifyResult` (its ``spent``).
    """
    if ctx.budget is None or not float(ctx.budget) > 0:
        raise ValueError(f"identification metrics need a positive budget B, got {ctx.budget}")
    mparams = (jnp.asarray(true_pareto_mask(ctx.means)), jnp.asarray(float(ctx.budget), float_dtype()))

    def step(mp, recommended, obs):
        truth, budget = mp
        mis, f1 = set_scores(recommended, truth)
        return mis, f1, jnp.asarray(obs.spent, float_dtype()) / budget

    return MetricSet(NAMES, REDUCE, step), mparams
