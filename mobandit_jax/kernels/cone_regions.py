"""Closed-form tests between Euclidean balls ordered by a polyhedral cone ``C = {x : W x >= 0}``.

The fixed-confidence PAC family (:mod:`mobandit_jax.policies.pac`) keeps a confidence ball
``B(c, r)`` around each arm's empirical mean and compares balls through the cone. Every test is a
closed form in the rows ``w_n`` of ``W`` (``M`` rows, ``d`` columns); none calls an LP or SOCP solver:

- support of a ball: ``min_{x in B(c, r)} w . x = w . c - r ||w||``, so every point of ``B(c_j, r_j)``
  C-dominates every point of ``B(c_i, r_i)`` iff ``w_n . (c_j - c_i) >= (r_i + r_j) ||w_n||`` for all ``n``
  (:func:`ball_dominated`);
- some point of ``B(c_j, r_j)`` beats some point of ``B(c_i, r_i)`` by the slack ``s`` (``W (y - x) >= s``)
  iff the ball ``B(c_j - c_i, r_i + r_j)`` meets the polyhedron ``Q = {z : W z >= s}``, i.e. iff
  ``dist(c_j - c_i, Q) <= r_i + r_j`` (:func:`ball_reaches`);
- that distance is ``min ||y|| s.t. W y >= h`` with ``h = s - W (c_j - c_i)``: a projection onto a
  polyhedron. Its minimiser ``y*`` is a non-negative combination of the active rows (KKT), hence
  (Caratheodory) of a linearly independent subset ``S`` of them, and then ``y*`` is the minimum-norm
  solution ``W_S^T (W_S W_S^T)^{-1} h_S`` of ``W_S y = h_S``. So ``y*`` is the shortest *feasible*
  point among these candidates, one per independent subset of at most ``min(M, d)`` rows (the empty
  subset gives ``y = 0``). :func:`face_projectors` precomputes the ``(d, M)`` matrix of each subset
  once per cone, and :func:`min_norm_sq` evaluates all candidates at once, batched and branch-free.

The same projection gives the cone constants of Ararat & Tekin / Karagozlu et al. as the VOPy
library computes them: ``alpha_n = max{w_n . z : z in C, ||z|| <= 1} = ||P_C(w_n)||`` (the support of
``C`` intersected with the unit ball, which by Moreau's decomposition is the norm of the projection of
``w_n`` onto ``C``; :func:`cone_alpha`), the ordering complexity ``beta = max_n ||w_n|| / alpha_n``
(:func:`ordering_complexity`; ``1 / sin(theta)`` for a 2-D cone of opening ``theta < 90`` degrees, 1 for
``theta >= 90``), the gaps ``Delta_i = max_j min_n [w_n . (mu_j - mu_i)]^+ / alpha_n`` (:func:`cone_gaps_np`)
and the epsilon-cover distances (:func:`cover_distances_np`).

The numpy functions (suffix ``_np`` and the cone constants) run once per cone on concrete arrays in
float64; :func:`min_norm_sq`, :func:`ball_dominated` and :func:`ball_reaches` are jittable.
"""
from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np
import jax.numpy as jnp

from .dominance import validate_cone

TOL_ULPS = 64  # feasibility slack of a candidate, in machine epsilons of the row scale (see min_norm_sq)


# --------------------------------------------------------------------------------------------
# Candidates of the polyhedral projection (host side, once per cone)
# --------------------------------------------------------------------------------------------

def face_projectors(W) -> tuple:
    """``(proj (n_S, d, M), valid (n_S,))``: the minimum-norm solution map of each row subset ``S``.

    Subsets run over every ``S`` of at most ``min(M, d)`` rows, the empty one first, in a fixed order
    that depends only on ``(M, d)`` (so cones of one shape share compiled code). For a linearly
    independent ``S``, ``proj[s] @ h = W_S^T (W_S W_S^T)^{-1} h_S`` (zero columns outside ``S``);
    a dependent ``S`` has ``valid = False`` and a zero matrix.
    """
    W = validate_cone(W)
    M, d = W.shape
    subsets = [S for k in range(min(M, d) + 1) for S in itertools.combinations(range(M), k)]
    proj = np.zeros((len(subsets), d, M))
    valid = np.zeros(len(subsets), bool)
    for s, S in enumerate(subsets):
        if not S:
            valid[s] = True
            continue
        WS = W[list(S)]
        sv = np.linalg.svd(WS, compute_uv=False)
        if sv[-1] <= 1e-10 * sv[0]:
            continue
        proj[s][:, list(S)] = WS.T @ np.linalg.inv(WS @ WS.T)
        valid[s] = True
    return proj, valid


