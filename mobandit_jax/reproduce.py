"""``mobandit reproduce``: run every spec in ``configs/`` and rebuild every report in ``experiments/``.

Specs are grouped by their ``seedNNN_`` prefix; ``seedNNN_<key>.toml`` runs into ``runs/seedNNN_<key>``
and ``mobandit_jax.reports.seedNNN.build({key: run_dir, ...}, experiments/seedNNN)`` writes the
paper's report. ``--quick`` is a smoke version (2 seeds, horizons capped at 200 rounds) whose
runs and reports go under ``runs/quick/`` and never overwrite ``experiments/``.

A run of one spec is single-threaded on CPU for most of its time, so ``--jobs N`` runs N specs at
once in separate processes (largest first: rounds x seeds x runs per spec), then builds the reports.
"""
from __future__ import annotations

import importlib
import json
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
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


def _quick_spec(spec: dict) -> dict:
    overrides = [f"experiment.seeds={min(QUICK_SEEDS, spec['experiment']['seeds'])}",
                 f"experiment.horizon={min(QUICK_HORIZON, spec['experiment']['horizon'])}"]
    return cfg.apply_overrides(spec, overrides)


def run_one(path: Path, out: Path, quick: bool, x64: bool = False) -> float:
    """Run one spec (resuming if its directory has chunks); return the wall seconds."""
    if x64:
        import jax

        jax.config.update("jax_enable_x64", True)
    spec = cfg.load(path)
    if quick:
        spec = _quick_spec(spec)
    t0 = time.time()
    experiment.execute(experiment.build(spec), out, progress=False)
    return time.time() - t0


def cost(path: Path, quick: bool) -> int:
    """A size estimate of a spec, used to start the largest first: rounds x seeds x runs."""
    spec = cfg.load(path)
    if quick:
        spec = _quick_spec(spec)
    runs = sum(len(cfg.policy_points(entry)) for entry in spec["policies"]) * len(cfg.grid_points(spec))
    return spec["experiment"]["horizon"] * spec["experiment"]["seeds"] * runs


def main(config_dir="configs", runs_dir="runs", experiments_dir="experiments", quick: bool = False,
         only: list | None = None, log=print, jobs: int = 1, x64: bool = False) -> dict:
    """Run the specs (``jobs`` at a time) and build the reports; return ``{spec stem: wall seconds}``."""
    if not (isinstance(jobs, int) and jobs >= 1):
        raise ValueError(f"--jobs {jobs!r}: the number of specs run at once must be an integer >= 1")
    runs = Path(runs_dir) / ("quick" if quick else "")
    reports_root = runs / "experiments" if quick else Path(experiments_dir)
    groups = {prefix: specs for prefix, specs in discover(config_dir).items() if not only or prefix in only}
    paths = sorted((path for specs in groups.values() for path in specs.values()),
                   key=lambda path: -cost(path, quick))
    timing = {}
    t0 = time.time()
    if jobs > 1:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            futures = {path: pool.submit(run_one, path, runs / path.stem, quick, x64) for path in paths}
            for path, future in futures.items():
                timing[path.stem] = round(future.result(), 2)
                log(f"  {path.stem}: {timing[path.stem]:.1f} s")
    else:
        for path in paths:
            log(f"running {path} -> {runs / path.stem}")
            timing[path.stem] = round(run_one(path, runs / path.stem, quick, x64), 2)
            log(f"  {path.stem}: {timing[path.stem]:.1f} s")
    timing["total"] = round(sum(timing.values()), 2)
    timing["wall"] = round(time.time() - t0, 2)
    for prefix, specs in groups.items():
        if prefix:
            report = importlib.import_module(f"mobandit_jax.reports.{prefix}")
            t1 = time.time()
            report.build({key: runs / path.stem for key, path in specs.items()}, reports_root / prefix)
            log(f"  report {reports_root / prefix}: {time.time() - t1:.1f} s")
    timing["wall_with_reports"] = round(time.time() - t0, 2)
    runs.mkdir(parents=True, exist_ok=True)
    (runs / "reproduce_timing.json").write_text(json.dumps(timing, indent=1))
    log(f"engine time {timing['total']:.1f} s summed over specs; wall {timing['wall']:.1f} s with {jobs} job(s), "
        f"{timing['wall_with_reports']:.1f} s with the reports; timings in {runs / 'reproduce_timing.json'}")
    return timing
