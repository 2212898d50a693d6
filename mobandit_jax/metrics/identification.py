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

Xue, Hong, Li, Wan, Cheng & Qiu, "Cost-Aware Multi-Objective Bandits: Theory and Application to
Budgeted LLM Configuration Evaluation" (preprint).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..engine import float_dtype
from ..kernels.gaps import strict_pareto_mask_np
from ..problems.replay import constant_instance
from ..registry import IDENTIFIER, register_family
from ..types import Context, Metric, MetricSet

METRICS = (
    Metric("misidentification", "mean", "1 if the recommended set is not the Pareto set P*", (0, 1), "min"),
    Metric("f1", "mean", "F1 score of the recommended set against P*", (0, 1), "max"),
    Metric("budget_spent", "mean", "fraction of the budget B the method spent", (0, None)),
)


def true_pareto_mask(means) -> np.ndarray:
    """``P*`` of Section 3.2: no other arm is strictly better in every coordinate.

    Args:
      means: ``(K, d)`` true means.

    Returns:
      ``(K,)`` numpy bool mask of ``P*``.
    """
    return strict_pareto_mask_np(means)


def set_scores(recommended, truth):
    """``(1{P_hat != P*}, F1)`` for boolean masks.

    Args:
      recommended: ``(K,)`` bool, the recommended set.
      truth: ``(K,)`` bool, the true set.

    Returns:
      ``(mis, f1)``, two scalars of :func:`~mobandit_jax.engine.float_dtype` (F1 is 1 when both sets are
      empty).
    """
    rec, tru = jnp.asarray(recommended, bool), jnp.asarray(truth, bool)
    mis = jnp.any(rec != tru).astype(float_dtype())
    inter = jnp.sum(rec & tru).astype(float_dtype())
    denom = (jnp.sum(rec) + jnp.sum(tru)).astype(float_dtype())
    return mis, jnp.where(denom > 0, 2.0 * inter / jnp.maximum(denom, 1.0), 1.0)


def build(ctx):
    """Metric set of the identification family; ``mparams`` is (true Pareto mask, budget ``B``).

    ``obs`` is the run's :class:`~mobandit_jax.types.IdentifyResult` (its ``spent``).

    Args:
      ctx: a :class:`~mobandit_jax.types.Context` with true means and a positive budget.

    Returns:
      ``(MetricSet, (P* mask (K,), B))``.
    """
    if ctx.budget is None or not float(ctx.budget) > 0:
        raise ValueError(f"identification metrics need a positive budget B, got {ctx.budget}")
    mparams = (jnp.asarray(true_pareto_mask(ctx.means)), jnp.asarray(float(ctx.budget), float_dtype()))

    def step(mp, recommended, obs):
        truth, budget = mp
        mis, f1 = set_scores(recommended, truth)
        return {"misidentification": mis, "f1": f1, "budget_spent": jnp.asarray(obs.spent, float_dtype()) / budget}

    return MetricSet(METRICS, step), mparams


def truth(mp, slate_size: int) -> dict:
    """What the metrics score against (``truth.json``): the strict Pareto set ``P*`` and the budget ``B``.

    Args:
      mp: the metric parameters of :func:`build`, ``(P* mask, B)``.
      slate_size: unused (the family interface).

    Returns:
      A dict with ``pareto`` ``(K,)`` bool and ``budget`` ``()``.
    """
    truth_mask, budget = mp
    return {"pareto": truth_mask, "budget": budget}


def true_set(truth: dict, means) -> list:
    """The set a recommendation is compared with: the strict Pareto set ``P*`` (``truth.json``'s ``pareto``)."""
    return truth["pareto"]


def example(seed: int) -> Context:
    """A small context of the family (the conformance test): 6 arms, 2 objectives, costs and a budget of 16 (above
    every method's first phase).

    Args:
      seed: draws the means.

    Returns:
      A :class:`~mobandit_jax.types.Context` with horizon ``20 + 10 seed``.
    """
    means = np.random.default_rng(seed).uniform(0.1, 0.9, (6, 2))
    costs = np.random.default_rng(7).uniform(0.3, 1.0, 6)
    inst = constant_instance(means, costs, budget=16.0, budget_ratio=16.0 / (6 * costs.mean()))
    return Context.of(inst, 20 + 10 * seed)


register_family("identification", kind=IDENTIFIER, metrics=build, truth=truth, example=example, true_set=true_set,
                doc="fixed-budget Pareto set identification under costs (Xue et al., Section 3.2)")
