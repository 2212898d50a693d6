"""Where a run's time goes on its device: the kernels of one traced call, and rates of program variants.

- :func:`kernel_table` traces one call with ``jax.profiler`` and sums the device's events by name: on a
  GPU, the kernels and copies of its streams (``/device:GPU:N`` planes), on the CPU backend the XLA
  operations of the host threads. Beside the busy time it reports the call's wall time, so a call
  bound by launches and loop-condition reads (busy time far below wall time) is told apart from one
  bound by the kernels themselves.
- ``python -m mobandit_jax.bench.profile`` runs PrefUCB (K = 42, d = 7, M = 2, the benchmark's instance)
  at one seed count: its rate with the benchmark's Beta feedback and with Bernoulli feedback (the cost of
  the Beta sampler), and the kernel table of one call; one JSON file.
"""
from __future__ import annotations

import argparse
import collections
import json
import tempfile
import time
from pathlib import Path

import jax

HOST_EVENTS = ("$", "ThunkExecutor", "PjitFunction")  # CPU backend: the host's own trace events, not XLA ops


def _planes(logdir: Path):
    from jax.profiler import ProfileData

    files = sorted(Path(logdir).rglob("*.xplane.pb"))
    if not files:
        return []
    return list(ProfileData.from_file(str(files[-1])).planes)


def kernel_table(fn, top: int = 25) -> dict:
    """Trace one call of ``fn()`` (already compiled and warm) and sum its device events by name.

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


def main(argv=None) -> int:
    """The PrefUCB variants and kernel table of the module docstring, printed and written to ``--json``."""
    from ..runner import runtime
    from . import benchmark

    parser = argparse.ArgumentParser(prog="python -m mobandit_jax.bench.profile", description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=131072)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--json", help="write the figures to this JSON file")
    args = parser.parse_args(argv)
    runtime.configure()
    bernoulli = {"kind": "stochastic", "means": benchmark._bench_means().tolist(), "noise": "bernoulli"}
    report = {"backend": jax.default_backend(), "devices": [str(d) for d in jax.devices()], "jax": jax.__version__,
              "seeds": args.seeds, "rounds": args.rounds, "variants": [], "profile": None}
    for noise, section in (("beta", ()), ("bernoulli", (bernoulli,))):
        run, compile_s = benchmark._compiled((benchmark._prefucb_setup, section), args.rounds, args.seeds)
        rate = args.seeds * args.rounds / benchmark._timed(run, 3)
        report["variants"].append({"noise": noise, "seed_rounds_per_s": rate, "compile_s": compile_s})
        print(f"PrefUCB, {noise} feedback: {rate:14,.0f} seed-rounds/s (compile {compile_s:.1f} s)", flush=True)
        if noise == "beta":
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
