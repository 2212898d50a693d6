"""``Results``: the merged results of one experiment, in memory (records, curves, final values, truth).

``mobandit run`` and ``mb.run`` both merge their seed chunks into a :class:`Results`:
``Results.save`` writes the run folder's result files (``curves.npz``, ``finals.npz``,
``recommended.npz``, ``grid.json``, ``summary.json``, ``timing.json``, ``metrics.json``, ``truth.json``,
figures and ``report.md``; file layout in :mod:`mobandit_jax.analysis.files`), and ``Results.load`` reads a
run folder back, so that ``Results.load(d).save(e)`` writes the files of ``d`` again, byte for byte.

``metrics.json``: ``{"names": {label: [metric, ...]}, "reduce": {label: {metric: reducer}},
"bounds": {label: {metric: [low, high]}}, "goal": {label: {metric: "min" | "max" | ""}}, "families":
{label: family}}``, what reading a folder back needs beyond the records (the reducers pick the figures: a
curve per ``"sum"`` or ``"lastN"`` metric, final values otherwise, :func:`~mobandit_jax.analysis.plots.figures`;
the bounds mark rates and clip bands; the goal names the best policy of a paired comparison; the family names
the true set of :meth:`Results.recommended`). A folder of an earlier version has none: its metrics come from
the records, and a metric with a figure ``METRIC.png`` in the folder is a ``"sum"``; the other reducers
cannot be derived from the folder and are null; without ``bounds`` and ``goal``
no metric is a rate and none has a goal.

``recommended.npz``: ``"{label}|{grid}"`` -> ``(seeds, K)`` bool, the set each seed's run recommends
(its family's registered ``recommended``), read by :meth:`Results.recommended`.

``truth.json``: the ground truth every metric scores against, per grid setting
(:mod:`mobandit_jax.analysis.truth`).
"""
from __future__ import annotations

import json
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..engine import checkpoint_rounds
from ..experiment_spec import ExperimentSpec, GridPoint
from . import files, stats
from .files import column
from .truth import TRUTH_FILE

METRICS_FILE = "metrics.json"
_REQUIRED = {"summary.json": {"records": list}, METRICS_FILE: {"names": dict, "reduce": dict},
             TRUTH_FILE: {"settings": list}}  # the entries each JSON file of a run folder must hold


class ResultsFileError(ValueError):
    """A run folder's file that cannot be read back: truncated, not JSON or npz, or without its entries."""


