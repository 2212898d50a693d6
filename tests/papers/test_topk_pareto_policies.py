"""Seed-001 slate policies: THV-UCB against the numpy loop, shared steps against brute force, all 14 run."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mobandit_jax import kernels, registry
from mobandit_jax.bench.reference.thv_ucb_numpy import hypervolume_numpy, thv_ucb_numpy
from mobandit_jax.policies import slate
from mobandit_jax.types import Context, Observation


def _ctx(means, k, horizon, sigma=0.05):
    n, d = means.shape
    return Context.make(num_arms=n, dim=d, horizon=horizon, means=means, ref=np.zeros(d), slate_size=k,
                   noise_sigma=sigma)


def _run_table(policy, params, table, horizon):
    """Drive ``policy`` with rewards ``table[arm, pull]``; returns the (T, k) actions."""

    def step(carry, t):
        state, pulls = carry
        a = policy.select(jax.random.fold_in(jax.random.PRNGKey(1), t), state, params)
        obs = Observation(table[a, pulls[a]], jnp.zeros(a.shape))
        return (policy.update(state, a, obs, params), pulls.at[a].add(1)), a

    init = (policy.init(params), jnp.zeros((table.shape[0],), jnp.int32))
    _, actions = jax.jit(lambda c: jax.lax.scan(step, c, jnp.arange(horizon)))(init)
    return np.asarray(actions)


def _table(means, pulls, sigma, seed):
    rng = np.random.default_rng(seed)
    n, d = means.shape
    return np.clip(means[:, None, :] + sigma * rng.standard_normal((n, pulls, d)), 0, 1).astype(np.float32)


@pytest.mark.parametrize("d,n,k,T,eta", [(2, 12, 3, 120, 0.01), (3, 10, 3, 50, 0.3)])
def test_thv_ucb_matches_numpy_loop_action_for_action(d, n, k, T, eta):
    inst = registry.make_env({"kind": "dtlz", "d": d, "n": n, "k": k, "sigma": 0.05, "front": "concave",
                       "instance_seed": 3})
    means = inst.means.astype(np.float32).astype(np.float64)
    table = _table(means, T, 0.05, seed=d)
    policy, params, _ = registry.make_policy("slate/thv_ucb", _ctx(means, k, T), eta=eta)
    ours = _run_table(policy, params, jnp.asarray(table), T)
    ref, _ = thv_ucb_numpy(means, k, T, eta=eta, reward_fn=lambda arm, j: table[arm, j].astype(np.float64))
    forced = math.ceil(2 * n / k)
    np.testing.assert_array_equal(ours[:forced], ref[:forced])
    same = np.mean(np.all(np.sort(ours, 1) == np.sort(ref, 1), axis=1))
    assert same == 1.0, f"slates agree on {same:.3f} of rounds"


def test_numpy_hypervolume_matches_kernel():
    rng = np.random.default_rng(0)
    for d, m in [(2, 7), (3, 5), (5, 6)]:
        pts = rng.uniform(0, 1, (m, d))
        assert hypervolume_numpy(pts, np.zeros(d)) == pytest.approx(float(kernels.hypervolume(pts, np.zeros(d))),
                                                                     rel=1e-5)


def test_forced_initialisation_round_robin():
    counts = jnp.array([2.0, 0.0, 1.0, 0.0, 0.0, 3.0])
    np.testing.assert_array_equal(slate.forced_slate(counts, 3), [1, 3, 4])


def test_top_layers_matches_pareto_layers_truncated():
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.uniform(0, 1, (40, 3)), jnp.float32)
    full = np.asarray(kernels.pareto_layers(x))
    np.testing.assert_array_equal(np.asarray(slate.top_layers(x, 4)), np.minimum(full, 4))


def test_crowding_distance_hand_computed():
    x = jnp.array([[0.0, 1.0], [0.2, 0.7], [0.5, 0.5], [1.0, 0.0], [0.1, 0.1]])
    layer = jnp.array([0, 0, 0, 0, 1])
    cd = np.asarray(slate.crowding_distance(x, layer))
    # Interior of layer 0 (sorted by x: 0, .2, .5, 1): arm 1 -> (.5-0)/1 + (1-.5)/1, arm 2 -> (1-.2) + (.7-0).
    assert np.isinf(cd[0]) and np.isinf(cd[3]) and np.isinf(cd[4])
    np.testing.assert_allclose(cd[1:3], [1.0, 1.5], rtol=1e-6)


def test_safe_prune_brute_force():
    rng = np.random.default_rng(2)
    mu = rng.uniform(0, 1, (15, 2))
    beta = rng.uniform(0.0, 0.2, 15)
    up, lo = mu + beta[:, None], mu - beta[:, None]
    brute = [not any(j != i and np.all(up[i] <= lo[j]) for j in range(15)) for i in range(15)]
    got = np.asarray(slate.safe_prune(jnp.asarray(up), jnp.asarray(lo), 3))
    if sum(brute) >= 3:
        np.testing.assert_array_equal(got, brute)
    assert not all(brute)  # the draw exercises pruning


@pytest.mark.parametrize("seed,n,d,k,duplicate", [(4, 20, 3, 4, False), (9, 30, 5, 6, True)])
def test_greedy_hv_slate_matches_brute_greedy(seed, n, d, k, duplicate):
    rng = np.random.default_rng(seed)
    pts = rng.uniform(0, 1, (n, d))
    if duplicate:
        pts[11] = pts[4]
    chosen = []
    for _ in range(k):
        gains = [-np.inf if i in chosen else hypervolume_numpy(pts[chosen + [i]], np.zeros(d)) for i in range(n)]
        chosen.append(int(np.argmax(gains)))
    got = kernels.greedy_hv_subset(jnp.asarray(pts, jnp.float32), jnp.zeros(d), k, slate.GAIN_TOL)
    np.testing.assert_array_equal(np.asarray(got), chosen)


def test_hv_scalarization_hand_computed():
    U = jnp.array([[0.6, 0.3]])
    lam = jnp.array([0.8, 0.6])
    assert float(slate.hv_scalarization(U, jnp.zeros(2), lam)[0]) == pytest.approx(min(0.6 / 0.8, 0.3 / 0.6) ** 2)


def test_default_eta_is_an_explicit_constant():
    means = np.random.default_rng(0).uniform(0, 1, (12, 2))
    _, params, _ = registry.make_policy("slate/scalar_ucb", _ctx(means, 3, 100))
    assert float(params.eta) == np.float32(0.1)
    _, params, _ = registry.make_policy("slate/thv_ucb", _ctx(means, 3, 100))
    assert float(params.eta) == np.float32(0.01) and float(params.delta) == np.float32(1 / 100)
    _, params, _ = registry.make_policy("slate/scalar_ucb", _ctx(means, 3, 100), eta=0.3)
    assert float(params.eta) == np.float32(0.3)


def test_factories_need_no_registry():
    means = np.random.default_rng(0).uniform(0, 1, (12, 2))
    via_registry, p_reg, _ = registry.make_policy("slate/thv_ucb", _ctx(means, 3, 40), eta=0.3)
    direct = slate.thv_ucb(12, 2, 3)
    p_direct = slate.thv_ucb_params(40, np.zeros(2), eta=0.3)
    table = jnp.asarray(_table(means, 40, 0.05, seed=0))
    np.testing.assert_array_equal(_run_table(direct, p_direct, table, 40), _run_table(via_registry, p_reg, table, 40))


@pytest.mark.parametrize("name", slate.SLATE_POLICIES)
def test_every_policy_plays_distinct_slates_and_learns(name):
    inst = registry.make_env({"kind": "dtlz", "d": 2, "n": 12, "k": 3, "sigma": 0.05, "front": "convex",
                       "instance_seed": 1})
    T = 60
    table = jnp.asarray(_table(inst.means, T, 0.05, seed=0))
    policy, params, static_key = registry.make_policy(f"slate/{name}", _ctx(inst.means, 3, T))
    assert policy.slate_size == 3 and static_key[0] == f"slate/{name}"
    actions = _run_table(policy, params, table, T)
    assert actions.dtype == np.int32 and actions.shape == (T, 3)
    assert np.all(np.sort(actions, 1)[:, 1:] != np.sort(actions, 1)[:, :-1])  # distinct arms
    counts = np.bincount(actions[:8].ravel(), minlength=12)
    np.testing.assert_array_equal(counts, 2)  # forced init: every arm twice in 8 rounds


def test_registry_has_all_fourteen_in_the_slate_family():
    names = [k for k, e in registry.POLICIES.items() if e.family == "slate"]
    assert sorted(names) == sorted(f"slate/{n}" for n in slate.SLATE_POLICIES) and len(names) == 14


@pytest.mark.parametrize("opts,msg", [({"eta": -1.0}, "eta must be > 0"), ({"delta": 1.5}, "delta must"),
                                      ({"m0": 0}, "m0")])
def test_invalid_options(opts, msg):
    means = np.random.default_rng(0).uniform(0, 1, (12, 2))
    with pytest.raises(ValueError, match=msg):
        registry.make_policy("slate/thv_ucb", _ctx(means, 3, 100), **opts)


def test_invalid_slate_size():
    means = np.random.default_rng(0).uniform(0, 1, (5, 2))
    with pytest.raises(ValueError, match="slate size k=6"):
        registry.make_policy("slate/random_k", _ctx(means, 6, 100))


def _crowding_numpy(x, layer, boundary="inf"):
    """The within-layer NSGA-II crowding distance as a plain float32 loop (equal values: later index above);
    a boundary arm's term: inf, the gap to its one neighbour over the span, or 0."""
    n, d = x.shape
    out = np.zeros(n, np.float32)
    for i in range(n):
        same = [m for m in range(n) if layer[m] == layer[i]]
        total = np.float32(0.0)
        for j in range(d):
            above = [x[m, j] for m in same if x[m, j] > x[i, j] or (x[m, j] == x[i, j] and m > i)]
            below = [x[m, j] for m in same if x[m, j] < x[i, j] or (x[m, j] == x[i, j] and m < i)]
            values = [x[m, j] for m in same]
            span = np.maximum(np.float32(max(values) - min(values)), np.float32(1e-12))
            if (not above or not below) and boundary == "inf":
                part = np.float32(np.inf)
            elif (not above or not below) and boundary == "zero":
                part = np.float32(0.0)
            elif not above or not below:
                gap = np.float32(min(above) - x[i, j]) if above else np.float32(x[i, j] - max(below)) if below else 0
                part = np.float32(np.float32(gap) / span)
            else:
                part = np.float32(np.float32(min(above) - max(below)) / span)
            total = np.float32(total + part)
        out[i] = total
    return out


