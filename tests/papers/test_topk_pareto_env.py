"""DTLZ top-k instances of Gutowski et al. ("Synthetic Environments"): geometry, counts, streams, errors."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mobandit_jax import registry
from mobandit_jax.problems import dtlz


def _instance(front, d, n, key=0):
    p = dtlz.make_params(front, d, 0.05, jnp.zeros((n, d)))
    k = jax.random.PRNGKey(key)
    return np.asarray(dtlz.draw_means(k, n, d, p), np.float64), dtlz.front_membership(k, n)


def _non_dominated_brute(x):
    n = len(x)
    return all(not (np.all(x[j] >= x[i]) and np.any(x[j] > x[i])) for i in range(n) for j in range(n) if i != j)


@pytest.mark.parametrize("d,n", [(2, 36), (3, 60), (5, 150), (2, 12)])
def test_counts_and_distractor_box(d, n):
    means, front = _instance("concave", d, n, key=d)
    assert front.sum() == max(10, math.floor(0.35 * n)) == dtlz.n_front_arms(n)
    assert means.shape == (n, d)
    dom = means[~front]
    assert np.all(dom >= 0) and np.all(dom <= 0.3)


@pytest.mark.parametrize("d", [2, 3, 4])
@pytest.mark.parametrize("front,power", [("concave", 2.0), ("convex", 4.0), ("clusters", 2.0)])
def test_front_geometry_and_mutual_non_dominance(front, power, d):
    means, is_front = _instance(front, d, 60, key=7 + d)
    f = means[is_front]
    np.testing.assert_allclose(np.sum(f**power, axis=1), 1.0, rtol=2e-5)
    assert _non_dominated_brute(f)


def test_linear_front_scale_and_clip():
    for d in (2, 3, 5):
        means, is_front = _instance("linear", d, 60, key=d)
        f = means[is_front]
        s = min(0.45 * d, 2.5)
        assert np.all(f >= 0.01 - 1e-7) and np.all(f <= 1 + 1e-7)
        inside = np.all((f > 0.0100001) & (f < 0.9999999), axis=1)  # untouched by the clip
        np.testing.assert_allclose(f[inside].sum(axis=1), s, rtol=2e-5)


def test_clusters_first_angle_support_d2():
    means, is_front = _instance("clusters", 2, 200, key=3)
    theta = np.arctan2(means[is_front, 1], means[is_front, 0])
    in_support = (theta <= math.pi / 5 + 1e-5) | (theta >= 3 * math.pi / 10 - 1e-5)
    assert np.all(in_support)
    assert 0 < np.mean(theta <= math.pi / 5) < 1  # both clusters populated


def test_reset_draws_per_seed_instances_paired_by_env_key():
    inst = registry.make_env({"kind": "dtlz", "d": 2, "n": 36, "k": 3, "sigma": 0.05, "front": "convex"})
    assert inst.env.reset is not None and inst.slate_size == 3
    np.testing.assert_array_equal(inst.ref, np.zeros(2))
    k1, k2 = jax.random.PRNGKey(1), jax.random.PRNGKey(2)
    a = inst.env.reset(k1, inst.params).means
    np.testing.assert_array_equal(a, inst.env.reset(k1, inst.params).means)
    assert not np.allclose(a, inst.env.reset(k2, inst.params).means)
    expected = dtlz.draw_means(dtlz.instance_key_for_env_key(k1), 36, 2, inst.params)
    np.testing.assert_array_equal(a, expected)


def test_fixed_instance_seed_has_no_reset_and_is_reproducible():
    sec = {"kind": "dtlz", "d": 3, "n": 60, "k": 4, "sigma": 0.035, "front": "linear", "instance_seed": 5}
    a, b = registry.make_env(sec), registry.make_env(sec)
    assert a.env.reset is None
    np.testing.assert_array_equal(a.means, b.means)
    assert not np.allclose(a.means, registry.make_env({**sec, "instance_seed": 6}).means)


def test_sample_is_pure_clipped_and_unbiased_inside():
    inst = registry.make_env({"kind": "dtlz", "d": 2, "n": 12, "k": 3, "sigma": 0.05, "front": "concave",
                       "instance_seed": 0})
    key = jax.random.PRNGKey(0)
    r1, c1 = inst.env.sample(key, 3, 7, 0, inst.params)
    r2, _ = inst.env.sample(key, 3, 7, 99, inst.params)
    np.testing.assert_array_equal(r1, r2)  # a function of (key, arm, pull), not of the round
    assert float(c1) == 0.0
    draws = jax.vmap(lambda j: inst.env.sample(key, 3, j, 0, inst.params)[0])(jnp.arange(4000))
    assert np.all((np.asarray(draws) >= 0) & (np.asarray(draws) <= 1))
    mu = inst.means[3]
    inner = (mu > 0.2) & (mu < 0.8)
    np.testing.assert_allclose(np.asarray(draws).mean(0)[inner], mu[inner], atol=4 * 0.05 / np.sqrt(4000))
    np.testing.assert_allclose(np.asarray(draws).std(0)[inner], 0.05, rtol=0.1)


@pytest.mark.parametrize("override,msg", [
    ({"k": 40}, "k \\(slate size\\)"),
    ({"k": 0}, "k \\(slate size\\)"),
    ({"sigma": -0.1}, "sigma must be"),
    ({"front": "wavy"}, "unknown front 'wavy'"),
    ({"n": 5}, "n must be"),
    ({"d": 1}, "d must be"),
])
def test_invalid_input_names_the_value(override, msg):
    sec = {"kind": "dtlz", "d": 2, "n": 36, "k": 3, "sigma": 0.05, "front": "concave", **override}
    with pytest.raises(ValueError, match=msg):
        registry.make_env(sec)


def test_unknown_key_rejected():
    with pytest.raises(KeyError, match="unknown key"):
        registry.make_env({"kind": "dtlz", "d": 2, "n": 36, "k": 3, "noise": 0.1})
