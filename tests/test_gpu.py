"""On the GPU backend, when there is one (marked ``gpu``; skipped elsewhere): the KL-UCB kernel
against float64 bisection, and a PrefUCB run on the GPU against the same run on the CPU."""
import jax
import numpy as np
import pytest

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(jax.default_backend() != "gpu",
                                 reason="no GPU backend (jax.default_backend() is not gpu)")]


def test_klucb_on_gpu_matches_float64_bisection():
    from mobandit_jax import klucb_upper
    from mobandit_jax.bench.reference.prefucb_numpy import klucb_upper_numpy

    rng = np.random.default_rng(0)
    p = rng.random(100_000).astype(np.float32)
    level = np.exp(rng.uniform(np.log(1e-6), np.log(10), p.size)).astype(np.float32)
    ours = np.asarray(jax.device_put(klucb_upper(p, level), jax.devices("cpu")[0]))
    assert klucb_upper(p, level).devices() == {jax.devices()[0]}
    np.testing.assert_allclose(ours, klucb_upper_numpy(p.astype(np.float64), level.astype(np.float64), iters=60),
                               atol=2e-6)


def test_prefucb_regret_on_gpu_matches_the_cpu_run():
    from mobandit_jax import batch, make_run, seed_keys
    from mobandit_jax.engine import RunParams, stack_params
    from mobandit_jax.metrics.preference import preference_metrics, preference_truth
    from mobandit_jax.policies.preference import ConeParams, prefucb
    from mobandit_jax.problems.stochastic import make_stochastic

    means = np.random.default_rng(1).uniform(0.05, 0.95, size=(12, 3))
    W = np.array([[1.0, 0.0, 1.0], [0.0, -1.0, 1.0]], np.float32)
    inst = make_stochastic(means)
    params = stack_params([RunParams(inst.params, ConeParams(W), preference_truth(means, W), np.float32(np.inf))])
    run = jax.jit(batch(make_run(inst.env, prefucb(12, 3), preference_metrics(3), 400, 400, budgeted=False)))
    keys = seed_keys(0, np.arange(256))
    gpu = jax.device_get(run(params, keys))
    with jax.default_device(jax.devices("cpu")[0]):
        cpu = jax.device_get(run(params, keys))
    for name in gpu:
        a, b = np.asarray(gpu[name], np.float64).ravel(), np.asarray(cpu[name], np.float64).ravel()
        se = np.sqrt((a.var() + b.var()) / a.size) + 1e-9
        assert abs(a.mean() - b.mean()) <= 4 * se, name
        assert np.mean(a == b) > 0.5, name  # same random streams: most seeds play identically


def test_cone_projections_and_a_runs_own_products_are_float32_on_gpu_not_tf32():
    """JAX's default GPU precision multiplies float32 matrices in TF32 (about 1e-3 relative); the kernels'
    projections and every product traced inside a run (``engine.full_precision_dots``) are float32."""
    from mobandit_jax.engine import full_precision_dots
    from mobandit_jax.kernels import normalized_projections

    rng = np.random.default_rng(3)
    r = rng.random((4096, 7)).astype(np.float32)
    W = rng.normal(size=(5, 7)).astype(np.float32)
    W64 = W.astype(np.float64)
    low, high = np.minimum(W64, 0).sum(1), np.maximum(W64, 0).sum(1)
    exact = (r.astype(np.float64) @ W64.T - low) / (high - low)
    np.testing.assert_allclose(np.asarray(normalized_projections(r, W)), exact, atol=5e-6)
    plugin_product = jax.jit(full_precision_dots(lambda a, b: a @ b))  # a user's own `@`, as a run traces it
    np.testing.assert_allclose(np.asarray(plugin_product(r, W.T)), r.astype(np.float64) @ W64.T, atol=1e-5)
