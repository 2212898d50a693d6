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

PaVeBa's Pareto and useful steps (:mod:`mobandit_jax.policies.pac`, steps 3 and 4) read the reach
relation only through ``any`` over one axis of a block of pairs: :func:`ball_reaches_any` gives those
reductions with the booleans of :func:`ball_reaches` and far fewer candidates. Two exact shortcuts
settle most pairs (:func:`reach_shortcuts`): ``h <= 0`` (the empty subset, ``y = 0``, is feasible: the
balls reach), and the lower bound ``||y|| >= max_n h_n / ||w_n||`` of any point with ``W y >= h``
(Cauchy-Schwarz on one row) above ``r_i + r_j`` by more than the rounding of :func:`min_norm_sq` (they
do not). The open pairs go through :func:`min_norm_sq` itself, a few at a time and only while their arm
has no hit yet, so every answer that is computed is the same float arithmetic as in :func:`ball_reaches`.

The numpy functions (suffix ``_np`` and the cone constants) run once per cone on concrete arrays in
float64; :func:`min_norm_sq`, :func:`ball_dominated`, :func:`ball_reaches` and :func:`ball_reaches_any`
are jittable.

References:
  - Ararat & Tekin, "Vector Optimization with Stochastic Bandit Feedback", AISTATS 2023 (PMLR 206).
  - Karagozlu, Yildirim, Ararat & Tekin, "Learning the Pareto Set Under Incomplete Preferences: Pure
    Exploration in Vector Bandits", AISTATS 2024, https://proceedings.mlr.press/v238/karagozlu24a.html
    (arXiv 2402.07696).
"""
from __future__ import annotations

import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .dominance import validate_cone
from .lanes import packed_indices

TOL_ULPS = 64  # feasibility slack of a candidate, in machine epsilons of the row scale (see min_norm_sq)
BOUND_ULPS = 16 * TOL_ULPS  # margin of the distance lower bound over min_norm_sq's rounding (see reach_shortcuts)
REACH_CHUNK = 64  # pairs per pass of ball_reaches_any's shortcuts
REACH_BLOCK = 4  # pairs per step of ball_reaches_any's candidate loop


# --------------------------------------------------------------------------------------------
# Candidates of the polyhedral projection (host side, once per cone)
# --------------------------------------------------------------------------------------------

def face_projectors(W) -> tuple:
    """``(proj (n_S, d, M), valid (n_S,))``: the minimum-norm solution map of each row subset ``S``.

    Subsets run over every ``S`` of at most ``min(M, d)`` rows, the empty one first, in a fixed order
    that depends only on ``(M, d)`` (so cones of one shape share compiled code). For a linearly
    independent ``S``, ``proj[s] @ h = W_S^T (W_S W_S^T)^{-1} h_S`` (zero columns outside ``S``);
    a dependent ``S`` has ``valid = False`` and a zero matrix.

    Args:
      W: ``(M, d)`` preference matrix (checked by :func:`~mobandit_jax.kernels.dominance.validate_cone`).

    Returns:
      ``(proj, valid)``: ``(n_S, d, M)`` float64 and ``(n_S,)`` bool numpy arrays.
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

    Args:
      W: ``(M, d)`` preference matrix.
      h: ``(..., M)`` right-hand sides.
      faces: optional :func:`face_projectors` of ``W``.

    Returns:
      ``(y*, dist)``: ``(..., d)`` minimisers and ``(...)`` their norms (numpy float64).
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
    """``W`` as a float (M, d) array of a solid cone (some ``z`` has ``W z > 0``); else a one-line ValueError.

    Args:
      W: ``(M, d)`` preference matrix, or one row ``(d,)`` (array-like).

    Returns:
      ``(M, d)`` float64 numpy array.

    Raises:
      ValueError: ``W`` fails :func:`~mobandit_jax.kernels.dominance.validate_cone` or its cone has an
        empty interior.
    """
    W = validate_cone(W)
    _, dist = min_norm_point_np(W, np.ones(W.shape[0]))
    if not np.isfinite(dist):
        raise ValueError(f"preference matrix W {W.tolist()} spans a cone with an empty interior (no z has W z > 0); "
                         "PAC Pareto identification needs a solid cone")
    return W


