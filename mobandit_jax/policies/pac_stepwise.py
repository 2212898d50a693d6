"""Step-wise fixed-confidence Pareto set identification methods, and their run as one batched identifier.

Auer et al., APE and Track-and-Stop (:mod:`.pac_auer`, :mod:`.pac_ape`, :mod:`.pac_track_and_stop`) are
written as a :class:`StepwiseMethod`: pure ``init`` / ``select`` / ``update`` plus ``recommend`` and
``stopped``, so a caller that owns the pulls (an ask/tell study) can drive one directly. A round's
``select`` returns the ``(K,)`` mask of the arms to pull once each (Auer: every active arm; APE: ``b_t``
and ``c_t``, or the less pulled one; Track-and-Stop: one arm), and ``update`` takes their rewards.

:func:`stepwise_identifier` runs a method as an :class:`~mobandit_jax.types.Identifier` of the pac
family, in one ``lax.while_loop`` capped at ``horizon`` rounds (under ``vmap`` a lane whose rule fired
is frozen while the others go on; ``stopped`` is False for a lane that reached the cap or the budget):

- the cone: every reward ``y`` is seen as ``W y``, so the method identifies the componentwise Pareto
  set of the projected means ``W mu``, which is the cone-optimal set (``W (mu_j - mu_i) >= 0`` is
  componentwise dominance of the projections); the noise scale of projected objective ``n`` is
  ``sigma ||w_n||`` and the methods use the largest, :func:`projected_sigma`;
- costs: the round's pulls are charged their costs (``spent``); a round whose pulls would exceed the
  budget is not played and the run ends with ``stopped = False``.

The confidence radius of Auer et al. and APE is the authors' (``cyrille-kone/linear_psi``,
``utils.hpp``): ``beta_ij = sigma sqrt(2 (2 C^g(delta) + log(1 + log T_i) + log(1 + log T_j)) (1/T_i + 1/T_j))``
with ``C^g(delta) = log(1/delta)/2 + max(log(log(1/delta)/2), 0)`` (:func:`pair_radius`, ``radius =
"authors"``). It takes no union over the pairs and objectives; ``radius = "union"`` puts
``delta / (K (K - 1) M)`` in ``C^g``, the union bound that the correctness proofs spend.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..kernels.lanes import packed_indices
from ..types import Identifier
from .pac import PacResult, _common, _draw, _pulls, _sigma

RADII = ("authors", "union")


class StepwiseMethod(NamedTuple):
    """A fixed-confidence method as pure steps (module docstring); ``params`` is its params pytree.

    ``init(params) -> state``; ``select(key, state, params) -> (K,) bool`` arms to pull this round;
    ``update(state, pulled (K,) bool, rewards (K, M), params) -> state`` (rows of unpulled arms are
    ignored); ``recommend(state, params) -> (K,) bool``; ``stopped(state, params) -> () bool``."""

    init: Callable
    select: Callable
    update: Callable
    recommend: Callable
    stopped: Callable


class StepwiseParams(NamedTuple):
    """What the identifier adds to a method's params: the cone ``W (M, d)``, the round cap, the budget and the
    ``epsilon`` and ``delta`` the result is scored at."""

    method: Any
    W: jnp.ndarray
    cap: jnp.ndarray
    budget: jnp.ndarray
    epsilon: jnp.ndarray
    delta: jnp.ndarray


class Counts(NamedTuple):
    """Pull counts ``(K,)`` int32 and reward sums ``(K, M)``: the statistics every method here keeps."""

    n: jnp.ndarray
    sums: jnp.ndarray

    @classmethod
    def zeros(cls, K: int, M: int, dtype):
        return cls(jnp.zeros(K, jnp.int32), jnp.zeros((K, M), dtype))

    def add(self, pulled, rewards):
        """The counts after one pull of each arm of ``pulled`` with these rewards."""
        return Counts(self.n + pulled.astype(jnp.int32),
                      self.sums + jnp.where(pulled[:, None], rewards.astype(self.sums.dtype), 0.0))

    @property
    def means(self):
        return self.sums / jnp.maximum(self.n, 1)[:, None].astype(self.sums.dtype)


def cg(delta):
    """``C^g(delta) = log(1/delta)/2 + max(log(log(1/delta)/2), 0)`` (linear_psi's ``Cg``)."""
    half = jnp.log(1.0 / delta) / 2
    return half + jnp.maximum(jnp.log(half), 0.0)


def pair_radius(n, c, sigma):
    """``(K, K)`` ``beta_ij`` of the module docstring for pull counts ``n (K,)`` (>= 1) and ``c = C^g``."""
    n = jnp.maximum(n, 1).astype(sigma.dtype)
    ll = jnp.log1p(jnp.log(n))
    return sigma * jnp.sqrt(2 * (2 * c + ll[:, None] + ll[None, :]) * (1 / n[:, None] + 1 / n[None, :]))


def radius_delta(radius: str, delta: float, K: int, M: int) -> float:
    """The ``delta`` inside ``C^g``: ``delta`` (``"authors"``) or ``delta / (K (K - 1) M)`` (``"union"``)."""
    return delta if radius == "authors" else delta / (K * (K - 1) * M)


def margins(mu):
    """``(M_ij, m_ij)``: ``M(i, j) = max_n (mu_in - mu_jn)``, ``m(i, j) = min_n (mu_jn - mu_in)``, each ``(K, K)``."""
    diff = mu[:, None, :] - mu[None, :, :]
    return jnp.max(diff, -1), jnp.min(-diff, -1)


def empirical_pareto(mu):
    """``(K,)`` bool: arms no other arm Pareto-dominates (``>=`` everywhere, ``>`` somewhere; linear_psi's)."""
    diff = mu[None, :, :] - mu[:, None, :]  # [i, j] = mu_j - mu_i
    dom = jnp.all(diff >= 0, -1) & jnp.any(diff > 0, -1)
    return ~jnp.any(dom, axis=1)


def projected_sigma(sigma: float, W) -> float:
    """The noise scale of the projected objectives ``W y``: ``sigma max_n ||w_n||``."""
    return float(sigma * np.max(np.linalg.norm(np.asarray(W, float), axis=1)))


def _draw_at_most(sample, key_env, env_params, counts, t, pull, width: int):
    """Every arm's next pull where ``pull`` (``(K,)`` bool, at most ``width`` True) says, zeros elsewhere: the first
    ``width`` arms of ``pull`` are drawn (:func:`~.pac._draw` draws every arm when ``width`` is ``K``)."""
    K = counts.shape[0]
    if width >= K:
        y, c = _draw(sample, key_env, env_params, counts, t)
        return jnp.where(pull[:, None], y, 0), jnp.where(pull, c, 0)
    arms = packed_indices(pull, width)[:width]
    at = jnp.minimum(arms, K - 1)
    y, c = _pulls(sample, key_env, env_params, at, counts[at], t)
    return (jnp.zeros((K,) + y.shape[1:], y.dtype).at[arms].set(y, mode="drop"),
            jnp.zeros((K,) + c.shape[1:], c.dtype).at[arms].set(c, mode="drop"))


def stepwise_identifier(method: StepwiseMethod, num_arms: int, dim: int, sample, width: int) -> Identifier:
    """Run ``method`` as an Identifier (module docstring): one pull of every arm, then rounds of at most ``width``
    pulls (the methods here pull every arm first; APE two arms a round after it, Track-and-Stop one)."""
    K = num_arms

    def identify(key_env, key_pol, env_params, p: StepwiseParams) -> PacResult:
        dtype = p.W.dtype

        def play(t, counts, state, spent, pull, draw):
            y, c = draw(sample, key_env, env_params, counts, t, pull)
            cost = jnp.sum(jnp.where(pull, c.astype(dtype), 0.0))
            ok = spent + cost <= p.budget
            new = (t + 1, counts + pull.astype(jnp.int32),
                   method.update(state, pull, y.astype(dtype) @ p.W.T, p.method), spent + cost, ~ok)
            return jax.tree_util.tree_map(lambda a, b: jnp.where(ok, a, b), new, (t, counts, state, spent, ~ok))

        every = lambda sample, key_env, env_params, counts, t, pull: _draw(sample, key_env, env_params, counts, t)
        first = play(jnp.zeros((), jnp.int32), jnp.zeros(K, jnp.int32), method.init(p.method), jnp.zeros((), dtype),
                     jnp.ones(K, bool), every)
        few = lambda *a: _draw_at_most(*a, width)

        def cond(s):
            t, _, state, _, halted = s
            return ~method.stopped(state, p.method) & (t < p.cap) & ~halted

        def body(s):
            t, counts, state, spent, _ = s
            return play(t, counts, state, spent, method.select(jax.random.fold_in(key_pol, t), state, p.method), few)

        _, counts, state, spent, _ = jax.lax.while_loop(cond, body, first)
        return PacResult(method.recommend(state, p.method), spent, counts, method.stopped(state, p.method),
                         p.epsilon, p.delta)

    return Identifier(identify)


def configure_stepwise(ctx, policy: str, epsilon, delta, radius=None):
    """``(W, sigma of the projections, epsilon, delta, cap, budget)`` of a step-wise method; one-line errors."""
    W, eps, dlt, cap, budget = _common(ctx, policy, epsilon, delta, need_epsilon=False)
    if radius is not None and radius not in RADII:
        raise ValueError(f"policy {policy!r}: radius = {radius!r} must be 'authors' (linear_psi's beta_ij) or "
                         "'union' (delta / (K (K - 1) M) inside C^g)")
    return W, projected_sigma(_sigma(ctx, policy), W), eps, dlt, cap, budget


def wrap(ctx, W, eps, dlt, cap, budget, method_params):
    """The :class:`StepwiseParams` of a configured method."""
    return StepwiseParams(method_params, jnp.asarray(W, float), cap, budget, jnp.asarray(eps, float),
                          jnp.asarray(dlt, float))
