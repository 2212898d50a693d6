"""The runner's subcommands of ``mobandit``: ``run``, ``list``, ``report``, ``compare`` and ``reproduce``.

:func:`add_commands` puts their parsers on the ``mobandit`` parser (:mod:`mobandit_jax.cli`); each parsed command
carries ``fn(args) -> exit code`` and, for ``run`` and ``reproduce``, ``setup(args)``, which lays out the devices
and the compilation cache before JAX starts its backend. This module imports no JAX.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path


def add_commands(sub):
    """The runner's subcommands (``run``, ``list``, ``report``, ``compare``, ``reproduce``) on ``mobandit``'s
    subparsers; each sets ``fn(args) -> exit code`` and, where it must act before JAX starts, ``setup(args)``.

    Args:
      sub: the ``add_subparsers()`` object of the ``mobandit`` parser.

    Returns:
      None.
    """
    _run_parser(sub.add_parser("run", help="run a TOML experiment spec"))
    p = sub.add_parser("list", help="list registered policies, environments and metric families")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--options", nargs="?", const="", metavar="NAME",
                      help="each policy's options (or NAME's) with default, allowed values and meaning")
    what.add_argument("--metrics", action="store_true", help="each family's metrics and their meaning")
    p.set_defaults(fn=_cmd_list)
    p = sub.add_parser("report", help="print the report of a run directory")
    x64_option(p, default=argparse.SUPPRESS)
    p.add_argument("dir")
    _band_option(p, default=None)
    p.add_argument("--baseline", metavar="POLICY", help="paired differences to this policy (a label, or a column such "
                   "as \"CoHV-UCB (α = 0.5)\") instead of the best one")
    _format_option(p, None)
    p.set_defaults(fn=_cmd_report)
    p = sub.add_parser("compare", help="several run directories side by side: markdown tables and a PNG figure")
    p.add_argument("dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument("--metric", action="extend", nargs="+", metavar="M",
                   help="metrics to compare (default: every metric)")
    p.add_argument("--out", help="the figure's file, .png, .pdf or .svg (default compare.png, or compare.FORMAT)")
    p.add_argument("--paired", action="store_true", help="per-seed differences of each run to the first, with a "
                   "paired 95%% CI and win/tie/loss counts (refused unless the runs share their seeds and environment)")
    p.add_argument("--unpaired", action="store_true", help="differences of the runs' means to the first run's, with "
                   "Welch's 95%% CI (for runs on different seeds or environments)")
    _band_option(p)
    _format_option(p, None)
    p.set_defaults(fn=_cmd_compare)
    _reproduce_parser(sub.add_parser("reproduce", help="run every spec in configs/ and rebuild the reports in "
                                     "experiments/"))


def _run_parser(p):
    x64_option(p, default=argparse.SUPPRESS)
    p.add_argument("config")
    p.add_argument("--out", help="run directory (default runs/<config stem>)")
    p.add_argument("--seeds", type=int, help="override experiment.seeds")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a spec key, e.g. experiment.horizon=500")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--max-memory", help="choose seeds per chunk to fit this size, e.g. 2GB")
    p.add_argument("--distributed", action="store_true",
                   help="multi-host: jax.distributed.initialize() auto-detect (Slurm, Open MPI)")
    p.add_argument("--coordinator",
                   help="multi-host: coordinator address host:port (with --num-processes, --process-id)")
    p.add_argument("--num-processes", type=int)
    p.add_argument("--process-id", type=int)
    p.add_argument("--devices", type=int,
                   help="devices to split the seeds over (default: every CPU core, or every GPU); "
                   "on CPU, N below the core count also confines the run to N cores")
    p.add_argument("--workers", choices=("auto", "on", "off"), default="auto",
                   help="on CPU, run the seeds in one worker process per core (on), in this process over one device "
                   "per core (off), or on when the run has at least 2^20 seed-rounds (auto, the default)")
    p.add_argument("--no-cache", action="store_true", help="no persistent compilation cache (also MOBANDIT_NO_CACHE=1)")
    _band_option(p)
    _format_option(p, "png")
    p.set_defaults(fn=_cmd_run, setup=_setup_run)


def _reproduce_parser(p):
    from .devices import cpu_cores

    x64_option(p, default=argparse.SUPPRESS)
    p.add_argument("--quick", action="store_true", help="2 seeds, short horizons, outputs under runs/quick/")
    p.add_argument("--only", nargs="+", metavar="NAME", help="spec names or prefixes to run, e.g. pdmob cost_aware")
    p.add_argument("--check", action="store_true", help="re-run into a temporary folder, class each committed number "
                   "of experiments/*/summary.json as bitwise, round-off, sampling or different, exit 1 if any is "
                   "different")
    p.add_argument("--strict", action="store_true", help="with --check: exit 1 if any number is not bitwise")
    p.add_argument("--configs", default="configs")
    p.add_argument("--runs", default="runs")
    p.add_argument("--experiments", default="experiments")
    p.add_argument("--jobs", type=int, default=min(2, cpu_cores()),
                   help="specs run at once in separate processes, 1 to the cores (default: min(2, cores))")
    p.add_argument("--no-cache", action="store_true", help="no persistent compilation cache (also MOBANDIT_NO_CACHE=1)")
    p.set_defaults(fn=_cmd_reproduce, setup=_setup_reproduce)


def _cmd_run(args):
    from . import interrupts
    from . import run_folder as results
    from . import spec as cfg
    from . import workers as local_workers

    out = Path(args.out) if args.out else Path("runs") / Path(args.config).stem
    max_bytes = cfg.parse_bytes(args.max_memory) if args.max_memory else None
    spec = args.spec
    if not (args.distributed or args.coordinator):
        results.run_marker(out)  # a file or a foreign folder is refused before anything is built
    else:
        from . import sharding

        sharding.initialize(args.coordinator, args.num_processes, args.process_id)
    plan = None
    workers = args.workers

    def interrupted():
        kept = "{}/{} chunks kept".format(*results.chunks_kept(plan, out)) if plan else "no chunk ran"
        return f"interrupted: {kept}; run the same command to resume"

    def run():
        nonlocal plan, workers
        with contextlib.ExitStack() as stack:
            if workers > 1 and not max_bytes:  # started first: they start JAX and compile while the plan is built
                workers = stack.enter_context(local_workers.start_run_workers(
                    spec, args.x64, workers, spec.experiment.chunk_size, not args.quiet and sys.stderr.isatty()))
            start_jax(args)  # this process imports JAX from here on, beside its workers

            from . import execution, plans

            plan = plans.checked_build(spec)
            if max_bytes:
                execution.fit_chunk(plan, max_bytes, workers)
                workers = min(workers, plan.chunk)  # a chunk's seeds are all that run at once
                print(f"{plan.chunk} seeds per chunk under --max-memory {args.max_memory}")
            res = execution.execute(plan, out, progress=not args.quiet, workers=workers, band=args.band)
        if res is not None and res.records:
            print(f"wrote {out / 'summary.json'} ({len(res.records)} records), {out / 'report.md'}")
            if args.format != "png":  # the PNGs of report.md, and the same figures in the format asked for
                print(f"wrote {len(res.figures(out, args.band, args.format))} {args.format.upper()} figures in {out}")
        return 0

    return interrupts.Interrupts(interrupted, after_bar=not args.quiet and sys.stderr.isatty()).call(run)


def _cmd_list(args):
    from .. import registry
    from ..plugins import load

    load([])  # the built-ins and the installed plugins (the mobandit_jax.plugins entry points)

    if args.options is not None:
        return _list_options(registry, args.options)
    if args.metrics:
        return _list_metrics(registry)
    print("policies:")
    for name, e in sorted(registry.POLICIES.items()):
        print(f"  {name:28s} [{e.family}] {e.doc}")
    print("environments:")
    for name, e in sorted(registry.ENVS.items()):
        print(f"  {name:28s} {e.doc}")
    print("policy families:")
    for name, e in sorted(registry.FAMILIES.items()):
        print(f"  {name:28s} [{e.kind}] {e.doc}")
    return 0


def _list_options(registry, name):
    """``mobandit list --options [NAME]``: each policy's options, default, allowed values and meaning."""
    names = sorted(registry.POLICIES)
    if name:  # every family's policy of that name (pareto_ucb: preference and slate)
        names = [k for k in names if name in (k, k.rpartition("/")[2])] or [registry.POLICIES.resolve(name)]
    for key in names:
        options = registry.policy_options(key)
        print(f"{key}:" + ("" if options else " no options"))
        for o in options:
            print(f"  {o.name} = {o.default!r}  [{o.allowed or 'see the policy docs'}]  {o.meaning}".rstrip())
    return 0


