"""The ``mobandit`` command: ``run``, ``list``, ``report``."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _cmd_run(args):
    from . import config as cfg
    from . import experiment

    spec = cfg.load(args.config)
    overrides = list(args.set or [])
    if args.seeds is not None:
        overrides.append(f"experiment.seeds={args.seeds}")
    spec = cfg.apply_overrides(spec, overrides)
    out = Path(args.out) if args.out else Path("runs") / Path(args.config).stem
    plan = experiment.build(spec)
    summary = experiment.execute(plan, out, progress=not args.quiet)
    print(f"wrote {out / 'summary.json'} ({len(summary['records'])} records), {out / 'report.md'}")
    return 0


def _cmd_list(args):
    from . import metrics, policies, problems

    print("policies:")
    for name, e in sorted(policies.base.POLICIES.items()):
        print(f"  {name:28s} [{e.family}] {e.doc}")
    print("environments:")
    for name, e in sorted(problems.base.ENVS.items()):
        print(f"  {name:28s} {e.doc}")
    print("metric families:")
    for family in sorted(metrics.base.METRICS):
        print(f"  {family}")
    return 0


def _cmd_report(args):
    out = Path(args.dir)
    summary = out / "summary.json"
    if not summary.exists():
        print(f"error: {summary} does not exist (run `mobandit run CONFIG --out {out}` first)", file=sys.stderr)
        return 2
    report = out / "report.md"
    if report.exists():
        print(report.read_text())
    else:
        from .report import tables

        print(tables(json.loads(summary.read_text())["records"]))
    return 0


def main(argv=None) -> int:
    """Entry point of the ``mobandit`` console script."""
    parser = argparse.ArgumentParser(prog="mobandit", description="Vectorized multi-objective bandit experiments")
    parser.add_argument("--x64", action="store_true", help="compute in float64")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="run a TOML experiment spec")
    p.add_argument("config")
    p.add_argument("--out", help="run directory (default runs/<config stem>)")
    p.add_argument("--seeds", type=int, help="override experiment.seeds")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a spec key, e.g. experiment.horizon=500")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(fn=_cmd_run)
    p = sub.add_parser("list", help="list registered policies, environments and metric families")
    p.set_defaults(fn=_cmd_list)
    p = sub.add_parser("report", help="print the report of a run directory")
    p.add_argument("dir")
    p.set_defaults(fn=_cmd_report)
    args = parser.parse_args(argv)
    if args.x64:
        import jax

        jax.config.update("jax_enable_x64", True)
    try:
        return args.fn(args)
    except (ValueError, KeyError, RuntimeError, FileNotFoundError) as err:
        msg = err.args[0] if isinstance(err, KeyError) and err.args else err
        print(f"error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