def cone_alpha(W) -> np.ndarray:
    """``(M,)``: ``alpha_n = max{w_n . z : z in C, ||z|| <= 1} = ||P_C(w_n)||`` (float64, positive on a solid cone).

    Args:
      W: ``(M, d)`` preference matrix of a solid cone.

    Returns:
      ``(M,)`` float64 numpy ``alpha_n``.
    """
    W = validate_pac_cone(W)
    y, _ = min_norm_point_np(W, -(W @ W.T))  # row n: y_n minimises ||y|| s.t. W (w_n + y) >= 0
    return np.linalg.norm(W + y, axis=1)


def ordering_complexity(W) -> float:
    """``beta = max_n ||w_n|| / alpha_n``: VOPy's ``ConeTheta2D.beta`` (``1 / sin theta`` below 90 degrees, else 1).

    Args:
      W: ``(M, d)`` preference matrix of a solid cone.

    Returns:
      ``beta >= 1``.
    """
    W = validate_pac_cone(W)
    return float(np.max(np.linalg.norm(W, axis=1) / cone_alpha(W)))


def cone_gaps_np(mu, W, alpha=None) -> np.ndarray:
    """``(K,)``: ``Delta_i = max_j min_n [w_n . (mu_j - mu_i)]^+ / alpha_n`` (0 on the C-optimal arms).

    The least distance arm ``i``'s mean must move along a unit direction of ``C`` to leave every other
    arm's strict dominance region: the gap of the epsilon-F1 score's true positives (``Delta_i <= epsilon``).

    Args:
      mu: ``(K, d)`` true means.
      W: ``(M, d)`` preference matrix of a solid cone.
      alpha: optional ``(M,)`` :func:`cone_alpha` of ``W``.

    Returns:
      ``(K,)`` float64 numpy gaps.
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

    Args:
      mu: ``(K, d)`` means.
      W: ``(M, d)`` preference matrix of a solid cone.

    Returns:
      ``(K, K)`` float64 numpy distances (0 on the diagonal).
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
    float dtype unless given).

    Args:
      W: ``(M, d)`` preference matrix of a solid cone (concrete).
      dtype: float dtype of the arrays.

    Returns:
      The :class:`ConeGeometry`.
    """
    W = validate_pac_cone(W)
    proj, valid = face_projectors(W)
    return ConeGeometry(jnp.asarray(W, dtype), jnp.asarray(np.linalg.norm(W, axis=1), dtype),
                        jnp.asarray(cone_alpha(W), dtype), jnp.asarray(proj, dtype), jnp.asarray(valid))


def min_norm_sq(h, geo: ConeGeometry):
    """``min ||y||^2 s.t. W y >= h`` for ``h (..., M)``, ``inf`` where no candidate is feasible.

    Every candidate of :func:`face_projectors` is formed and checked at once; a candidate counts as
    feasible when each row holds up to ``TOL_ULPS`` machine epsilons of ``||w_n|| ||y|| + |h_n|`` (the
    rounding of the active rows' equalities).

    Args:
      h: ``(..., M)`` right-hand sides.
      geo: the cone's :class:`ConeGeometry`.

    Returns:
      ``(...)`` squared distances, in ``h``'s dtype.
    """
    h = jnp.asarray(h)
    y = jnp.einsum("sdm,...m->...sd", geo.proj.astype(h.dtype), h, precision="highest")
    wy = jnp.einsum("md,...sd->...sm", geo.W.astype(h.dtype), y, precision="highest")
    sq = jnp.sum(y * y, axis=-1)
    eps = jnp.finfo(h.dtype).eps
    tol = TOL_ULPS * eps * (geo.wnorm.astype(h.dtype) * jnp.sqrt(sq)[..., None] + jnp.abs(h)[..., None, :])
    feasible = jnp.all(wy >= h[..., None, :] - tol, axis=-1) & geo.valid
    return jnp.min(jnp.where(feasible, sq, jnp.inf), axis=-1)


