"""The fixed-confidence PAC family: closed-form cone/ball tests against brute force, Naive Elimination and
PaVeBa against plain numpy loops on the same reward stream, and the pac metrics against hand computations."""
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import minimize

import mobandit_jax as mb
import mobandit_jax.metrics  # noqa: F401  (importing fills the metrics registry)
from mobandit_jax import engine
from mobandit_jax.kernels import cone_regions as cr
from mobandit_jax.policies import pac
from mobandit_jax.problems.stochastic import make_stochastic
from mobandit_jax.registry import make_metrics, make_policy
from mobandit_jax.types import Context, Env


def theta_cone(deg: float) -> np.ndarray:
    """The 2-D cone of opening ``deg`` degrees symmetric about y = x: inward unit normals of its two rays."""
    a = math.radians(deg)
    lo, hi = math.pi / 4 - a / 2, math.pi / 4 + a / 2
    return np.array([[math.cos(lo + math.pi / 2), math.sin(lo + math.pi / 2)],
                     [math.cos(hi - math.pi / 2), math.sin(hi - math.pi / 2)]])


def random_cone(rng, M: int, d: int) -> np.ndarray:
    """A random solid cone: rows with a positive inner product with a random interior direction."""
    while True:
        u = rng.normal(size=d)
        u /= np.linalg.norm(u)
        W = rng.normal(size=(M, d))
        W += (0.3 + np.abs(rng.normal(size=(M, 1)))) * u  # keeps u strictly inside: w_n . u > 0 mostly
        if np.all(W @ u > 0.05):
            return W


def slsqp_min_norm(W, h):
    """``min ||y|| s.t. W y >= h`` by scipy's SLSQP from several starts (inf if no start is feasible)."""
    best = np.inf
    d = W.shape[1]
    rng = np.random.default_rng(0)
    for start in [np.zeros(d), np.linalg.lstsq(W, h, rcond=None)[0]] + [rng.normal(size=d) for _ in range(3)]:
        out = minimize(lambda y: y @ y, start, jac=lambda y: 2 * y, method="SLSQP",
                       constraints=[{"type": "ineq", "fun": lambda y: W @ y - h, "jac": lambda y: W}],
                       options={"ftol": 1e-14, "maxiter": 500})
        if out.success and np.all(W @ out.x - h >= -1e-8):
            best = min(best, float(np.linalg.norm(out.x)))
    return best


def sphere(d: int, n: int) -> np.ndarray:
    if d == 2:
        a = np.linspace(0, 2 * np.pi, n, endpoint=False)
        return np.stack([np.cos(a), np.sin(a)], 1)
    x = np.random.default_rng(1).normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# ----------------------------------------------------------------------------- closed forms vs brute force


def test_cone_alpha_and_ordering_complexity_of_2d_cones():
    for deg in (30, 45, 60, 90, 120, 135):
        W = theta_cone(deg)
        want = math.sin(math.radians(deg)) if deg < 90 else 1.0
        np.testing.assert_allclose(cr.cone_alpha(W), [want, want], rtol=1e-12)
        assert cr.ordering_complexity(W) == pytest.approx(1 / want)


@pytest.mark.parametrize("M,d", [(2, 2), (3, 2), (3, 3), (5, 3)])
def test_cone_alpha_against_sphere_sampling(M, d):
    rng = np.random.default_rng(M * 10 + d)
    for _ in range(3):
        W = random_cone(rng, M, d)
        z = sphere(d, 20000 if d == 2 else 400000)
        inside = z[np.all(z @ W.T >= 0, axis=1)]
        brute = (inside @ W.T).max(axis=0)
        alpha = cr.cone_alpha(W)
        assert np.all(alpha >= brute - 1e-12)
        np.testing.assert_allclose(alpha, brute, atol=2e-3 if d == 2 else 3e-2)


