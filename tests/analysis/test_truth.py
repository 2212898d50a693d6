"""Ground truth: the clipped-Gaussian means (closed form against quadrature and the engine's own draws),
and ``truth.json`` / ``Results.truth`` against the functions each metric family scores with."""
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, stats

import mobandit_jax as mb
from mobandit_jax import registry
from mobandit_jax.engine import RESET_STREAM, seed_keys
from mobandit_jax.kernels import cone_optimal_mask
from mobandit_jax.metrics.budgeted import efficiency
from mobandit_jax.metrics.identification import true_pareto_mask
from mobandit_jax.problems.stochastic import clipped_gaussian_mean, feedback_means, make_stochastic
from mobandit_jax.runner import plans
from mobandit_jax.runner import spec as cfg

CASES = [(0.05, 0.5), (0.5, 0.5), (0.0, 0.1), (1.0, 0.1), (0.97, 0.05), (0.3, 2.0), (0.2, 1e-3), (0.6, 0.0)]


def _quadrature(mu, sigma):
    """E[clip(Y, 0, 1)] = int_0^1 y f(y) dy + P(Y >= 1), by numeric integration."""
    if sigma == 0:
        return mu
    dist = stats.norm(mu, sigma)
    inner, _ = integrate.quad(lambda y: y * dist.pdf(y), 0.0, 1.0, epsabs=1e-13, epsrel=1e-13, limit=200,
                              points=[mu] if 0 < mu < 1 else None)
    return inner + dist.sf(1.0)


@pytest.mark.parametrize("mu,sigma", CASES)
def test_clipped_gaussian_mean_matches_quadrature(mu, sigma):
    assert clipped_gaussian_mean(np.array([mu]), sigma)[0] == pytest.approx(_quadrature(mu, sigma), abs=1e-10)


def test_clipped_gaussian_mean_figures():
    m = clipped_gaussian_mean(np.array([0.05, 0.5, 0.95]), 0.5)
    assert m[0] == pytest.approx(0.2199405, abs=1e-6) and m[1] == 0.5 and m[2] == pytest.approx(1 - m[0], abs=1e-12)
    assert clipped_gaussian_mean(np.array([0.3]), 1e6)[0] == pytest.approx(0.5, abs=1e-5)  # mass at 0 and 1
    np.testing.assert_array_equal(clipped_gaussian_mean(np.array([0.0, 0.4, 1.0]), 0.0), [0.0, 0.4, 1.0])


def _draws(inst, n, seed=7):
    key = jax.random.PRNGKey(seed)
    return np.asarray(jax.jit(jax.vmap(lambda j: jax.vmap(lambda a: inst.env.sample(key, a, j, 0, inst.params)[0])(
        jnp.arange(inst.env.num_arms))))(jnp.arange(n)), np.float64)


def test_env_means_are_the_mean_of_the_engines_own_draws():
    mu = np.array([[0.05, 0.5, 0.95], [0.0, 0.2, 1.0]])
    inst = make_stochastic(mu, "gaussian", sigma=0.5)
    np.testing.assert_allclose(inst.means, clipped_gaussian_mean(mu, 0.5), rtol=0, atol=1e-15)
    assert inst.means[0, 0] == pytest.approx(0.22, abs=5e-3)
    n = 400_000
    y = _draws(inst, n)
    se = y.std(0) / np.sqrt(n)
    assert np.all(np.abs(y.mean(0) - inst.means) <= 4.5 * se), (y.mean(0), inst.means)
    assert np.all(np.abs(y.mean(0) - mu)[[0, 0, 1, 1], [0, 2, 0, 2]] > 20 * se[[0, 0, 1, 1], [0, 2, 0, 2]])
    np.testing.assert_array_equal(np.asarray(inst.params.means), mu.astype(np.float32))  # the sampler's locations