def min_norm_sq_bounds(h, geo: ConeGeometry):
    """``(lo, hi)`` ``(...)`` for ``h (..., M)``: ``lo <= min_norm_sq(h) <= hi`` however the sums inside
    :func:`min_norm_sq` are ordered or fused (XLA's kernels for its products differ with the batch shape).

    One evaluation of the candidates, with the gap between two evaluations bounded (a sum of ``k`` rounded
    terms is within ``k eps / 2`` of its exact value, relative to the sum of their magnitudes). For a candidate
    of ``k`` rows with largest ``|h_n|`` ``H``, ``a[d] = sum_m |P[d, m]|`` and ``b_n = sum_d |W[n, d]| a[d]``:

    - ``y = P h`` moves by at most ``dy = (k + 1) eps H ||a||``;
    - ``||y||^2`` by ``dsq = (d + 1) eps ny^2 + 2 dy ny``, with ``ny`` a bound on ``||y||``;
    - the margin ``w_n . y - (h_n - tol_n)`` of the check by ``(k + 1) eps H b_n + ||w_n|| ((d + 4) eps ny +
      TOL_ULPS eps sqrt(dsq)) + 7 eps |h_n|``: the moves of ``w_n . y`` and of ``tol_n``, and the rounding of
      the threshold and of this comparison.

    A candidate surely passes the check in any evaluation when every row's margin exceeds its move, and may
    pass when it exceeds minus it: ``hi`` is the least ``sq + dsq`` of the sure ones, ``lo`` the least
    ``sq - dsq`` of the possible ones (``inf`` where there are none).

    Args:
      h: ``(..., M)`` right-hand sides.
      geo: the cone's :class:`ConeGeometry`.

    Returns:
      ``(lo, hi)``, each ``(...)`` in ``h``'s dtype.
    """
    h = jnp.asarray(h)
    dtype = h.dtype
    proj, W, wnorm = geo.proj.astype(dtype), geo.W.astype(dtype), geo.wnorm.astype(dtype)
    d = W.shape[1]
    eps = jnp.finfo(dtype).eps
    y = jnp.einsum("sdm,...m->...sd", proj, h, precision="highest")
    wy = jnp.einsum("md,...sd->...sm", W, y, precision="highest")
    sq = jnp.sum(y * y, axis=-1)
    ry = jnp.sqrt(sq)
    margin = wy - (h[..., None, :] - TOL_ULPS * eps * (wnorm * ry[..., None] + jnp.abs(h)[..., None, :]))

    rows = jnp.any(proj != 0, axis=-2)  # (n_S, M): each candidate's rows
    a = jnp.sum(jnp.abs(proj), axis=-1)  # (n_S, d)
    b = jnp.matmul(a, jnp.abs(W).T, precision="highest")  # (n_S, M)
    big = (jnp.sum(rows, axis=-1) + 1) * eps * jnp.max(jnp.where(rows, jnp.abs(h)[..., None, :], 0), axis=-1)
    dy = big * jnp.sqrt(jnp.sum(a * a, axis=-1))
    ny = ry * (1 + (d + 1) * eps) + dy
    dsq = (d + 1) * eps * ny * ny + 2 * dy * ny
    per_norm = (d + 4) * eps * ny + TOL_ULPS * eps * jnp.sqrt(dsq)
    move = big[..., None] * b + wnorm * per_norm[..., None] + (7 * eps * jnp.abs(h))[..., None, :]
    sure = jnp.all(margin >= move, axis=-1) & geo.valid
    maybe = jnp.all(margin >= -move, axis=-1) & geo.valid
    return (jnp.min(jnp.where(maybe, sq - dsq, jnp.inf), axis=-1),
            jnp.min(jnp.where(sure, sq + dsq, jnp.inf), axis=-1))


def ball_dominated(mu, r, geo: ConeGeometry):
    """``(K, d), (K,) -> (K, K)`` bool: ``[j, i]`` iff every point of ``B(mu_j, r_j)`` C-dominates every point
    of ``B(mu_i, r_i)``, i.e. ``w_n . (mu_j - mu_i) >= (r_i + r_j) ||w_n||`` for every row (``j != i``).

    Args:
      mu: ``(K, d)`` ball centres (empirical means).
      r: ``(K,)`` radii.
      geo: the cone's :class:`ConeGeometry`.

    Returns:
      ``(K, K)`` bool.
    """
    p = jnp.matmul(mu, geo.W.T.astype(mu.dtype), precision="highest")  # (K, M)
    need = (r[:, None] + r[None, :])[..., None] * geo.wnorm.astype(mu.dtype)  # symmetric in (j, i)
    out = jnp.all(p[:, None, :] - p[None, :, :] >= need, axis=-1)
    return out & ~jnp.eye(mu.shape[0], dtype=bool)


def _reach_problems(p_j, r_j, p_i, r_i, slack):
    """``(h (..., M), bound (...))`` of the reach test of pairs ``(j, i)`` (row projections ``p = mu W^T`` and radii,
    broadcast against each other): the pair reaches iff ``min ||y||^2 s.t. W y >= h <= bound``, with
    ``h = slack - W (mu_j - mu_i)`` and ``bound = (r_j + r_i)^2``."""
    h = slack - (p_j - p_i)
    reach = r_j + r_i
    return h, reach * reach


