"""``mobandit reproduce``: run every spec in ``configs/`` and the report builders listed in ``experiments/``.

``experiments/reports.toml`` lists the report builders: per paper, the builder file (relative to that
file) and the specs it reads, e.g. ``[pdmob] builder = "pdmob/report.py"``, ``runs = {llm = "pdmob/llm", ...}``.
Each spec ``configs/<name>.toml`` (``configs/pdmob/llm.toml``: name ``pdmob/llm``) runs into ``runs/<name>``;
the builder file, imported by path, writes the paper's report with ``build({key: runs/<name>, ...},
experiments/pdmob)``. A spec that no builder lists (``quickstart.toml``, a user's ``seed999_mine.toml``) is
run and keeps the generic ``report.md`` of its run directory.

``--quick`` is a smoke version (2 seeds, horizons capped at 200 rounds) whose runs and reports go under
``runs/quick/`` and never overwrite ``experiments/``.

``--check`` re-runs the listed specs (``--only``, ``--quick`` apply) into a temporary runs folder, builds their
reports there (without figures: the folder is deleted afterwards) and compares every record of each rebuilt
``summary.json`` with the committed one (``experiments/<paper>/summary.json``; with ``--quick``,
``runs/quick/experiments/<paper>/summary.json``). XLA compiles for the host's instruction set, so on another
CPU some numbers differ in the last bits and some discrete choices flip; each committed number is therefore
classed (:func:`classify`) as ``bitwise``, ``round-off`` (within 1e-6 relative), ``sampling`` (a mean within 2
standard errors) or ``different``, and only ``different`` ones fail (``--strict``: every number that is not
bitwise fails).

Every path reproduce writes is checked before anything runs: a run folder ``runs/<name>`` must be new,
empty or a run folder; ``runs/reproduce_timing.json`` new or written by reproduce; with ``--quick``, a
report folder ``runs/quick/experiments/<paper>`` new, empty or holding a ``summary.json``. A file that
reproduce did not write is never overwritten or deleted.

``--jobs N`` (1 to the cores this process may use) runs N specs at once in separate processes, the longest
first (:func:`longest_first`: the seconds a spec took last time, kept beside the compiled programs in
``reproduce_seconds.json``, else its rounds x seeds x runs), each worker pinned to its own share of the cores
(XLA's CPU thread pools of two workers on the same cores would contend) and keeping freed memory for reuse
(:func:`mobandit_jax.runner.runtime.keep_freed_memory`: a spec's chunks reuse its large buffers). A paper's
report is built as soon as its last spec finishes, while the other specs still run.
"""
from __future__ import annotations

import contextlib
import importlib.util
import inspect
import json
import math
import multiprocessing
import sys
import tempfile
import threading
import time
import tomllib
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

from ..analysis.stats import DERIVED
from ..errors import one_line_warning
from ..experiment_spec import ExperimentSpec
from . import api, devices, run_folder, runtime, workers
from . import spec as cfg

QUICK_SEEDS = 2
QUICK_HORIZON = 200
REGISTRY = "reports.toml"
TIMING = "reproduce_timing.json"
SECONDS = "reproduce_seconds.json"  # each spec's last seconds, kept beside the compiled programs (longest_first)
CLASSES = ("bitwise", "round-off", "sampling", "different")  # how a committed number compares with the re-run
ROUND_OFF = 1e-6  # relative difference of a "round-off" number
SAMPLING_SE = 2.0  # standard errors (std / sqrt(n) of the committed record) within which a mean is "sampling"
KEY_FIELDS = ("policy", "params", "setting", "metric")  # what names a summary record; the others are numbers


PAPERS = {"seed000": "pdmob", "seed001": "topk_pareto", "seed002": "cost_aware"}  # earlier names, still accepted


