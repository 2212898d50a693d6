"""PrefUCB (jitted engine run) against a plain numpy loop of Algorithm 1 on the same instance."""
import numpy as np

from mobandit_jax.bench.reference.prefucb_numpy import run_prefucb_numpy
from mobandit_jax.kernels import cone_optimal_mask
from mobandit_jax.runner import execution, plans
from mobandit_jax.runner import spec as cfg


def test_prefucb_matches_numpy_loop_in_mean_regret(tmp_path):
    rng = np.random.default_rng(2024)
    means = np.round(rng.uniform(0.1, 0.9, size=(6, 3)), 3)
    W = np.array([[1.0, 0.5, 0.0], [0.0, 1.0, -0.5]])
    T, S = 400, 48
    spec = {
        "experiment": {"horizon": T, "seeds": S, "record_every": 50},
        "env": {"kind": "stochastic", "means": means.tolist()},
        "preference": {"W": W.tolist()},
        "policies": [{"name": "prefucb"}],
    }
    plan = plans.build(cfg.validate(spec))
    execution.execute(plan, tmp_path, progress=False)
    ours = np.load(tmp_path / "finals.npz")["prefucb|0|regret_indicator"]

    optimal = np.asarray(cone_optimal_mask(means.astype(np.float32), W.astype(np.float32)))
    assert 0 < optimal.sum() < len(means)
    ref = np.array([(~optimal[run_prefucb_numpy(means, W, T, seed=s)]).sum() for s in range(S)], float)
    se = np.sqrt(ours.var(ddof=1) / S + ref.var(ddof=1) / S)
    assert abs(ours.mean() - ref.mean()) < 4 * se + 1.0, (ours.mean(), ref.mean(), se)
    # Regret must be far below uniform play: PrefUCB learns.
    assert ref.mean() < 0.5 * T * (1 - optimal.mean())
