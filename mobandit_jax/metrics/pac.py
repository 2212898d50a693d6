"""Metrics of the fixed-confidence PAC family (:mod:`mobandit_jax.policies.pac`).

For a returned set ``P_hat`` (the (K,) mask of a :class:`~mobandit_jax.policies.pac.PacResult`) and the
true cone-optimal set ``P* = cone_optimal_mask(means, W)`` of the context's true means and cone:

- ``samples``: total pulls until the stop, ``sum_i pulls_i``;
- ``misidentification``: ``1{P_hat != P*}``;
- ``eps_f1``: the epsilon-F1 score of VOPy's ``calculate_epsilonF1_score``, at the result's
  ``epsilon``: ``2 TP / (2 TP + FP + UC)`` with ``TP = #{i in P_hat : Delta_i <= epsilon}``,
  ``FP = |P_hat| - TP`` and ``UC`` the arms of ``P* \\ P_hat`` that no arm of ``P_hat`` epsilon-covers.
  ``Delta_i = max_j min_n [w_n . (mu_j - mu_i)]^+ / alpha_n`` is the gap of arm ``i``; ``j`` epsilon-covers
  ``i`` when some ``z`` in ``C`` with ``||z|| <= epsilon`` has ``mu_j + z`` C-dominating ``mu_i``
  (:func:`~mobandit_jax.kernels.cone_regions.cone_gaps_np`,
  :func:`~mobandit_jax.kernels.cone_regions.cover_distances_np`; both from the true means, once per
  setting, so a grid over epsilon shares one compiled program). A result without an ``epsilon`` is
  scored at 0;
- ``returned``: ``|P_hat|``;
- ``stopped``: 1 if the stopping rule fired before the round cap (and the budget);
- ``tau_over_lower_bound``: ``samples / (T*(mu) log(1/delta))``, the sample complexity over the lower bound of
  delta-correct methods (:func:`~mobandit_jax.kernels.pareto_lower_bound.characteristic_time`: Gaussian objectives
  of the environment's noise scale, 1/2 for rewards in [0, 1]; under a cone, the projections ``W mu`` with scales
  ``sigma ||w_n||``), at the result's ``delta`` (NaN for a result without one, an environment without a scale, or
  an instance without a finite ``T*``: an arm tied with one that dominates it, or too many alternatives to
  enumerate); ``T*`` is computed once per instance on the host (within 1%) and recorded in ``truth.json``
  (``lower_bound``);
- ``cost``: the total cost the environment charged for the pulls (the result's ``spent``): 0 where pulls cost
  nothing (``kind = "stochastic"``, a table without a cost column), where ``samples`` counts the pulls.

All reduce by ``"mean"`` over seeds (the engine records one checkpoint for an Identifier).

References:
  - Karagozlu, Yildirim, Ararat & Tekin, "Learning the Pareto Set Under Incomplete Preferences: Pure
    Exploration in Vector Bandits", AISTATS 2024, https://proceedings.mlr.press/v238/karagozlu24a.html
    (the epsilon-F1 score of their library VOPy).
  - Crepon, Garivier & Koolen, "Sequential learning of the Pareto front for multi-objective bandits",
    AISTATS 2024, https://proceedings.mlr.press/v238/crepon24a.html (the lower bound).
  - Kone, Kaufmann & Richert, "Adaptive Algorithms for Relaxed Pareto Set Identification", NeurIPS
    2023, https://arxiv.org/abs/2307.00424 (the lower bound).
"""
from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from ..engine import float_dtype
from ..kernels.cone_regions import cone_gaps_np, cover_distances_np
from ..kernels.dominance import cone_optimal_mask
from ..kernels.pareto_lower_bound import characteristic_time
from ..policies.pac import noise_scale, pac_cone
from ..problems.stochastic import make_stochastic
from ..registry import IDENTIFIER, register_family
from ..types import Context, Metric, MetricSet

METRICS = (
    Metric("samples", "mean", "total pulls until the stop", (0, None), "min"),
    Metric("misidentification", "mean", "1 if the returned set is not the cone-optimal set P*", (0, 1), "min"),
    Metric("eps_f1", "mean", "epsilon-F1 score of the returned set (VOPy's)", (0, 1), "max"),
    Metric("returned", "mean", "size of the returned set", (0, None)),
    Metric("stopped", "mean", "1 if the stopping rule fired before the round cap and the budget",
           (0, 1)),
    Metric("tau_over_lower_bound", "mean", "samples / (T*(mu) log(1/delta)): samples over the lower bound",
           (0, None), "min"),
    Metric("cost", "mean", "the total cost the environment charged for the pulls (0 where pulls cost nothing)",
           (0, None), "min"),
)


class PacTruth(NamedTuple):
    """What the pac metrics score against: the true cone-optimal mask ``(K,)``, the gaps ``Delta (K,)`` and
    the cover distances ``D (K, K)`` (``D[i, j] <= epsilon``: ``j`` epsilon-covers ``i``)."""

    optimal: jnp.ndarray
    gaps: jnp.ndarray
    cover: jnp.ndarray
    lower_bound: jnp.ndarray = jnp.nan  # () T*(mu) of the projected means (NaN: no noise scale)


