"""Auer et al., APE and Track-and-Stop of the pac family against plain numpy loops on the same reward stream, the
characteristic time against hand computations, and the lower-bound metric, caps, cones and costs through a spec."""
import math

import numpy as np
import pytest
import jax
import jax.numpy as jnp

import mobandit_jax as mb
from mobandit_jax import engine
from mobandit_jax.kernels import pareto_lower_bound as lb
import mobandit_jax.metrics  # noqa: F401  (importing fills the metrics registry)
import mobandit_jax.policies  # noqa: F401
from mobandit_jax.problems.stochastic import make_stochastic
from mobandit_jax.registry import make_policy
from mobandit_jax.types import Context

MEANS = np.array([[0.1, 0.9], [0.9, 0.1], [0.6, 0.6], [0.3, 0.3], [0.5, 0.45]])


def _setup(means, method, sigma=0.5, horizon=100_000, **options):
    inst = make_stochastic(means, noise="gaussian", sigma=sigma, clip=False)
    policy, params, _ = make_policy(method, Context.of(inst, horizon), **options)
    return inst, policy, params


def _run(inst, policy, params, n):
    keys = engine.seed_keys(0, np.arange(n))
    env, pol = jax.vmap(lambda k: jax.random.fold_in(k, 0))(keys), jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys)
    return jax.jit(jax.vmap(policy.identify, in_axes=(0, 0, None, None)))(env, pol, inst.params, params), env


def _stream(inst, key_env):
    """``pull(i, j)``: arm ``i``'s ``j``-th reward on the stream (the calls the methods make)."""
    return lambda i, j: np.asarray(inst.env.sample(key_env, i, j, 0, inst.params)[0], float)


def _radius(n, delta, sigma):
    c = math.log(1 / delta) / 2 + max(math.log(math.log(1 / delta) / 2), 0.0)
    ll = np.log1p(np.log(n))
    return sigma * np.sqrt(2 * (2 * c + ll[:, None] + ll[None, :]) * (1 / n[:, None] + 1 / n[None, :]))


def _M(mu):
    return np.max(mu[:, None, :] - mu[None, :, :], -1)


def auer_numpy(pull, K, delta, sigma):
    """Algorithm 1 of Auer et al. as linear_psi runs it (every test of a step on the step's first A)."""
    n, sums = np.zeros(K), np.zeros((K, 2))
    A, P = list(range(K)), []
    while A:
        for a in A:
            sums[a] += pull(a, int(n[a]))
            n[a] += 1
        mu = sums / np.maximum(n, 1)[:, None]
        beta = _radius(np.maximum(n, 1), delta, sigma)
        M = _M(mu)
        A = [i for i in A if not any(-M[i, j] > beta[i, j] for j in A)]  # m(i, j) = min_n (mu_jn - mu_in) = -M(i, j)
        P1 = [i for i in A if all(M[i, j] > beta[i, j] for j in A if j != i)]
        P2 = [i for i in P1 if all(M[j, i] > beta[i, j] for j in A if j not in P1)]
        A = [i for i in A if i not in P2]
        P += P2
    return sorted(P), n


def ape_numpy(pull, K, delta, sigma):
    """APE as linear_psi runs it (both b_t and c_t pulled)."""
    n, sums = np.ones(K), np.array([pull(i, 0) for i in range(K)])
    while True:
        mu = sums / n[:, None]
        beta = _radius(n, delta, sigma)
        M = _M(mu)
        mm = np.min(mu[None, :, :] - mu[:, None, :], -1)  # [i, j] = min_n (mu_jn - mu_in)
        off = ~np.eye(K, dtype=bool)
        h = np.where(off, M - beta, np.inf).min(1)
        g = np.where(off, mm - beta, -np.inf).max(1)
        dom = np.array([[j != i and np.all(mu[j] >= mu[i]) and np.any(mu[j] > mu[i]) for j in range(K)]
                        for i in range(K)])
        S = ~dom.any(1)
        z1 = np.min(np.where(S, h, np.inf))
        z2 = np.min(np.where(S, np.inf, np.maximum(h, g)))
        if z1 >= 0 and z2 >= 0:
            return sorted(np.flatnonzero(S)), n
        score = np.where(h > 0, -np.inf, np.where(off, M + beta.T, np.inf).min(1))
        b = int(np.argmax(score))
        c = int(np.argmin(np.where(off[b], M[b] - beta[b], np.inf)))
        for k in (b, c):
            sums[k] += pull(k, int(n[k]))
            n[k] += 1


