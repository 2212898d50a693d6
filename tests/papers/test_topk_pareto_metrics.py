"""Slate metrics of Gutowski et al.: V* enumeration and greedy G* against moocore brute force, per-round values."""
import itertools
import math

import jax
import jax.numpy as jnp
import moocore
import numpy as np
import pytest

from mobandit_jax import registry
from mobandit_jax.metrics import slate as ms
from mobandit_jax.problems import dtlz
from mobandit_jax.runner import plans
from mobandit_jax.types import Context


def _hv(points):
    pts = np.asarray(points, np.float64)
    return moocore.hypervolume(pts, ref=np.zeros(pts.shape[1]), maximise=True)


def _instance(front, d, n, key):
    p = dtlz.make_params(front, d, 0.05, jnp.zeros((n, d)))
    return np.asarray(dtlz.draw_means(jax.random.PRNGKey(key), n, d, p), np.float64)


@pytest.mark.parametrize("front,key", [("concave", 0), ("linear", 1), ("clusters", 2)])
def test_vstar_enumeration_matches_moocore_brute_force(front, key):
    means = _instance(front, 2, 14, key)
    brute = max(_hv(means[list(s)]) for s in itertools.combinations(range(14), 3))
    assert float(ms.best_subset_value(means, 3, np.zeros(2), chunk=100)) == pytest.approx(brute, rel=1e-5)


@pytest.mark.parametrize("front,key,k", [("concave", 0, 3), ("linear", 1, 4), ("clusters", 2, 2), ("concave", 3, 1),
                                         ("clusters", 4, 9)])
def test_vstar_dynamic_program_matches_moocore_brute_force(front, key, k):
    """The d = 2 dynamic program (used beyond the enumeration limit) against moocore over every k-subset, with
    dominated arms, arms at the reference point and k beyond the front's size among them."""
    means = _instance(front, 2, 12, key)
    means[0] = means[1] * 0.9  # a dominated arm
    means[2] = [0.0, means[2, 1]]  # an arm on the reference point's boundary
    brute = max(_hv(means[list(s)]) for s in itertools.combinations(range(12), k))
    assert float(ms.best_subset_value_2d(means, k, np.zeros(2))) == pytest.approx(brute, rel=1e-5)


def test_vstar_beyond_the_enumeration_limit_is_the_dynamic_programs():
    """256 arms, k = 3 (C(256, 3) subsets, past the enumeration limit): 16 on a concave front, 240 under it; V* is
    the best 3 of the 16 by moocore."""
    rng = np.random.default_rng(5)
    front = _instance("concave", 2, 16, 5)
    under = front[rng.integers(0, 16, 240)] * rng.uniform(0.3, 0.95, (240, 1))
    means = np.concatenate([under[:100], front, under[100:]])
    assert math.comb(256, 3) > ms.MAX_ENUMERATION_SUBSETS
    value = float(ms.benchmark_value(means, 3, np.zeros(2)))
    brute = max(_hv(front[list(s)]) for s in itertools.combinations(range(16), 3))
    assert value == pytest.approx(brute, rel=1e-5)


def test_subset_table_is_all_combinations():
    t = ms.subset_table(7, 3)
    assert t.shape == (math.comb(7, 3), 3)
    assert {tuple(r) for r in t} == set(itertools.combinations(range(7), 3))
    with pytest.raises(ValueError, match="exceeds"):
        ms.subset_table(200, 6)


def test_greedy_benchmark_matches_numpy_greedy_with_moocore():
    means = _instance("concave", 3, 30, 4)
    chosen = []
    for _ in range(4):
        base = _hv(means[chosen]) if chosen else 0.0
        gains = [(-np.inf if i in chosen else _hv(means[chosen + [i]]) - base) for i in range(30)]
        chosen.append(int(np.argmax(gains)))
    assert sorted(np.asarray(ms.greedy_subset(means, 4, np.zeros(3))).tolist()) == sorted(chosen)
    assert float(ms.greedy_value(means, 4, np.zeros(3))) == pytest.approx(_hv(means[chosen]), rel=1e-5)
    # Fact 1: HV(G*) >= (1 - 1/e) V*, and V* >= HV(G*) (brute force on a smaller instance).
    small = means[:12]
    vstar = max(_hv(small[list(s)]) for s in itertools.combinations(range(12), 4))
    g = float(ms.greedy_value(small, 4, np.zeros(3)))
    assert ms.ALPHA * vstar <= g <= vstar + 1e-6


def test_metric_step_prepare_and_reducers():
    inst = registry.make_env({"kind": "dtlz", "d": 2, "n": 12, "k": 3, "sigma": 0.05, "front": "concave"})
    ctx = Context.of(inst, 10)
    mset, mp = registry.make_metrics("slate", ctx)
    assert mset.names == ("hv_last100", "alpha_regret", "alpha_regret_pos", "vstar")
    assert mset.reduce == ("last100", "sum", "sum", "mean")
    env_params = inst.env.reset(jax.random.PRNGKey(9), inst.params)
    mp2 = jax.jit(mset.prepare)(mp, env_params)
    means = np.asarray(env_params.means, np.float64)
    vstar = max(_hv(means[list(s)]) for s in itertools.combinations(range(12), 3))
    assert float(mp2["vstar"]) == pytest.approx(vstar, rel=1e-5)
    action = jnp.array([0, 5, 7], jnp.int32)
    hv, reg, pos, v = mset.values(mp2, action, None)
    assert float(hv) == pytest.approx(_hv(means[[0, 5, 7]]), rel=1e-5)
    assert float(reg) == pytest.approx((1 - 1 / math.e) * vstar - _hv(means[[0, 5, 7]]), abs=1e-5)
    assert float(pos) == pytest.approx(max(float(reg), 0.0), abs=1e-7)
    assert float(v) == pytest.approx(vstar, rel=1e-5)


def test_metrics_need_a_slate_size():
    ctx = Context.make(num_arms=5, dim=2, horizon=10, means=np.zeros((5, 2)))
    with pytest.raises(ValueError, match="slate size"):
        registry.make_metrics("slate", ctx)


def test_engine_run_uses_each_seeds_instance_for_vstar(tmp_path):
    """Through the engine: reset draws the seed's instance, prepare computes its V* inside the run."""
    from mobandit_jax import engine
    from mobandit_jax.runner import spec as cfg

    spec = cfg.validate({
        "experiment": {"horizon": 30, "seeds": 2, "record_every": 10, "setting": {"d": 2}},
        "env": {"kind": "dtlz", "d": 2, "n": 12, "k": 3, "sigma": 0.05, "front": "clusters"},
        "policies": [{"name": "random_k", "family": "slate", "label": "RandomK"}],
    })
    plan = plans.build(spec)
    g = plan.groups[0]
    out = jax.jit(engine.batch(g.run))(engine.stack_params(g.params), engine.seed_keys(0, [0, 1]))
    vstar = np.asarray(out["vstar"])[0, :, -1] / 30  # cumulative sum of a per-round constant
    for s in range(2):
        key_reset = jax.random.fold_in(engine.seed_keys(0, [s])[0], engine.RESET_STREAM)
        means = np.asarray(registry.make_env(spec.env).env.reset(key_reset, g.params[0].env).means, np.float64)
        brute = max(_hv(means[list(c)]) for c in itertools.combinations(range(12), 3))
        assert vstar[s] == pytest.approx(brute, rel=1e-4)
    assert abs(vstar[0] - vstar[1]) > 1e-4  # two seeds, two instances
