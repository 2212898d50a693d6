"""Where a run's time goes on its device: the kernels of one traced call, and rates of program variants.

- :func:`kernel_table` traces one call with ``jax.profiler`` and sums the device's events by name: on a
  GPU, the kernels and copies of its streams (``/device:GPU:N`` planes), on the CPU backend the XLA
  operations of the host threads. Beside the busy time it reports the call's wall time, so a call
  bound by launches and loop-condition reads (busy time far below wall time) is told apart from one
  bound by the kernels themselves.
- ``python -m mobandit_jax.bench.profile`` runs PrefUCB (K = 42, d = 7, M = 2, the benchmark's instance)
  at one seed count: its rate with the benchmark's Beta feedback and with Bernoulli feedback (the cost of
  the Beta sampler), and the kernel table of one call; one JSON file. ``--algorithm thv_d5``: the same for
  the benchmark's THV-UCB at d = 5 (its Gaussian feedback only).
- ``python -m mobandit_jax.bench.profile --pac auer`` (or ``ape``) splits a round of a fixed-confidence method, as
  the engine runs its seeds in turn on lanes laid out last (:func:`pac_shares`), into the random bits, the method's
  statistics and the loop itself, by timing the same loop without each.
"""
from __future__ import annotations

import argparse
import collections
import json
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

HOST_EVENTS = ("$", "ThunkExecutor", "PjitFunction")  # CPU backend: the host's own trace events, not XLA ops


def _planes(logdir: Path):
    from jax.profiler import ProfileData

    files = sorted(Path(logdir).rglob("*.xplane.pb"))
    if not files:
        return []
    return list(ProfileData.from_file(str(files[-1])).planes)


def kernel_table(fn, top: int = 25) -> dict:
    """Trace one call of ``fn()`` (already compiled and warm) and sum its device events by name.

    Args:
      fn: a call without arguments, compiled and warmed.
      top: how many event names to list.

    Returns:
        ``{"wall_s", "busy_s", "events", "top": [{"name", "count", "seconds", "share"}, ...]}``: the call's
        wall time, the summed duration of its device events (GPU stream events; on the CPU backend the
        XLA operations of every thread), their number, and the ``top`` names by summed time.
    """
    with tempfile.TemporaryDirectory() as logdir:
        jax.profiler.start_trace(logdir)
        t0 = time.perf_counter()
        jax.block_until_ready(fn())
        wall = time.perf_counter() - t0
        jax.profiler.stop_trace()
        planes = _planes(Path(logdir))
    gpu = [p for p in planes if p.name.startswith("/device:GPU")]
    totals, counts = collections.Counter(), collections.Counter()
    for plane in gpu or [p for p in planes if p.name.startswith("/host:CPU")]:
        for line in plane.lines:
            if gpu and not line.name.startswith("Stream"):
                continue  # the per-op and per-module summary lines repeat the streams' events
            for event in line.events:
                if not gpu and event.name.startswith(HOST_EVENTS):
                    continue
                totals[event.name] += event.duration_ns * 1e-9
                counts[event.name] += 1
    busy = sum(totals.values())
    rows = [{"name": name, "count": counts[name], "seconds": seconds, "share": seconds / busy if busy else 0.0}
            for name, seconds in totals.most_common(top)]
    return {"wall_s": wall, "busy_s": busy, "events": sum(counts.values()), "top": rows}


