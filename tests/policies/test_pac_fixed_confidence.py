"""Auer et al., APE and Track-and-Stop of the pac family against plain numpy loops on the same reward stream, the
characteristic time against hand computations, and the lower-bound metric, caps, cones and costs through a spec."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _pac_loops import ape_numpy, auer_numpy

import mobandit_jax as mb
import mobandit_jax.metrics  # noqa: F401  (importing fills the metrics registry)
import mobandit_jax.policies  # noqa: F401
from mobandit_jax import engine
from mobandit_jax.kernels import pareto_lower_bound as lb
from mobandit_jax.problems.stochastic import make_stochastic
from mobandit_jax.registry import make_policy
from mobandit_jax.types import Context

MEANS = np.array([[0.1, 0.9], [0.9, 0.1], [0.6, 0.6], [0.3, 0.3], [0.5, 0.45]])


def _setup(means, method, sigma=0.5, horizon=100_000, **options):
    inst = make_stochastic(means, noise="gaussian", sigma=sigma, clip=False)
    policy, params, _ = make_policy(method, Context.of(inst, horizon), **options)
    return inst, policy, params


def _keys(n):
    keys = engine.seed_keys(0, np.arange(n))
    return jax.vmap(lambda k: jax.random.fold_in(k, 0))(keys), jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys)


def _run(inst, policy, params, n):
    env, pol = _keys(n)
    return jax.jit(jax.vmap(policy.identify, in_axes=(0, 0, None, None)))(env, pol, inst.params, params), env


def _stream(inst, key_env, n: int):
    """``pull(i, j)``: arm ``i``'s ``j``-th reward on the stream (the calls the methods make), for ``j < n``."""
    one = lambda i, j: inst.env.sample.counter_sampler(key_env, i, j, 0, inst.params)[0]
    K = inst.env.num_arms
    table = np.asarray(jax.vmap(lambda i: jax.vmap(lambda j: one(i, j))(jnp.arange(n)))(jnp.arange(K)), float)
    return lambda i, j: table[i, j]


@pytest.fixture(scope="module")
def compiled():
    """``method -> (inst, policy, params, fn)`` on MEANS with Gaussian noise 0.5: one compiled program per method,
    which every test here reuses with other params (the round cap, delta and APE's k are params)."""
    cache = {}

    def get(method):
        if method not in cache:
            inst, policy, params = _setup(MEANS, method, delta=0.1)
            cache[method] = inst, policy, params, jax.jit(jax.vmap(policy.identify, in_axes=(0, 0, None, None)))
        return cache[method]

    return get


@pytest.mark.parametrize("method, reference", [("auer", auer_numpy), ("ape", ape_numpy)])
def test_auer_and_ape_match_numpy_loops(compiled, method, reference):
    inst, _, params, fn = compiled(method)
    env, pol = _keys(4)
    out = fn(env, pol, inst.params, params)
    for s in range(4):
        P, n = reference(_stream(inst, env[s], 2 * int(np.max(out.pulls[s])) + 10), len(MEANS), 0.1, 0.5)
        assert sorted(np.flatnonzero(np.asarray(out.recommended[s]))) == P
        np.testing.assert_array_equal(np.asarray(out.pulls[s]), n)
    assert np.all(np.asarray(out.stopped))


def test_round_cap_reports_not_stopped_and_k_stops_early(compiled):
    env, pol = _keys(4)
    K = len(MEANS)
    inst, _, params, fn = compiled("ape")
    capped = fn(env, pol, inst.params, params._replace(cap=jnp.asarray(3, jnp.int32)))
    assert not np.any(np.asarray(capped.stopped))
    np.testing.assert_array_equal(np.asarray(capped.pulls).sum(1), K + 2 * 2)  # all arms once, then 2 rounds of 2
    whole = fn(env, pol, inst.params, params)
    _, k2, _ = make_policy("ape", Context.of(inst, 100_000), delta=0.1, k=2)
    early = fn(env, pol, inst.params, k2)
    assert np.all(np.asarray(early.stopped)) and np.all(np.asarray(early.recommended).sum(1) >= 2)
    assert np.all(np.asarray(early.pulls).sum(1) <= np.asarray(whole.pulls).sum(1))
    assert np.asarray(early.pulls).sum() < np.asarray(whole.pulls).sum()
    truth = lb.pareto_mask_np(MEANS)
    assert np.all(np.asarray(early.recommended) <= truth)  # certified arms are Pareto arms on these seeds
    inst, _, params, fn = compiled("auer")
    capped = fn(env, pol, inst.params, params._replace(cap=jnp.asarray(3, jnp.int32)))
    assert not np.any(np.asarray(capped.stopped))
    pulls = np.asarray(capped.pulls)
    assert np.all((pulls >= 1) & (pulls <= 3)) and np.all(pulls.max(1) == 3)