@pytest.mark.parametrize("method, reference", [("auer", auer_numpy), ("ape", ape_numpy)])
def test_auer_and_ape_match_numpy_loops(method, reference):
    inst, policy, params = _setup(MEANS, method, delta=0.1)
    out, keys = _run(inst, policy, params, 4)
    for s in range(4):
        P, n = reference(_stream(inst, keys[s]), len(MEANS), 0.1, 0.5)
        assert sorted(np.flatnonzero(np.asarray(out.recommended[s]))) == P
        np.testing.assert_array_equal(np.asarray(out.pulls[s]), n)
    assert np.all(np.asarray(out.stopped))


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
        w = w * np.exp(math.sqrt(math.log(K)) / math.sqrt(1 + t) / reg * grad)
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
        P, n = tns_numpy(_stream(inst, keys[s]), len(means), 0.1, 0.5)
        assert sorted(np.flatnonzero(np.asarray(out.recommended[s]))) == P
        # float32 against float64: the same run up to the last few pulls
        assert abs(np.asarray(out.pulls[s]).sum() - n.sum()) <= 0.02 * n.sum() + 2


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


def test_two_objective_cost_against_every_assignment():
    rng = np.random.default_rng(3)
    for _ in range(15):
        K = int(rng.integers(3, 10))
        mu, w = rng.uniform(0, 3, (K, 2)), rng.dirichlet(np.ones(K))
        g, grad = lb.alternative_cost_np(mu, w)
        gj, gradj = lb.alternative_cost_2d(jnp.asarray(mu, jnp.float32), jnp.asarray(w, jnp.float32))
        assert float(gj) == pytest.approx(g, rel=1e-4, abs=1e-6)
        np.testing.assert_allclose(np.asarray(gradj), grad, rtol=1e-3, atol=1e-5)


def _spec(policies, **env):
    return {"experiment": {"name": "fc", "horizon": 20000, "seeds": 8},
            "env": {"kind": "stochastic", "means": MEANS.tolist(), **env}, "policies": policies}


def test_lower_bound_ratio_and_bounded_rewards():
    res = mb.run(_spec([{"name": "ape", "delta": 0.1}, {"name": "paveba", "epsilon": 0.05, "delta": 0.1}],
                       noise="bernoulli"))
    T = lb.characteristic_time(MEANS, 0.5)[0]
    for label in ("ape", "paveba"):
        samples = res.finals[f"{label}|0|samples"].ravel()
        ratio = res.finals[f"{label}|0|tau_over_lower_bound"].ravel()
        np.testing.assert_allclose(ratio, samples / (T * math.log(10)), rtol=2e-3)
        np.testing.assert_allclose(res.finals[f"{label}|0|cost"].ravel(), 0.0)  # this environment's pulls are free


def test_round_cap_reports_not_stopped_and_k_stops_early():
    spec = _spec([{"name": "auer", "delta": 0.01}, {"name": "ape", "label": "ape2", "k": 2, "delta": 0.01},
                  {"name": "ape", "delta": 0.01}], noise="gaussian", sigma=0.5, clip=False)
    spec["experiment"]["horizon"] = 3
    res = mb.run(spec)
    assert np.all(res.finals["auer|0|stopped"] == 0)
    spec["experiment"]["horizon"] = 100_000
    res = mb.run(spec)
    assert np.all(res.finals["ape2|0|stopped"] == 1)
    assert np.mean(res.finals["ape2|0|samples"]) < np.mean(res.finals["ape|0|samples"])


def test_cone_and_costs_and_errors():
    W = [[1.0, 0.2], [0.2, 1.0], [0.7, 0.7]]
    spec = _spec([{"name": "auer", "delta": 0.1}, {"name": "ape", "delta": 0.1}], noise="gaussian", sigma=0.3,
                 clip=False)
    spec["preference"] = {"W": W}
    res = mb.run(spec)
    assert np.mean(res.finals["ape|0|misidentification"]) <= 0.25
    spec["policies"] = [{"name": "track_and_stop"}]
    with pytest.raises(mb.ConfigError, match="track_and_stop.*2 objectives.*3"):
        mb.run(spec)
    with pytest.raises(mb.ConfigError, match="pull"):
        mb.run(_spec([{"name": "ape", "pull": "one"}], noise="bernoulli"))