def _candidates_np(W, h, faces):
    """``(y (..., n_S, d), feasible (..., n_S))`` of the candidates for ``min ||y|| s.t. W y >= h``."""
    proj, valid = faces
    h = np.asarray(h, float)
    y = np.einsum("sdm,...m->...sd", proj, h)
    wy = np.einsum("md,...sd->...sm", W, y)
    ynorm = np.linalg.norm(y, axis=-1, keepdims=True)
    tol = TOL_ULPS * np.finfo(float).eps * (np.linalg.norm(W, axis=1) * ynorm + np.abs(h)[..., None, :])
    feasible = np.all(wy >= h[..., None, :] - tol, axis=-1) & valid
    return y, feasible


def min_norm_point_np(W, h, faces=None) -> tuple:
    """``(y*, ||y*||)`` of ``min ||y|| s.t. W y >= h`` (float64); ``(nan, inf)`` where it is infeasible.

    ``h`` may carry leading axes ``(..., M)``; ``faces`` is :func:`face_projectors` ``(W)`` (computed
    here when omitted).
    """
    W = validate_cone(W)
    faces = face_projectors(W) if faces is None else faces
    y, feasible = _candidates_np(W, h, faces)
    norms = np.where(feasible, np.linalg.norm(y, axis=-1), np.inf)
    best = np.argmin(norms, axis=-1)
    dist = np.take_along_axis(norms, best[..., None], -1)[..., 0]
    point = np.take_along_axis(y, best[..., None, None], -2)[..., 0, :]
    return np.where(np.isfinite(dist)[..., None], point, np.nan), dist


def validate_pac_cone(W) -> np.ndarray:
    """``W`` as a float (M, d) array of a solid cone (some ``z`` has ``W z > 0``); else a one-line ValueError."""
    W = validate_cone(W)
    _, dist = min_norm_point_np(W, np.ones(W.shape[0]))
    if not np.isfinite(dist):
        raise ValueError(f"preference matrix W {W.tolist()} spans a cone with an empty interior (no z has W z > 0); "
                         "PAC Pareto identification needs a solid cone")
    return W


def cone_alpha(W) -> np.ndarray:
    """``(M,)``: ``alpha_n = max{w_n . z : z in C, ||z|| <= 1} = ||P_C(w_n)||`` (float64, positive on a solid cone)."""
    W = validate_pac_cone(W)
    y, _ = min_norm_point_np(W, -(W @ W.T))  # row n: y_n minimises ||y|| s.t. W (w_n + y) >= 0
    return np.linalg.norm(W + y, axis=1)


def ordering_complexity(W) -> float:
    """``beta = max_n ||w_n|| / alpha_n``: VOPy's ``ConeTheta2D.beta`` (``1 / sin theta`` below 90 degrees, else 1)."""
    W = validate_pac_cone(W)
    return float(np.max(np.linalg.norm(W, axis=1) / cone_alpha(W)))


def cone_gaps_np(mu, W, alpha=None) -> np.ndarray:
    """``(K,)``: ``Delta_i = max_j min_n [w_n . (mu_j - mu_i)]^+ / alpha_n`` (0 on the C-optimal arms).

    The least distance arm ``i``'s mean must move along a unit direction of ``C`` to leave every other
    arm's strict dominance region: the gap of the epsilon-F1 score's true positives (``Delta_i <= epsilon``).
    """
    W = validate_pac_cone(W)
    alpha = cone_alpha(W) if alpha is None else np.asarray(alpha, float)
    p = np.asarray(mu, float) @ W.T  # (K, M)
    margins = np.maximum(p[None, :, :] - p[:, None, :], 0.0) / alpha  # [i, j, n] = [w_n . (mu_j - mu_i)]^+ / alpha_n
    return margins.min(axis=-1).max(axis=1)