def discover(config_dir) -> dict:
    """``{name: path}`` of the spec files under ``config_dir``, sorted by name: a spec's name is its path
    below ``config_dir`` without ``.toml`` (``topk_pareto/d2``); an error naming the folder if there are none.

    Args:
      config_dir: the spec folder.

    Returns:
      ``{name: path}``.
    """
    config_dir = Path(config_dir)
    if config_dir.is_file():
        raise ValueError(f"--configs {config_dir} is a file; give the folder of the spec files (*.toml)")
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
    """``{paper: Builder}`` listed in ``experiments_dir/reports.toml`` (empty if there is no such file).

    Args:
      experiments_dir: the folder of ``reports.toml``.

    Returns:
      ``{paper: Builder}``.
    """
    if Path(experiments_dir).is_file():
        raise ValueError(f"--experiments {experiments_dir} is a file; give the folder of the reports and {REGISTRY}")
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
    """Import the report builder file ``path`` (as module ``mobandit_report_<paper>``); it must define ``build``.

    Args:
      path: the builder file.
      paper: its name in ``reports.toml``.

    Returns:
      The imported module.
    """
    name = f"mobandit_report_{paper}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if not callable(getattr(module, "build", None)):
        raise ValueError(f"{path}: a report builder must define build(run_dirs, out_dir)")
    return module


def load_report(paper: str, experiments_dir="experiments") -> ModuleType:
    """The report builder module listed as ``paper`` in ``experiments_dir/reports.toml``.

    Args:
      paper: its name in ``reports.toml``.
      experiments_dir: the folder of ``reports.toml``.

    Returns:
      The imported module.
    """
    builders = report_builders(experiments_dir)
    if paper not in builders:
        raise KeyError(f"{Path(experiments_dir) / REGISTRY} lists no report builder {paper!r}; "
                       f"listed: {sorted(builders)}")
    return load_builder(builders[paper].path, paper)


def group(specs: dict, builders: dict) -> tuple:
    """``({paper: {run key: spec name}}, [spec names no builder lists])``, both in the order of ``specs``.

    Args:
      specs: ``{name: path}`` (:func:`discover`).
      builders: ``{paper: Builder}`` (:func:`report_builders`).

    Returns:
      ``(grouped, alone)``.
    """
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
    for name in only:
        if not isinstance(name, str) or not name.strip("/_ "):
            raise ValueError(f"--only {name!r}: expected a spec name or prefix, e.g. pdmob or topk_pareto/d2")
    only = [next((new + name[len(old):].replace("_", "/", 1) for old, new in PAPERS.items()
                  if name.startswith(old)), name) for name in only]
    for name in only:
        if not any(_matches(s, name) for s in specs):
            raise ValueError(f"--only {name}: no spec {name}.toml, {name}/*.toml or {name}_*.toml in {config_dir}")
    return {s: p for s, p in specs.items() if any(_matches(s, n) for n in only)}


def _quick_spec(spec: ExperimentSpec) -> ExperimentSpec:
    overrides = [f"experiment.seeds={min(QUICK_SEEDS, spec.experiment.seeds)}",
                 f"experiment.horizon={min(QUICK_HORIZON, spec.experiment.horizon)}"]
    return cfg.apply_overrides(spec, overrides)


@contextlib.contextmanager
def _named(path: Path):
    """A spec's one-line :class:`ConfigError` raised inside names the spec file ``path``."""
    try:
        yield
    except cfg.ConfigError as err:
        raise cfg.ConfigError(err if str(path) in str(err) else f"{path}: {err}") from None


def load_spec(path: Path, quick: bool) -> ExperimentSpec:
    """The spec at ``path``; a bad spec's one-line error names the file.

    Args:
      path: the spec file.
      quick: its ``--quick`` version (:data:`QUICK_SEEDS` seeds, at most :data:`QUICK_HORIZON` rounds).

    Returns:
      The :class:`~mobandit_jax.experiment_spec.ExperimentSpec`.
    """
    with _named(path):
        spec = cfg.load(path)
        spec = _quick_spec(spec) if quick else spec
    return spec


def run_one(path: Path, out: Path, quick: bool, x64: bool = False, figures: bool = True) -> float:
    """Run one spec (resuming if its directory has chunks); return the wall seconds (``figures=False``: its run
    folder gets no figures).

    Args:
      path: the spec file.
      out: its run folder.
      quick: run its ``--quick`` version.
      x64: compute in float64.
      figures: draw the run folder's figures.

    Returns:
      The wall seconds.
    """
    from . import execution, plans  # JAX: in the worker, after its cores are set

    if x64:
        import jax

        jax.config.update("jax_enable_x64", True)
    spec = load_spec(path, quick)
    t0 = time.time()
    with _named(path):
        plan = plans.checked_build(spec)
    execution.execute(plan, out, progress=False, figures=figures)
    return time.time() - t0