@pytest.mark.parametrize("method", ["auer", "ape"])
def test_seeds_run_in_turn_in_one_lane_give_each_seed_its_own_result(compiled, method):
    """Seven seeds a lane, one after another (a seed's first round drawn over several iterations for APE), alone and
    under a round cap and a budget that stop some of the seeds: every field of every seed bit for bit as alone."""
    inst, policy, params, fn = compiled(method)
    n, per_lane = 16, 7
    env, pol = _keys(n)
    lanes = -(-n // per_lane)
    lane = lambda k: jnp.concatenate([k, jnp.repeat(k[-1:], lanes * per_lane - n, 0)]).reshape(lanes, per_lane, -1)
    env_params = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (per_lane,) + jnp.shape(x)), inst.params)
    in_turn = jax.jit(jax.vmap(policy.identify_in_turn, in_axes=(0, 0, None, None)))
    cap = jnp.asarray(int(np.median(np.asarray(fn(env, pol, inst.params, params).pulls).max(1))), jnp.int32)
    no_budget = params._replace(budget=jnp.asarray(-1.0))  # these pulls cost nothing: no first round is played
    for p, stopped in ((params, 1), (params._replace(cap=cap), None), (no_budget, 0)):
        alone = fn(env, pol, inst.params, p)
        share = np.mean(np.asarray(alone.stopped))
        assert share == stopped if stopped is not None else 0 < share < 1
        turns = jax.tree_util.tree_map(lambda x: np.asarray(x).reshape((lanes * per_lane,) + x.shape[2:])[:n],
                                       in_turn(lane(env), lane(pol), env_params, p))
        for field in alone._fields:
            np.testing.assert_array_equal(np.asarray(getattr(alone, field)), getattr(turns, field), err_msg=field)


@pytest.mark.parametrize("d", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_track_and_stop_seeds_run_in_turn_give_each_seed_its_own_run_in_float64(d):
    """Twelve seeds on three lanes (d = 2 compiled, d = 3 through the host's callback; float64, set globally as the
    callback's thread needs): every seed's pulls, set and stop as run alone (in float32 a seed's run in turn may part
    from its run alone after some rounds: see ``track_and_stop``)."""
    x64 = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        # Bernoulli rewards: 0 or 1 in every program, where a Gaussian draw's last bit follows the program's fusion
        inst = make_stochastic(MEANS if d == 2 else MEANS_3D, noise="bernoulli", dtype=jnp.float64)
        policy, params, _ = make_policy("track_and_stop", Context.of(inst, 100_000), delta=0.1)
        env, pol = _keys(12)
        alone = jax.jit(jax.vmap(policy.identify, in_axes=(0, 0, None, None)))(env, pol, inst.params, params)
        seed_params = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (12,) + x.shape), inst.params)
        turns = jax.jit(lambda e, q, ep, p: policy.identify_in_turn(e, q, ep, p, 3))(env, pol, seed_params, params)
        assert np.ptp(np.asarray(alone.pulls).sum(1)) > 50  # seeds of different lengths: lanes take new seeds apart
        for field in ("recommended", "pulls", "stopped"):
            np.testing.assert_array_equal(np.asarray(getattr(alone, field)), np.asarray(getattr(turns, field)))
    finally:
        jax.config.update("jax_enable_x64", x64)


def tns_numpy(pull, K, delta, sigma):
    """Crepon et al.'s track_and_stop (C-tracking) with the general-dimension cost of the kernel, in float64."""
    n, sums = np.ones(K), np.array([pull(i, 0) for i in range(K)]) / sigma
    w, tracked, reg = np.full(K, 1 / K), np.zeros(K), 0.0
    while True:
        t = n.sum()
        mu = sums / n[:, None]
        if t > K and t * lb.alternative_cost_np(mu, n / t)[0] - math.log(math.log1p(t)) >= math.log(1 / delta):
            return sorted(np.flatnonzero(lb.pareto_mask_np(mu))), n
        _, grad = lb.alternative_cost_np(mu, w)
        reg = max(reg, np.abs(grad).max())
        w = w * np.exp(math.sqrt(math.log(K) / (1 + t)) / max(reg, np.finfo(float).tiny) * grad)
        w /= w.sum()
        tracked += w
        k = int(np.argmin(n)) if np.any(n <= math.sqrt(t) - K / 2) else int(np.argmax(tracked - n))
        sums[k] += pull(k, int(n[k])) / sigma
        n[k] += 1