def _list_metrics(registry):
    """``mobandit list --metrics``: each family's metrics, how a seed's value is summarised, and its meaning."""
    import re

    goals = {"min": "lower is better", "max": "higher is better", "": ""}
    for family, metrics in registry.family_metrics().items():
        print(f"{family}:")
        shown = set()
        for m in metrics:
            name, doc = m.name, m.doc
            numbered = re.fullmatch(r"(.*)_(\d+)", name)
            if numbered and f" {numbered.group(2)}" in doc:  # one line for reward_0, reward_1, ...
                name, doc = f"{numbered.group(1)}_<j>", doc.replace(f" {numbered.group(2)}", " j")
            if name in shown:
                continue
            shown.add(name)
            extra = ", ".join(x for x in (f"per seed: {m.reduce}", goals[m.goal]) if x)
            print(f"  {name:24s} {doc} ({extra})")
    print("Formulas and sources: docs/metrics.md")
    return 0


def _cmd_report(args):
    from ..analysis.files import column

    out = Path(args.dir)
    summary = out / "summary.json"
    if not summary.exists():
        print(f"error: {summary} does not exist (run `mobandit run CONFIG --out {out}` first)", file=sys.stderr)
        return 2
    report = out / "report.md"
    if args.format is not None:  # the figures again, in the format asked for
        from ..analysis.results import Results

        names = Results.load(out).figures(out, args.band or "ci", args.format)
        print(f"wrote {len(names)} {args.format.upper()} figures in {out}: {', '.join(names)}", file=sys.stderr)
    if args.band is not None or args.baseline is not None:  # the tables again (the figures stay as drawn)
        from ..analysis import report as text
        from ..analysis.results import Results

        res = Results.load(out)
        if args.baseline is not None and not any(args.baseline == label or args.baseline == column(label, p.params)
                                                 for label, ps in res.grid.items() for p in ps):
            raise ValueError(f"--baseline {args.baseline!r} is no policy of this run; its policies: {list(res.grid)}")
        print(text.text(res, {"records": res.records}, [], args.band or "ci", args.baseline))
    elif report.exists():
        print(report.read_text())
    else:
        from ..analysis.report import tables

        print(tables(json.loads(summary.read_text())["records"]))
    return 0