def pac_truth(means, W, sigma=None) -> PacTruth:
    """The :class:`PacTruth` of true means ``(K, d)`` under the solid cone ``W`` (computed in float64), with the
    characteristic time of Gaussian noise of scale ``sigma`` (None: NaN).

    Args:
      means: ``(K, d)`` true means.
      W: ``(M, d)`` preference matrix of a solid cone.
      sigma: the noise scale of every objective (a number), or ``None`` (``lower_bound`` NaN).

    Returns:
      The :class:`PacTruth`, in :func:`~mobandit_jax.engine.float_dtype`.
    """
    means = np.asarray(means, float)
    W = np.asarray(W, float)
    dtype = float_dtype()
    T = np.nan if sigma is None else characteristic_time(means @ W.T, sigma * np.linalg.norm(W, axis=1))[0]
    return PacTruth(jnp.asarray(np.asarray(cone_optimal_mask(means, W))), jnp.asarray(cone_gaps_np(means, W), dtype),
                    jnp.asarray(cover_distances_np(means, W), dtype), jnp.asarray(T, dtype))


def eps_f1_score(recommended, truth: PacTruth, epsilon):
    """VOPy's epsilon-F1 of the returned mask ``recommended`` at accuracy ``epsilon`` (module docstring).

    Args:
      recommended: ``(K,)`` bool, the returned set.
      truth: the :class:`PacTruth` of the instance.
      epsilon: ``()`` accuracy.

    Returns:
      ``()`` score in ``[0, 1]`` (1 when the denominator is 0).
    """
    rec = jnp.asarray(recommended, bool)
    dtype = float_dtype()
    tp = jnp.sum(rec & (truth.gaps <= epsilon)).astype(dtype)
    fp = jnp.sum(rec).astype(dtype) - tp
    covered = jnp.any((truth.cover <= epsilon) & rec[None, :], axis=1)
    uncovered = jnp.sum(truth.optimal & ~rec & ~covered).astype(dtype)
    denom = 2 * tp + fp + uncovered
    return jnp.where(denom > 0, 2 * tp / jnp.maximum(denom, 1), 1.0)


def build(ctx):
    """Metric set of the pac family; ``mparams`` is the :class:`PacTruth` of the context's means and cone.

    ``obs`` is the run's :class:`~mobandit_jax.policies.pac.PacResult` (its pulls, stop flag and epsilon).

    Args:
      ctx: a :class:`~mobandit_jax.types.Context` (its cone: ``[preference] W``, else the Pareto order).

    Returns:
      ``(MetricSet, PacTruth)``.
    """
    truth = pac_truth(ctx.means, pac_cone(ctx), noise_scale(ctx))

    def step(mp, recommended, obs):
        dtype = float_dtype()
        rec = jnp.asarray(recommended, bool)
        epsilon = getattr(obs, "epsilon", None)
        epsilon = jnp.zeros((), dtype) if epsilon is None else jnp.asarray(epsilon, dtype)
        delta = getattr(obs, "delta", None)
        delta = jnp.full((), jnp.nan, dtype) if delta is None else jnp.asarray(delta, dtype)
        samples = jnp.sum(obs.pulls).astype(dtype)
        bound = jnp.asarray(mp.lower_bound, dtype)
        return {"samples": samples,
                "misidentification": jnp.any(rec != mp.optimal).astype(dtype),
                "eps_f1": eps_f1_score(rec, mp, epsilon), "returned": jnp.sum(rec).astype(dtype),
                "stopped": jnp.asarray(obs.stopped, bool).astype(dtype),
                "tau_over_lower_bound": jnp.where(jnp.isfinite(bound), samples / (bound * jnp.log(1 / delta)), jnp.nan),
                "cost": jnp.asarray(obs.spent, dtype)}

    return MetricSet(METRICS, step), truth


def true_set(truth: dict, means) -> list:
    """The set a recommendation is compared with: the cone-optimal arms (``truth.json``'s ``optimal``)."""
    return truth["optimal"]


def example(seed: int) -> Context:
    """A small context of the family (the conformance test): 6 arms, 2 objectives, unclipped Gaussian noise.

    Args:
      seed: draws the means.

    Returns:
      A :class:`~mobandit_jax.types.Context` with horizon ``20 + 10 seed``.
    """
    means = np.random.default_rng(seed).uniform(0.1, 0.9, (6, 2))
    inst = make_stochastic(means, noise="gaussian", sigma=0.1, clip=False)
    return Context.of(inst, 20 + 10 * seed, np.array([[1.0, 0.0], [0.5, 0.5]]))


register_family("pac", kind=IDENTIFIER, metrics=build, reads_cone=True, example=example, true_set=true_set,
                doc="fixed-confidence (epsilon, delta)-PAC Pareto set identification under a cone")
