"""The reduced reach test of the PAC family (``ball_reaches_any`` and its shortcuts) against the plain one
(``ball_reaches``: every pair, every candidate) on random cones, random masks and pairs whose distance lies
within a few ulps of ``r_i + r_j``, in float32 and float64.

Two compilations of ``min_norm_sq`` may round a pair on the boundary differently (XLA orders and fuses the
sums by shape), so the plain test is itself exact only up to :func:`cr.min_norm_sq_bounds`: a pair is
surely reached when the upper bound is within ``(r_i + r_j)^2``, surely not when the lower bound exceeds it.
The reduced test must give the plain answer wherever that answer is sure, and lie between the sure and the
possible answers elsewhere; the plain answer itself must lie between them (the bounds hold)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mobandit_jax.kernels import cone_regions as cr

SHAPES = [(1, 2), (2, 7), (3, 3), (5, 4), (7, 7)]  # (M rows, d objectives)
K = 12


def random_cone(rng, M: int, d: int) -> np.ndarray:
    """A random solid cone: rows with a positive inner product with a random interior direction."""
    while True:
        u = rng.normal(size=d)
        u /= np.linalg.norm(u)
        W = rng.normal(size=(M, d)) + (0.3 + np.abs(rng.normal(size=(M, 1)))) * u
        if np.all(W @ u > 0.05):
            return W


@jax.jit
def plain_sq(mu, slack, geo):
    """``(K, K)``: ``min_norm_sq`` of every pair ``[j, i]``, as :func:`cr.ball_reaches` forms it."""
    p = mu @ geo.W.T
    return cr.min_norm_sq(slack - (p[:, None, :] - p[None, :, :]), geo)


plain_reach = jax.jit(cr.ball_reaches)


@jax.jit
def sure_and_possible(mu, r, slack, geo):
    """``(K, K)`` twice: the pairs surely reached and those possibly reached, whatever the rounding."""
    p = mu @ geo.W.T
    h, bound = cr._reach_problems(p[:, None, :], r[:, None], p[None, :, :], r[None, :], slack)
    lo, hi = cr.min_norm_sq_bounds(h, geo)
    off = ~jnp.eye(mu.shape[0], dtype=bool)
    return (hi <= bound) & off, (lo <= bound) & off
fast_any = jax.jit(jax.vmap(cr.ball_reaches_any, in_axes=(None, None, None, None, 0, 0, None, None, None)),
                   static_argnums=(6, 7, 8))


def near_boundary_radii(rng, sq, dtype):
    """Radii ``(K,)`` and the pairs ``[(j, i), ...]`` (disjoint arms) whose ``(r_j + r_i)^2`` lies within a few
    ulps of the squared distance ``sq[j, i]``; the other radii are random."""
    r = rng.uniform(0.0, 0.3, K).astype(dtype)
    pairs = []
    free = list(rng.permutation(K))
    while len(free) >= 2:
        j, i = free.pop(), free.pop()
        if not np.isfinite(sq[j, i]) or sq[j, i] <= 0:
            continue
        dist = np.sqrt(dtype(sq[j, i]))
        r[j] = dtype(rng.uniform(0.0, 0.6)) * dist
        r_i, step = dist - r[j], int(rng.integers(-4, 5))
        for _ in range(abs(step)):  # a few ulps either way
            r_i = np.nextafter(r_i, dtype(np.inf) if step > 0 else dtype(0))
        r[i] = r_i
        pairs.append((j, i))
    return r, pairs


# every shape in float32 and float64 with -m slow; by default each shape once, float32 and float64 alternating
REACH_CASES = [pytest.param(M, d, x64, marks=[pytest.mark.slow] if x64 != bool(i % 2) else [])
               for i, (M, d) in enumerate(SHAPES) for x64 in (False, True)]


@pytest.mark.parametrize("M,d,x64", REACH_CASES)
def test_ball_reaches_any_gives_the_plain_answer(M, d, x64):
    dtype = np.float64 if x64 else np.float32
    rng = np.random.default_rng(1000 * M + 10 * d + x64)
    near = {True: 0, False: 0}
    undecided = 0
    with jax.enable_x64(x64):
        for _ in range(6):
            W = random_cone(rng, M, d)
            geo = cr.cone_geometry(W, dtype)
            mu = jnp.asarray(rng.normal(size=(K, d)) * rng.uniform(0.02, 0.5), dtype)
            slack = jnp.asarray(rng.uniform(0.0, 0.2) * cr.cone_alpha(W), dtype)
            sq = np.asarray(plain_sq(mu, slack, geo))
            r, pairs = near_boundary_radii(rng, sq, dtype)
            r = jnp.asarray(r)
            reach = np.asarray(plain_reach(mu, r, slack, geo))
            sure, possible = map(np.asarray, sure_and_possible(mu, r, slack, geo))
            assert not np.any(sure & ~reach) and not np.any(reach & ~possible)  # the bounds hold
            for j, i in pairs:
                near[bool(reach[j, i])] += 1
            # random masks, both reductions, a few chunk and block sizes
            rows = rng.uniform(size=(16, K)) < rng.uniform(0.1, 1.0, (16, 1))
            cols = rng.uniform(size=(16, K)) < rng.uniform(0.1, 1.0, (16, 1))
            # and each near-boundary pair alone, where the result is that pair's boolean
            for j, i in pairs:
                rows = np.vstack([rows, np.arange(K) == j])
                cols = np.vstack([cols, np.arange(K) == i])
            pad = np.zeros((16 + K // 2 - len(rows), K), bool)  # one batch shape: one compilation per shape
            rows, cols = np.vstack([rows, pad]), np.vstack([cols, pad])
            for axis, chunk, block in ((0, 64, 4), (1, 64, 4), (0, 7, 1)):
                got = np.asarray(fast_any(mu, r, slack, geo, jnp.asarray(rows), jnp.asarray(cols), axis, chunk, block))
                pairs_in = rows[:, :, None] & cols[:, None, :]
                want, lo, hi = (np.any(x[None] & pairs_in, axis=1 + axis) for x in (reach, sure, possible))
                decided = lo == hi
                msg = f"axis {axis}, chunk {chunk}, block {block}"
                np.testing.assert_array_equal(got[decided], want[decided], err_msg=msg)
                assert not np.any(lo & ~got) and not np.any(got & ~hi), msg
                undecided += int(np.sum(~decided))
    assert near[True] > 0 and near[False] > 0  # pairs on both sides of the boundary were checked


@pytest.mark.parametrize("x64", [False, True])
@pytest.mark.parametrize("M,d", SHAPES)
def test_shortcuts_agree_with_the_candidates(M, d, x64):
    """``yes`` implies ``min_norm_sq <= bound`` and ``no`` the opposite, for bounds within a few ulps of the squared
    distance and of the edge of the ``no`` shortcut (where the distance often equals the one-row bound)."""
    dtype = np.float64 if x64 else np.float32
    eps = np.finfo(dtype).eps
    rng = np.random.default_rng(2000 * M + 10 * d + x64)
    decided = 0
    with jax.enable_x64(x64):
        for _ in range(4):
            W = random_cone(rng, M, d)
            geo = cr.cone_geometry(W, dtype)
            h = rng.normal(size=(256, M)) * rng.uniform(0.01, 2.0, (256, 1))
            h[:32] = -np.abs(h[:32])  # every h_n <= 0
            h[32:96, 1:] = -np.abs(h[32:96, 1:]) - 5.0  # one binding row: the distance is its one-row bound
            h = jnp.asarray(h, dtype)
            sq = np.asarray(jax.jit(cr.min_norm_sq)(h, geo))
            low = np.max(np.asarray(h) / np.asarray(geo.wnorm), axis=-1)
            edge = low * low / (1 + cr.BOUND_ULPS * eps)
            k = np.arange(-6, 7)[:, None]
            bounds = np.concatenate([np.where(np.isfinite(sq), sq, 1.0) * (1 + k * eps),
                                     np.maximum(edge, 0) * (1 + k * eps)]).astype(dtype)
            hs = jnp.broadcast_to(h, (len(bounds),) + h.shape)
            yes, no = map(np.asarray, jax.jit(cr.reach_shortcuts)(hs, jnp.asarray(bounds), geo))
            holds = np.asarray(sq)[None] <= bounds
            assert not np.any(yes & ~holds) and not np.any(no & holds)
            decided += int(np.sum(yes | no))
    assert decided > 0