def _start_job(slots) -> None:
    """Job process start-up, before JAX starts: freed memory kept for reuse (the specs of a reproduction mostly
    run kept programs; :func:`mobandit_jax.runner.runtime.keep_freed_memory`), and the process pinned to the
    next free share of the cores (one share per job), if ``slots`` has them."""
    runtime.keep_freed_memory()
    workers.die_with_parent()
    warnings.showwarning = one_line_warning  # a job's warnings as the command shows its own
    if slots is not None:
        devices.pin(slots.get(timeout=60))


def cost(path: Path, quick: bool) -> int:
    """A size estimate of a spec: rounds x seeds x runs.

    Args:
      path: the spec file.
      quick: its ``--quick`` version.

    Returns:
      Rounds x seeds x runs (:meth:`~mobandit_jax.experiment_spec.ExperimentSpec.seed_rounds`).
    """
    spec = load_spec(path, quick)
    with _named(path):
        return spec.seed_rounds()


def _seconds_file() -> Path | None:
    """Where each spec's seconds are kept (in the kept programs' folder), or None: the cache is off."""
    from . import programs  # JAX, which the report builders loaded already

    folder = programs.directory()
    return None if folder is None else folder / SECONDS


def _mode(quick: bool, x64: bool) -> str:
    return ("quick" if quick else "full") + (" x64" if x64 else "")


def _seconds_table(path: Path | None) -> dict:
    """The table kept at ``path``, ``{mode: {spec name: seconds}}``; empty if there is none or it is unreadable."""
    try:
        table = json.loads(path.read_text(encoding="utf-8")) if path is not None else {}
    except (OSError, ValueError):
        return {}
    return table if isinstance(table, dict) else {}