@pytest.mark.slow
def test_track_and_stop_matches_numpy_loop():
    means = MEANS * 2
    inst, policy, params = _setup(means, "track_and_stop", delta=0.1)
    out, keys = _run(inst, policy, params, 3)
    for s in range(3):
        P, n = tns_numpy(_stream(inst, keys[s], 2 * int(np.max(out.pulls[s])) + 10), len(means), 0.1, 0.5)
        assert sorted(np.flatnonzero(np.asarray(out.recommended[s]))) == P
        # float32 against float64: the same run up to the last few pulls
        assert abs(np.asarray(out.pulls[s]).sum() - n.sum()) <= 0.02 * n.sum() + 2


MEANS_3D = np.array([[0.1, 0.9, 0.3], [0.9, 0.1, 0.2], [0.5, 0.5, 0.9], [0.2, 0.2, 0.2], [0.6, 0.6, 0.1]])


def test_track_and_stop_on_three_objectives_matches_numpy_loop():
    # d = 3 goes through the host callback, under vmap (the batched while-loop), in float64 (set globally: the
    # callback's thread does not see jax.enable_x64()): the same run as the loop, pull for pull. Bernoulli rewards
    # (1/2-sub-Gaussian) are 0 or 1 in every program, where Gaussian draws may differ in their last bit between the
    # run and the stream, which the first Hedge step's tie (the two arms of one alternative, equal weights) turns into
    # another pull. Seeds 1, 3 and 4 of the engine's: on seeds 2 and 5 two alternatives of exactly tied Bernoulli
    # means cost the same up to the last bit of Hedge's exponentials (XLA's against numpy's) and the runs part (at
    # pull 18 on seed 2): a one-ulp change of Hedge's weights changes every seed's run from its first round.
    x64 = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        inst = make_stochastic(MEANS_3D, noise="bernoulli", dtype=jnp.float64)
        policy, params, _ = make_policy("track_and_stop", Context.of(inst, 100_000), delta=0.1)
        env, pol = (k[np.array([1, 3, 4])] for k in _keys(5))
        out = jax.jit(jax.vmap(policy.identify, in_axes=(0, 0, None, None)))(env, pol, inst.params, params)
        assert np.all(np.asarray(out.stopped))
        for s in range(3):
            P, n = tns_numpy(_stream(inst, env[s], int(np.max(out.pulls[s])) + 2), len(MEANS_3D), 0.1, 0.5)
            assert sorted(np.flatnonzero(np.asarray(out.recommended[s]))) == P
            np.testing.assert_array_equal(np.asarray(out.pulls[s]), n)
    finally:
        jax.config.update("jax_enable_x64", x64)


def test_characteristic_time_hand_computed():
    # arm 0 under arm 1 by 1 on both objectives: g(w) = w0 w1 / (w0 + w1) / 2, largest at w = (1/2, 1/2): 1/8
    mu = np.array([[0.0, 0.0], [1.0, 1.0]])
    g, grad = lb.alternative_cost_np(mu, np.array([0.5, 0.5]))
    assert g == pytest.approx(1 / 8)
    np.testing.assert_allclose(grad, [1 / 8, 1 / 8])
    assert lb.characteristic_time(mu)[0] == pytest.approx(8.0, rel=1e-6)
    assert lb.characteristic_time(mu, 0.5)[0] == pytest.approx(2.0, rel=1e-6)
    # two Pareto arms 1 apart on one objective each: remove cost w0 w1 / (w0 + w1) * 1 / 2 as well
    mu = np.array([[0.0, 1.0], [1.0, 0.0]])
    assert lb.characteristic_time(mu)[0] == pytest.approx(8.0, rel=1e-6)
    # an arm tied on one objective with the arm that dominates it: an alternative of cost 0, T* infinite
    assert lb.characteristic_time(np.array([[0.0, 1.0], [1.0, 1.0], [1.0, 0.0]]))[0] == np.inf


@pytest.mark.parametrize("d", [2, 3])
def test_characteristic_time_against_a_grid_over_the_simplex(d):
    mu = np.random.default_rng(d).uniform(0, 1, (3, d))
    a = np.linspace(0.005, 0.99, 80)
    grid = [(x, y, 1 - x - y) for x in a for y in a if 1 - x - y > 0.001]
    best = max(lb.alternative_cost_np(mu, np.array(w))[0] for w in grid)
    # T* is returned at most 1 / (1 - tolerance) above the truth, which 1 / (the grid's best g) bounds from above
    # (up to the grid's spacing)
    assert 0.99 <= lb.characteristic_time(mu)[0] * best <= 1 / (1 - lb.TOLERANCE)


