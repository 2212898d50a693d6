"""The incremental greedy hypervolume slate (kernels.greedy_hv) and the lazily formed safe set of THV-UCB
(kernels.pruning.fill_over_safe_arms, kernels.lanes.where_needed) against plain references: a brute-force
greedy on exact hypervolumes, the float32 arithmetic the kernel documents, and the eager pruning."""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mobandit_jax.kernels import greedy_hv_subset
from mobandit_jax.kernels.greedy_hv import greedy_hv_slate
from mobandit_jax.kernels.lanes import where_needed
from mobandit_jax.kernels.pruning import fill_over_safe_arms, safe_prune
from mobandit_jax.policies.slate import GAIN_TOL

f32 = np.float32


def hv_exact(points, ref):
    """Inclusion-exclusion in float64 (exact on the 1/8 grid used below)."""
    total = 0.0
    for size in range(1, len(points) + 1):
        for subset in itertools.combinations(range(len(points)), size):
            low = points[list(subset)].min(axis=0)
            total += (-1) ** (size + 1) * np.prod(np.maximum(low - ref, 0.0))
    return total


def brute_greedy(points, ref, k, tol, eligible):
    """Algorithm 1, lines 17-21, read literally: argmax of HV(S + i) - HV(S), ties to the lowest index."""
    chosen = []
    for _ in range(k):
        base = hv_exact(points[chosen], ref) if chosen else 0.0
        gains = np.array([hv_exact(points[chosen + [i]], ref) - base for i in range(len(points))])
        if tol is not None and chosen:
            gains = np.where(gains > tol, gains, 0.0)
        ok = eligible & ~np.isin(np.arange(len(points)), chosen)
        chosen.append(int(np.argmax(np.where(ok, gains, -np.inf))))
    return chosen


def grid_instance(rng, n, d):
    """Points on a 1/8 grid (every volume and clipped sum is exact in float32), with duplicates, points
    on or below the reference, and boxes nested in others: many exact ties."""
    pts = rng.integers(0, 9, (n, d)) / 8.0
    pts[1] = pts[0]
    pts[3] = np.minimum(pts[2], 0.5)
    pts[4] = 0.0
    return pts.astype(f32)


@pytest.mark.parametrize("d,k", [(2, 3), (3, 4), (3, 6), (4, 5), (5, 6)])
def test_greedy_slate_matches_brute_force_on_exact_ties(d, k):
    rng = np.random.default_rng(10 * d + k)
    lanes, n = 5, 12
    ref = np.full(d, 0.125, f32)
    pts = np.stack([grid_instance(rng, n, d) for _ in range(lanes)])
    eligible = rng.random((lanes, n)) < 0.75
    eligible[:, 5:5 + k] = True  # at least k eligible arms
    fast = jax.jit(jax.vmap(lambda p, e: greedy_hv_slate(p, ref, k, GAIN_TOL, e)))
    plain = jax.jit(jax.vmap(lambda p, e: greedy_hv_subset(p, ref, k, GAIN_TOL, e)))
    got = np.asarray(fast(pts, eligible))
    np.testing.assert_array_equal(got, np.asarray(plain(pts, eligible)))
    for s in range(lanes):
        assert got[s].tolist() == brute_greedy(pts[s].astype(float), ref.astype(float), k, GAIN_TOL, eligible[s])


def _subset_signs(m):
    signs = np.array([1.0])
    for _ in range(m):
        signs = np.concatenate([signs, -signs])
    return -signs[1:]


def _float32_sum(terms):
    """XLA:CPU's order in hv_contributions: in sequence; at 31 terms the first 24 in 4 lanes, blocks of 4
    added in the order 0, 2, 4, 3, 1, 5, the lanes folded as (0 + 2) + (1 + 3), then the rest in sequence."""
    if len(terms) == 31:
        lanes = list(terms[:4])
        for b in (2, 4, 3, 1, 5):
            lanes = [f32(lanes[lane] + terms[4 * b + lane]) for lane in range(4)]
        total, rest = f32(f32(lanes[0] + lanes[2]) + f32(lanes[1] + lanes[3])), terms[24:]
    else:
        total, rest = terms[0], terms[1:]
    for t in rest:
        total = f32(total + t)
    return total