def test_reward_stream_is_unchanged():
    """The draws are still clip(mu + sigma N(0, 1), 0, 1) on the same keys: only the truth changed."""
    mu = np.array([[0.05, 0.5], [0.9, 0.3]], np.float32)
    inst = make_stochastic(mu, "gaussian", sigma=0.3)
    key = jax.random.PRNGKey(3)
    for arm, j in [(0, 0), (1, 5), (0, 1234)]:
        k = jax.random.fold_in(jax.random.fold_in(key, arm), j)
        want = jnp.clip(mu[arm] + jnp.float32(0.3) * jax.random.normal(k, (2,), jnp.float32), 0.0, 1.0)
        np.testing.assert_array_equal(inst.env.sample(key, arm, j, 0, inst.params)[0], want)


def test_beta_and_bernoulli_keep_their_means():
    mu = np.array([[0.0, 0.3, 1.0], [0.8, 0.5, 0.2]])
    for noise in ("beta", "bernoulli"):
        np.testing.assert_array_equal(make_stochastic(mu, noise).means, mu)
        np.testing.assert_array_equal(feedback_means(mu, noise, sigma=0.5), mu)


def test_unclipped_gaussian():
    mu = np.array([[0.02, 0.5], [0.99, 0.3]])
    inst = registry.make_env({"kind": "stochastic", "noise": "gaussian", "sigma": 0.5, "clip": False,
                              "means": mu.tolist()}, {})
    np.testing.assert_array_equal(inst.means, mu)
    y = _draws(inst, 200_000)
    assert y.min() < -0.5 and y.max() > 1.5  # not clipped
    assert np.all(np.abs(y.mean(0) - mu) <= 4.5 * y.std(0) / np.sqrt(len(y)))
    assert inst.static_key != make_stochastic(mu, "gaussian", sigma=0.5).static_key
    with pytest.raises(ValueError, match="clip = false applies to noise = 'gaussian' only"):
        make_stochastic(mu, "beta", clip=False)
    with pytest.raises(ValueError, match="clip = 'no' must be true or false"):
        make_stochastic(mu, "gaussian", clip="no")


# ------------------------------------------------------------------------------ truth.json

CSV = "model,accuracy,speed,safety,price\na,0.9,0.2,0.3,2.0\nb,0.6,0.5,0.7,4.0\nc,0.3,0.8,0.6,1.0\nd,0.5,0.4,0.4,8.0\n"
ALL_FAMILIES = """\
[experiment]
name = "truth"
horizon = 30
seeds = 3
record_every = 10

[env]
kind = "table"
path = "models.csv"
arm = "model"
objectives = ["accuracy", "speed", "safety"]
cost = "price"
k = 2

[budget]
rho = 4  # CoPSI pulls every arm in its first phase from rho = 3.5 here

[preference]
W = [[1.0, 0.0, 1.0], [0.0, -1.0, 1.0]]

[[policies]]
name = "prefucb"

[[policies]]
name = "copsi"

[[policies]]
name = "cohv_ucb"
family = "budgeted"

[[policies]]
name = "random_k"
family = "slate"
"""


@pytest.fixture(scope="module")
def all_families(tmp_path_factory):
    folder = tmp_path_factory.mktemp("truth")
    (folder / "models.csv").write_text(CSV)
    (folder / "spec.toml").write_text(ALL_FAMILIES)
    spec = cfg.load(folder / "spec.toml")
    return spec, plans.checked_build(spec), mb.run(folder / "spec.toml", out=folder / "run"), folder / "run"


