"""``mobandit reproduce``: run every spec in ``configs/`` and the report builders listed in ``experiments/``.

``experiments/reports.toml`` lists the report builders: per paper, the builder file (relative to that
file) and the specs it reads, e.g. ``[pdmob] builder = "pdmob/report.py"``, ``runs = {llm = "pdmob/llm", ...}``.
Each spec ``configs/<name>.toml`` (``configs/pdmob/llm.toml``: name ``pdmob/llm``) runs into ``runs/<name>``;
the builder file, imported by path, writes the paper's report with ``build({key: runs/<name>, ...},
experiments/pdmob)``. A spec that no builder lists
(``quickstart.toml``, a user's ``seed999_mine.toml``) is run and keeps the generic ``report.md`` of its run
directory.
``--quick`` is a smoke version (2 seeds, horizons capped at 200 rounds) whose runs and reports go
under ``runs/quick/`` and never overwrite ``experiments/``.
``--check`` re-runs the listed specs (``--only``, ``--quick`` apply) into a temporary runs folder, builds their
reports there and compares every record of each rebuilt ``summary.json`` with the committed one
(``experiments/<paper>/summary.json``; with ``--quick``, ``runs/quick/experiments/<paper>/summary.json``); any
number that differs is listed and the command exits 1.

``--jobs N`` runs N specs at once in separate processes (largest first: rounds x seeds x runs per
spec), each worker pinned to its own share of the cores (XLA's CPU thread pools of two workers on the
same cores would contend), then builds the reports.
"""
from __future__ import annotations

import importlib.util
import json
import multiprocessing
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

from . import execution, plans
from . import spec as cfg
from . import devices

QUICK_SEEDS = 2
QUICK_HORIZON = 200
REGISTRY = "reports.toml"


PAPERS = {"seed000": "pdmob", "seed001": "topk_pareto", "seed002": "cost_aware"}  # earlier names, still accepted


def discover(config_dir) -> dict:
    """``{name: path}`` of the spec files under ``config_dir``, sorted by name: a spec's name is its path
    below ``config_dir`` without ``.toml`` (``topk_pareto/d2``); an error naming the folder if there are none."""
    config_dir = Path(config_dir)
    if not config_dir.is_dir():
        raise FileNotFoundError(f"no spec folder {config_dir.resolve()}: run `mobandit reproduce` from the "
                                "repository root or pass --configs DIR")
    specs = {p.relative_to(config_dir).with_suffix("").as_posix(): p for p in config_dir.rglob("*.toml")}
    if not specs:
        raise FileNotFoundError(f"spec folder {config_dir.resolve()} holds no *.toml spec")
    return dict(sorted(specs.items()))


class Builder(NamedTuple):
    """One entry of ``reports.toml``: the builder file and ``{run key: spec name}``."""

    path: Path
    runs: dict


def report_builders(experiments_dir) -> dict:
    """``{paper: Builder}`` listed in ``experiments_dir/reports.toml`` (empty if there is no such file)."""
    registry = Path(experiments_dir) / REGISTRY
    if not registry.is_file():
        return {}
    try:
        table = tomllib.loads(registry.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"{registry}: not a valid TOML file ({err})") from None
    builders = {}
    for paper, entry in table.items():
        where = f"{registry}: [{paper}]"
        if not isinstance(entry, dict) or set(entry) != {"builder", "runs"}:
            raise ValueError(f"{where} must be a table with exactly the keys builder and runs, e.g. "
                             f'builder = "{paper}/report.py", runs = {{main = "{paper}/main"}}')
        rel, runs = entry["builder"], entry["runs"]
        if not isinstance(rel, str):
            raise ValueError(f"{where} builder = {rel!r}; expected the path of a report builder file "
                             f"relative to {registry.parent}")
        if not (isinstance(runs, dict) and runs and all(isinstance(v, str) for v in runs.values())):
            raise ValueError(f"{where} runs = {runs!r}; expected a table of run key = spec name (its path "
                             "below the spec folder, without .toml)")
        path = registry.parent / rel
        if not path.is_file():
            raise FileNotFoundError(f"{where} builder = {rel!r}, but {path} does not exist")
        builders[paper] = Builder(path, dict(runs))
    return builders