def float32_greedy(points, ref, k, tol, eligible):
    """The kernel's float32 arithmetic, one operation at a time (each product and sum rounded; at the second
    pick the volume minus the single product, its last multiply fused: one rounding)."""
    n, d = points.shape
    g = np.maximum(points - ref, f32(0)).astype(f32)
    vol = g[:, 0].copy()
    for j in range(1, d):
        vol = (vol * g[:, j]).astype(f32)
    chosen = []
    for m in range(k):
        gains = vol.copy()
        if m:
            rows = [np.full(d, np.inf, f32)]
            for i in chosen:
                rows = rows + [np.minimum(r, g[i]) for r in rows]
            rows, signs = rows[1:], _subset_signs(m)
            for i in range(n):
                prods = []
                for row in rows:
                    low = np.minimum(row, g[i])
                    p = low[0]
                    for j in range(1, d - 1):
                        p = f32(p * low[j])
                    prods.append((p, low[d - 1]))
                if m == 1:
                    gains[i] = f32(np.float64(vol[i]) - np.float64(prods[0][0]) * np.float64(prods[0][1]))
                else:
                    terms = [f32(p * last) * f32(s) for (p, last), s in zip(prods, signs, strict=False)]
                    gains[i] = f32(vol[i] - _float32_sum(terms))
            if tol is not None:
                gains = np.where(gains > tol, gains, f32(0)).astype(f32)
        ok = eligible & ~np.isin(np.arange(n), chosen)
        chosen.append(int(np.argmax(np.where(ok, gains, -np.inf))))
    return chosen


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="the float32 arithmetic is XLA:CPU's")
@pytest.mark.parametrize("d", [3, 4, 5])
def test_greedy_slate_float32_arithmetic_on_round_off_ties(d):
    # Raw gains (no tolerance) of dominated arms are round-off around 0, so every bit decides a pick.
    rng = np.random.default_rng(d)
    n, lanes = 16, 8
    ref = np.full(d, 0.05, f32)
    mu = rng.random((lanes, n, d))
    mu[:, n // 2:] = mu[:, :n // 2] * rng.uniform(0.9, 1.0, (lanes, n // 2, 1))  # boxes inside others
    pts = np.clip(mu + rng.random((lanes, n, 1)) * 0.1, 0, 1).astype(f32)
    eligible = rng.random((lanes, n)) < 0.85
    eligible[:, :6] = True
    for k in (2, 6):  # k = 6: every step, sequential sums and the 31 terms of the last
        def greedy(p, e):
            return greedy_hv_slate(p, ref, k, None, e)

        def in_branch(p, e):  # as THV-UCB's refill computes it, inside a conditional
            return where_needed(e[-1], greedy, jnp.zeros(k, jnp.int32), p, e)

        plain = np.asarray(jax.jit(jax.vmap(greedy))(pts, eligible))
        branch = np.asarray(jax.jit(jax.vmap(in_branch))(pts, eligible))
        for s in range(lanes):
            assert plain[s].tolist() == float32_greedy(pts[s], ref, k, None, eligible[s]), (k, s)
            assert branch[s].tolist() == (plain[s].tolist() if eligible[s, -1] else [0] * k), (k, s)


def _bounds(rng, lanes, n, d, spread):
    mu = rng.uniform(0.2, 0.8, (lanes, n, d))
    beta = rng.uniform(0.0, spread, (lanes, n, 1))
    return jnp.asarray(np.clip(mu + beta, 0, 1), jnp.float32), jnp.asarray(mu - beta, jnp.float32)


def test_fill_over_safe_arms_equals_the_fill_over_the_pruned_set():
    # Narrow boxes around a few good arms and many dominated ones: once the good arms are taken every gain
    # is zero and the lowest index wins, often a pruned arm, so that some lanes refill and others do not.
    rng = np.random.default_rng(3)
    lanes, n, d, k = 24, 20, 3, 6
    upper, lower = _bounds(rng, lanes, n, d, 0.02)
    good = rng.random((lanes, n)) < 0.15
    upper, lower = (jnp.where(good[..., None], b, b * 0.5) for b in (upper, lower))
    ref = jnp.zeros(d)

    def greedy(candidates, u, r):
        return greedy_hv_slate(u, r, k, GAIN_TOL, candidates)

    lazy = jax.jit(jax.vmap(lambda u, l: fill_over_safe_arms(greedy, u, l, k, ref)))(upper, lower)
    eager = jax.jit(jax.vmap(lambda u, l: greedy(safe_prune(u, l, k), u, ref)))(upper, lower)
    np.testing.assert_array_equal(np.asarray(lazy), np.asarray(eager))
    over_all = np.asarray(jax.jit(jax.vmap(lambda u: greedy(None, u, ref)))(upper))
    refilled = (over_all != np.asarray(eager)).any(axis=1)
    assert refilled.any() and not refilled.all()


def test_fill_over_safe_arms_with_fewer_than_k_safe_arms():
    # One arm's LCB lies above every other UCB: A_t = {0} has fewer than k arms, so all arms stay candidates.
    upper = jnp.asarray([[0.9, 0.9], [0.5, 0.4], [0.4, 0.5], [0.3, 0.3]], jnp.float32)
    lower = upper.at[0].set(0.8).at[1:].add(-0.3)
    ref = jnp.zeros(2)

    def greedy(candidates, u, r):
        return greedy_hv_slate(u, r, 2, GAIN_TOL, candidates)

    got = jax.jit(lambda u, l: fill_over_safe_arms(greedy, u, l, 2, ref))(upper, lower)
    assert np.asarray(safe_prune(upper, lower, 2)).all()
    plain = jax.jit(greedy_hv_subset, static_argnums=2)(upper, ref, 2)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(plain))
    assert np.asarray(got).tolist() == [0, 1]


def test_where_needed_runs_the_branch_only_for_batches_that_need_it():
    calls = []

    def expensive(x, y):
        jax.debug.callback(lambda: calls.append(1))
        return x * 10 + y

    def f(x, y):
        return where_needed(x[0] > 0, expensive, x, x, y)

    x = jnp.asarray([[1.0, 2.0], [-1.0, 3.0]])
    y = jnp.asarray(0.5)
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(f, in_axes=(0, None)))(x, y)),
                                  [[10.5, 20.5], [-1.0, 3.0]])
    nested = jax.jit(jax.vmap(jax.vmap(f, in_axes=(0, None)), in_axes=(0, None)))(jnp.stack([x, -abs(x)]), y)
    np.testing.assert_array_equal(np.asarray(nested[1]), -abs(np.asarray(x)))
    np.testing.assert_array_equal(np.asarray(f(x[0], y)), [10.5, 20.5])
    calls.clear()
    jax.block_until_ready(jax.jit(jax.vmap(f, in_axes=(0, None)))(-abs(x), y))
    assert calls == []
