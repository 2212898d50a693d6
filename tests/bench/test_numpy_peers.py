"""The seed-batched numpy peers against the per-seed reference loops of mobandit_jax.bench.reference:
the same actions on the same reward tables (THV-UCB, CoHV-UCB), the same pull distribution
(PrefUCB, whose reference draws its own Beta rewards), and the KL-UCB root against bisection."""
import numpy as np

from mobandit_jax.bench.numpy_peers import cohv_ucb_batched, klucb_upper_batched, prefucb_batched, thv_ucb_batched
from mobandit_jax.bench.reference.cohv_ucb_numpy import run_cohv_ucb
from mobandit_jax.bench.reference.prefucb_numpy import klucb_upper_numpy, run_prefucb_numpy
from mobandit_jax.bench.reference.thv_ucb_numpy import thv_ucb_numpy


def test_klucb_halley_matches_bisection():
    rng = np.random.default_rng(0)
    p = rng.random(5000)
    p[:50], p[50:100] = 0.0, 1.0
    level = np.exp(rng.uniform(np.log(1e-6), np.log(10), 5000))
    level[:10] = 0.0
    np.testing.assert_allclose(klucb_upper_batched(p, level), klucb_upper_numpy(p, level, iters=60), atol=1e-12)


def _table_stream(table, seeds):
    rows = np.arange(seeds)[:, None]
    return lambda arms, pulls: table[rows, arms, pulls]


def test_thv_ucb_slates_equal_the_loop_on_shared_rewards():
    rng = np.random.default_rng(1)
    for n, d, k in ((8, 2, 3), (10, 4, 4)):
        means = rng.uniform(0.1, 0.9, (n, d))
        table = rng.uniform(0.0, 1.0, (3, n, 120, d))
        slates = thv_ucb_batched(means, k, 50, 3, delta=1 / 5000, rewards=_table_stream(table, 3))
        for s in range(3):
            actions, _ = thv_ucb_numpy(means, k, 50, delta=1 / 5000, reward_fn=lambda a, j: table[s, a, j])
            np.testing.assert_array_equal(slates[:, s], actions)


def test_cohv_ucb_arms_equal_the_loop_until_each_seed_stops():
    rng = np.random.default_rng(2)
    K, S = 6, 3
    vals = rng.uniform(0.05, 1.0, (S, K, 300, 3))
    feas = np.full(K, 0.5)
    rows = np.arange(S)
    arms = cohv_ucb_batched(lambda a, j: (vals[rows, a, j, :2], vals[rows, a, j, 2]), K, 2, 40.0, 0.05, feas, 300, S)
    for s in range(S):
        ref = run_cohv_ucb(lambda a, j: (vals[s, a, j, :2], vals[s, a, j, 2]), K, 2, 40.0, 0.05, feas, 300)
        played = arms[:, s][arms[:, s] >= 0]
        assert 50 < len(played) < 300  # the budget stopped the seed
        np.testing.assert_array_equal(played, ref["actions"])


def test_prefucb_pull_counts_match_the_loop():
    rng = np.random.default_rng(3)
    means = rng.uniform(0.05, 0.95, (5, 3))
    W = np.array([[1.0, 0.0, 1.0], [0.0, -1.0, 1.0]])
    seeds, T = 48, 100
    ours = np.stack([np.bincount(a, minlength=5) for a in prefucb_batched(means, W, T, seeds, seed=1).T])
    ref = np.stack([np.bincount(run_prefucb_numpy(means, W, T, seed=s), minlength=5) for s in range(seeds)])
    se = np.sqrt((ours.var(0) + ref.var(0)) / seeds)
    assert np.all(np.abs(ours.mean(0) - ref.mean(0)) < 4 * se + 0.5), (ours.mean(0), ref.mean(0))
    assert not np.array_equal(ours.mean(0), ref.mean(0))  # independent draws