def ball_reaches(mu, r, slack, geo: ConeGeometry):
    """``(K, d), (K,), (M,) -> (K, K)`` bool: ``[j, i]`` iff some ``y`` in ``B(mu_j, r_j)`` and ``x`` in
    ``B(mu_i, r_i)`` have ``W (y - x) >= slack`` (``j != i``): ``dist(mu_j - mu_i, {W z >= slack}) <= r_i + r_j``.

    Every pair, every candidate: the reference of :func:`ball_reaches_any`.

    Args:
      mu: ``(K, d)`` ball centres.
      r: ``(K,)`` radii.
      slack: ``(M,)`` per-row slack ``s``.
      geo: the cone's :class:`ConeGeometry`.

    Returns:
      ``(K, K)`` bool.
    """
    p = jnp.matmul(mu, geo.W.T.astype(mu.dtype), precision="highest")
    h, bound = _reach_problems(p[:, None, :], r[:, None], p[None, :, :], r[None, :], slack)
    return (min_norm_sq(h, geo) <= bound) & ~jnp.eye(mu.shape[0], dtype=bool)


def reach_shortcuts(h, bound, geo: ConeGeometry):
    """``(yes, no)`` bool ``(...)``: the pairs whose test ``min_norm_sq(h) <= bound`` is settled without candidates.

    ``yes``: every ``h_n <= 0``, so the empty subset (``y = 0``, squared norm 0) passes the feasibility check
    and the minimum is 0. ``no``: any ``y`` with ``W y >= h`` has ``||y|| >= L = max_n h_n / ||w_n||``
    (Cauchy-Schwarz on one row). A candidate passes :func:`min_norm_sq`'s check when each row holds up to
    ``TOL_ULPS eps (||w_n|| ||y|| + |h_n|)``, and ``W y`` and its squared norm are rounded, so an accepted
    candidate's squared norm is at least ``L^2 (1 - c eps)`` with ``c`` a few times ``TOL_ULPS``: when
    ``L^2 > bound (1 + BOUND_ULPS eps)`` (the bound floored at a normal number, clear of flushed
    subnormals), every accepted candidate exceeds ``bound``. NaN falls in neither.

    Args:
      h: ``(..., M)`` right-hand sides of the pairs.
      bound: ``(...)`` their squared radius sums ``(r_i + r_j)^2``.
      geo: the cone's :class:`ConeGeometry`.

    Returns:
      ``(yes, no)``, each ``(...)`` bool (never both true).
    """
    finfo = jnp.finfo(h.dtype)
    yes = jnp.all(h <= 0, axis=-1)
    low = jnp.max(h / geo.wnorm.astype(h.dtype), axis=-1)
    floor = jnp.maximum(bound, finfo.tiny / finfo.eps)
    no = (low > 0) & (low * low > floor * (1 + BOUND_ULPS * finfo.eps))
    return yes, no


def _ball_reaches_once(needed, mu, r, slack, geo: ConeGeometry):
    """:func:`ball_reaches` where ``needed`` (a scalar bool) is True, zeros elsewhere; under ``vmap`` it is
    computed, for every lane, only when some lane needs it (a ``lax.while_loop`` of at most one step; the
    step reads ``mu`` through the loop's flag, so that the compiler does not hoist it out of the loop)."""
    K = mu.shape[0]

    def step(state):
        flag, _ = state
        return False, ball_reaches(jnp.where(flag, mu, 0), r, slack, geo)

    return jax.lax.while_loop(lambda state: state[0], step, (needed, jnp.zeros((K, K), bool)))[1]


def _test_until_settled(h, bound, open_, target, settled, doubt, geo: ConeGeometry, block: int):
    """``(settled, doubt)`` ``(T,)`` bool: ``settled`` or-ed with ``min_norm_sq(h) <= bound`` over the ``open_``
    entries of each target where :func:`min_norm_sq_bounds` decides it, ``doubt`` or-ed with its undecided
    entries (the answer lies between the bounds).

    ``h (n, M)``, ``bound``, ``open_`` and ``target`` (ints in ``[0, T)``) are ``(n,)``. The open entries whose
    target is not settled yet are packed to the front and the first ``block`` are tested; repeated until none is
    left, so a target stops being tested at its first hit. Listing the entries of different targets in turn
    (as the callers do) spreads a block over many targets."""
    n = h.shape[0]

    def todo(state):
        left, settled, _ = state
        return left & ~settled[target]

    def step(state):
        left, settled, doubt = state
        idx = packed_indices(todo(state), block)[:block]  # n (out of range) past the last one
        at = jnp.minimum(idx, n - 1)
        lo, hi = min_norm_sq_bounds(h[at], geo)
        hit, miss = hi <= bound[at], lo > bound[at]
        tested = idx < n
        return (left.at[idx].set(False, mode="drop"), settled.at[target[at]].max(hit & tested),
                doubt.at[target[at]].max(~hit & ~miss & tested))

    return jax.lax.while_loop(lambda state: jnp.any(todo(state)), step, (open_, settled, doubt))[1:]