def test_truth_of_every_family_is_what_its_metrics_use(all_families):
    from mobandit_jax.metrics.slate import ALPHA, best_subset_value

    spec, plan, res, _ = all_families
    inst = plan.truth.points[0][1]
    t = res.truth(0)
    assert t == res.truth({}) and t["setting"] == {} and t["per_seed"] is None
    assert sorted(t["families"]) == ["budgeted", "identification", "preference", "slate"]
    np.testing.assert_array_equal(t["means"], inst.means)
    np.testing.assert_array_equal(t["mean_costs"], inst.mean_costs)
    W = np.asarray(spec.cone)
    pref = t["families"]["preference"]
    assert pref["cone_optimal"] == np.asarray(cone_optimal_mask(jnp.asarray(inst.means, jnp.float32), W)).tolist()
    assert all(isinstance(v, bool) for v in pref["cone_optimal"]) and any(pref["cone_optimal"])
    # the other families solve the problem projected under the cone: S(mu) of PDMOB's Def. 3
    L, U = np.minimum(W, 0).sum(1), np.maximum(W, 0).sum(1)
    proj = (np.asarray(inst.means) @ W.T - L) / (U - L)
    assert t["cone"]["W"] == W.tolist()
    np.testing.assert_allclose(t["cone"]["means"], proj, rtol=1e-12)
    ident = t["families"]["identification"]
    assert ident["pareto"] == true_pareto_mask(proj).tolist() and ident["budget"] == pytest.approx(inst.budget)
    assert ident["pareto"] == np.asarray(cone_optimal_mask(jnp.asarray(inst.means), W)).tolist()
    bud = t["families"]["budgeted"]
    nu = efficiency(proj, inst.mean_costs)
    np.testing.assert_allclose(bud["efficiency"], nu, rtol=1e-6)
    assert bud["optimal"] == (nu == nu.max()).tolist() and bud["nu_star"] == pytest.approx(nu.max(), rel=1e-6)
    sl = t["families"]["slate"]
    means32 = jnp.asarray(proj, jnp.float32)
    assert sl["benchmark"] == "exhaustive" and sl["slate"] is None  # two projected objectives
    assert sl["vstar"] == pytest.approx(float(best_subset_value(means32, 2, jnp.zeros(2))), rel=1e-6)
    assert sl["alpha_vstar"] == pytest.approx(ALPHA * sl["vstar"], rel=1e-6)
    # the run's own per-seed "vstar" metric is the value truth.json names
    key = next(k for k in res.finals if k.endswith("|vstar"))
    np.testing.assert_allclose(res.finals[key], sl["vstar"], rtol=1e-6)


def test_truth_json_is_plain_deterministic_and_read_back(all_families):
    spec, plan, res, folder = all_families
    text = (folder / "truth.json").read_text()
    assert json.loads(text) == {"settings": list(plan.truth)} == {"settings": list(res.truths)}
    again = mb.run(spec)
    assert json.dumps(list(again.truths)) == json.dumps(list(res.truths))
    back = mb.Results.load(folder)
    assert back.truth(0) == res.truth(0)
    with pytest.raises(ValueError, match="no grid setting"):
        back.truth({"front": "concave"})
    with pytest.raises(ValueError, match="out of range"):
        back.truth(3)


def test_gaussian_truth_reaches_the_metrics(tmp_path):
    spec = {"experiment": {"name": "g", "horizon": 40, "seeds": 2, "record_every": 20},
            "env": {"kind": "stochastic", "noise": "gaussian", "sigma": 0.4,
                    "means": [[0.05, 0.9], [0.5, 0.5], [0.95, 0.02]]},
            "sweep": {"env.sigma": [0.05, 0.4]},
            "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]},
            "policies": [{"name": "prefucb", "label": "P"}]}
    plan = plans.checked_build(cfg.validate(json.loads(json.dumps(spec))))
    res = mb.run(spec)
    mu = np.asarray(spec["env"]["means"])
    for i, sigma in enumerate((0.05, 0.4)):
        t = res.truth({"sigma": sigma})
        assert t == res.truth(i)
        np.testing.assert_allclose(t["means"], clipped_gaussian_mean(mu, sigma), rtol=0, atol=1e-15)
        np.testing.assert_array_equal(plan.truth.points[i][1].means, t["means"])
        # the preference metrics (regrets, reward_j) score with the clipped means, not the locations
        (seen, families), = plan.truth.points[i][2]  # one instance: the preference family reads the cone itself
        metric_means = families["preference"][1].means
        np.testing.assert_array_equal(metric_means, np.asarray(t["means"], np.float32))


