"""Precision: ``spent`` and the cumulative metrics are summed in the default float dtype (float64 under
``--x64``, end to end into ``curves.npz``); float32 sums of horizons above ``engine.COMPENSATED_HORIZON``
are compensated. The x64 parts run in a subprocess: ``jax_enable_x64`` is global state."""
import json
import math
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
from _tiny_spec import tiny_spec

from mobandit_jax import engine
from mobandit_jax.policies.budgeted import uniform
from mobandit_jax.types import Env, Metric, MetricSet

ROUNDS = 10 ** 6


def relative_errors(horizon: int = ROUNDS, record_every: int = ROUNDS // 4) -> dict:
    """The largest relative error, over the checkpoints, of ``reward`` (a metric) and ``spent`` of a round
    robin over 2 arms whose reward and cost are ``0.1`` (arm 0) and ``0.11`` (arm 1) every round, against
    the exactly rounded sums (``math.fsum``) of the same per-round values; and the dtype of the sums."""
    dtype = engine.float_dtype()
    values = np.array([0.1, 0.11], dtype)  # the per-round values, as the engine's dtype holds them

    def sample(key, arm, pull_index, t, params):
        value = jnp.asarray(values)[arm]
        return value[None], value

    env = Env(sample, num_arms=2, dim=1)
    metrics = MetricSet((Metric("reward", "sum"),), lambda mparams, action, obs: {"reward": obs.reward[0]})
    run = engine.make_run(env, uniform(2), metrics, horizon, record_every, budgeted=False)
    out = jax.device_get(jax.jit(run)(engine.RunParams(None, None, None, jnp.inf), jax.random.PRNGKey(0)))
    ends = engine.checkpoint_rounds(horizon, record_every)
    exact = np.array([math.fsum(np.resize(values.astype(np.float64), n)) for n in ends])
    return {"dtype": str(out["reward"].dtype), "spent_dtype": str(out["spent"].dtype),
            "reward": float(np.max(np.abs(out["reward"] - exact) / exact)),
            "spent": float(np.max(np.abs(out["spent"] - exact) / exact))}


X64 = """
import json, sys
import jax
jax.config.update("jax_enable_x64", True)
import numpy as np
import test_precision
from mobandit_jax.cli import main

spec, out = sys.argv[1:]
assert main(["run", spec, "--out", out, "--quiet", "--x64"]) == 0
with np.load(out + "/curves.npz") as z, np.load(out + "/finals.npz") as f:
    dtypes = sorted({str(z[k].dtype) for k in z.files if k.endswith(("regret_indicator", "spent"))} |
                    {str(f[k].dtype) for k in f.files})
print(json.dumps({**test_precision.relative_errors(), "files": dtypes}))
"""


def test_x64_sums_in_float64_end_to_end(tmp_path):
    here = os.path.dirname(os.path.abspath(__file__))  # this module, and tests/ for the shared helpers
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.path.dirname(here), os.environ.get("PYTHONPATH", "")]),
           "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", X64, str(tiny_spec(tmp_path / "tiny.toml")), str(tmp_path / "run")],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["dtype"] == got["spent_dtype"] == "float64"
    assert got["files"] == ["float64"]  # curves.npz (a metric, spent) and finals.npz
    assert got["reward"] < 1e-9 and got["spent"] < 1e-9  # measured: 1e-11


def test_float32_sums_of_long_horizons_are_compensated():
    assert engine.float_dtype() == jnp.float32
    assert engine.compensated(ROUNDS) and not engine.compensated(engine.COMPENSATED_HORIZON)
    got = relative_errors()
    assert got["dtype"] == got["spent_dtype"] == "float32"
    assert got["reward"] < 1e-6 and got["spent"] < 1e-6  # measured: 4e-9 (plain float32 sums: 2e-3)


def test_float32_sums_up_to_the_threshold_are_plain_within_the_documented_bound():
    n = engine.COMPENSATED_HORIZON  # at least every shipped spec's horizon: their arithmetic is unchanged
    got = relative_errors(n, n)
    assert 1e-6 < got["reward"] < n * 2.0 ** -24  # plain float32: measured 7e-6 (compensated: 4e-8)


def test_every_product_a_run_traces_is_at_full_precision():
    """A run's matrix products (the policy's, the environment's, the metrics', a plugin's own ``@``) are
    lowered at HIGHEST precision: float32 on a GPU, whose default for float32 products is TF32."""
    from mobandit_jax.metrics.preference import preference_metrics, preference_truth
    from mobandit_jax.policies.preference import cone_params, scalarized_ucb_rr
    from mobandit_jax.problems.stochastic import make_stochastic

    means = np.random.default_rng(0).uniform(0.1, 0.9, size=(5, 3))
    W = np.array([[1.0, 0.0, 1.0], [0.0, -1.0, 1.0]])
    inst = make_stochastic(means)
    mix = jnp.asarray(np.eye(3) * 0.5 + 0.25)

    def sample(key, arm, pull_index, t, params):  # a plugin's own product, written with a bare `@`
        reward, cost = inst.env.sample(key, arm, pull_index, t, params)
        return reward @ mix, cost

    env = inst.env._replace(sample=sample)
    run = engine.make_run(env, scalarized_ucb_rr(5, 3, 2), preference_metrics(3), 20, 10)
    params = engine.RunParams(inst.params, cone_params(W), preference_truth(means, W), jnp.inf)
    text = jax.jit(run).lower(params, jax.random.PRNGKey(0)).as_text()
    dots = [line for line in text.splitlines() if "dot_general" in line]
    assert dots and all("precision = [HIGHEST, HIGHEST]" in line for line in dots), dots
    plain = jax.jit(lambda a, b: a @ b).lower(jnp.ones((4, 3)), jnp.ones((3, 2))).as_text()
    assert "precision = [DEFAULT, DEFAULT]" in plain  # JAX's own default, which the run overrides