def cover_distances_np(mu, W) -> np.ndarray:
    """``(K, K)``: ``D[i, j] = min{||z|| : z in C, mu_j + z C-dominates mu_i}``.

    Arm ``j`` epsilon-covers arm ``i`` iff ``D[i, j] <= epsilon``: some ``z`` in ``C`` of length at most
    epsilon lifts ``mu_j`` above ``mu_i`` (``W z >= 0`` and ``W (mu_j + z - mu_i) >= 0``), the covering
    test of VOPy's ``is_covered``. Computed as ``min ||z|| s.t. W z >= max(0, W (mu_i - mu_j))``.
    """
    W = validate_pac_cone(W)
    p = np.asarray(mu, float) @ W.T
    _, dist = min_norm_point_np(W, np.maximum(p[:, None, :] - p[None, :, :], 0.0))
    return dist


# --------------------------------------------------------------------------------------------
# Jittable tests
# --------------------------------------------------------------------------------------------

class ConeGeometry(NamedTuple):
    """A cone's arrays for the jittable tests: ``W (M, d)``, row norms ``(M,)``, ``alpha (M,)`` and the
    projection candidates ``proj (n_S, d, M)`` / ``valid (n_S,)`` of :func:`face_projectors`."""

    W: jnp.ndarray
    wnorm: jnp.ndarray
    alpha: jnp.ndarray
    proj: jnp.ndarray
    valid: jnp.ndarray


def cone_geometry(W, dtype=float) -> ConeGeometry:
    """The :class:`ConeGeometry` of a concrete solid cone ``W`` (float arrays in ``dtype``; the default
    float dtype unless given)."""
    W = validate_pac_cone(W)
    proj, valid = face_projectors(W)
    return ConeGeometry(jnp.asarray(W, dtype), jnp.asarray(np.linalg.norm(W, axis=1), dtype),
                        jnp.asarray(cone_alpha(W), dtype), jnp.asarray(proj, dtype), jnp.asarray(valid))


def min_norm_sq(h, geo: ConeGeometry):
    """``min ||y||^2 s.t. W y >= h`` for ``h (..., M)``, ``inf`` where no candidate is feasible.

    Every candidate of :func:`face_projectors` is formed and checked at once; a candidate counts as
    feasible when each row holds up to ``TOL_ULPS`` machine epsilons of ``||w_n|| ||y|| + |h_n|`` (the
    rounding of the active rows' equalities).
    """
    h = jnp.asarray(h)
    y = jnp.einsum("sdm,...m->...sd", geo.proj.astype(h.dtype), h)
    wy = jnp.einsum("md,...sd->...sm", geo.W.astype(h.dtype), y)
    sq = jnp.sum(y * y, axis=-1)
    eps = jnp.finfo(h.dtype).eps
    tol = TOL_ULPS * eps * (geo.wnorm.astype(h.dtype) * jnp.sqrt(sq)[..., None] + jnp.abs(h)[..., None, :])
    feasible = jnp.all(wy >= h[..., None, :] - tol, axis=-1) & geo.valid
    return jnp.min(jnp.where(feasible, sq, jnp.inf), axis=-1)


def ball_dominated(mu, r, geo: ConeGeometry):
    """``(K, d), (K,) -> (K, K)`` bool: ``[j, i]`` iff every point of ``B(mu_j, r_j)`` C-dominates every point
    of ``B(mu_i, r_i)``, i.e. ``w_n . (mu_j - mu_i) >= (r_i + r_j) ||w_n||`` for every row (``j != i``)."""
    p = mu @ geo.W.T.astype(mu.dtype)  # (K, M)
    need = (r[:, None] + r[None, :])[..., None] * geo.wnorm.astype(mu.dtype)  # symmetric in (j, i)
    out = jnp.all(p[:, None, :] - p[None, :, :] >= need, axis=-1)
    return out & ~jnp.eye(mu.shape[0], dtype=bool)


def ball_reaches(mu, r, slack, geo: ConeGeometry):
    """``(K, d), (K,), (M,) -> (K, K)`` bool: ``[j, i]`` iff some ``y`` in ``B(mu_j, r_j)`` and ``x`` in
    ``B(mu_i, r_i)`` have ``W (y - x) >= slack`` (``j != i``): ``dist(mu_j - mu_i, {W z >= slack}) <= r_i + r_j``."""
    p = mu @ geo.W.T.astype(mu.dtype)
    h = slack[None, None, :] - (p[:, None, :] - p[None, :, :])  # [j, i] = slack - W (mu_j - mu_i)
    reach = r[:, None] + r[None, :]
    return (min_norm_sq(h, geo) <= reach * reach) & ~jnp.eye(mu.shape[0], dtype=bool)
