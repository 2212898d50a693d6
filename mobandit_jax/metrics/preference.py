"""Per-round metrics of the preference-directed family (PDMOB, Def. 5 and Section 4).

- ``regret_indicator``: ``1{a_t not in P*_C}`` (summed: ``R^01_T``);
- ``regret_gap``: ``Delta_{a_t} 1{a_t not in P*_C}`` (summed: ``R^gap_T``);
- ``optimal_selection_ratio``: ``1{a_t in P*_C}`` (averaged over rounds: Table 1);
- ``reward_j``: the true mean reward of the played arm on objective ``j`` (averaged; the
  sub-objective trends of Figure 4 are moving averages of it).

PDMOB: Ma, Zhang, Sugiyama & Zhou, "Selective Ensemble Based on Preference-Directed Multi-Objective
Bandits", arXiv 2026, https://arxiv.org/abs/2606.21929.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..engine import float_dtype
from ..kernels import cone_optimal_mask, preference_gaps, validate_cone
from ..problems.stochastic import make_stochastic
from ..registry import ONLINE, register_family
from ..types import Context, Metric, MetricSet


class PreferenceTruth(NamedTuple):
    """Ground truth for one instance: C-optimal mask, gaps and the true mean table."""

    optimal: jnp.ndarray  # (K,) float 0/1
    gaps: jnp.ndarray  # (K,)
    means: jnp.ndarray  # (K, d)


def preference_truth(means, W) -> PreferenceTruth:
    """Ground truth of Defs. 2 and 4 for a mean table and preference matrix (one compiled program, not a
    dispatch per operation: a plan builds it at every run).

    Args:
      means: ``(K, d)`` true means.
      W: ``(M, d)`` preference matrix.

    Returns:
      The :class:`PreferenceTruth`, in :func:`~mobandit_jax.engine.float_dtype`.
    """
    return _truth(jnp.asarray(means, float_dtype()), jnp.asarray(W, float_dtype()))


@jax.jit
def _truth(means, W) -> PreferenceTruth:
    return PreferenceTruth(cone_optimal_mask(means, W).astype(means.dtype), preference_gaps(means, W), means)


def preference_metrics(dim: int) -> MetricSet:
    """The metric set for ``dim`` objectives.

    Args:
      dim: d, the number of objectives (one ``reward_j`` metric each).

    Returns:
      The :class:`~mobandit_jax.types.MetricSet`; its params are a :class:`PreferenceTruth`.
    """
    metrics = (Metric("regret_indicator", "sum", "1 if the played arm is not C-optimal (summed: R^01_T)",
                      (0, None), "min"),
               Metric("regret_gap", "sum", "the played arm's preference gap (summed: R^gap_T)",
                      (0, None), "min"),
               # within [0, 1], but an average over the rounds, not one outcome per seed: bounded below only, so
               # its interval is Student t's (Wilson's, for a proportion of seeds, would be far too wide)
               Metric("optimal_selection_ratio", "mean", "1 if the played arm is C-optimal (averaged over rounds)",
                      (0, None), "max"))
    metrics += tuple(Metric(f"reward_{j}", "mean", f"true mean reward of the played arm on objective {j}")
                     for j in range(dim))

    def step(truth, action, obs):
        opt = truth.optimal[action]
        reward = truth.means[action]  # one gather for all d objectives
        return {"regret_indicator": 1.0 - opt, "regret_gap": truth.gaps[action] * (1.0 - opt),
                "optimal_selection_ratio": opt, **{f"reward_{j}": reward[j] for j in range(dim)}}

    return MetricSet(metrics, step)


def build(ctx):
    """The preference family's metric set and its :class:`PreferenceTruth` for the context's means and cone.

    Args:
      ctx: a :class:`~mobandit_jax.types.Context` with a preference cone ``W``.

    Returns:
      ``(MetricSet, PreferenceTruth)``.
    """
    if ctx.W is None:
        raise KeyError("preference metrics need a preference matrix: set [preference] W = [[...], ...]")
    W = validate_cone(ctx.W)
    return preference_metrics(ctx.dim), preference_truth(ctx.means, W)


def truth(mp: PreferenceTruth, slate_size: int) -> dict:
    """What the metrics score against (``truth.json``): the cone-optimal mask ``P*_C`` and the gaps.

    Args:
      mp: the :class:`PreferenceTruth` of :func:`build`.
      slate_size: unused (the family interface).

    Returns:
      A dict with ``cone_optimal`` ``(K,)`` bool and ``gaps`` ``(K,)``.
    """
    return {"cone_optimal": mp.optimal > 0, "gaps": mp.gaps}


def example(seed: int) -> Context:
    """A small context of the family (the conformance test): 6 arms, 2 objectives, a 2-row cone.

    Args:
      seed: draws the means.

    Returns:
      A :class:`~mobandit_jax.types.Context` with horizon ``20 + 10 seed``.
    """
    means = np.random.default_rng(seed).uniform(0.1, 0.9, (6, 2))
    return Context.of(make_stochastic(means), 20 + 10 * seed, np.array([[1.0, 0.0], [0.5, 0.5]]))


register_family("preference", kind=ONLINE, metrics=build, truth=truth, reads_cone=True, example=example,
                doc="preference-directed regret under the cone C = {x : W x >= 0} (PDMOB)")
