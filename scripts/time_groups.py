"""Compile and run time of each policy group of a spec, on one device, in this process.

``python scripts/time_groups.py SPEC [KEY=VALUE ...] [--only LABEL,...] [--reps R]``: every group
(one compiled program: a policy over its grid points) runs all the spec's seeds at once; the line per
group gives the compile time, the best of ``R`` runs (default 3) and that time per lane and round.
Overrides are ``--set`` style, e.g. ``experiment.horizon=1000``. Nothing is written.
"""
import argparse
import sys
import time

import jax

from mobandit_jax import engine
from mobandit_jax.runner import execution, plans, sharding
from mobandit_jax.runner import spec as cfg


def main(argv) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("spec")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE")
    p.add_argument("--only", help="comma-separated group labels")
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args(argv)
    try:
        spec = cfg.apply_overrides(cfg.load(args.spec), args.overrides)
        plan = plans.build(spec)
    except (cfg.ConfigError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    only = None if args.only is None else set(args.only.split(","))
    keys = engine.seed_keys(plan.base_seed, range(plan.seeds))
    mesh = sharding.local_mesh(1)
    total = 0.0
    for g in plan.groups:
        if only is not None and g.label not in only:
            continue
        params = engine.stack_grid(g.params)
        t0 = time.perf_counter()
        compiled = execution.lower_group(g, params, mesh, keys).compile()  # as a run's worker compiles it
        compile_s = time.perf_counter() - t0
        best = float("inf")
        for _ in range(max(1, args.reps)):
            t0 = time.perf_counter()
            jax.block_until_ready(compiled(params, keys))
            best = min(best, time.perf_counter() - t0)
        total += best
        lanes = len(g.params) * plan.seeds
        print(f"{g.label:24s} lanes {lanes:5d}  compile {compile_s:6.2f} s  run {best:8.3f} s  "
              f"{best / lanes / plan.horizon * 1e6:8.2f} us per lane-round", flush=True)
    print(f"total run {total:.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
