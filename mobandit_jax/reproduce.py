"""``mobandit reproduce``: run every spec in ``configs/`` and rebuild every report in ``experiments/``.

Specs are grouped by their ``seedNNN_`` prefix; ``seedNNN_<key>.toml`` runs into ``runs/seedNNN_<key>``
and ``mobandit_jax.reports.seedNNN.build({key: run_dir, ...}, experiments/seedNNN)`` writes the
paper's report. ``--quick`` is a smoke version (2 seeds, horizons capped at 200 rounds) whose
runs and reports go under ``runs/quick/`` and never overwrite ``experiments/``.
"""
from __future__ import annotations

import importlib
import json
import time
from pathlib import Path

from . import config as cfg
from . import experiment

QUICK_SEEDS = 2
QUICK_HORIZON = 200


def discover(config_dir: Path) -> dict:
    """``{"seed000": {"llm": path, ...}, "": {"quickstart": path}}`` from the spec files."""
    groups: dict = {}
    for path in sorted(Path(config_dir).glob("*.toml")):
        stem = path.stem
        prefix, _, key = stem.partition("_") if stem.startswith("seed") else ("", "", stem)
        groups.setdefault(prefix, {})[key] = path
    return groups


def run_one(path: Path, out: Path, quick: bool) -> float:
    """Run one spec (resuming if its directory has chunks); return the wall seconds."""
    spec = cfg.load(path)
    if quick:
        overrides = [f"experiment.seeds={min(QUICK_SEEDS, spec['experiment']['seeds'])}",
                     f"experiment.horizon={min(QUICK_HORIZON, spec['experiment']['horizon'])}"]
        spec = cfg.apply_overrides(spec, overrides)
    t0 = time.time()
    experiment.execute(experiment.build(spec), out, progress=False)
    return time.time() - t0


def main(config_dir="configs", runs_dir="runs", experiments_dir="experiments", quick: bool = False,
         only: list | None = None, log=print) -> dict:
    """Run the specs and build the reports; return ``{spec stem: wall seconds}``."""
    runs = Path(runs_dir) / ("quick" if quick else "")
    reports_root = runs / "experiments" if quick else Path(experiments_dir)
    timing = {}
    for prefix, specs in discover(config_dir).items():
        if only and prefix not in only:
            continue
        dirs = {}
        for key, path in specs.items():
            out = runs / path.stem
            log(f"running {path} -> {out}")
            timing[path.stem] = round(run_one(path, out, quick), 2)
            log(f"  {path.stem}: {timing[path.stem]:.1f} s")
            dirs[key] = out
        if prefix:
            report = importlib.import_module(f"mobandit_jax.reports.{prefix}")
            t0 = time.time()
            report.build(dirs, reports_root / prefix)
            log(f"  report {reports_root / prefix}: {time.time() - t0:.1f} s")
    timing["total"] = round(sum(v for v in timing.values()), 2)
    runs.mkdir(parents=True, exist_ok=True)
    (runs / "reproduce_timing.json").write_text(json.dumps(timing, indent=1))
    log(f"total engine wall time {timing['total']:.1f} s; timings in {runs / 'reproduce_timing.json'}")
    return timing
