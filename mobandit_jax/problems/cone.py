"""A preference cone applied to any environment: the projected, componentwise problem.

PDMOB (Section 2.1, Def. 1-3): the cone ``C = {x : W x >= 0}`` orders rewards by ``x >=_C y`` iff
``W x >= W y`` componentwise, so a problem under ``C`` is the componentwise (Pareto) problem on the
``M`` projected objectives. :func:`apply_cone` wraps an :class:`EnvInstance` so that every pull returns
the normalised projections of Def. 3,

    S_k(r) = (w_k . r - L_k) / (U_k - L_k),   L_k = sum_i min(0, w_ki),   U_k = sum_i max(0, w_ki),

which lie in [0, 1] for ``r`` in [0, 1]^d (an unbounded environment, e.g. unclipped Gaussian noise, gets
the plain ``w_k . r``: ``L_k = 0``, ``U_k - L_k = 1``). Costs pass through. The projected instance is the
problem every family that does not read ``W`` itself (slate, budgeted, identification, a plugin's)
then solves unchanged, and scores against:

- its truth is the projected means ``S(mu)`` (exactly: the projection is affine, so means commute);
  the family's optimal set on them is the cone-optimal set (``mb.cone_optimal_mask``) wherever no two
  arms tie on a projected objective;
- the hypervolume reference point is the origin of the projections, ``S = 0`` (``w_k . x = L_k``, the
  least value of objective ``k`` over [0, 1]^d); for ``W >= 0`` it is the projection of the origin;
- the noise scale reported to policies that read one (``EnvInstance.noise_sigma``) is
  ``sigma max_k ||w_k||_2 / (U_k - L_k)``, the largest standard deviation of a projected objective under
  isotropic Gaussian noise of scale ``sigma``.

A policy's guarantee carries over where it rests only on rewards in [0, 1] and the componentwise order
(KL-UCB and Hoeffding indices, Beta posteriors, hypervolumes against the reference above); a guarantee
stated for sub-Gaussian noise of scale ``sigma`` holds with the scale above; the projected objectives
are correlated where rows of ``W`` share coordinates, which no componentwise guarantee needs.

The cone is a params array (``ConeParams.W``): instances under cones of one shape share one compiled
program. With ``W = I`` every projected value is the reward itself, bit for bit.

PDMOB: Ma, Zhang, Sugiyama & Zhou, "Selective Ensemble Based on Preference-Directed Multi-Objective
Bandits", arXiv 2026, https://arxiv.org/abs/2606.21929.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from ..kernels.dominance import validate_cone
from ..kernels.prefix import prefix_sums
from ..types import Env, EnvInstance, PrefixSums


class ConeParams(NamedTuple):
    """The wrapped environment's params, the cone ``W (M, d)`` and the normalisation ``L (M,)``, ``U - L (M,)``."""

    inner: Any
    W: jnp.ndarray
    low: jnp.ndarray
    span: jnp.ndarray

    @property
    def means(self):
        """The projected per-seed instance, where the wrapped environment's params carry one (``means``)."""
        inner = getattr(self.inner, "means", None)
        return None if inner is None else project(inner, self)


def project(r, p: ConeParams):
    """``S(r) = (r W^T - L) / (U - L)``: ``(..., d) -> (..., M)``.

    Args:
      r: ``(..., d)`` rewards.
      p: the :class:`ConeParams`.

    Returns:
      ``(..., M)`` projections.
    """
    return (jnp.matmul(r, p.W.T, precision="highest") - p.low) / p.span  # float32 on a GPU too (not TF32)


def normalisation(W: np.ndarray, bounded: bool):
    """``(L, U - L)`` of Def. 3 for rewards in [0, 1]^d, or ``(0, 1)`` for unbounded rewards.

    Args:
      W: ``(M, d)`` preference matrix.
      bounded: whether rewards lie in ``[0, 1]^d``.

    Returns:
      ``(L, U - L)``, each ``(M,)`` float numpy.
    """
    if not bounded:
        return np.zeros(len(W)), np.ones(len(W))
    low, up = np.minimum(W, 0.0).sum(axis=1), np.maximum(W, 0.0).sum(axis=1)
    return low, up - low


def projected_env(env: Env, M: int) -> Env:
    """``env`` whose ``sample`` (and bulk sampler) return the projections :func:`project` of its rewards.

    Args:
      env: the wrapped :class:`~mobandit_jax.types.Env`.
      M: number of rows of the cone (the projected objectives).

    Returns:
      An :class:`~mobandit_jax.types.Env` of ``M`` objectives whose params are :class:`ConeParams`.
    """
    d = env.dim

    def sample(key, arm, pull_index, t, p: ConeParams):
        reward, cost = env.sample(key, arm, pull_index, t, p.inner)
        return project(reward, p), cost

    def reset(key, p: ConeParams):
        return p._replace(inner=env.reset(key, p.inner))

    def prefix_table(key, p: ConeParams, jmax: int) -> PrefixSums:
        tiles = env.prefix_table(key, p.inner, jmax).levels[0]  # (K, tiles, 16, d + 1): the per-pull values
        values = tiles.reshape(tiles.shape[0], -1, d + 1)
        return prefix_sums(jnp.concatenate([project(values[..., :d], p), values[..., d:]], axis=-1))

    return Env(sample, env.num_arms, M, None if env.reset is None else reset,
               None if env.prefix_table is None else prefix_table)


def apply_cone(inst: EnvInstance, W) -> EnvInstance:
    """The instance ``inst`` under the cone ``W (M, d)``: the projected problem of the module docstring.

    Args:
      inst: the instance.
      W: ``(M, d)`` preference matrix, ``d`` the instance's objectives.

    Returns:
      The projected :class:`~mobandit_jax.types.EnvInstance` (truth, reference point and noise scale
      projected; ``info["cone"]`` records ``W``).

    Raises:
      ValueError: ``W`` is invalid or has a column count other than ``d``.
    """
    W = validate_cone(W)
    d = inst.env.dim
    if W.shape[1] != d:
        raise ValueError(f"preference matrix W has {W.shape[1]} columns but the arms have d = {d} objectives")
    low, span = normalisation(W, inst.bounded)
    means = (np.asarray(inst.means, np.float64) @ W.T - low) / span
    params = ConeParams(inst.params, jnp.asarray(W, float), jnp.asarray(low, float), jnp.asarray(span, float))
    ref = np.zeros(len(W)) if inst.bounded or inst.ref is None else (np.asarray(inst.ref) @ W.T - low) / span
    sigma = None if inst.noise_sigma is None else float(
        inst.noise_sigma * np.max(np.linalg.norm(W, axis=1) / span))
    return inst._replace(env=projected_env(inst.env, len(W)), params=params, means=means, ref=ref,
                         static_key=("cone", len(W)) + tuple(inst.static_key), noise_sigma=sigma,
                         info={**inst.info, "cone": W.tolist()})