class _Folder:
    """A run folder's files read back, each on first use; a file that cannot be read raises one
    :class:`ResultsFileError` naming the folder and the file."""

    def __init__(self, path):
        self.path = Path(path)
        for name in ("grid.json", "summary.json"):
            if not (self.path / name).is_file():
                raise FileNotFoundError(f"run directory {self.path} has no {name}; run `mobandit run` first")

    def error(self, name: str, why) -> ResultsFileError:
        """The one-line error naming this folder and its file ``name``."""
        return ResultsFileError(f"run folder {self.path}: {name} cannot be read ({' '.join(str(why).split())})")

    def json(self, name: str, default):
        """The JSON object of file ``name`` (``default`` where the folder has none), with its required entries."""
        path = self.path / name
        if not path.is_file():
            return default
        try:
            obj = json.loads(path.read_text())
        except (OSError, ValueError) as err:  # ValueError: json.JSONDecodeError, UnicodeDecodeError
            raise self.error(name, err) from None
        want = _REQUIRED.get(name, {})
        if not isinstance(obj, dict) or any(not isinstance(obj.get(k), t) for k, t in want.items()):
            keys = ", ".join(f"{k!r} ({t.__name__})" for k, t in want.items())
            raise self.error(name, "not a JSON object" + (f" with {keys}" if keys else ""))
        return obj

    def spec(self, marker: dict) -> ExperimentSpec | None:
        """The typed spec of ``run.json`` (``marker``), or None where it holds none."""
        tables = marker.get("spec")
        if not isinstance(tables, dict) or not tables:
            return None
        try:
            return ExperimentSpec.from_dict(tables)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise self.error(files.MARKER, f"its spec is not a spec's tables ({type(err).__name__}: {err})") from None

    def grid(self) -> dict:
        """``grid.json``: ``{label: [GridPoint, ...]}``."""
        grid = self.json("grid.json", {})
        try:
            return {label: [GridPoint.from_dict(p) for p in points] for label, points in grid.items()}
        except (KeyError, TypeError, AttributeError) as err:
            raise self.error("grid.json", "not a JSON object of labels, each a list of grid points with a setting "
                                          f"and params ({type(err).__name__}: {err})") from None

    def npz(self, name: str) -> dict:
        """The arrays of file ``name`` (empty where the folder has none)."""
        if not (self.path / name).is_file():
            return {}
        try:
            with np.load(self.path / name) as z:
                return {k: z[k] for k in z.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as err:
            raise self.error(name, f"{type(err).__name__}: {err}") from None


RECOMMENDED_FILE = "recommended.npz"


@dataclass(frozen=True)
class Recommendation:
    """What one policy at one grid setting recommends over the seeds (:meth:`Results.recommended`).

    ``masks[n, i]``: seed ``seeds[n]``'s run recommends arm ``arms[i]``; ``top``: the names of the set
    recommended most often (ties: the one a lower seed recommended first), by ``top_count`` of the seeds
    (``top_frequency``, a share); ``inclusion[i]``: the share of seeds whose set holds arm ``i``; ``true_set``:
    the ``(K,)`` bool set of the family's truth (``truth.json``), or None where the family has none or where each
    seed redraws its instance (``redrawn``: there is no one true set).
    """

    policy: str
    setting: dict
    arms: tuple
    masks: np.ndarray
    seeds: np.ndarray
    top: tuple
    top_count: int
    top_frequency: float
    inclusion: np.ndarray
    true_set: np.ndarray | None
    redrawn: bool = False

    @property
    def correct(self) -> np.ndarray | None:
        """``(seeds,)`` bool: the seed's recommended set is the true set (None without a true set)."""
        return None if self.true_set is None else np.all(self.masks == self.true_set[None, :], axis=1)

    @property
    def true_names(self) -> tuple | None:
        """The names of the true set's arms (None without a true set)."""
        return None if self.true_set is None else tuple(a for a, t in zip(self.arms, self.true_set, strict=True) if t)


def most_frequent(masks: np.ndarray) -> tuple:
    """``(row, count)``: the row of ``masks (S, K)`` that occurs most often (ties: the one that occurs first)."""
    rows, first, counts = np.unique(np.asarray(masks, bool), axis=0, return_index=True, return_counts=True)
    best = min(range(len(rows)), key=lambda r: (-counts[r], first[r]))
    return rows[best], int(counts[best])


class Curves(NamedTuple):
    """Cumulative per-seed curves of one metric, labelled.

    ``values[p, s, n, c]``: policy column ``policies[p]`` (a label, plus its options when a policy
    sweeps them), grid setting ``settings[s]``, seed ``n``, checkpoint round ``checkpoints[c]``;
    NaN where a policy has no such setting or metric.
    """

    values: np.ndarray
    policies: tuple
    settings: tuple
    checkpoints: np.ndarray


PLAY_CURVES = ("rounds", "spent")  # the engine's per-checkpoint rounds played and cost spent, beside the metrics


@dataclass
class Results:
    """The merged results of one experiment: records, curves and final values per seed.

    ``spec`` is the run's :class:`~mobandit_jax.experiment_spec.ExperimentSpec` (None for a run folder whose
    ``run.json`` has none); ``grid[label]`` lists each grid point's
    :class:`~mobandit_jax.experiment_spec.GridPoint` ``(setting, params)``; ``names[label]`` the
    metrics and ``reduce[label][metric]`` their reducers (``metrics.json``; for a folder of an earlier
    version, ``"sum"`` where the folder has the metric's figure, else None); ``arrays`` the contents of
    ``curves.npz``, ``finals`` of ``finals.npz`` and ``truths`` of ``truth.json`` (see :meth:`truth`).
    """

    spec: ExperimentSpec | None
    grid: dict
    names: dict
    reduce: dict
    horizon: int
    record_every: int
    base_seed: int
    arrays: dict
    finals: dict
    records: list
    wall: float = 0.0
    marker: dict = field(default_factory=dict)  # run.json of the run folder
    truths: Sequence = field(default_factory=list)  # truth.json's entries per grid setting (a TruthTable: lazy)
    folder: Path | None = None  # the run folder read back by load
    bounds: dict = field(default_factory=dict)  # label -> {metric: [low, high]} (Metric.bounds; metrics.json)
    goal: dict = field(default_factory=dict)  # label -> {metric: "min" | "max" | ""} (Metric.goal; metrics.json)
    recommendations: dict = field(default_factory=dict)  # recommended.npz: "label|grid" -> (seeds, K) bool
    families: dict = field(default_factory=dict)  # label -> its policy family (metrics.json)

    def __repr__(self) -> str:
        """One short paragraph: policies, settings, seeds and metrics (not the arrays)."""
        settings = {json.dumps(p.setting, sort_keys=True, default=str) for ps in self.grid.values() for p in ps}
        seeds = len(self.arrays.get("seed_index", ())) or max((r.get("n", 0) for r in self.records), default=0)
        metrics = list(dict.fromkeys(m for names in self.names.values() for m in names))
        where = f", from {self.folder}" if self.folder is not None else ""
        n = len(self.grid)
        return (f"Results({n} polic{'y' if n == 1 else 'ies'} {list(self.grid)}, {len(settings)} setting(s), "
                f"{seeds} seed(s), horizon {self.horizon}, metrics {metrics}, {len(self.records)} records{where})")

    @classmethod
    def merge(cls, plan, merged: dict, wall: float, marker: dict) -> Results:
        """Results from the seed-concatenated chunk arrays of a plan.

        Args:
          plan: the :class:`~mobandit_jax.runner.plans.Plan` that ran.
          merged: its chunks' arrays, concatenated along the seed axis (``label|grid|metric`` keys, ``seed_index``).
          wall: the engine's wall seconds.
          marker: the run folder's ``run.json``.

        Returns:
          The :class:`Results`, with each grid point's final values and ``summary.json`` records.
        """
        merged = dict(merged)
        seeds = merged.pop("seed_index")
        ckpts = np.asarray(checkpoint_rounds(plan.horizon, plan.record_every))
        curves, finals, records, recommended = {"checkpoints": ckpts, "seed_index": seeds}, {}, [], {}
        for label, points in plan.grid.items():
            for g, point in enumerate(points):
                rec = merged.get(f"{label}|{g}|recommended")
                if rec is not None and len(rec) == len(seeds):  # chunks of an earlier version record none
                    recommended[f"{label}|{g}"] = np.asarray(rec, bool)
                rounds = merged[f"{label}|{g}|rounds"]
                for m in plan.names[label]:
                    key = f"{label}|{g}|{m}"
                    cum = merged[key]
                    curves[key] = cum
                    vals = files.final_values(cum, rounds, plan.reduce[label][m])
                    finals[key] = vals
                    records.append(files.record(label, point.params, point.setting, m, vals,
                                                plan.bounds.get(label, {}).get(m)))
                for extra in ("rounds", "spent"):
                    curves[f"{label}|{g}|{extra}"] = merged[f"{label}|{g}|{extra}"]
        families = {g.label: g.family for g in plan.groups}
        return cls(plan.spec, plan.grid, plan.names, plan.reduce, plan.horizon, plan.record_every, plan.base_seed,
                   curves, finals, records, wall, marker, plan.truth,
                   bounds=plan.bounds, goal=plan.goal, recommendations=recommended, families=families)

    @classmethod
    def load(cls, path) -> Results:
        """A run folder read back; a missing or unreadable file raises one error naming the folder and file.

        ``grid.json`` and ``summary.json`` must be there (``FileNotFoundError``); a file that is
        there but cannot be read raises :class:`ResultsFileError` (a ``ValueError``). A folder without
        ``curves.npz`` / ``finals.npz`` loads with empty arrays (its records can still be compared).

        Args:
          path: the run folder.

        Returns:
          Its :class:`Results`.
        """
        run = _Folder(path)
        records = run.json("summary.json", None)["records"]
        for i, r in enumerate(records):
            problem = files.record_problem(r)
            if problem:
                raise run.error("summary.json", f"record {i} is not an object with the keys "
                                                f"{list(files.RECORD_TYPES)}: it {problem}")
        meta = run.json(METRICS_FILE, None)
        if meta is None:  # an earlier version: the metrics from the records, "sum" where a figure was drawn
            names: dict = {}
            for r in records:
                names.setdefault(r["policy"], {})[r["metric"]] = None
            meta = {"names": names, "reduce": {label: {m: "sum" if (run.path / f"{m}.png").is_file() else None
                                                       for m in ms} for label, ms in names.items()}}
        elif not all(isinstance(ms, list) and isinstance(meta["reduce"].get(label), dict)
                     and set(ms) <= set(meta["reduce"][label]) for label, ms in meta["names"].items()):
            raise run.error(METRICS_FILE, "a metric of 'names' has no entry in 'reduce'")
        marker = run.json(files.MARKER, {})
        spec = run.spec(marker)
        arrays, finals = run.npz("curves.npz"), run.npz("finals.npz")
        ckpts = arrays.get("checkpoints")
        horizon = int(ckpts[-1]) if ckpts is not None and len(ckpts) else marker.get("horizon", 0)
        every = marker.get("record_every", int(ckpts[0]) if ckpts is not None and len(ckpts) else 0)
        truths = run.json(TRUTH_FILE, {"settings": []})["settings"]
        timing = run.json("timing.json", {})
        return cls(spec, run.grid(), {k: tuple(v) for k, v in meta["names"].items()}, meta["reduce"],
                   horizon, every, 0 if spec is None else spec.experiment.seed, arrays, finals, records,
                   timing.get("wall_seconds_this_invocation", 0.0), marker, truths, run.path,
                   bounds=meta.get("bounds", {}), goal=meta.get("goal", {}),
                   recommendations=run.npz(RECOMMENDED_FILE), families=dict(meta.get("families") or {}))

    def _where(self) -> str:
        return f"run folder {self.folder}" if self.folder is not None else "these results"

    def _need_arrays(self):
        if "checkpoints" not in self.arrays:
            raise FileNotFoundError(f"{self._where()} has no curves.npz with checkpoints")

    def truth(self, setting) -> dict:
        """The ``truth.json`` entry of a grid setting.

        Args:
          setting: the setting's dict (as in ``grid.json``) or its index.

        Returns:
          A copy of its entry (:mod:`mobandit_jax.analysis.truth`).
        """
        if not self.truths:
            raise ValueError(f"{self._where()} has no {TRUTH_FILE} (written by runs of this version)")
        if isinstance(setting, (int, np.integer)) and not isinstance(setting, bool):
            if not -len(self.truths) <= setting < len(self.truths):
                raise ValueError(f"setting index {setting} is out of range: this run has {len(self.truths)} settings")
            return json.loads(json.dumps(self.truths[setting]))
        want = json.dumps(setting, sort_keys=True, default=str)
        for entry in self.truths:
            if json.dumps(entry["setting"], sort_keys=True, default=str) == want:
                return json.loads(json.dumps(entry))
        raise ValueError(f"no grid setting {setting!r}; this run has: {[e['setting'] for e in self.truths]}")

    @property
    def checkpoints(self) -> np.ndarray:
        """The rounds at which the cumulative curves were recorded (``curves.npz``'s ``checkpoints``)."""
        self._need_arrays()
        return np.asarray(self.arrays["checkpoints"])

    def index(self, label: str, **setting):
        """The grid index of policy ``label`` whose setting and options match ``setting``.

        Args:
          label: a policy label.
          **setting: setting items (``scenario="a"``) or policy options (``eta=0.3``) the point must have,
            compared as text (so ``rho=8`` matches ``8.0`` only where both print alike).

        Returns:
          The first matching grid index of ``label``, or None.
        """
        for g, point in enumerate(self.grid.get(label, [])):
            both = {**point.params, **point.setting}
            if all(k in both and str(both[k]) == str(v) for k, v in setting.items()):
                return g
        return None

    def record(self, label: str, metric: str, **setting):
        """The ``summary.json`` record of ``label`` and ``metric`` at a setting.

        Args:
          label: a policy label.
          metric: a metric name.
          **setting: setting items and policy options the record must have, compared as text.

        Returns:
          The first matching record (a dict: policy, params, setting, metric, mean, std, n), or None.
        """
        for r in self.records:
            both = {**r["params"], **r["setting"]}
            if r["policy"] == label and r["metric"] == metric and all(
                    k in both and str(both[k]) == str(v) for k, v in setting.items()):
                return r
        return None

    def _key(self, label: str, metric: str, setting: dict) -> str:
        g = self.index(label, **setting)
        if g is None:
            raise KeyError(f"{self._where()}: policy {label!r} has no grid point {setting}")
        return f"{label}|{g}|{metric}"

    def curve(self, label: str, metric: str, **setting) -> np.ndarray:
        """The per-seed cumulative curves of one grid point.

        Args:
          label: a policy label.
          metric: a metric name, or ``"rounds"`` / ``"spent"`` (:data:`PLAY_CURVES`).
          **setting: setting items and policy options of the grid point (:meth:`index`).

        Returns:
          ``(seeds, checkpoints)`` cumulative values, in the precision the run computed in.
        """
        self._need_arrays()
        key = self._key(label, metric, setting)
        if key not in self.arrays:
            raise KeyError(f"{self._where()}: curves.npz has no array {key!r}")
        return np.asarray(self.arrays[key])

    def final(self, label: str, metric: str, **setting) -> np.ndarray:
        """The per-seed final values (``finals.npz``) of one grid point.

        Args:
          label: a policy label.
          metric: a metric name.
          **setting: setting items and policy options of the grid point (:meth:`index`).

        Returns:
          ``(seeds,)`` values, reduced as the metric's reducer says, in the precision the run computed in.
        """
        key = self._key(label, metric, setting)
        if key not in self.finals:
            raise KeyError(f"{self._where()}: finals.npz has no array {key!r}")
        return np.asarray(self.finals[key])

    def interval(self, label: str, metric: str, statistic: str = "mean", resamples: int = 2000, **setting) -> tuple:
        """A 95% interval of a statistic of one grid point's per-seed final values.

        ``"mean"`` is the record's interval (Student t, or Wilson's for a rate); ``"median"`` and ``"iqm"``
        (the interquartile mean) are percentile bootstrap intervals over the seeds, seeded by the run's base
        seed, so the same run gives the same interval (:func:`~mobandit_jax.analysis.stats.bootstrap_interval`).

        Args:
          label: a policy label.
          metric: a metric name.
          statistic: ``"mean"``, ``"median"`` or ``"iqm"``.
          resamples: bootstrap resamples (median and IQM only).
          **setting: setting items and policy options of the grid point (:meth:`index`).

        Returns:
          ``(point, low, high)``.
        """
        values = self.final(label, metric, **setting)
        if statistic == "mean":
            fields = stats.interval_fields(values, self.bounds.get(label, {}).get(metric))
            return float(np.mean(values)), fields["ci_low"], fields["ci_high"]
        return stats.bootstrap_interval(values, statistic, resamples=resamples, seed=self.base_seed)

    def metric_goal(self, metric: str) -> str:
        """The metric's goal: ``"min"`` or ``"max"`` when lower or higher is better, ``""`` when neither is known
        (as the first policy that declares one says; ``metrics.json``)."""
        return next((g[metric] for g in self.goal.values() if g.get(metric)), "")

    def _columns(self, metric: str) -> dict:
        """``{setting json: {policy column: (label, grid index)}}`` of the grid points that have ``metric``."""
        out: dict = {}
        for label, points in self.grid.items():
            if metric not in self.names.get(label, ()):
                continue
            for g, point in enumerate(points):
                where = json.dumps(point.setting, sort_keys=True, default=str)
                out.setdefault(where, {})[column(label, point.params)] = (label, g)
        return out

    def compare(self, metric: str, baseline: str | None = None) -> list:
        """Paired differences of every policy to the best (or to ``baseline``), per setting, over the same seeds.

        Every policy of a seed faces the same reward streams (common random numbers), so the per-seed
        differences ``policy - reference`` cancel the noise the policies share: their mean, paired 95%
        t-interval and the seeds each policy wins, ties and loses (a win: better as the metric's goal says).

        Args:
          metric: a metric name; without ``baseline`` it needs a goal (lower or higher is better).
          baseline: a policy column (``"CoHV-UCB"``, or ``"CoHV-UCB (α = 0.5)"`` for one point of a sweep)
            or label (its first point in each setting) to compare with; default the best mean in each setting.

        Returns:
          A list of rows, one per (setting, policy column) other than the reference: ``{"setting", "policy",
          "reference", "mean", "reference_mean", "diff", "se", "ci_low", "ci_high", "wins", "ties", "losses",
          "n"}`` (``diff`` and its interval: policy minus reference; ``mean``: the policy's own; the counts are
          None for a metric without a goal).
        """
        self._check_metric(metric)
        goal = self.metric_goal(metric)
        if not goal and baseline is None:
            raise ValueError(f"metric {metric!r} has no goal (neither lower nor higher is better); give a baseline")
        rows = []
        for where, cols in self._columns(metric).items():
            values = {c: np.asarray(self.finals[f"{label}|{g}|{metric}"], np.float64) for c, (label, g) in cols.items()}
            if baseline is None:
                pick = min if goal == "min" else max
                ref = pick(values, key=lambda c: float(np.mean(values[c])))
            else:
                ref = baseline if baseline in values else next((c for c, (label, _) in cols.items()
                                                                if label == baseline), None)
                if ref is None:
                    raise ValueError(f"baseline {baseline!r} is no policy of setting {where}; there: {list(values)}")
            for c, v in values.items():
                if c != ref:
                    row = stats.paired_differences(v, values[ref], goal=goal or "max")
                    if not goal:
                        row.update(wins=None, ties=None, losses=None)
                    rows.append({"setting": json.loads(where), "policy": c, "reference": ref,
                                 "mean": float(np.mean(v)), "reference_mean": float(np.mean(values[ref])), **row})
        return rows

    def grid_winners(self, metric: str) -> list:
        """The best grid point of every policy that sweeps options, per setting, and whether it sits at an edge.

        For each policy whose options vary over its grid, in each setting: the point with the best mean (as the
        metric's goal says), its 95% interval, the runner-up's paired difference to it over the same seeds, and
        for each swept option whether the best value is the smallest or largest of the grid (``edge``: the
        optimum may lie outside; widen the grid). An option whose values are not all numbers has ``edge`` None.

        Args:
          metric: a metric name with a goal (lower or higher is better).

        Returns:
          A list of rows, one per (policy, setting, swept option): ``{"policy", "setting", "metric", "option",
          "grid" (the option's values, sorted), "best" (its value at the best point), "best_params", "mean",
          "ci_low", "ci_high", "n", "runner_up" (its params), "runner_up_diff", "runner_up_ci_low",
          "runner_up_ci_high", "edge"}`` (``runner_up_diff``: runner-up minus best).
        """
        from .plots import varying

        self._check_metric(metric)
        goal = self.metric_goal(metric)
        if not goal:
            raise ValueError(f"metric {metric!r} has no goal (neither lower nor higher is better): no grid winner")
        rows = []
        for label, points in self.grid.items():
            swept = varying(p.params for p in points)
            if metric not in self.names.get(label, ()) or not swept:
                continue
            groups: dict = {}
            for g, point in enumerate(points):
                groups.setdefault(json.dumps(point.setting, sort_keys=True, default=str), []).append(g)
            for where, members in groups.items():
                if len(members) < 2:
                    continue
                values = {g: np.asarray(self.finals[f"{label}|{g}|{metric}"], np.float64) for g in members}
                order = sorted(members, key=lambda g: float(np.mean(values[g])), reverse=goal == "max")
                best, runner = order[0], order[1]
                ci = stats.interval_fields(values[best], self.bounds.get(label, {}).get(metric))
                diff = stats.paired_differences(values[runner], values[best], goal=goal)
                for option in swept:
                    grid = [points[g].params.get(option) for g in members]
                    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in grid)
                    shown = sorted(set(grid)) if numeric else list(dict.fromkeys(map(str, grid)))
                    value = points[best].params.get(option)
                    rows.append({"policy": label, "setting": json.loads(where), "metric": metric, "option": option,
                                 "grid": shown, "best": value, "best_params": points[best].params,
                                 "mean": float(np.mean(values[best])), "ci_low": ci["ci_low"],
                                 "ci_high": ci["ci_high"], "n": int(values[best].shape[0]),
                                 "runner_up": points[runner].params, "runner_up_diff": diff["diff"],
                                 "runner_up_ci_low": diff["ci_low"], "runner_up_ci_high": diff["ci_high"],
                                 "edge": (value in (shown[0], shown[-1])) if numeric else None})
        return rows

    def recommended(self, policy: str, **setting) -> Recommendation:
        """The sets one policy recommends at one grid setting, by arm name, over the seeds.

        Args:
          policy: a policy label.
          **setting: setting items and policy options of the grid point (:meth:`index`).

        Returns:
          A :class:`Recommendation`: the per-seed masks, the most frequent set by name and its frequency, each
          arm's inclusion frequency and the family's true set (``truth.json``; arm names from its ``arms``, else
          ``"arm 0"`` ..).
        """
        g = self.index(policy, **setting)
        if g is None:
            raise KeyError(f"{self._where()}: policy {policy!r} has no grid point {setting}")
        return self.recommendation_at(policy, g)

    def recommendation_at(self, policy: str, g: int) -> Recommendation:
        """:meth:`recommended` of grid index ``g`` of ``policy`` (``recommended.npz``'s ``"{policy}|{g}"``)."""
        key = f"{policy}|{g}"
        if key not in self.recommendations:
            raise KeyError(f"{self._where()}: {RECOMMENDED_FILE} has no array {key!r} (runs of this version "
                           "record each seed's recommended set)")
        masks = np.asarray(self.recommendations[key], bool)
        point = self.grid[policy][g]
        entry = self.truth(point.setting) if self.truths else {}
        arms = tuple(entry.get("arms") or (f"arm {i}" for i in range(masks.shape[1])))
        truths = entry.get("families", {})
        family = self.families.get(policy) or (next(iter(truths)) if len(truths) == 1 else None)
        redrawn = bool(entry.get("per_seed"))  # each seed's own instance: the setting's true set is none of theirs
        found = None if redrawn else truths.get(family, {}).get("true_set")
        row, count = most_frequent(masks)
        seeds = np.asarray(self.arrays.get("seed_index", np.arange(len(masks))))
        return Recommendation(policy, dict(point.setting), arms, masks, seeds,
                              tuple(a for a, r in zip(arms, row, strict=True) if r), count, count / len(masks),
                              masks.mean(axis=0), None if found is None else np.asarray(found, bool), redrawn)

    def recommended_frequency(self, policy: str, **setting):
        """How often each arm is in the set one policy recommends at one grid setting, over the seeds.

        Args:
          policy: a policy label.
          **setting: setting items and policy options of the grid point (:meth:`index`).

        Returns:
          A pandas DataFrame, one row per arm: ``arm`` (its name), ``count`` (the seeds whose set holds it),
          ``frequency`` (their share), ``in_true_set`` (whether it is in the family's true set; None where the
          family has none or where each seed redraws its instance, so that no one set is true).
        """
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Results.recommended_frequency() needs pandas: pip install 'mobandit_jax[pandas]'") \
                from None
        rec = self.recommended(policy, **setting)
        counts = rec.masks.sum(axis=0)
        truth = [None] * len(rec.arms) if rec.true_set is None else [bool(t) for t in rec.true_set]
        return pd.DataFrame({"arm": list(rec.arms), "count": counts.astype(int),
                             "frequency": counts / len(rec.masks), "in_true_set": truth})

    def metrics(self) -> list:
        """The metric names of the records.

        Returns:
          The names, in order of first appearance.
        """
        return list(dict.fromkeys(r["metric"] for r in self.records))

    def _check_metric(self, metric: str):
        if metric not in self.metrics() + list(PLAY_CURVES):
            raise ValueError(f"unknown metric {metric!r}; this run has: {self.metrics()}")

    def curves(self, metric: str) -> Curves:
        """The cumulative curves of ``metric`` for every policy and setting.

        ``"rounds"`` and ``"spent"`` (:data:`PLAY_CURVES`) give the rounds played and the budget spent by each
        checkpoint: a metric against the budget spent is ``curves(m).values`` over ``curves("spent").values``.

        Args:
          metric: a metric name, or ``"rounds"`` / ``"spent"``.

        Returns:
          ``Curves(values (policy, setting, seed, checkpoint), policies, settings, checkpoints)``.
        """
        self._check_metric(metric)
        cols, settings, cells = [], [], {}
        for label, points in self.grid.items():
            for g, point in enumerate(points):
                col = column(label, point.params)
                cols += [col] if col not in cols else []
                settings += [point.setting] if point.setting not in settings else []
                key = f"{label}|{g}|{metric}"
                if key in self.arrays:
                    cells[(cols.index(col), settings.index(point.setting))] = self.arrays[key]
        self._need_arrays()
        shape = next(iter(cells.values())).shape
        values = np.full((len(cols), len(settings)) + shape, np.nan)
        for (p, s), cum in cells.items():
            values[p, s] = cum
        return Curves(values, tuple(cols), tuple(settings), np.asarray(self.arrays["checkpoints"]))

    def frame(self):
        """The records as a table.

        Returns:
          A pandas DataFrame: policy, setting labels, policy options, metric, mean, std, n, and the 95%
          interval of the mean (se, ci_low, ci_high) where the records have it.
        """
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Results.frame() needs pandas: pip install 'mobandit_jax[pandas]'") from None
        rows = [{"policy": r["policy"], **r["setting"], **{k: v for k, v in r["params"].items() if k != "name"},
                 "metric": r["metric"], "mean": r["mean"], "std": r["std"], "n": r["n"],
                 **{k: r[k] for k in ("se", "ci_low", "ci_high") if k in r}} for r in self.records]
        return pd.DataFrame(rows)

    def plot(self, metric: str, band: str = "ci", policies=None, settings=None, path=None, format=None):
        """A figure of one metric: its curves over rounds where its reducer makes a curve meaningful (a sum's
        cumulative curve, a ``"lastN"`` metric's trailing mean), its final values otherwise.

        Args:
          metric: a metric name.
          band: ``"ci"`` (the mean and its 95% CI over seeds), ``"std"`` (mean ± 1 std), ``"median"`` or
            ``"iqm"`` (with a bootstrap 95% CI); :data:`~mobandit_jax.analysis.plots.BANDS`.
          policies: the labels or columns to draw (``["THV-UCB", "ParetoUCB"]``); default every policy.
          settings: the settings to draw, each a dict of setting items (``[{"d": 2}]``); default every setting.
          path: a file to write the figure to as well (PNG at 200 dpi, PDF or SVG, by its suffix or ``format``).
          format: ``"png"``, ``"pdf"`` or ``"svg"`` (with ``path``).

        Returns:
          A matplotlib Figure, a panel per setting, titled with the experiment, the band and the seeds.
        """
        from . import plots

        self._check_metric(metric)
        self._need_arrays()
        fig = plots.metric_figure(self, self.arrays, metric, band=band, policies=policies, settings=settings)
        if path is not None:
            plots.save(fig, path, format)
        return fig

    def figures(self, out, band: str = "ci", format: str = "png") -> list:
        """Write every figure of this run into ``out`` (:func:`~mobandit_jax.analysis.plots.figures`).

        Args:
          out: a folder.
          band: the curves' band.
          format: ``"png"``, ``"pdf"`` or ``"svg"``.

        Returns:
          The file names written.
        """
        from . import plots

        self._need_arrays()
        Path(out).mkdir(parents=True, exist_ok=True)
        return plots.figures(self, Path(out), band, format)

    def save(self, out, band: str = "ci") -> Results:
        """Write the run folder files of ``mobandit run``.

        Args:
          out: a new or empty folder, or this run's folder.
          band: what the report's cells and the figures' bands are (:meth:`write`).

        Returns:
          These results.
        """
        out = Path(out)
        self._need_arrays()  # a folder that cannot be written again is refused before anything is written
        old = files.run_marker(out)
        fp = self.marker.get("fingerprint")
        if old is not None and old.get("fingerprint") != fp:
            raise files.RunFolderError(f"{out} holds results of a different experiment (fingerprint "
                                       f"{old.get('fingerprint')} != {fp}); choose another folder")
        if self.marker:
            files.write_json(out / files.MARKER, self.marker)
        self.write(out, band=band)
        return self

    def write(self, out: Path, figures: bool = True, band: str = "ci"):
        """Write the result files (not the ``run.json`` marker) into a run folder.

        Args:
          out: the run folder.
          figures: False draws no figure (``report.md`` then has the tables only).
          band: what the report's cells and the figures' bands are (:data:`~mobandit_jax.analysis.plots.BANDS`;
            default the mean and its 95% CI).
        """
        from . import plots, report  # local: matplotlib only when writing results

        self._need_arrays()
        files.write_npz(out / "curves.npz", self.arrays)
        files.write_npz(out / "finals.npz", self.finals)
        if self.recommendations:
            files.write_npz(out / RECOMMENDED_FILE, self.recommendations)
        files.write_json(out / "grid.json", {label: [p.to_dict() for p in ps] for label, ps in self.grid.items()})
        summary = {"records": self.records}
        files.write_json(out / "summary.json", summary)
        files.write_json(out / "timing.json", {"wall_seconds_this_invocation": round(self.wall, 3),
                                                "seeds": int(len(self.arrays["seed_index"]))})
        names = {label: list(ms) for label, ms in self.names.items()}
        meta = {"names": names, "reduce": self.reduce}
        declared = {"bounds": any(any(x is not None for x in b) for ms in self.bounds.values() for b in ms.values()),
                    "goal": any(g for ms in self.goal.values() for g in ms.values())}
        meta.update({k: v for k, v in (("bounds", self.bounds), ("goal", self.goal)) if declared[k]})  # else none
        if self.families:
            meta["families"] = self.families
        files.write_json(out / METRICS_FILE, meta)
        if self.truths:
            files.write_json(out / TRUTH_FILE, {"settings": list(self.truths)})
        drawn = plots.figures(self, out, band) if figures else []
        report.write(self, summary, drawn, out, band)
