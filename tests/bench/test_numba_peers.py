"""The numba per-seed loops of mobandit_jax.bench.numba_peers against the numpy peers and loops: the same actions on the
same reward tables (THV-UCB, PrefUCB, Auer et al., APE), the same pull distribution on their own draws (PrefUCB,
Auer et al. and APE against linear_psi's published behaviour through the numpy loops), and the KL-UCB root against
bisection. Skipped without numba (the benchmark's optional ``bench`` extra)."""
import numpy as np
import pytest

pytest.importorskip("numba", reason="numba is the optional `bench` extra (pip install 'mobandit_jax[bench]')")

from _pac_loops import ape_numpy, auer_numpy  # noqa: E402  (the pac family's numpy loops)

from mobandit_jax.bench import numba_peers as nb  # noqa: E402
from mobandit_jax.bench.numpy_peers import klucb_upper_batched, prefucb_batched, thv_ucb_batched  # noqa: E402
from mobandit_jax.bench.reference.prefucb_numpy import klucb_upper_numpy  # noqa: E402


def test_klucb_matches_bisection_and_the_numpy_peer():
    rng = np.random.default_rng(0)
    p = rng.random(3000)
    p[:30], p[30:60] = 0.0, 1.0
    level = np.exp(rng.uniform(np.log(1e-6), np.log(10), 3000))
    level[:10] = 0.0
    ours = nb.klucb_upper_many(p, level)
    np.testing.assert_allclose(ours, klucb_upper_numpy(p, level, iters=60), atol=1e-12)
    np.testing.assert_allclose(ours, klucb_upper_batched(p, level), atol=1e-14)


def test_thv_ucb_slates_equal_the_numpy_peer_on_shared_rewards():
    rng = np.random.default_rng(1)
    for n, d, k in ((8, 2, 3), (12, 5, 4)):
        means = rng.uniform(0.1, 0.9, (n, d))
        table = rng.uniform(0.0, 1.0, (n, 120, d))
        ours = nb.thv_ucb_seeds(means, k, 60, 1, delta=1 / 5000, table=table)[0]
        peer = thv_ucb_batched(means, k, 60, 1, delta=1 / 5000, rewards=lambda a, j: table[a, j])[:, 0]
        np.testing.assert_array_equal(ours, peer)
        assert len(np.unique(ours[-20:])) > k  # the slates move: the test compares choices, not a fixed slate


def _prefucb_on_table(means, W, table, T):
    """PrefUCB's arms on a reward table with the numpy peer's steps (the same index and update as
    ``prefucb_batched``, one seed, first arm on ties)."""
    K, _ = means.shape
    lo, hi = np.minimum(W, 0).sum(1), np.maximum(W, 0).sum(1)
    counts, sums, arms = np.zeros(K), np.zeros_like(means), []
    for t in range(1, T + 1):
        if t <= K:
            a = t - 1
        else:
            low = ((sums / counts[:, None]) @ (W.T / (hi - lo)) - lo / (hi - lo)).min(1)  # min_k S_k, Def. 3
            a = int(np.argmax(klucb_upper_batched(low, np.log(t) / counts)))
        sums[a] += table[a, int(counts[a])]
        counts[a] += 1
        arms.append(a)
    return np.array(arms)


def test_prefucb_arms_equal_the_numpy_steps_on_shared_rewards():
    rng = np.random.default_rng(2)
    means = rng.uniform(0.05, 0.95, (6, 3))
    W = np.array([[1.0, 0.0, 1.0], [0.0, -1.0, 1.0]])
    table = rng.uniform(0.0, 1.0, (6, 400, 3))
    ours = nb.prefucb_seeds(means, W, 400, 1, table=table)[0]
    np.testing.assert_array_equal(ours, _prefucb_on_table(means, W, table, 400))
    assert len(np.unique(ours[-100:])) > 1


def test_prefucb_pull_counts_match_the_numpy_peer():
    rng = np.random.default_rng(3)
    means = rng.uniform(0.05, 0.95, (5, 3))
    W = np.array([[1.0, 0.0, 1.0], [0.0, -1.0, 1.0]])
    seeds, T = 64, 100
    ours = np.stack([np.bincount(a, minlength=5) for a in nb.prefucb_seeds(means, W, T, seeds)])
    peer = np.stack([np.bincount(a, minlength=5) for a in prefucb_batched(means, W, T, seeds, seed=1).T])
    se = np.sqrt((ours.var(0) + peer.var(0)) / seeds)
    assert np.all(np.abs(ours.mean(0) - peer.mean(0)) < 4 * se + 0.5), (ours.mean(0), peer.mean(0))
    assert not np.array_equal(ours.mean(0), peer.mean(0))  # independent draws


MEANS = np.array([[0.1, 0.9], [0.9, 0.1], [0.6, 0.6], [0.3, 0.3], [0.5, 0.45]])


@pytest.mark.parametrize("method, reference", [("auer", auer_numpy), ("ape", ape_numpy)])
def test_auer_and_ape_equal_the_numpy_loops_on_shared_rewards(method, reference):
    rng = np.random.default_rng(4)
    for _ in range(3):
        table = MEANS[:, None, :] + 0.5 * rng.standard_normal((5, 20000, 2))
        counts, found = nb.fixed_confidence_seeds(method, MEANS, True, 0.5, 0.1, 1, table=table)
        P, n = reference(lambda i, j: table[i, j], 5, 0.1, 0.5)
        np.testing.assert_array_equal(counts[0], n)
        assert sorted(np.flatnonzero(found[0])) == P


@pytest.mark.parametrize("method", ["auer", "ape"])
def test_auer_and_ape_on_their_own_draws_find_the_pareto_set(method):
    counts, found = nb.fixed_confidence_seeds(method, MEANS, False, 0.5, 0.1, 40)
    truth = np.array([True, True, True, False, False])
    assert np.mean(np.all(found == truth, axis=1)) >= 0.9  # delta = 0.1 bounds the error rate
    totals = counts.sum(1)
    assert totals.std() > 0 and totals.min() > 5  # seeds differ: each draws its own rewards