def recorded_seconds(quick: bool = False, x64: bool = False) -> dict:
    """``{spec name: seconds}`` of the specs' last runs in this mode (:func:`record_seconds`); empty if none.

    Args:
      quick: the ``--quick`` runs'.
      x64: the float64 runs'.

    Returns:
      ``{spec name: seconds}``.
    """
    entry = _seconds_table(_seconds_file()).get(_mode(quick, x64))
    if not isinstance(entry, dict):
        return {}
    return {k: float(v) for k, v in entry.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def record_seconds(seconds: dict, quick: bool = False, x64: bool = False) -> None:
    """Keep ``{spec name: seconds}`` for the next run's order (merged with what is kept); an unwritable cache
    only costs that order.

    Args:
      seconds: ``{spec name: seconds}``.
      quick: of ``--quick`` runs.
      x64: of float64 runs.

    Returns:
      None.
    """
    path = _seconds_file()
    if path is None:
        return
    table, mode = _seconds_table(path), _mode(quick, x64)
    entry = table.get(mode)
    table[mode] = {**(entry if isinstance(entry, dict) else {}), **seconds}
    data = json.dumps(table, indent=1, sort_keys=True).encode()
    with contextlib.suppress(OSError):
        run_folder.atomic_write(path, lambda f: f.write(data))


def longest_first(sizes: dict, seconds: dict) -> list:
    """The spec names of ``sizes`` (``{name: rounds x seeds x runs}``), the longest expected first: a spec's
    ``seconds`` from an earlier run, else its size times the seconds per unit of size of the specs that have
    them (with none, the largest first). Jobs that take the specs in this order end close together.

    Args:
      sizes: ``{name: rounds x seeds x runs}``.
      seconds: ``{name: seconds}`` of earlier runs.

    Returns:
      The names, in order.
    """
    known = [name for name in sizes if name in seconds]
    rate = sum(seconds[n] for n in known) / max(1, sum(sizes[n] for n in known)) if known else 1.0
    expected = {name: seconds.get(name, sizes[name] * rate) for name in sizes}
    return sorted(sizes, key=lambda name: -expected[name])


def check_jobs(jobs) -> int:
    """``jobs`` if it is a number of specs to run at once from 1 to the cores this process may use.

    Args:
      jobs: the value given.

    Returns:
      ``jobs``.
    """
    cores = devices.cpu_cores()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= cores:
        raise ValueError(f"--jobs {jobs!r}: the number of specs run at once must be an integer from 1 to {cores} "
                         "(the cores this process may use; each job runs on its own cores)")
    return jobs


def _inputs(config_dir, experiments_dir, only, jobs) -> tuple:
    """The checked arguments of :func:`main` and :func:`check`: ``(specs, builders, groups, alone)``."""
    check_jobs(jobs)
    specs = _selected(discover(config_dir), only, config_dir)
    builders = report_builders(experiments_dir)
    return (specs, builders, *group(specs, builders))


def _ours(path: Path, key: str) -> bool:
    """Whether ``path`` is a JSON object with ``key``: a file of the kind reproduce writes there."""
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(content, dict) and key in content


def check_writes(runs: Path, names, reports=()) -> None:
    """Refuse (one line naming the path) to run where a file reproduce did not write would be replaced.

    ``runs / name`` must be new, empty or a run folder, ``runs / TIMING`` new or written by reproduce,
    each report folder of ``reports`` new, empty or holding the ``summary.json`` its builder wrote.

    Args:
      runs: the runs folder.
      names: the spec names run there.
      reports: the report folders written.

    Returns:
      None.
    """
    api.check_folder_path(runs, "--runs")
    for name in names:
        api.check_out(runs / name, "--runs")
    timing = runs / TIMING
    if (timing.exists() or timing.is_symlink()) and not _ours(timing, "wall_with_reports"):
        raise ValueError(f"--runs: {timing} was not written by mobandit reproduce; nothing was run: move it away "
                         "or choose another --runs folder")
    for folder in map(Path, reports):
        if (folder.exists() or folder.is_symlink()) and not (folder.is_dir() and (
                not any(folder.iterdir()) or _ours(folder / "summary.json", "records"))):
            raise ValueError(f"--runs: {folder} is not a report folder of mobandit reproduce --quick (no summary.json "
                             "of records); nothing was run: move it away or choose another --runs folder")


def main(config_dir="configs", runs_dir="runs", experiments_dir="experiments", quick: bool = False,
         only: list | None = None, log=print, jobs: int = 1, x64: bool = False, reports_dir=None,
         listed_only: bool = False, figures: bool = True) -> dict:
    """Run the specs (``jobs`` at a time) and build the reports, each as soon as its specs are finished.

    Every argument, spec and path written is checked (a one-line ``ValueError``) before anything runs.

    Args:
      config_dir: the spec folder.
      runs_dir: where the run folders go (under ``quick/`` with ``quick``).
      experiments_dir: the report builders' folder (``reports.toml``) and, without ``quick``, the reports'.
      quick: 2 seeds and short horizons (:data:`QUICK_SEEDS`, :data:`QUICK_HORIZON`).
      only: spec names or prefixes to run (None: all).
      log: where progress lines go.
      jobs: specs run at once, each in its own process.
      x64: compute in float64.
      reports_dir: where the reports go instead.
      listed_only: skip the specs no builder lists.
      figures: False draws no figure in the run folders, nor in the reports whose builder takes ``figures``.

    Returns:
      ``{spec name: wall seconds, "total": their sum, "wall_with_reports": seconds}``.
    """
    specs, builders, groups, alone = _inputs(config_dir, experiments_dir, only, jobs)
    runs = Path(runs_dir) / ("quick" if quick else "")
    reports_root = Path(reports_dir) if reports_dir is not None else (
        runs / "experiments" if quick else Path(experiments_dir))
    if listed_only:
        specs, alone = {s: p for s, p in specs.items() if s not in alone}, []
    reports = _Reports({paper: load_builder(builders[paper].path, paper) for paper in groups}, groups, runs,
                       reports_root, figures, log)
    sizes = {name: cost(path, quick) for name, path in specs.items()}  # every spec is read and checked here
    names = longest_first(sizes, recorded_seconds(quick, x64))
    check_writes(runs, names, [reports_root / paper for paper in groups] if quick and reports_dir is None else ())
    timing = {}
    t0 = time.time()

    def done(name: str, seconds: float) -> None:
        """Log a finished spec; build each report whose specs are all finished (while the others still run)."""
        timing[name] = round(seconds, 2)
        log(f"  {name}: {timing[name]:.1f} s")
        reports.finished(name)

    if jobs > 1:
        _run_in_jobs([(name, specs[name], runs / name) for name in names], jobs, (quick, x64, figures), done)
    else:
        for name in names:
            log(f"running {specs[name]} -> {runs / name}")
            done(name, run_one(specs[name], runs / name, quick, x64, figures))
    record_seconds({name: timing[name] for name in names}, quick, x64)
    timing["total"] = round(sum(timing[name] for name in names), 2)
    for name in alone:
        log(f"  {name}: no report builder in {Path(experiments_dir) / REGISTRY}; "
            f"generic report {runs / name / 'report.md'}")
    timing["wall_with_reports"] = round(time.time() - t0, 2)
    runs.mkdir(parents=True, exist_ok=True)
    (runs / TIMING).write_text(json.dumps(timing, indent=1))
    log(f"engine time {timing['total']:.1f} s summed over specs; wall {timing['wall_with_reports']:.1f} s with "
        f"{jobs} job(s) and the reports (each built once its specs finished); timings in {runs / TIMING}")
    return timing


class _Reports:
    """The papers' reports, each built as soon as the last of its specs is finished (:meth:`finished`)."""

    def __init__(self, modules: dict, groups: dict, runs: Path, root: Path, figures: bool, log):
        self.modules, self.groups, self.runs, self.root, self.figures, self.log = (modules, groups, runs, root,
                                                                                    figures, log)
        self.waiting = {paper: set(members.values()) for paper, members in groups.items()}

    def finished(self, name: str):
        """Spec ``name`` is finished: build each report that waited for it last."""
        for paper, left in self.waiting.items():
            if name in left:
                left.discard(name)
                if not left:
                    t1 = time.time()
                    build = self.modules[paper].build
                    undrawn = {} if self.figures or "figures" not in inspect.signature(build).parameters else {
                        "figures": False}
                    build({key: self.runs / spec for key, spec in self.groups[paper].items()}, self.root / paper,
                          **undrawn)
                    self.log(f"  report {self.root / paper}: {time.time() - t1:.1f} s")


def _run_in_jobs(todo: list, jobs: int, how: tuple, done):
    """Run each ``(name, spec path, run folder)`` of ``todo`` (:func:`run_one` with ``how = (quick, x64, figures)``)
    in ``jobs`` job processes, each pinned to its share of the cores, calling ``done(name, seconds)`` as each
    finishes; an interrupt or a failed spec stops the jobs in flight."""
    context, shares, slots = multiprocessing.get_context("spawn"), devices.core_slots(jobs), None
    if shares:
        slots = context.Queue()
        for cores in shares:
            slots.put(cores)
    with _manager_thread_errors_dropped(), ProcessPoolExecutor(
            jobs, mp_context=context, initializer=_start_job, initargs=(slots,)) as pool:
        try:
            with workers.sigint_ignored():  # inherited: a Ctrl-C reaches the jobs too, this process stops them
                futures = {pool.submit(run_one, path, out, *how): name for name, path, out in todo}
            for future in as_completed(futures):
                try:
                    seconds = future.result()
                except BrokenProcessPool:  # every spec still running or waiting gets it: none is named
                    raise RuntimeError("a job process stopped abruptly (killed: out of memory? try --jobs 1)"
                                       ) from None
                done(futures[future], seconds)
        except BaseException:  # an interrupt or a failed spec: the jobs in flight are stopped, not waited for
            manager = getattr(pool, "_executor_manager_thread", None)
            for job in multiprocessing.active_children():
                job.terminate()
            pool.shutdown(wait=False, cancel_futures=True)
            if manager is not None:  # it tears the pool down: done before its errors are shown again
                manager.join(10)
            raise


@contextlib.contextmanager
def _manager_thread_errors_dropped():
    """While a job pool is in use, an ``OSError`` of the pool's own manager thread is not printed: when a job
    process dies, that thread and the pool's shutdown both close the pool's pipes (Python 3.11 raises
    ``EBADF`` there), and the error the run reports is the broken pool's, in one line."""
    shown = threading.excepthook

    def hook(args):
        if not (issubclass(args.exc_type, OSError) and type(args.thread).__name__ == "_ExecutorManagerThread"):
            shown(args)

    threading.excepthook = hook
    try:
        yield
    finally:
        threading.excepthook = shown


def _record_key(record: dict) -> tuple:
    """What names a summary record: policy, params, setting, metric (the rest are its numbers)."""
    return (record.get("policy"), json.dumps(record.get("params"), sort_keys=True),
            json.dumps(record.get("setting"), sort_keys=True), record.get("metric"))


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _exact_class(a, b) -> str:
    """``bitwise`` (equal, or both NaN), ``round-off`` (numbers within :data:`ROUND_OFF` relative) or ``different``."""
    numbers = _is_number(a) and _is_number(b)
    if a == b or (numbers and math.isnan(a) and math.isnan(b)):
        return "bitwise"
    return "round-off" if numbers and math.isclose(a, b, rel_tol=ROUND_OFF, abs_tol=0.0) else "different"


def _within_sampling(committed: dict, reproduced: dict) -> bool:
    """``|mean_a - mean_b| < 2 * std / sqrt(n)``, ``std`` and ``n`` those of the committed record."""
    a, b, std, n = (committed.get("mean"), reproduced.get("mean"), committed.get("std"), committed.get("n"))
    return all(map(_is_number, (a, b, std, n))) and n >= 1 and abs(a - b) < SAMPLING_SE * std / math.sqrt(n)


def classify(committed: dict, reproduced: dict) -> dict:
    """``{field: class}`` (a class of :data:`CLASSES`) of each number of one record, committed against re-run.

    A number is ``bitwise`` if equal, ``round-off`` if equal to :data:`ROUND_OFF` relative, else
    ``different``; a ``mean`` that is neither is ``sampling`` if the difference of the two means is below
    2 standard errors of the committed record, ``|mean_a - mean_b| < 2 * std / sqrt(n)`` with the committed
    ``std`` and ``n`` (the issue's reading: one record's standard error, not the two combined). A ``std``
    (and ``se``, ``ci_low``, ``ci_high``) follows its mean: beyond round-off it is ``sampling`` where the mean
    is, else ``different``. A field
    missing on one side is ``different``, except an interval field (``se``, ``ci_low``, ``ci_high``,
    ``interval``: :data:`~mobandit_jax.analysis.stats.DERIVED`) that the committed record, of an earlier
    version, does not have: it is derived from the numbers compared, and not compared.

    Args:
      committed: the committed record.
      reproduced: the re-run's record.

    Returns:
      ``{field: class}``.
    """
    missing = object()
    new = {f for f in DERIVED if f in reproduced and f not in committed}  # a committed summary of an earlier version
    fields = sorted((set(committed) | set(reproduced)) - set(KEY_FIELDS) - new)
    classes = {f: _exact_class(committed.get(f, missing), reproduced.get(f, missing)) for f in fields}
    if classes.get("mean") == "different" and _within_sampling(committed, reproduced):
        classes["mean"] = "sampling"
    for follower in ("std", "se", "ci_low", "ci_high"):  # the spread and the interval follow their mean
        if classes.get("mean") == "sampling" and classes.get(follower) == "different":
            classes[follower] = "sampling"
    return classes


def compare_records(paper: str, committed: list, reproduced: list, complete: bool) -> dict:
    """``{class: [line, ...]}`` for each of :data:`CLASSES`, a line per committed number (:func:`classify`):
    ``paper | policy params | setting | metric.field | committed X | reproduced Y``.

    Every reproduced record must be committed; with ``complete`` (every spec of the paper was re-run)
    every committed record must also be reproduced. A record missing on either side is one ``different``
    line (field ``(record)``).

    Args:
      paper: the paper's name, at the start of each line.
      committed: its committed records.
      reproduced: the re-run's records.
      complete: every spec of the paper was re-run.

    Returns:
      ``{class: [line, ...]}``.
    """
    old = {_record_key(r): r for r in committed}
    new = {_record_key(r): r for r in reproduced}
    found = {c: [] for c in CLASSES}
    for key in sorted(set(old) | set(new), key=str):
        if key not in new and not complete:
            continue
        policy, params, setting, metric = key
        where = f"{paper} | {policy} {params} | {setting} | {metric}"
        a, b = old.get(key), new.get(key)
        if a is None or b is None:
            shown = ["present" if r is not None else "missing" for r in (a, b)]
            found["different"].append(f"{where}.(record) | committed {shown[0]} | reproduced {shown[1]}")
            continue
        for field, cls in classify(a, b).items():
            found[cls].append(f"{where}.{field} | committed {a.get(field, 'missing')} | "
                              f"reproduced {b.get(field, 'missing')}")
    return found


def failing(found: dict, strict: bool = False) -> list:
    """The lines of ``found`` that fail the check, prefixed by their class: ``different`` (with ``strict``:
    every class but ``bitwise``).

    Args:
      found: ``{class: [line, ...]}`` (:func:`compare_records`).
      strict: every class but ``bitwise`` fails.

    Returns:
      The failing lines.
    """
    return [f"{c}: {line}" for c in CLASSES[1:] if strict or c == "different" for line in found[c]]


def counts(found: dict) -> str:
    """``"N bitwise, N round-off, N sampling, N different"``: the numbers of ``found`` per class.

    Args:
      found: ``{class: [line, ...]}``.

    Returns:
      The counts, in words.
    """
    return ", ".join(f"{len(found[c])} {c}" for c in CLASSES)


def _records(path: Path, what: str) -> list:
    """The records of the summary file ``path``; a missing or unreadable file is a one-line error."""
    if not path.is_file():
        raise FileNotFoundError(f"--check: no {what} {path} to compare with")
    try:
        records = json.loads(path.read_text(encoding="utf-8"))["records"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ValueError(f"--check: {what} {path} cannot be read as a summary ({type(err).__name__}: {err})") from None
    named = isinstance(records, list) and all(
        isinstance(r, dict) and all(isinstance(r.get(k), str) for k in ("policy", "metric")) for r in records)
    if not named:
        raise ValueError(f"--check: {what} {path}: 'records' must be a list of records, each with a policy, params, "
                         "setting and metric and its numbers")
    return records


def check(config_dir="configs", experiments_dir="experiments", quick: bool = False, only: list | None = None,
          log=print, jobs: int = 1, x64: bool = False, runs_dir="runs", strict: bool = False) -> dict:
    """Re-run the specs the report builders list into a temporary folder and compare the rebuilt
    ``summary.json`` of each report with the committed one; return ``{class: [line, ...]}`` (:func:`compare_records`).

    The committed reference is ``experiments_dir/<paper>/summary.json`` (with ``quick``,
    ``runs_dir/quick/experiments/<paper>/summary.json``, written by ``mobandit reproduce --quick``). The run
    folders and reports, deleted after the comparison, get no figures (a builder whose ``build`` takes
    ``figures`` is called with ``figures=False``). Logs the
    counts per class and each failing line (:func:`failing`; ``strict``: every number that is not bitwise).

    Args:
      config_dir: the spec folder.
      experiments_dir: the report builders' and committed reports' folder.
      quick: compare the ``--quick`` runs with ``runs_dir/quick/experiments``.
      only: spec names or prefixes (None: all).
      log: where progress lines go.
      jobs: specs run at once.
      x64: compute in float64.
      runs_dir: the runs folder (``--quick``'s reference).
      strict: every number that is not bitwise fails.

    Returns:
      ``{class: [line, ...]}``.
    """
    _, builders, groups, _ = _inputs(config_dir, experiments_dir, only, jobs)
    if not groups:
        raise ValueError(f"--check: no selected spec of {config_dir} is listed in {Path(experiments_dir) / REGISTRY}; "
                         "nothing to compare")
    reference = Path(runs_dir) / "quick" / "experiments" if quick else Path(experiments_dir)
    committed = {paper: _records(reference / paper / "summary.json", "committed") for paper in groups}
    found = {c: [] for c in CLASSES}
    with tempfile.TemporaryDirectory(prefix="mobandit_check_") as tmp:
        main(config_dir, Path(tmp) / "runs", experiments_dir, quick=quick, only=only, log=log, jobs=jobs, x64=x64,
             reports_dir=Path(tmp) / "experiments", listed_only=True, figures=False)
        for paper, members in groups.items():
            reproduced = _records(Path(tmp) / "experiments" / paper / "summary.json", "reproduced")
            complete = set(members) == set(builders[paper].runs)
            classes = compare_records(paper, committed[paper], reproduced, complete)
            log(f"  check {paper}: {len(reproduced)} records reproduced; numbers: {counts(classes)}")
            for c in CLASSES:
                found[c] += classes[c]
    for line in failing(found, strict):
        log(line)
    return found