@pytest.mark.parametrize("K", [3, 8])
def test_two_objective_cost_against_every_assignment(K):
    rng = np.random.default_rng(K)
    mus, ws = rng.uniform(0, 3, (10, K, 2)), rng.dirichlet(np.ones(K), 10)
    gj, gradj = jax.jit(jax.vmap(lb.alternative_cost_2d))(jnp.asarray(mus, jnp.float32), jnp.asarray(ws, jnp.float32))
    for mu, w, g_got, grad_got in zip(mus, ws, np.asarray(gj), np.asarray(gradj), strict=False):
        g, grad = lb.alternative_cost_np(mu, w)
        assert g_got == pytest.approx(g, rel=1e-4, abs=1e-6)
        np.testing.assert_allclose(grad_got, grad, rtol=1e-3, atol=1e-5)


def _spec(policies, **env):
    return {"experiment": {"name": "fc", "horizon": 20000, "seeds": 8},
            "env": {"kind": "stochastic", "means": MEANS.tolist(), **env}, "policies": policies}


def test_lower_bound_ratio_under_a_cone_with_bounded_rewards():
    W = np.array([[1.0, 0.2], [0.2, 1.0], [0.7, 0.7]])
    spec = _spec([{"name": "auer", "delta": 0.1}], noise="bernoulli")
    spec["preference"] = {"W": W.tolist()}
    res = mb.run(spec)
    T = lb.characteristic_time(MEANS @ W.T, 0.5 * np.linalg.norm(W, axis=1))[0]
    samples = res.finals["auer|0|samples"].ravel()
    np.testing.assert_allclose(res.finals["auer|0|tau_over_lower_bound"].ravel(), samples / (T * math.log(10)),
                               rtol=2e-3)
    np.testing.assert_allclose(res.finals["auer|0|cost"].ravel(), 0.0)  # this environment's pulls are free
    assert np.mean(res.finals["auer|0|misidentification"]) <= 0.25
    assert np.all(res.finals["auer|0|stopped"] == 1)


def test_bounded_rewards_are_half_sub_gaussian_and_errors_are_one_line():
    bern = make_stochastic(MEANS, noise="bernoulli")
    for method in ("paveba", "auer"):
        make_policy(method, Context.of(bern, 100), delta=0.1, epsilon=0.1)  # no noise scale needed in [0, 1]
    # Naive Elimination's L = ceil(4 ((1 + sqrt 2) sigma / epsilon)^2 log(4 d K (K - 1) / (2 delta))) at sigma = 1/2
    L = make_policy("naive_elimination", Context.of(bern, 100), delta=0.1, epsilon=0.1)[1].L
    assert int(L) == math.ceil(4 * ((1 + math.sqrt(2)) * 0.5 / 0.1) ** 2 * math.log(4 * 2 * 20 / 0.2))
    with pytest.raises(mb.ConfigError, match="track_and_stop.*tracking = 'E'.*'C'.*'D'"):
        mb.run(_spec([{"name": "track_and_stop", "tracking": "E"}], noise="gaussian", sigma=0.3, clip=False))
    with pytest.raises(mb.ConfigError, match="pull"):
        mb.run(_spec([{"name": "ape", "pull": "one"}], noise="bernoulli"))


@pytest.mark.parametrize("d", [3, 4])
def test_cells_give_the_least_add_cost_of_every_assignment(d, monkeypatch):
    # the cells (Crepon et al.'s PCnd) that alternative_cost_np scores beyond MAX_ENUMERATED assignments reach the
    # least cost of all d^P assignments
    monkeypatch.setattr(lb, "MAX_ENUMERATED", 10 ** 6)
    rng = np.random.default_rng(d)
    for _ in range(20):
        mu = rng.uniform(0, 1, (9, d))
        mu[0] = mu.min(0) - 0.1  # under every Pareto arm
        F = np.flatnonzero(lb.pareto_mask_np(mu))
        w = rng.dirichlet(np.ones(9), 2)
        every, _, _ = lb._add_costs_np(mu, w, np.array([0]), F[None], d)
        cells, _, _ = lb._add_costs_cells(mu, w, np.array([0]), F[None], d)
        np.testing.assert_allclose(cells, every, rtol=1e-12)
        assert len(lb._cells(mu[F])) < d ** len(F) or len(F) == 1