@pytest.mark.parametrize("boundary", slate.CROWD_BOUNDARY)
@pytest.mark.parametrize("seed", range(3))
def test_crowding_distance_matches_numpy_loop(seed, boundary):
    rng = np.random.default_rng(30 + seed)
    x = np.round(rng.uniform(0, 1, (40, 4)), 1).astype(np.float32)  # many equal values within layers
    x[7] = x[2]
    layer = rng.integers(0, 7, 40).astype(np.int32)  # up to k = 6 layers plus the rest (rank 6)
    layer[:3] = 9  # a layer of size 3 beyond the others
    layer[3], layer[4:6] = 10, 11  # layers of size 1 and 2
    want = _crowding_numpy(x, layer, boundary)
    for num_layers in (None, 12):  # layers ranked, or counted by a histogram of the 12 possible layers
        got = slate.crowding_distance(jnp.asarray(x), jnp.asarray(layer), boundary, num_layers=num_layers)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6, atol=0)


def test_crowding_boundary_readings_hand_computed():
    x = jnp.array([[0.0, 3.0], [1.0, 2.0], [2.0, 1.0], [3.0, 0.0]])
    layer = jnp.zeros(4, jnp.int32)
    # Span 3 per objective; an interior arm: 2/3 + 2/3; an end arm's one neighbour is 1 away: 1/3 + 1/3.
    np.testing.assert_allclose(np.asarray(slate.crowding_distance(x, layer, "neighbour")), [2 / 3, 4 / 3, 4 / 3, 2 / 3],
                               rtol=1e-6)
    np.testing.assert_allclose(np.asarray(slate.crowding_distance(x, layer, "zero")), [0, 4 / 3, 4 / 3, 0], rtol=1e-6)
    with pytest.raises(ValueError, match="boundary must be one of"):
        slate.pareto_ucb_crowd(4, 2, 2, boundary="edge")