def ball_reaches_any(mu, r, slack, geo: ConeGeometry, rows, cols, axis: int, chunk: int = REACH_CHUNK,
                     block: int = REACH_BLOCK):
    """``(K,)`` bool: :func:`ball_reaches` ``[j, i]`` over the pairs with ``rows[j]`` and ``cols[i]`` (``(K,)``
    bool), reduced by ``any`` over ``axis``: ``axis = 0`` tells for each ``i`` of ``cols`` whether some ``j`` of
    ``rows`` reaches it, ``axis = 1`` for each ``j`` of ``rows`` whether it reaches some ``i`` of ``cols``.

    The same booleans, on fewer pairs. The pairs ``rows x cols`` are listed with the target (the arm of the
    result: ``i`` for ``axis = 0``, ``j`` for ``axis = 1``) varying fastest and taken ``chunk`` at a time;
    :func:`reach_shortcuts` settles what it can, and the open pairs whose target has no hit yet are tested
    by :func:`min_norm_sq_bounds` (:func:`_test_until_settled`). The pass stops once every pair is listed or
    every target has a hit. A target left without a hit but with a pair the bounds could not decide takes
    its answer from :func:`ball_reaches` itself, computed then (:func:`_ball_reaches_once`).

    Args:
      mu: ``(K, d)`` ball centres.
      r: ``(K,)`` radii.
      slack: ``(M,)`` per-row slack ``s``.
      geo: the cone's :class:`ConeGeometry`.
      rows: ``(K,)`` bool, the arms ``j``.
      cols: ``(K,)`` bool, the arms ``i``.
      axis: 0 or 1, the axis reduced by ``any``.
      chunk: pairs listed per pass (static).
      block: pairs tested per step of the candidate loop (static).

    Returns:
      ``(K,)`` bool, ``False`` outside ``cols`` (``axis = 0``) or ``rows`` (``axis = 1``).
    """
    K = mu.shape[0]
    p = jnp.matmul(mu, geo.W.T.astype(mu.dtype), precision="highest")
    row_arms, col_arms = packed_indices(rows, 0), packed_indices(cols, 0)  # K past the last one
    targets, partners = (col_arms, row_arms) if axis == 0 else (row_arms, col_arms)
    n_targets = jnp.sum(cols if axis == 0 else rows)
    n_pairs = jnp.sum(rows) * jnp.sum(cols)

    def step(state):
        start, settled, doubt = state  # over target slots (indices into targets): a hit, an undecided pair
        k = start + jnp.arange(chunk)  # pair k: target k % n_targets against partner k // n_targets
        t = k % jnp.maximum(n_targets, 1)
        o = jnp.minimum(k // jnp.maximum(n_targets, 1), K - 1)
        j, i = (partners[o], targets[t]) if axis == 0 else (targets[t], partners[o])
        needed = (k < n_pairs) & (j != i)
        j, i = jnp.minimum(j, K - 1), jnp.minimum(i, K - 1)  # any arm where not needed
        h, bound = _reach_problems(p[j], r[j], p[i], r[i], slack)
        yes, no = reach_shortcuts(h, bound, geo)
        return (start + chunk,) + _test_until_settled(h, bound, needed & ~yes & ~no, t,
                                                      settled.at[t].max(needed & yes), doubt, geo, block)

    def more(state):
        start, settled, _ = state
        return (start < n_pairs) & ~jnp.all(settled | (jnp.arange(K) >= n_targets))

    none = jnp.zeros(K, bool)
    _, settled, doubt = jax.lax.while_loop(more, step, (jnp.zeros((), jnp.int32), none, none))
    found, doubt = (none.at[targets].set(x, mode="drop") for x in (settled, doubt))
    doubt = doubt & ~found
    full = _ball_reaches_once(jnp.any(doubt), mu, r, slack, geo) & rows[:, None] & cols[None, :]
    return found | (doubt & jnp.any(full, axis=axis))
