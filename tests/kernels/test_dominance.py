"""Pareto / cone dominance kernels against brute-force loops and hand-computed cases."""
import numpy as np
import pytest

from mobandit_jax import cone_optimal_mask, pareto_front_mask, pareto_layers, preference_gaps
from mobandit_jax.kernels import cone_dominance, normalized_projections, validate_cone
from mobandit_jax.kernels.dominance import dominance_matrix, refresh_dominance, undominated, weakly_dominates


def brute_front(mu):
    K = len(mu)
    return np.array([not any(np.all(mu[j] >= mu[i]) and np.any(mu[j] > mu[i]) for j in range(K) if j != i)
                     for i in range(K)])


def brute_layers(mu):
    left, rank, r = set(range(len(mu))), np.zeros(len(mu), int), 0
    while left:
        layer = [i for i in left if not any(np.all(mu[j] >= mu[i]) and np.any(mu[j] > mu[i]) for j in left)]
        for i in layer:
            rank[i] = r
        left -= set(layer)
        r += 1
    return rank


def brute_cone(mu, W):
    K = len(mu)
    dom = np.array([[j != i and np.all(W @ (mu[j] - mu[i]) >= 0) for i in range(K)] for j in range(K)])
    opt = ~dom.any(axis=0)
    L, U = np.minimum(W, 0).sum(1), np.maximum(W, 0).sum(1)
    gaps = np.zeros(K)
    for a in range(K):
        if opt[a]:
            continue
        cands = [j for j in range(K) if dom[j, a] and opt[j]] or [j for j in range(K) if dom[j, a]]
        gaps[a] = max(0.0, max(np.min((W @ (mu[j] - mu[a])) / (U - L)) for j in cands))
    return opt, gaps


@pytest.mark.parametrize("seed", range(5))
def test_pareto_masks_and_layers(seed):
    rng = np.random.default_rng(seed)
    mu = np.round(rng.random((25, 3)), 1).astype(np.float32)  # rounding creates ties and duplicates
    np.testing.assert_array_equal(np.asarray(pareto_front_mask(mu)), brute_front(mu))
    np.testing.assert_array_equal(np.asarray(pareto_layers(mu)), brute_layers(mu))


def brute_dominance(x):
    K = len(x)
    return np.array([[j != i and np.all(x[j] >= x[i]) and np.any(x[j] > x[i]) for i in range(K)] for j in range(K)])


@pytest.mark.parametrize("seed", range(4))
def test_refresh_dominance_tracks_changed_rows(seed):
    # a run of updates, each changing a few rows (ties and duplicates from rounding), keeps the full matrix
    rng = np.random.default_rng(seed)
    x = np.round(rng.random((30, 4)), 1).astype(np.float32)
    dom = dominance_matrix(x)
    for _ in range(12):
        arms = rng.choice(30, size=int(rng.integers(1, 6)), replace=False)
        x[arms] = np.round(rng.random((len(arms), 4)), 1)
        dom = refresh_dominance(dom, x, np.asarray(arms, np.int32))
        np.testing.assert_array_equal(np.asarray(dom), brute_dominance(x))
        np.testing.assert_array_equal(np.asarray(undominated(dom)), brute_front(x))


@pytest.mark.parametrize("seed", range(5))
def test_cone_optimal_and_gaps(seed):
    rng = np.random.default_rng(seed)
    mu = rng.random((30, 4)).astype(np.float32)
    W = rng.normal(size=(3, 4)).astype(np.float32)
    opt, gaps = brute_cone(mu.astype(np.float64), W.astype(np.float64))
    np.testing.assert_array_equal(np.asarray(cone_optimal_mask(mu, W)), opt)
    np.testing.assert_allclose(np.asarray(preference_gaps(mu, W)), gaps, atol=1e-6)


def test_identity_cone_is_pareto_and_single_row_is_argmax():
    rng = np.random.default_rng(9)
    mu = rng.random((20, 3)).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(cone_optimal_mask(mu, np.eye(3))), brute_front(mu))
    w = np.array([[0.2, 0.5, 0.3]], np.float32)
    mask = np.asarray(cone_optimal_mask(mu, w))
    assert mask.sum() == 1 and mask[np.argmax(mu @ w[0])]


def test_hand_computed_gap():
    # W = [1, -1]: prefer objective 0 over 1. S(r) = (r0 - r1 + 1) / 2.
    mu = np.array([[0.9, 0.1], [0.5, 0.5], [0.4, 0.2]], np.float32)
    W = np.array([[1.0, -1.0]], np.float32)
    np.testing.assert_array_equal(np.asarray(cone_optimal_mask(mu, W)), [True, False, False])
    np.testing.assert_allclose(np.asarray(preference_gaps(mu, W)), [0.0, 0.4, 0.3], atol=1e-6)
    np.testing.assert_allclose(np.asarray(normalized_projections(mu, W))[:, 0], [0.9, 0.5, 0.6], atol=1e-6)
    assert np.asarray(cone_dominance(mu, W))[0, 1]


def test_zero_row_rejected():
    with pytest.raises(ValueError, match="row 1 is all zeros"):
        cone_optimal_mask(np.ones((3, 2)) * 0.5, np.array([[1.0, 0.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="non-finite"):
        validate_cone([[1.0, np.nan]])


@pytest.mark.parametrize("seed", range(3))
def test_weakly_dominates_and_dominance_matrix_brute_force(seed):
    rng = np.random.default_rng(20 + seed)
    a = np.round(rng.random((30, 5)), 1).astype(np.float32)  # coarse grid: ties in every coordinate
    a[5] = a[3]  # an exact duplicate
    b = np.round(rng.random((12, 5)), 1).astype(np.float32)
    b[0] = a[0]
    weak = np.array([[np.all(a[i] >= b[j]) for j in range(len(b))] for i in range(len(a))])
    np.testing.assert_array_equal(np.asarray(weakly_dominates(a, b)), weak)
    strict = np.array([[np.all(a[j] >= a[i]) and np.any(a[j] > a[i]) for i in range(len(a))] for j in range(len(a))])
    np.testing.assert_array_equal(np.asarray(dominance_matrix(a)), strict)