@pytest.mark.parametrize("M,d", [(2, 2), (3, 2), (2, 3), (4, 3)])
def test_min_norm_against_slsqp(M, d):
    rng = np.random.default_rng(100 + M * 10 + d)
    for _ in range(4):
        W = random_cone(rng, M, d)
        geo = cr.cone_geometry(W, jnp.float32)
        hs = rng.normal(size=(12, M))
        exact = cr.min_norm_point_np(W, hs)[1]
        brute = np.array([slsqp_min_norm(W, h) for h in hs])
        np.testing.assert_allclose(exact, brute, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.sqrt(np.asarray(cr.min_norm_sq(jnp.asarray(hs, jnp.float32), geo))), exact,
                                   rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("M,d", [(2, 2), (3, 3), (4, 2)])
def test_ball_tests_against_dense_sampling(M, d):
    """``ball_dominated`` / ``ball_reaches`` against pairs of points sampled densely in the two balls."""
    rng = np.random.default_rng(7 + M + d)
    W = random_cone(rng, M, d)
    geo = cr.cone_geometry(W, jnp.float64 if jax.config.jax_enable_x64 else jnp.float32)
    K = 5
    mu = rng.normal(size=(K, d))
    r = rng.uniform(0.05, 0.6, K)
    slack = 0.2 * cr.cone_alpha(W)
    dom = np.asarray(cr.ball_dominated(jnp.asarray(mu, geo.W.dtype), jnp.asarray(r, geo.W.dtype), geo))
    reach = np.asarray(cr.ball_reaches(jnp.asarray(mu, geo.W.dtype), jnp.asarray(r, geo.W.dtype),
                                       jnp.asarray(slack, geo.W.dtype), geo))
    # the balls' points: boundary (where extremes of linear functions lie) and interior
    u = sphere(d, 360 if d == 2 else 700)
    radii = np.concatenate([np.ones(len(u)), rng.uniform(0, 1, len(u))])
    unit = np.concatenate([u, u]) * radii[:, None]
    norms = np.linalg.norm(W, axis=1)
    checked = 0
    for j, i in itertools.permutations(range(K), 2):
        # exact margins, then brute force where they are clear of the sampling error
        margin = (W @ (mu[j] - mu[i])) - (r[i] + r[j]) * norms
        xs, ys = mu[i] + r[i] * unit, mu[j] + r[j] * unit
        worst = (ys @ W.T).min(0) - (xs @ W.T).max(0)  # min over pairs of w_n . (y - x), per row
        np.testing.assert_allclose(worst, margin, atol=0.02 * (r[i] + r[j]) * norms.max())
        if np.min(np.abs(margin)) > 0.03:
            assert dom[j, i] == bool(np.all(margin >= 0))
        dist = cr.min_norm_point_np(W, slack - W @ (mu[j] - mu[i]))[1]
        gap = dist - (r[i] + r[j])
        if abs(gap) > 0.05:
            diffs = (ys[:, None, :] - xs[None, ::4 if d == 2 else 20, :]).reshape(-1, d)
            hit = bool(np.any(np.all(diffs @ W.T >= slack, axis=1)))
            assert reach[j, i] == hit == (gap < 0), (j, i, gap)
            checked += 1
        assert reach[j, i] == (gap <= 0) or abs(gap) < 1e-5
    assert checked > 5
    assert not dom.diagonal().any() and not reach.diagonal().any()


def test_cover_distances_and_gaps():
    rng = np.random.default_rng(3)
    W = theta_cone(60)
    mu = rng.normal(size=(6, 2))
    D = cr.cover_distances_np(mu, W)
    for i, j in itertools.product(range(6), repeat=2):
        want = slsqp_min_norm(np.vstack([W, W]), np.concatenate([np.zeros(2), W @ (mu[i] - mu[j])]))
        assert D[i, j] == pytest.approx(want, rel=1e-5, abs=1e-7)
    alpha = cr.cone_alpha(W)
    gaps = cr.cone_gaps_np(mu, W)
    for i in range(6):
        want = max(min(max(0.0, float(W[n] @ (mu[j] - mu[i]))) / alpha[n] for n in range(2)) for j in range(6))
        assert gaps[i] == pytest.approx(want)
    optimal = np.asarray(mb.cone_optimal_mask(mu, W))
    assert np.all(gaps[optimal] == 0) and np.all(gaps[~optimal] > 0)


def test_solid_cone_required():
    with pytest.raises(ValueError, match="empty interior"):
        cr.validate_pac_cone([[1.0, 0.0], [-1.0, 0.0]])


# ----------------------------------------------------------------------------- the methods on one stream


def _context(means, sigma=0.3, W=None, horizon=60, budget=None, env=None):
    inst = make_stochastic(means, noise="gaussian", sigma=sigma, clip=False,
                           dtype=jnp.float64 if jax.config.jax_enable_x64 else jnp.float32)
    inst = inst._replace(budget=budget, env=inst.env if env is None else env)
    return inst, Context.of(inst, horizon, W)


def _reward_table(inst, key_env, n: int) -> np.ndarray:
    """``R[i, j]`` = arm ``i``'s ``j``-th reward on the stream ``key_env`` (the same calls as the methods make)."""
    K = inst.env.num_arms
    one = lambda i, j: inst.env.sample(key_env, i, j, 0, inst.params)[0]
    return np.asarray(jax.vmap(lambda i: jax.vmap(lambda j: one(i, j))(jnp.arange(n)))(jnp.arange(K)))


def _keys(n):
    return jax.vmap(lambda k: jax.random.fold_in(k, 0))(engine.seed_keys(0, np.arange(n)))  # key_env per seed


def _identify(policy, params, inst, keys):
    run = jax.jit(jax.vmap(policy.identify, in_axes=(0, 0, None, None)))
    return run(keys, keys, inst.params, params)


MEANS = np.array([[0.0, 1.0], [1.0, 0.0], [0.55, 0.5], [0.3, 0.3], [-0.2, 1.15], [0.8, 0.35]])


def _empirical_front(mu, W, among):
    K = len(mu)
    out = []
    for i in range(K):
        if among[i] and not any(among[j] and j != i and np.all(W @ (mu[j] - mu[i]) >= 0) for j in range(K)):
            out.append(i)
    return out


def test_naive_elimination_matches_numpy_loop():
    W = theta_cone(60)
    inst, ctx = _context(MEANS, sigma=0.4, W=W)
    policy, params, _ = make_policy("naive_elimination", ctx, L=7)
    keys = _keys(6)
    out = _identify(policy, params, inst, keys)
    for s in range(6):
        R = _reward_table(inst, keys[s], 7)
        mu = R.mean(axis=1)
        want = _empirical_front(mu, W, np.ones(6, bool))
        assert sorted(np.flatnonzero(np.asarray(out.recommended[s]))) == want
    np.testing.assert_array_equal(np.asarray(out.pulls), 7)
    assert np.all(np.asarray(out.stopped))


def test_naive_elimination_L_formula():
    W = theta_cone(45)
    inst, ctx = _context(MEANS, sigma=0.5, W=W)
    _, params, _ = make_policy("naive_elimination", ctx, epsilon=0.2, delta=0.1)
    beta = 1 / math.sin(math.radians(45))
    want = math.ceil(4 * ((1 + math.sqrt(2)) * 0.5 * beta / 0.2) ** 2 * math.log(4 * 2 / (2 * 0.1 / (6 * 5))))
    assert int(params.L) == want


def paveba_reference(R, W, epsilon, delta, sigma, cc, cap, budget=np.inf, cost=0.0, round_radius=False):
    """PaVeBa per seed with Python sets, the reward table ``R[i, j]`` and per-pair region tests."""
    K, _, d = R.shape
    norms = np.linalg.norm(W, axis=1)
    slack = epsilon * cr.cone_alpha(W)
    tiny = 64 * np.finfo(float).eps

    def dist(h):  # min ||y|| s.t. W y >= h over the independent active sets
        best = np.inf
        for k in range(min(W.shape) + 1):
            for S in itertools.combinations(range(len(W)), k):
                if k and np.linalg.matrix_rank(W[list(S)]) < k:
                    continue
                y = np.zeros(d) if not k else W[list(S)].T @ np.linalg.solve(W[list(S)] @ W[list(S)].T, h[list(S)])
                if np.all(W @ y >= h - tiny * (norms * np.linalg.norm(y) + np.abs(h))):
                    best = min(best, float(np.linalg.norm(y)))
        return best

    S, P, U = set(range(K)), set(), set()
    n, sums, t, spent, r = np.zeros(K, int), np.zeros((K, d)), 0, 0.0, np.zeros(K)
    radius = lambda m: np.sqrt(8 * sigma ** 2 / m * np.log(np.pi ** 2 * (d + 1) * K * m ** 2 / (6 * delta))) / cc
    while S and t < cap:
        A = S | U
        if spent + cost * len(A) > budget:
            break
        spent += cost * len(A)
        for i in A:
            sums[i] += R[i, n[i]]
            n[i] += 1
        t += 1
        mu = sums / np.maximum(n, 1)[:, None]
        for i in A:  # the regions of the arms sampled this round; the others keep theirs
            r[i] = radius(t if round_radius else n[i])
        p = mu @ W.T
        reach = lambda j, i: dist(slack - (p[j] - p[i])) <= r[i] + r[j]
        S = {i for i in S if not any(j != i and np.all(p[j] - p[i] >= (r[i] + r[j]) * norms) for j in A)}
        A = S | U
        new = {i for i in S if not any(j != i and reach(j, i) for j in A)}
        P, S = P | new, S - new
        U = {q for q in P if any(reach(q, s) for s in S)}
    stopped = not S
    mu = sums / np.maximum(n, 1)[:, None]
    rec = P if stopped else P | (S & set(_empirical_front(mu, W, np.isin(np.arange(K), list(S | P)))))
    return sorted(rec), n, stopped, spent


@pytest.mark.parametrize("deg,cc,eps,cap,radius", [(60, 8.0, 0.05, 100, "pulls"), (120, 8.0, 0.1, 10, "pulls"),
                                                   (45, 8.0, 0.05, 100, "round")])  # seed 2: 114 pulls, 120 by "pulls"
def test_paveba_matches_numpy_reference(deg, cc, eps, cap, radius):
    """Same stream, float64: identical pulls, returned sets and stop flags (the second case hits the cap)."""
    W = theta_cone(deg)
    with jax.enable_x64(True):
        inst, ctx = _context(MEANS, sigma=0.3, W=W, horizon=cap)
        policy, params, _ = make_policy("paveba", ctx, epsilon=eps, delta=0.1, conf_contraction=cc, radius=radius)
        keys = _keys(5)
        out = _identify(policy, params, inst, keys)
        for s in range(5):
            R = _reward_table(inst, keys[s], cap)
            rec, n, stopped, _ = paveba_reference(R, W, eps, 0.1, 0.3, cc, cap, round_radius=radius == "round")
            assert sorted(np.flatnonzero(np.asarray(out.recommended[s]))) == rec
            np.testing.assert_array_equal(np.asarray(out.pulls[s]), n)
            assert bool(out.stopped[s]) == stopped
        assert len({int(np.sum(out.pulls[s])) for s in range(5)}) > 1  # the seeds differ
        if cap == 10:
            assert 0 < np.sum(np.asarray(out.stopped)) < 5


def test_budget_stops_before_the_round_that_exceeds_it():
    """A pull costs 1: the run stops before the round whose pulls would go over the budget."""
    with jax.enable_x64(True):
        inst, _ = _context(MEANS, sigma=0.3)
        base = inst.env.sample
        costed = Env(sample=lambda k, a, j, t, p: (base(k, a, j, t, p)[0], jnp.ones((), float)), num_arms=6, dim=2)
        _, ctx = _context(MEANS, sigma=0.3, W=theta_cone(90), horizon=200, budget=40.0, env=costed)
        keys = _keys(3)
        policy, params, _ = make_policy("naive_elimination", ctx, L=50)
        out = _identify(policy, params, inst, keys)
        np.testing.assert_array_equal(np.asarray(out.pulls), 6)  # floor(40 / 6) rounds of 6 pulls
        np.testing.assert_allclose(np.asarray(out.spent), 36.0)
        assert not np.any(np.asarray(out.stopped))
        policy, params, _ = make_policy("paveba", ctx, epsilon=0.0, conf_contraction=1.0)
        out = _identify(policy, params, inst, keys)
        for s in range(3):
            R = _reward_table(inst, keys[s], 200)
            rec, n, stopped, spent = paveba_reference(R, theta_cone(90), 0.0, 0.05, 0.3, 1.0, 200, budget=40.0,
                                                      cost=1.0)
            assert sorted(np.flatnonzero(np.asarray(out.recommended[s]))) == rec
            np.testing.assert_array_equal(np.asarray(out.pulls[s]), n)
            assert float(out.spent[s]) == spent <= 40.0 and bool(out.stopped[s]) == stopped


def test_options_are_params_and_errors_are_one_line():
    inst, ctx = _context(MEANS, W=theta_cone(45))
    a = make_policy("paveba", ctx, epsilon=0.05, delta=0.1)
    b = make_policy("paveba", ctx, epsilon=0.2, delta=0.01, conf_contraction=32.0, radius="round")
    assert a[2] == b[2]  # one compiled program for a grid over epsilon, delta, conf_contraction
    assert jax.tree_util.tree_structure(a[1]) == jax.tree_util.tree_structure(b[1])
    c = make_policy("naive_elimination", ctx, epsilon=0.05)
    d = make_policy("naive_elimination", ctx, epsilon=0.3)
    assert c[2] == d[2] and int(c[1].L) > int(d[1].L)
    ctx.noise_sigma = None
    with pytest.raises(ValueError, match="policy 'paveba' needs the reward noise scale sigma"):
        make_policy("paveba", ctx)
    with pytest.raises(ValueError, match="policy 'naive_elimination' needs the reward noise scale sigma"):
        make_policy("naive_elimination", ctx)
    assert int(make_policy("naive_elimination", ctx, L=3)[1].L) == 3  # sigma unused with a given L
    with pytest.raises(ValueError, match="delta"):
        make_policy("naive_elimination", ctx, L=3, delta=1.5)
    ctx.noise_sigma = 0.3
    with pytest.raises(ValueError, match="radius"):
        make_policy("paveba", ctx, radius="arm")


# ----------------------------------------------------------------------------- metrics


def _score(means, W, rec, epsilon, pulls=None, stopped=True):
    ctx = Context.make(len(means), len(means[0]), 10, np.asarray(means, float), W=W)
    mset, mp = make_metrics("pac", ctx)
    K = len(means)
    mask = np.isin(np.arange(K), rec)
    result = pac.PacResult(jnp.asarray(mask), jnp.zeros(()), jnp.asarray(np.ones(K, int) if pulls is None else pulls,
                                                                          jnp.int32),
                           jnp.asarray(stopped), jnp.asarray(epsilon, jnp.float32))
    return dict(zip(mset.names, (float(v) for v in mset.values(mp, jnp.asarray(mask), result)), strict=False)), mset


def test_metrics_hand_computed():
    # VOPy's own test case: arm 3 = (4, 5) dominates all; returned {1, 3}: TP 1 (arm 3), FP 1 -> 2/3
    out, mset = _score([[1, 2], [2, 3], [3, 4], [4, 5]], None, [1, 3], 0.1, pulls=[3, 4, 5, 6])
    assert mset.reduce == ("mean",) * 7
    assert math.isnan(out.pop("tau_over_lower_bound")) and out.pop("cost") == 0.0  # a result without delta: NaN
    assert out == {"samples": 18.0, "misidentification": 1.0, "eps_f1": pytest.approx(2 / 3), "returned": 2.0,
                   "stopped": 1.0}
    means = [[0, 1], [1, 0], [0.5, 0.5], [0.2, 0.2]]  # P* = {0, 1, 2}; Delta_3 = 0.3
    # eps 0.1: TP {0}, FP {3}; arm 1 needs a lift of 1 (from arm 0) or 0.8, arm 2 of 0.5 or 0.42: UC = 2
    assert _score(means, None, [0, 3], 0.1)[0]["eps_f1"] == pytest.approx(2 / 5)
    # eps 0.45: TP {0, 3}; arm 2 is covered by arm 3 (0.3 sqrt 2 = 0.42), arm 1 is not: 4 / 5
    assert _score(means, None, [0, 3], 0.45)[0]["eps_f1"] == pytest.approx(4 / 5)
    exact, _ = _score(means, None, [0, 1, 2], 0.0, stopped=False)
    assert exact["misidentification"] == 0.0 and exact["eps_f1"] == 1.0 and exact["stopped"] == 0.0
    assert _score(means, None, [], 0.1)[0]["eps_f1"] == 0.0
    # a 45-degree cone: arm 3 below the line between 0 and 1 is no longer dominated
    W = theta_cone(45)
    want = np.asarray(mb.cone_optimal_mask(np.asarray(means, float), W))
    out, _ = _score(means, W, list(np.flatnonzero(want)), 0.0)
    assert out["misidentification"] == 0.0 and out["eps_f1"] == 1.0


def test_eps_f1_against_vopy():
    vopy = pytest.importorskip("vopy")  # noqa: F841  (not installed in CI)
    from vopy.order import PolyhedralConeOrder
    from vopy.ordering_cone import OrderingCone
    from vopy.utils.evaluate import calculate_epsilonF1_score

    class Data:
        pass

    from vopy.ordering_cone import ConeTheta2D
    from vopy.utils import get_alpha_vec

    rng = np.random.default_rng(5)
    for M, d in ((2, 2), (3, 3), (5, 3)):
        W = random_cone(rng, M, d)
        np.testing.assert_allclose(cr.cone_alpha(W), get_alpha_vec(W).ravel(), rtol=1e-6, atol=1e-7)
    for deg in (45, 90, 135):
        W = theta_cone(deg)
        np.testing.assert_allclose(W, ConeTheta2D(deg).W, atol=1e-12)
        assert cr.ordering_complexity(W) == pytest.approx(ConeTheta2D(deg).beta)
        data = Data()
        data.out_data = rng.normal(size=(10, 2))
        order = PolyhedralConeOrder(OrderingCone(W))
        truth = order.get_pareto_set(data.out_data)
        for _ in range(5):
            rec = sorted(rng.choice(10, size=rng.integers(1, 6), replace=False).tolist())
            want = calculate_epsilonF1_score(data, order, truth, rec, 0.3)
            assert _score(data.out_data, W, rec, 0.3)[0]["eps_f1"] == pytest.approx(want, abs=1e-6)


# ----------------------------------------------------------------------------- through a spec


def _spec(preference=None):
    spec = {"experiment": {"name": "pac", "horizon": 60, "seeds": 6},
            "env": {"kind": "stochastic", "noise": "gaussian", "sigma": 0.3, "clip": False,
                    "means": MEANS.tolist()},
            "policies": [{"name": "paveba", "conf_contraction": 4.0, "sweep": {"epsilon": [0.05, 0.2]}},
                         {"name": "naive_elimination", "L": 7}]}
    if preference is not None:
        spec["preference"] = {"W": preference.tolist()}
    return spec


def test_run_spec_matches_direct_identify():
    res = mb.run(_spec())
    assert res.metrics() == ["samples", "misidentification", "eps_f1", "returned", "stopped", "tau_over_lower_bound",
                             "cost"]
    inst, ctx = _context(MEANS, sigma=0.3, horizon=60)
    policy, params, _ = make_policy("naive_elimination", ctx, L=7)
    out = _identify(policy, params, inst, _keys(6))
    truth = np.asarray(mb.cone_optimal_mask(MEANS, np.eye(2)))
    mis = np.any(np.asarray(out.recommended) != truth, axis=1)
    np.testing.assert_allclose(res.finals["naive_elimination|0|misidentification"].ravel(), mis)
    np.testing.assert_allclose(res.finals["naive_elimination|0|samples"].ravel(), 42.0)


def test_run_spec_with_a_cone():

    W = theta_cone(60)
    res = mb.run(_spec(W))
    inst, ctx = _context(MEANS, sigma=0.3, W=W, horizon=60)
    policy, params, _ = make_policy("paveba", ctx, epsilon=0.05, conf_contraction=4.0)
    out = _identify(policy, params, inst, _keys(6))
    np.testing.assert_allclose(res.finals["paveba|0|samples"].ravel(), np.asarray(out.pulls).sum(1))


def test_grid_over_env_and_options_is_one_program():
    """Two noise scales x two epsilons of PaVeBa share one compiled group (the sampler counts by the env's code)."""
    from mobandit_jax.runner import plans
    from mobandit_jax.runner import spec as cfg

    spec = _spec(theta_cone(60))
    spec["sweep"] = {"env.sigma": [0.2, 0.4]}
    plan = plans.build(cfg.validate(spec))
    assert sorted((g.label, len(g.params)) for g in plan.groups) == [("naive_elimination", 2), ("paveba", 4)]