@pytest.mark.parametrize("eta", [0.095, 0.11])  # arm 1 wins iff beta_0 < 0.7: (ucb1, pareto, standard) differ
@pytest.mark.parametrize("bonus", slate.CHEBYSHEV_BONUS)
def test_chebyshev_bonus_readings_hand_computed(bonus, eta):
    """The first round after the forced phase: the one-arm slate is the arm with the largest
    min_l w_l (U_il - z_l), U = mu + beta, beta written out for each reading."""
    n, d, horizon = 3, 2, 100
    policy = slate.chebyshev_ucb(n, d, 1, num_weights=1, bonus=bonus)
    params = slate.eta_params(horizon, eta, m0=1)
    state = policy.init(params)
    # arm 0: 1 pull of (0.9, 0.1); arm 1: 4 pulls of (0.45, 0.45); arm 2: 1 pull of (0.1, 0.9)
    obs = {0: [(0.9, 0.1)], 1: [(0.45, 0.45)] * 4, 2: [(0.1, 0.9)]}
    for arm, rewards in obs.items():
        for r in rewards:
            state = policy.update(state, jnp.array([arm]), Observation(jnp.array([r], jnp.float32), jnp.zeros(1)),
                                  params)
    counts, t = np.array([1.0, 4.0, 1.0]), 7.0
    if bonus == "ucb1":
        beta = np.sqrt(2 * eta * np.log(t) / counts)
    elif bonus == "standard":
        beta = np.sqrt(eta * np.log(n * d * horizon ** 2) / (2 * counts))
    else:
        beta = np.sqrt(2 * eta * np.log(t * (d * 3) ** 0.25) / counts)  # all three means are non-dominated
    mu = np.array([[0.9, 0.1], [0.45, 0.45], [0.1, 0.9]])
    score = np.min(0.5 * (mu + beta[:, None] - mu.min(0)), axis=1)  # w = (1/2, 1/2), z = nadir of the front
    slate_ = policy.select(jax.random.PRNGKey(0), state, params)
    assert int(np.asarray(slate_)[0]) == int(np.argmax(score))


