"""Fixed-confidence Pareto set identification, timed per seed: the pac family's Auer et al. and APE as the engine runs
them (the seeds of one batch sharing lanes, :func:`mobandit_jax.engine.lanes_in_turn`) against the numba per-seed loops
of :mod:`mobandit_jax.bench.numba_peers` on the same instance.

:func:`engine_runner` and :func:`outcome` are also what ``scripts/fixed_confidence_peers.py`` runs beside the
authors' code.
"""
from __future__ import annotations

import math
import time

import numpy as np

# Bernoulli arms, K = 8, d = 2 (drawn once from a fixed generator; Auer and APE take about 10,000 samples at delta 0.1)
INSTANCE_SEED, INSTANCE_K, INSTANCE_D, DELTA = 3, 8, 2, 0.1


def bench_instance():
    """``(K, d)`` means of the benchmark's Bernoulli instance.

    Returns:
      ``(INSTANCE_K, INSTANCE_D)`` float array, drawn uniformly in [0.1, 0.9] from :data:`INSTANCE_SEED`.
    """
    return np.random.default_rng(INSTANCE_SEED).uniform(0.1, 0.9, (INSTANCE_K, INSTANCE_D))


def engine_runner(method: str, means, gauss: bool, sigma: float, delta: float, seeds: int, cap: int = 2_000_000):
    """A compiled, warmed call of the pac family's ``method`` over ``seeds`` seeds in one batch, as the engine runs it.

    Args:
      method: a registered pac method (``"auer"``, ``"ape"``, ``"track_and_stop"``, ...).
      means: ``(K, d)`` arm means.
      gauss: Gaussian arms of scale ``sigma`` (unclipped), else Bernoulli arms.
      sigma: the Gaussian noise scale.
      delta: the confidence.
      seeds: the batch's seeds, ``seed_keys(0, range(seeds))``.
      cap: the round cap.

    Returns:
      ``run() -> PacResult`` with a leading seed axis, compiled and called once.
    """
    import jax
    import jax.numpy as jnp

    from .. import engine, metrics, policies  # noqa: F401  (importing fills the registries)
    from ..problems.stochastic import make_stochastic
    from ..registry import make_policy
    from ..types import Context

    inst = make_stochastic(np.asarray(means, float), noise="gaussian" if gauss else "bernoulli", sigma=sigma,
                           clip=not gauss, dtype=jnp.float64 if jax.config.jax_enable_x64 else jnp.float32)
    policy, params, _ = make_policy(method, Context.of(inst, cap), delta=delta)
    keys = engine.seed_keys(0, np.arange(seeds))
    streams = lambda k: (jax.random.fold_in(k, 0), jax.random.fold_in(k, 1))  # noqa: E731
    if policy.identify_in_turn is None or engine.seeds_per_lane(seeds) == 1:  # one seed a lane
        run = jax.jit(lambda keys: jax.vmap(policy.identify, in_axes=(0, 0, None, None))(
            *jax.vmap(streams)(keys), inst.params, params))
    else:  # the seeds share S / R lanes, each lane's seeds one after another
        seed_params = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (seeds,) + jnp.shape(x)), inst.params)
        in_turn = lambda p, keys, lanes: policy.identify_in_turn(  # noqa: E731
            *jax.vmap(streams)(keys), seed_params, p, lanes)
        run = jax.jit(lambda keys: engine.lanes_in_turn(in_turn, params, keys))
    jax.block_until_ready(run(keys))
    return lambda: jax.block_until_ready(run(keys))


def outcome(out, means):
    """Whether each seed of a batch found the Pareto set, and its samples.

    Args:
      out: a batch's ``PacResult`` (leading seed axis S).
      means: ``(K, d)`` arm means.

    Returns:
      ``(found (S,) bool, samples (S,))``; ``found``: the seed stopped and returned the Pareto set of ``means``.
    """
    from ..kernels.dominance import cone_optimal_mask

    truth = np.asarray(cone_optimal_mask(np.asarray(means, float), np.eye(np.shape(means)[1])))
    found = np.all(np.asarray(out.recommended) == truth, axis=1) & np.asarray(out.stopped)
    return found, np.asarray(out.pulls).sum(1)


def bench_fixed_confidence(method: str, seed_counts, repeat: int, numba_peers=None, numba_seeds: int = 200):
    """Seconds a seed of ``method`` on :func:`bench_instance`: the engine at each seed count in this process, beside
    the numba loop; best of ``repeat`` timed runs each. Mean samples of both sides are given, to show they run the
    same method.

    Args:
      method: ``"auer"`` or ``"ape"``.
      seed_counts: the engine's batch sizes, one row each.
      repeat: timed runs per figure (the best is kept).
      numba_peers: the module :mod:`mobandit_jax.bench.numba_peers` (None: no numba figures).
      numba_seeds: the seeds of the numba loop.

    Returns:
      A row per seed count: ``{"algorithm", "seeds", "s_per_seed", "samples", "numba_s_per_seed",
      "numba_samples", "speedup_numba"}`` (the numba figures None without ``numba_peers``).
    """
    means = bench_instance()
    numba_s, numba_samples = None, None
    if numba_peers is not None:
        numba_peers.fixed_confidence_seeds(method, means, False, 0.5, DELTA, 2)  # compile
        best = math.inf
        for _ in range(repeat):
            start = time.perf_counter()
            counts, _ = numba_peers.fixed_confidence_seeds(method, means, False, 0.5, DELTA, numba_seeds)
            best = min(best, time.perf_counter() - start)
        numba_s, numba_samples = best / numba_seeds, float(counts.sum(1).mean())
    rows = []
    for s in seed_counts:
        run = engine_runner(method, means, False, 0.5, DELTA, s)
        best = math.inf
        for _ in range(repeat):
            start = time.perf_counter()
            out = run()
            best = min(best, time.perf_counter() - start)
        rows.append({"algorithm": f"{method} (Bernoulli K={INSTANCE_K}, d={INSTANCE_D})", "seeds": s,
                     "s_per_seed": best / s, "samples": float(np.asarray(out.pulls).sum(1).mean()),
                     "numba_s_per_seed": numba_s, "numba_samples": numba_samples,
                     "speedup_numba": numba_s / (best / s) if numba_s else None})
    return rows