def _pac_variants(method: str, seeds: int, rounds: int):
    """``{variant: run()}``: ``method``'s loop on lanes laid out last (:func:`~..policies.pac_lanes.lanes_identifier`,
    every seed on the ``K`` arms: Auer et al.'s narrowing is left out) on the benchmark's Bernoulli instance with
    every seed capped at ``rounds`` rounds (none stops sooner), as is (``full``), with rewards that hash nothing
    (``no_random_bits``: arm ``i``'s ``j``-th pull is its mean plus ``j / 1e6``), with a method that only counts
    (``no_statistics``: no radius, margins or sets; the same arms a round) and with both (``loop``)."""
    import jax.numpy as jnp

    from .. import engine, metrics, policies  # noqa: F401  (importing fills the registries)
    from ..policies.pac_lanes import lanes_identifier
    from ..policies.pac_stepwise import Counts, StepwiseMethod
    from ..problems.stochastic import make_stochastic
    from ..registry import make_policy
    from ..types import Context
    from .fixed_confidence import DELTA, bench_instance

    means = bench_instance()
    K, d = means.shape
    inst = make_stochastic(means, noise="bernoulli")
    policy, params, _ = make_policy(method, Context.of(inst, rounds), delta=DELTA)
    width = K if method == "auer" else 2
    real = {"auer": policies.pac_auer.auer_method, "ape": policies.pac_ape.ape_method}[method](K, d)
    pull = jnp.arange(K) < width  # the same number of arms a round as the method
    every = lambda s: jnp.broadcast_to(pull.reshape((K,) + (1,) * (s.n.ndim - 1)), s.n.shape)  # noqa: E731
    counting = StepwiseMethod(lambda p: Counts.zeros(K, d, params.W.dtype), lambda key, s, p: every(s),
                              lambda s, pulled, y, p: s.add(pulled, y), lambda s, p: s.means[:, 0] > s.means[:, -1],
                              lambda s, p: jnp.zeros(s.n.shape[1:], bool))  # it recommends from the sums

    def hashless(key, arm, j, t, ep):
        return ep.means[arm] + j.astype(ep.means.dtype) / 1e6, jnp.zeros((), ep.means.dtype)

    seed_params = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (seeds,) + jnp.shape(x)), inst.params)
    keys = engine.seed_keys(0, np.arange(seeds))
    env_keys = jax.vmap(lambda k: jax.random.fold_in(k, 0))(keys)
    pol_keys = jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys)
    lanes = -(-seeds // engine.seeds_per_lane(seeds))
    runs = {}
    for name, m, sample in (("full", real, inst.env.sample), ("no_random_bits", real, hashless),
                            ("no_statistics", counting, inst.env.sample), ("loop", counting, hashless)):
        in_turn = lanes_identifier(m, K, d, sample, width).identify_in_turn
        fn = jax.jit(lambda ek, pk, ep, p, f=in_turn: f(ek, pk, ep, p, lanes))
        jax.block_until_ready(fn(env_keys, pol_keys, seed_params, params))
        runs[name] = lambda fn=fn: fn(env_keys, pol_keys, seed_params, params)
    return runs


def pac_shares(method: str, seeds: int, rounds: int, repeat: int = 5) -> dict:
    """Where a round of ``method`` (``"auer"`` or ``"ape"``) goes, on the benchmark's Bernoulli instance (K = 8, d = 2).

    Args:
      method: ``"auer"`` or ``"ape"``.
      seeds: the batch's seeds (they share ``seeds / seeds_per_lane(seeds)`` lanes, as the engine runs them).
      rounds: every seed's rounds (its round cap; the instance's seeds need more to stop).
      repeat: timed runs of each variant, the fastest counts (interleaved).

    Returns:
      ``{"us_per_seed_round": {variant: microseconds}, "shares": {"random_bits", "statistics", "loop"}}``: each
      variant of :func:`_pac_variants` per seed and round; the shares of the full round taken by the random bits
      (full minus no_random_bits), the statistics (full minus no_statistics) and the loop alone.
    """
    from . import benchmark

    runs = _pac_variants(method, seeds, rounds)
    best = dict.fromkeys(runs, np.inf)
    for _ in range(repeat):
        for name, run in runs.items():
            best[name] = min(best[name], benchmark._timed(run))
    us = {name: t / (seeds * rounds) * 1e6 for name, t in best.items()}
    full = us["full"]
    return {"us_per_seed_round": us, "shares": {"random_bits": (full - us["no_random_bits"]) / full,
                                                "statistics": (full - us["no_statistics"]) / full,
                                                "loop": us["loop"] / full}}


def main(argv=None) -> int:
    """The variants and kernel table of the module docstring, printed and written to ``--json``.

    Args:
      argv: the command line's arguments (None: ``sys.argv[1:]``).

    Returns:
      The exit code, 0.
    """
    from ..runner import runtime
    from . import benchmark

    parser = argparse.ArgumentParser(prog="python -m mobandit_jax.bench.profile", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=131072)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--json", help="write the figures to this JSON file")
    parser.add_argument("--algorithm", choices=("prefucb", "thv_d5"), default="prefucb",
                        help="the benchmark's online algorithm to profile")
    parser.add_argument("--pac", choices=("auer", "ape"), help="split a round of this fixed-confidence method instead")
    args = parser.parse_args(argv)
    runtime.configure()
    if args.pac:
        report = pac_shares(args.pac, args.seeds, args.rounds)
        print(json.dumps(report, indent=1))
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1))
        return 0
    if args.algorithm == "thv_d5":
        thv = (benchmark._registry_setup, (benchmark.thv_section(**benchmark.THV_D5), "slate/thv_ucb"))
        name, variants = "THV-UCB (d = 5)", (("gaussian", thv),)
    else:
        bernoulli = {"kind": "stochastic", "means": benchmark._bench_means().tolist(), "noise": "bernoulli"}
        name, variants = "PrefUCB", (("beta", (benchmark._prefucb_setup, ())),
                                     ("bernoulli", (benchmark._prefucb_setup, (bernoulli,))))
    report = {"backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()], "jax": jax.__version__,
              "algorithm": args.algorithm, "seeds": args.seeds, "rounds": args.rounds, "variants": [], "profile": None}
    for noise, setup in variants:
        run, compile_s = benchmark._compiled(setup, args.rounds, args.seeds)
        rate = args.seeds * args.rounds / benchmark._timed(run, 3)
        report["variants"].append({"noise": noise, "seed_rounds_per_s": rate, "compile_s": compile_s})
        print(f"{name}, {noise} feedback: {rate:14,.0f} seed-rounds/s (compile {compile_s:.1f} s)", flush=True)
        if report["profile"] is None:
            table = kernel_table(run)
            table["per_round_us"] = table["wall_s"] / args.rounds * 1e6
            report["profile"] = table
            print(f"one call: wall {table['wall_s']:.4f} s, device busy {table['busy_s']:.4f} s, "
                  f"{table['events']} events ({table['events'] / args.rounds:.1f} per round)")
            for row in table["top"]:
                print(f"  {row['seconds'] * 1e3:9.3f} ms {row['share']:6.1%} x{row['count']:<6d} {row['name'][:80]}")
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