def test_layered_top_k_matches_lexsort():
    rng = np.random.default_rng(6)
    for _ in range(20):
        layer = rng.integers(0, 4, 30).astype(np.int32)
        secondary = np.round(rng.uniform(0, 1, 30), 1).astype(np.float32)  # ties within a layer
        secondary[rng.integers(0, 30, 3)] = np.inf
        expect = np.lexsort((-secondary, layer))[:6]
        np.testing.assert_array_equal(np.asarray(slate.layered_top_k(jnp.asarray(layer), jnp.asarray(secondary), 6)),
                                      expect)


def test_top_layers_fill_keeps_every_layered_choice():
    rng = np.random.default_rng(8)
    for n, d in [(40, 2), (60, 3), (150, 5)]:
        x = jnp.asarray(np.round(rng.uniform(0, 1, (n, d)), 1), jnp.float32)
        full = np.minimum(np.asarray(kernels.pareto_layers(x)), 6)
        part = np.asarray(slate.top_layers(x, 6, fill=6))
        reached = part < 6
        assert reached.sum() >= 6
        np.testing.assert_array_equal(part[reached], full[reached])
        assert np.all(full[~reached] > part[reached].max())  # unranked arms lie in later layers
        secondary = jnp.asarray(rng.uniform(0, 1, n), jnp.float32)
        np.testing.assert_array_equal(np.asarray(slate.layered_top_k(jnp.asarray(part), secondary, 6)),
                                      np.asarray(slate.layered_top_k(jnp.asarray(full), secondary, 6)))


def test_forced_slate_matches_stable_argsort():
    rng = np.random.default_rng(3)
    for _ in range(10):
        counts = rng.integers(0, 3, 20).astype(np.float32)
        np.testing.assert_array_equal(np.asarray(slate.forced_slate(jnp.asarray(counts), 5)),
                                      np.argsort(counts, kind="stable")[:5])


def test_safe_prune_with_ties_brute_force():
    rng = np.random.default_rng(5)
    mu = np.round(rng.uniform(0, 1, (40, 5)), 1)
    mu[4] = mu[1]
    beta = np.round(rng.uniform(0.0, 0.2, 40), 1)
    up, lo = np.clip(mu + beta[:, None], 0, 1).astype(np.float32), (mu - beta[:, None]).astype(np.float32)
    brute = [not any(j != i and np.all(up[i] <= lo[j]) for j in range(40)) for i in range(40)]
    np.testing.assert_array_equal(np.asarray(slate.safe_prune(jnp.asarray(up), jnp.asarray(lo), 3)), brute)
    assert not all(brute) and sum(brute) >= 3