def load_builder(path, paper: str) -> ModuleType:
    """Import the report builder file ``path`` (as module ``mobandit_report_<paper>``); it must define ``build``."""
    name = f"mobandit_report_{paper}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if not callable(getattr(module, "build", None)):
        raise ValueError(f"{path}: a report builder must define build(run_dirs, out_dir)")
    return module


def load_report(paper: str, experiments_dir="experiments") -> ModuleType:
    """The report builder module listed as ``paper`` in ``experiments_dir/reports.toml``."""
    builders = report_builders(experiments_dir)
    if paper not in builders:
        raise KeyError(f"{Path(experiments_dir) / REGISTRY} lists no report builder {paper!r}; "
                       f"listed: {sorted(builders)}")
    return load_builder(builders[paper].path, paper)


def group(specs: dict, builders: dict) -> tuple:
    """``({paper: {run key: spec name}}, [spec names no builder lists])``, both in the order of ``specs``."""
    listed = {name: (paper, key) for paper, builder in builders.items() for key, name in builder.runs.items()}
    grouped, alone = {}, []
    for name in specs:
        if name in listed:
            paper, key = listed[name]
            grouped.setdefault(paper, {})[key] = name
        else:
            alone.append(name)
    return grouped, alone


def _matches(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith((f"{prefix}/", f"{prefix}_"))


def _selected(specs: dict, only, config_dir) -> dict:
    """The specs named NAME, NAME/* or NAME_* for a NAME in ``only`` (all specs if ``only`` is empty); the
    papers' earlier names (``seed001``, ``seed001_d2``) name the same specs."""
    if not only:
        return dict(specs)
    only = [next((new + name[len(old):].replace("_", "/", 1) for old, new in PAPERS.items()
                  if name.startswith(old)), name) for name in only]
    for name in only:
        if not any(_matches(s, name) for s in specs):
            raise ValueError(f"--only {name}: no spec {name}.toml, {name}/*.toml or {name}_*.toml in {config_dir}")
    return {s: p for s, p in specs.items() if any(_matches(s, n) for n in only)}


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
    execution.execute(plans.build(spec), out, progress=False)
    return time.time() - t0


def _take_cores(slots) -> None:
    """Worker start-up: pin this worker to the next free share of the cores (one share per worker)."""
    devices.pin(slots.get(timeout=60))


def cost(path: Path, quick: bool) -> int:
    """A size estimate of a spec, used to start the largest first: rounds x seeds x runs."""
    spec = cfg.load(path)
    return cfg.seed_rounds(_quick_spec(spec) if quick else spec)


def main(config_dir="configs", runs_dir="runs", experiments_dir="experiments", quick: bool = False,
         only: list | None = None, log=print, jobs: int = 1, x64: bool = False, reports_dir=None,
         listed_only: bool = False) -> dict:
    """Run the specs (``jobs`` at a time) and build the reports; return ``{spec name: wall seconds}``.

    ``reports_dir`` overrides where the reports go; ``listed_only`` skips the specs no builder lists.
    """
    if not (isinstance(jobs, int) and jobs >= 1):
        raise ValueError(f"--jobs {jobs!r}: the number of specs run at once must be an integer >= 1")
    runs = Path(runs_dir) / ("quick" if quick else "")
    reports_root = Path(reports_dir) if reports_dir is not None else (
        runs / "experiments" if quick else Path(experiments_dir))
    specs = _selected(discover(config_dir), only, config_dir)
    builders = report_builders(experiments_dir)
    groups, alone = group(specs, builders)
    if listed_only:
        specs, alone = {s: p for s, p in specs.items() if s not in alone}, []
    modules = {paper: load_builder(builders[paper].path, paper) for paper in groups}
    names = sorted(specs, key=lambda name: -cost(specs[name], quick))
    timing = {}
    t0 = time.time()
    if jobs > 1:
        context, pinning, shares = multiprocessing.get_context("spawn"), {}, devices.core_slots(jobs)
        if shares:
            slots = context.Queue()
            for cores in shares:
                slots.put(cores)
            pinning = {"initializer": _take_cores, "initargs": (slots,)}
        with ProcessPoolExecutor(jobs, mp_context=context, **pinning) as pool:
            futures = {name: pool.submit(run_one, specs[name], runs / name, quick, x64) for name in names}
            for name, future in futures.items():
                timing[name] = round(future.result(), 2)
                log(f"  {name}: {timing[name]:.1f} s")
    else:
        for name in names:
            log(f"running {specs[name]} -> {runs / name}")
            timing[name] = round(run_one(specs[name], runs / name, quick, x64), 2)
            log(f"  {name}: {timing[name]:.1f} s")
    timing["total"] = round(sum(timing.values()), 2)
    timing["wall"] = round(time.time() - t0, 2)
    for paper, members in groups.items():
        t1 = time.time()
        modules[paper].build({key: runs / name for key, name in members.items()}, reports_root / paper)
        log(f"  report {reports_root / paper}: {time.time() - t1:.1f} s")
    for name in alone:
        log(f"  {name}: no report builder in {Path(experiments_dir) / REGISTRY}; "
            f"generic report {runs / name / 'report.md'}")
    timing["wall_with_reports"] = round(time.time() - t0, 2)
    runs.mkdir(parents=True, exist_ok=True)
    (runs / "reproduce_timing.json").write_text(json.dumps(timing, indent=1))
    log(f"engine time {timing['total']:.1f} s summed over specs; wall {timing['wall']:.1f} s with {jobs} job(s), "
        f"{timing['wall_with_reports']:.1f} s with the reports; timings in {runs / 'reproduce_timing.json'}")
    return timing


def _record_key(record: dict) -> tuple:
    """What names a summary record: policy, params, setting, metric (the rest are its numbers)."""
    return (record.get("policy"), json.dumps(record.get("params"), sort_keys=True),
            json.dumps(record.get("setting"), sort_keys=True), record.get("metric"))


def compare_records(paper: str, committed: list, reproduced: list, complete: bool) -> list:
    """One line per differing number: ``paper | policy params | setting | metric.field | committed | reproduced``.

    Every reproduced record must be committed with the same numbers; with ``complete`` (every spec of the
    paper was re-run) every committed record must also be reproduced.
    """
    old = {_record_key(r): r for r in committed}
    new = {_record_key(r): r for r in reproduced}
    lines = []
    for key in sorted(set(old) | set(new)):
        if key not in new and not complete:
            continue
        a, b = old.get(key, {}), new.get(key, {})
        policy, params, setting, metric = key
        fields = sorted((set(a) | set(b)) - {"policy", "params", "setting", "metric"})
        if not a or not b:
            fields = ["(record)"]
        for field in fields:
            ca = a.get(field, "missing") if a else "missing"
            cb = b.get(field, "missing") if b else "missing"
            if field == "(record)" or ca != cb:
                lines.append(f"{paper} | {policy} {params} | {setting} | {metric}.{field} | committed {ca} | "
                             f"reproduced {cb}")
    return lines


def check(config_dir="configs", experiments_dir="experiments", quick: bool = False, only: list | None = None,
          log=print, jobs: int = 1, x64: bool = False, runs_dir="runs") -> list:
    """Re-run the specs the report builders list into a temporary folder and compare the rebuilt
    ``summary.json`` of each report with the committed one; return the differing lines (empty: all agree).

    The committed reference is ``experiments_dir/<paper>/summary.json`` (with ``quick``,
    ``runs_dir/quick/experiments/<paper>/summary.json``, written by ``mobandit reproduce --quick``).
    """
    specs = _selected(discover(config_dir), only, config_dir)
    builders = report_builders(experiments_dir)
    groups, _ = group(specs, builders)
    reference = Path(runs_dir) / "quick" / "experiments" if quick else Path(experiments_dir)
    for paper in groups:
        if not (reference / paper / "summary.json").is_file():
            raise FileNotFoundError(f"--check: no committed {reference / paper / 'summary.json'} to compare with")
    diffs = []
    with tempfile.TemporaryDirectory(prefix="mobandit_check_") as tmp:
        main(config_dir, Path(tmp) / "runs", experiments_dir, quick=quick, only=only, log=log, jobs=jobs, x64=x64,
             reports_dir=Path(tmp) / "experiments", listed_only=True)
        for paper, members in groups.items():
            committed = json.loads((reference / paper / "summary.json").read_text())["records"]
            reproduced = json.loads((Path(tmp) / "experiments" / paper / "summary.json").read_text())["records"]
            complete = set(members) == set(builders[paper].runs)
            found = compare_records(paper, committed, reproduced, complete)
            log(f"  check {paper}: {len(reproduced)} records reproduced, {len(found)} differing number(s)")
            diffs += found
    for line in diffs:
        log(line)
    return diffs
