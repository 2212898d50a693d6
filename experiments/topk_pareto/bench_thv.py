"""THV-UCB throughput: the jitted policy (engine scan, vmapped over seeds) against the numpy per-round loop.

    PYTHONPATH=. python experiments/topk_pareto/bench_thv.py [--seeds 10] [--rounds 1000]

Prints seed-rounds per second for d = 2 (n=36, k=3) and d = 5 (n=150, k=6), concave front. The JAX time
excludes compilation (measured separately); the numpy time covers rounds after the forced initialisation.
"""
import argparse
import math
import time

import jax
import numpy as np

from mobandit_jax import engine, metrics, policies, problems, registry  # noqa: F401  (importing fills the registries)
from mobandit_jax.bench.reference.thv_ucb_numpy import thv_ucb_numpy
from mobandit_jax.types import Context

SETTINGS = {2: (36, 3, 0.05), 5: (150, 6, 0.02)}


def jax_rate(d, seeds, rounds):
    n, k, sigma = SETTINGS[d]
    inst = registry.make_env({"kind": "dtlz", "d": d, "n": n, "k": k, "sigma": sigma, "front": "concave"})
    ctx = Context.of(inst, rounds)
    policy, pparams, _ = registry.make_policy("slate/thv_ucb", ctx)
    mset, mparams = registry.make_metrics("slate", ctx)
    run = engine.make_run(inst.env, policy, mset, rounds, 10)
    params = engine.stack_params([engine.RunParams(inst.params, pparams, mparams, np.float32(np.inf))])
    keys = engine.seed_keys(0, np.arange(seeds))
    fn = jax.jit(engine.batch(run))
    t0 = time.time()
    compiled = fn.lower(params, keys).compile()
    t_compile = time.time() - t0
    t0 = time.time()
    out = jax.block_until_ready(compiled(params, keys))
    t_run = time.time() - t0
    hv_last = float(np.mean((out["hv_last100"][0, :, -1] - out["hv_last100"][0, :, -11]) / 100))
    return seeds * rounds / t_run, t_compile, t_run, hv_last


def numpy_rate(d, rounds_after_init):
    n, k, sigma = SETTINGS[d]
    inst = registry.make_env({"kind": "dtlz", "d": d, "n": n, "k": k, "sigma": sigma, "front": "concave",
                               "instance_seed": 0})
    init = math.ceil(2 * n / k)
    t0 = time.time()
    thv_ucb_numpy(inst.means, k, init, eta=0.01, delta=1 / 5000, sigma=sigma)
    t1 = time.time()
    thv_ucb_numpy(inst.means, k, init + rounds_after_init, eta=0.01, delta=1 / 5000, sigma=sigma)
    t2 = time.time()
    per_round = ((t2 - t1) - (t1 - t0)) / rounds_after_init
    return 1.0 / per_round


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=1000)
    ap.add_argument("--numpy-rounds", type=int, default=50)
    a = ap.parse_args()
    for d in (2, 5):
        rate, tc, tr, hv = jax_rate(d, a.seeds, a.rounds)
        nrate = numpy_rate(d, a.numpy_rounds)
        print(f"d={d}: jax {rate:,.0f} seed-rounds/s ({a.seeds} seeds x {a.rounds} rounds in {tr:.2f} s, "
              f"compile {tc:.1f} s, HV_last100 {hv:.4f}); numpy loop {nrate:,.1f} rounds/s; ratio {rate / nrate:,.0f}x")