DTLZ = {"experiment": {"name": "dtlz", "horizon": 20, "seeds": 3, "seed": 5, "record_every": 10},
        "env": {"kind": "dtlz", "d": 2, "n": 12, "k": 2, "sigma": 0.05},
        "sweep": {"env.front": ["concave", "linear"]},
        "policies": [{"name": "random_k", "family": "slate", "label": "R"}]}


def test_per_seed_truth_is_the_environments_own_reset():
    res = mb.run(DTLZ)
    plan = plans.checked_build(cfg.validate(json.loads(json.dumps(DTLZ))))
    for i in range(2):
        t, inst = res.truth(i), plan.truth.points[i][1]
        assert len(t["per_seed"]) == 3 and [e["seed"] for e in t["per_seed"]] == [0, 1, 2]
        keys = seed_keys(5, np.arange(3))
        for s, e in enumerate(t["per_seed"]):
            drawn = inst.env.reset(jax.random.fold_in(keys[s], RESET_STREAM), inst.params).means
            np.testing.assert_array_equal(e["means"], np.asarray(drawn))
            assert e["families"]["slate"]["benchmark"] == "exhaustive" and e["families"]["slate"]["slate"] is None
        # each seed's V* is the one the run's metric recorded for that seed
        np.testing.assert_allclose([e["families"]["slate"]["vstar"] for e in t["per_seed"]],
                                   res.finals[f"R|{i}|vstar"], rtol=1e-6)
        assert len({json.dumps(e["means"]) for e in t["per_seed"]}) == 3  # three instances


def test_per_seed_truth_lists_at_most_16_seeds():
    from mobandit_jax.analysis.truth import TRUTH_SEEDS

    spec = json.loads(json.dumps(DTLZ))
    spec["experiment"]["seeds"] = 20
    spec["sweep"] = {}
    plan = plans.checked_build(cfg.validate(spec))
    assert TRUTH_SEEDS == 16 and len(plan.truth[0]["per_seed"]) == 16
    spec["env"]["instance_seed"] = 3  # one fixed instance: no per-seed truth
    assert plans.checked_build(cfg.validate(spec)).truth[0]["per_seed"] is None


def test_a_table_with_costs_and_a_slate_score_the_clipped_means(tmp_path):
    """The table's cost branch and the slate metrics of a fixed instance read the truth, not the
    sampler's locations: the run's V* is the benchmark of the clipped means."""
    from mobandit_jax.metrics.slate import benchmark_value

    (tmp_path / "t.csv").write_text("arm,a,b,cost\nx,0.05,0.9,1\ny,0.5,0.5,2\nz,0.95,0.02,1\nw,0.3,0.3,1\n")
    env = {"kind": "table", "path": str(tmp_path / "t.csv"), "arm": "arm", "objectives": ["a", "b"],
           "noise": "gaussian", "sigma": 0.4, "k": 2}
    mu = np.array([[0.05, 0.9], [0.5, 0.5], [0.95, 0.02], [0.3, 0.3]])
    truth = clipped_gaussian_mean(mu, 0.4)
    costed = registry.make_env({**env, "cost": "cost"}, {})
    np.testing.assert_array_equal(costed.means, truth)
    spec = {"experiment": {"horizon": 30, "seeds": 2, "record_every": 10}, "env": env,
            "policies": [{"name": "random_k", "family": "slate", "label": "R"}]}
    res = mb.run(spec)
    want = float(benchmark_value(jnp.asarray(truth, jnp.float32), 2, jnp.zeros(2)))
    vstar = [r["mean"] for r in res.records if r["metric"] == "vstar"]
    assert vstar == pytest.approx([want], rel=1e-6)
    located = float(benchmark_value(jnp.asarray(mu, jnp.float32), 2, jnp.zeros(2)))
    assert abs(want - located) > 1e-3  # the two truths differ here, so the check can fail