def _cmd_compare(args):
    from ..analysis import compare

    out = args.out or f"compare.{args.format or 'png'}"
    compare.main(args.dirs, args.metric, out, args.band, args.paired, args.unpaired, args.format)
    return 0


def _cmd_reproduce(args):
    from . import interrupts, reproduce

    kept = ("nothing kept (--check runs in a temporary folder)" if args.check
            else f"the finished chunks are kept under {Path(args.runs) / ('quick' if args.quick else '')}")

    def run():
        if args.check:
            found = reproduce.check(args.configs, args.experiments, quick=args.quick, only=args.only, jobs=args.jobs,
                                    x64=args.x64, runs_dir=args.runs, strict=args.strict)
            failed, tally = reproduce.failing(found, args.strict), reproduce.counts(found)
            print(f"check: {len(failed)} committed number(s) differ ({tally})" if failed
                  else f"check: every committed number reproduced ({tally})")
            return 1 if failed else 0
        reproduce.main(args.configs, args.runs, args.experiments, quick=args.quick, only=args.only, jobs=args.jobs,
                       x64=args.x64)
        return 0

    again = "start again" if args.check else "resume"
    return interrupts.Interrupts(lambda: f"interrupted: {kept}; run the same command to {again}").call(run)


def _setup_run(args):
    """The spec with its overrides, the device count and the compilation cache, before JAX starts a backend
    (see devices.py, cache.py)."""
    from . import cache, devices
    from . import spec as cfg
    from . import workers as local_workers

    overrides = list(args.set or []) + ([f"experiment.seeds={args.seeds}"] if args.seeds is not None else [])
    args.spec = cfg.apply_overrides(cfg.load(args.config), overrides)  # seeds from 1 to spec.MAX_COUNT
    auto = args.workers == "auto"
    processes = local_workers.worth_it(args.spec) if auto else args.workers == "on"
    args.workers = devices.configure_run(args.devices, bool(args.distributed or args.coordinator), processes,
                                         args.spec.experiment.chunk_size if auto else None)
    cache.configure(not args.no_cache)


def _setup_reproduce(args):
    """The spec runs share the cores: ``--jobs`` processes at once, each pinned to its own; the compilation cache."""
    from . import cache, devices, reproduce

    if args.strict and not args.check:
        raise ValueError("--strict applies to --check only: mobandit reproduce --check --strict")
    devices.configure_workers(reproduce.check_jobs(args.jobs))
    cache.configure(not args.no_cache)


def start_jax(args):
    """The runtime settings (before JAX starts its backend: the XLA flag is read then) and ``--x64``.

    Args:
      args: the parsed command line (its ``x64``).

    Returns:
      None.
    """
    from . import runtime

    runtime.configure()
    if args.x64:
        import jax

        jax.config.update("jax_enable_x64", True)


def _band_option(parser, default="ci"):
    """``--band``: what tables and figures show around each mean (:data:`mobandit_jax.analysis.plots.BANDS`)."""
    parser.add_argument("--band", choices=("ci", "std", "median", "iqm"), default=default,
                        help="ci: the mean and its 95%% confidence interval over seeds (Student t; Wilson's for rates; "
                        "the default); std: mean ± 1 std; median, iqm: the median or interquartile mean with a "
                        "seeded bootstrap 95%% interval"
                        + ("" if default else " (default: print report.md as written)"))


def _format_option(parser, default):
    """``--format``: the figures' file format (:data:`mobandit_jax.analysis.style.FORMATS`)."""
    what = {"png": "PNG at 200 dpi (the default); pdf, svg: the figures also as PDF or SVG (text kept as text)",
            None: "draw the run's figures again as PNG, PDF or SVG"}[default]
    parser.add_argument("--format", choices=("png", "pdf", "svg"), default=default, help=what)


def x64_option(parser, default):
    """``--x64``, accepted before and after the subcommand (``default=SUPPRESS`` on the subcommand's copy).

    Args:
      parser: an ``argparse`` parser.
      default: the option's default (``argparse.SUPPRESS`` on a subcommand).

    Returns:
      None.
    """
    parser.add_argument("--x64", action="store_true", default=default, help="compute in float64")
