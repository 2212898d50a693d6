"""``Results``: the merged results of one experiment, in memory (records, curves, final values, truth).

``mobandit run`` and ``mb.run`` both merge their seed chunks into a :class:`Results`:
``Results.save`` writes the run folder's result files (``curves.npz``, ``finals.npz``,
``grid.json``, ``summary.json``, ``timing.json``, ``metrics.json``, ``truth.json``, figures and
``report.md``; file layout in :mod:`mobandit_jax.runner.run_folder`), and ``Results.load`` reads a
run folder back, so that ``Results.load(d).save(e)`` writes the files of ``d`` again, byte for byte.

``metrics.json``: ``{"names": {label: [metric, ...]}, "reduce": {label: {metric: reducer}}}``, what
reading a folder back needs beyond the records (the reducers pick the figures: one per ``"sum"``
metric). A folder of an earlier version has none: its metrics come from the records, and a metric
with a figure ``METRIC.png`` in the folder is a ``"sum"``; the other reducers cannot be derived
from the folder and are null.

``truth.json``: ``{"settings": [entry per grid setting, in grid order]}``, the ground truth every
metric scores against (:class:`TruthTable`; the families' definitions: PDMOB Defs. 2 and 4,
Xue et al. Section 3, Gutowski et al. Eq. (1)-(2)). An entry holds ``setting``, ``means`` (K, d)
(``EnvInstance.means``: what the policies' contexts and the metrics read), ``mean_costs`` (K,) or
null, ``families`` (per metric family of the spec's policies, taken from that family's own metric
params after its ``prepare``, as the engine hands them to the metric step):

- ``preference``: ``cone_optimal`` (K,) bool (``cone_optimal_mask(means, W)``), ``gaps`` (K,);
- ``identification``: ``pareto`` (K,) bool, the strict Pareto set ``P*``, and ``budget``;
- ``slate``: ``vstar`` (exact ``V*`` at d = 2, greedy ``HV(G*)`` at d >= 3), ``alpha_vstar``, ``ref``,
  ``benchmark`` (``"exhaustive"`` or ``"greedy"``) and ``slate``, the greedy slate ``G*`` (d >= 3;
  null at d = 2, where only the value of the best slate is computed);
- ``budgeted``: ``efficiency`` ``nu`` (K,), ``nu_star`` and ``optimal`` (K,) bool (``nu = nu*``);
- a plugin family: its metric params as plain lists;

and ``per_seed``: for an environment whose ``reset`` redraws the instance (its params carry
``means``, e.g. ``dtlz`` without ``instance_seed``), ``{"seed", "means", "families"}`` of the first
``TRUTH_SEEDS`` seeds, drawn by the environment's own reset on the run's seed keys
(:func:`mobandit_jax.engine.seed_keys`, stream ``RESET_STREAM``); then the setting's ``means`` and
``families`` describe the instance built from the spec, which a seed's prepare-less metrics
(preference, identification, budgeted) still score against. ``per_seed`` is null otherwise, also for
``nyse_replay``, whose reset draws only the replay's start offset: its truth, the average over all
days, is the same for every seed.
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

from ..runner import run_folder as files
from ..engine import checkpoint_rounds
from ..runner.run_folder import column

METRICS_FILE = "metrics.json"
TRUTH_FILE = "truth.json"
TRUTH_SEEDS = 16  # seeds whose redrawn instance truth.json lists
_REQUIRED = {"summary.json": {"records": list}, METRICS_FILE: {"names": dict, "reduce": dict},
             TRUTH_FILE: {"settings": list}}  # the entries each JSON file of a run folder must hold


class ResultsFileError(ValueError):
    """A run folder's file that cannot be read back: truncated, not JSON or npz, or without its entries."""


class _CheckedRunDir(files.RunDir):
    """:class:`~mobandit_jax.runner.run_folder.RunDir` whose unreadable files raise :class:`ResultsFileError`."""

    def error(self, name: str, why) -> ResultsFileError:
        """The one-line error naming this folder and its file ``name``."""
        return ResultsFileError(f"run folder {self.path}: {name} cannot be read ({' '.join(str(why).split())})")

    def _json(self, name: str, default):
        try:
            obj = super()._json(name, default)
        except (OSError, ValueError) as err:  # ValueError: json.JSONDecodeError, UnicodeDecodeError
            raise self.error(name, err) from None
        if obj is default:
            return obj
        want = _REQUIRED.get(name, {})
        if not isinstance(obj, dict) or any(not isinstance(obj.get(k), t) for k, t in want.items()):
            keys = ", ".join(f"{k!r} ({t.__name__})" for k, t in want.items())
            raise self.error(name, "not a JSON object" + (f" with {keys}" if keys else ""))
        return obj

    def _npz(self, name: str) -> dict:
        try:
            return super()._npz(name)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as err:
            raise self.error(name, f"{type(err).__name__}: {err}") from None


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

    ``grid[label]`` lists each grid point's ``setting`` and ``params``; ``names[label]`` the
    metrics and ``reduce[label][metric]`` their reducers (``metrics.json``; for a folder of an earlier
    version, ``"sum"`` where the folder has the metric's figure, else None); ``arrays`` the contents of
    ``curves.npz``, ``finals`` of ``finals.npz`` and ``truths`` of ``truth.json`` (see :meth:`truth`).
    """

    spec: dict
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

    def __repr__(self) -> str:
        """One short paragraph: policies, settings, seeds and metrics (not the arrays)."""
        settings = {json.dumps(p["setting"], sort_keys=True, default=str) for ps in self.grid.values() for p in ps}
        seeds = len(self.arrays.get("seed_index", ())) or max((r.get("n", 0) for r in self.records), default=0)
        metrics = list(dict.fromkeys(m for names in self.names.values() for m in names))
        where = f", from {self.folder}" if self.folder is not None else ""
        n = len(self.grid)
        return (f"Results({n} polic{'y' if n == 1 else 'ies'} {list(self.grid)}, {len(settings)} setting(s), "
                f"{seeds} seed(s), horizon {self.horizon}, metrics {metrics}, {len(self.records)} records{where})")

    @classmethod
    def merge(cls, plan, merged: dict, wall: float, marker: dict) -> "Results":
        """Results from the seed-concatenated chunk arrays of ``plan`` (``label|grid|metric`` keys)."""
        merged = dict(merged)
        seeds = merged.pop("seed_index")
        ckpts = np.asarray(checkpoint_rounds(plan.horizon, plan.record_every))
        curves, finals, records = {"checkpoints": ckpts, "seed_index": seeds}, {}, []
        for label, points in plan.grid.items():
            for g, point in enumerate(points):
                rounds = merged[f"{label}|{g}|rounds"]
                for m in plan.names[label]:
                    key = f"{label}|{g}|{m}"
                    cum = merged[key]
                    curves[key] = cum
                    vals = files.final_values(cum, rounds, plan.reduce[label][m])
                    finals[key] = vals
                    records.append(files.record(label, point["params"], point["setting"], m, vals))
                for extra in ("rounds", "spent"):
                    curves[f"{label}|{g}|{extra}"] = merged[f"{label}|{g}|{extra}"]
        return cls(plan.spec, plan.grid, plan.names, plan.reduce, plan.horizon, plan.record_every, plan.base_seed,
                   curves, finals, records, wall, marker, plan.truth)

    @classmethod
    def load(cls, path) -> "Results":
        """A run folder read back; a missing or unreadable file raises one error naming the folder and file.

        ``grid.json`` and ``summary.json`` must be there (``FileNotFoundError``); a file that is
        there but cannot be read raises :class:`ResultsFileError` (a ``ValueError``). A folder without
        ``curves.npz`` / ``finals.npz`` loads with empty arrays (its records can still be compared).
        """
        run = _CheckedRunDir(path)
        for i, r in enumerate(run.records):
            problem = files.record_problem(r)
            if problem:
                raise run.error("summary.json", f"record {i} is not an object with the keys "
                                                f"{list(files.RECORD_TYPES)}: it {problem}")
        meta = run._json(METRICS_FILE, None)
        if meta is None:  # an earlier version: the metrics from the records, "sum" where a figure was drawn
            names: dict = {}
            for r in run.records:
                names.setdefault(r["policy"], {})[r["metric"]] = None
            meta = {"names": names, "reduce": {label: {m: "sum" if (run.path / f"{m}.png").is_file() else None
                                                       for m in ms} for label, ms in names.items()}}
        elif not all(isinstance(ms, list) and isinstance(meta["reduce"].get(label), dict)
                     and set(ms) <= set(meta["reduce"][label]) for label, ms in meta["names"].items()):
            raise run.error(METRICS_FILE, "a metric of 'names' has no entry in 'reduce'")
        marker = run._json(files.MARKER, {})
        exp = run.spec.get("experiment", {})
        arrays = run.curves if (run.path / "curves.npz").is_file() else {}
        finals = run.finals if (run.path / "finals.npz").is_file() else {}
        ckpts = arrays.get("checkpoints")
        horizon = int(ckpts[-1]) if ckpts is not None and len(ckpts) else marker.get("horizon", 0)
        every = marker.get("record_every", int(ckpts[0]) if ckpts is not None and len(ckpts) else 0)
        truths = run._json(TRUTH_FILE, {"settings": []})["settings"]
        return cls(run.spec, run.grid, {k: tuple(v) for k, v in meta["names"].items()}, meta["reduce"], horizon,
                   every, exp.get("seed", 0), arrays, finals, run.records,
                   run.timing.get("wall_seconds_this_invocation", 0.0), marker, truths, run.path)

    def _where(self) -> str:
        return f"run folder {self.folder}" if self.folder is not None else "these results"

    def _need_arrays(self):
        if "checkpoints" not in self.arrays:
            raise FileNotFoundError(f"{self._where()} has no curves.npz with checkpoints")

    def truth(self, setting) -> dict:
        """The ``truth.json`` entry of a grid setting: its dict (as in ``grid.json``) or its index."""
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

    def metrics(self) -> list:
        """The metric names of the records, in order of first appearance."""
        return list(dict.fromkeys(r["metric"] for r in self.records))

    def _check_metric(self, metric: str):
        if metric not in self.metrics() + list(PLAY_CURVES):
            raise ValueError(f"unknown metric {metric!r}; this run has: {self.metrics()}")

    def curves(self, metric: str) -> Curves:
        """The cumulative curves of ``metric`` as ``Curves(values (policy, setting, seed, checkpoint), ...)``.

        ``"rounds"`` and ``"spent"`` (:data:`PLAY_CURVES`) give the rounds played and the budget spent by each
        checkpoint: a metric against the budget spent is ``curves(m).values`` over ``curves("spent").values``."""
        self._check_metric(metric)
        cols, settings, cells = [], [], {}
        for label, points in self.grid.items():
            for g, point in enumerate(points):
                col = column(label, point["params"])
                cols += [col] if col not in cols else []
                settings += [point["setting"]] if point["setting"] not in settings else []
                key = f"{label}|{g}|{metric}"
                if key in self.arrays:
                    cells[(cols.index(col), settings.index(point["setting"]))] = self.arrays[key]
        self._need_arrays()
        shape = next(iter(cells.values())).shape
        values = np.full((len(cols), len(settings)) + shape, np.nan)
        for (p, s), cum in cells.items():
            values[p, s] = cum
        return Curves(values, tuple(cols), tuple(settings), np.asarray(self.arrays["checkpoints"]))

    def frame(self):
        """The records as a pandas DataFrame: policy, setting labels, policy options, metric, mean, std, n."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Results.frame() needs pandas: pip install 'mobandit_jax[pandas]'") from None
        rows = [{"policy": r["policy"], **r["setting"], **{k: v for k, v in r["params"].items() if k != "name"},
                 "metric": r["metric"], "mean": r["mean"], "std": r["std"], "n": r["n"]} for r in self.records]
        return pd.DataFrame(rows)

    def plot(self, metric: str):
        """A matplotlib Figure of ``metric``'s cumulative curves (mean ± std over seeds), a panel per setting."""
        from . import plots

        self._check_metric(metric)
        self._need_arrays()
        return plots.metric_figure(self, self.arrays, metric)

    def save(self, out) -> "Results":
        """Write the run folder files of ``mobandit run`` to ``out`` (a new or empty folder, or this run's folder)."""
        out = Path(out)
        self._need_arrays()  # a folder that cannot be written again is refused before anything is written
        old = files.run_marker(out)
        fp = self.marker.get("fingerprint")
        if old is not None and old.get("fingerprint") != fp:
            raise files.RunFolderError(f"{out} holds results of a different experiment (fingerprint "
                                       f"{old.get('fingerprint')} != {fp}); choose another folder")
        if self.marker:
            files.write_json(out / files.MARKER, self.marker)
        self.write(out)
        return self

    def write(self, out: Path, figures: bool = True):
        """Write the result files (not the ``run.json`` marker) into run folder ``out``; ``figures=False`` draws
        no figure (``report.md`` then has the tables only)."""
        from . import plots, report  # local: matplotlib only when writing results

        self._need_arrays()
        files.write_npz(out / "curves.npz", self.arrays)
        files.write_npz(out / "finals.npz", self.finals)
        files.write_json(out / "grid.json", self.grid)
        summary = {"records": self.records}
        files.write_json(out / "summary.json", summary)
        files.write_json(out / "timing.json", {"wall_seconds_this_invocation": round(self.wall, 3),
                                                "seeds": int(len(self.arrays["seed_index"]))})
        names = {label: list(ms) for label, ms in self.names.items()}
        files.write_json(out / METRICS_FILE, {"names": names, "reduce": self.reduce})
        if self.truths:
            files.write_json(out / TRUTH_FILE, {"settings": list(self.truths)})
        report.write(self, summary, plots.regret_figures(self, self.arrays, out) if figures else [], out)


# ------------------------------------------------------------------------------ ground truth (truth.json)


def _family_truth(family: str, mp, slate_size: int):
    """The truth family ``family``'s metric params ``mp`` score against, as arrays (module docstring)."""
    if family == "preference":  # metrics.preference.PreferenceTruth
        return {"cone_optimal": mp.optimal > 0, "gaps": mp.gaps}
    if family == "identification":  # (P* mask, B)
        return {"pareto": mp[0], "budget": mp[1]}
    if family == "slate":  # {"means", "ref", "vstar"}, after prepare
        from ..metrics import slate

        out = {"vstar": mp["vstar"], "alpha_vstar": slate.ALPHA * mp["vstar"], "ref": mp["ref"]}
        if mp["means"].shape[-1] > 2:  # benchmark_value: the greedy G* at d >= 3
            out["slate"] = slate.greedy_subset(mp["means"], slate_size, mp["ref"])
        return out
    if family == "budgeted":  # metrics.budgeted.BudgetMetricParams
        return {"efficiency": mp.nu, "nu_star": mp.nu_star, "optimal": mp.nu == mp.nu_star}
    return mp


def _plain(x):
    """A pytree of arrays as plain JSON data (dicts, lists, floats, ints, bools, None)."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if hasattr(x, "_asdict"):
        return {k: _plain(v) for k, v in x._asdict().items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return None if x is None else np.asarray(x).tolist()


def _families_json(truths: dict) -> dict:
    out = {family: _plain(t) for family, t in truths.items()}
    if "slate" in out:
        out["slate"].setdefault("slate", None)
        out["slate"]["benchmark"] = "exhaustive" if out["slate"]["slate"] is None else "greedy"
    return out


def _scored(env, families: dict, slate_size: int, env_params, mparams: dict):
    """``(instance means or None, {family: truth})``: each family's metric params as the engine prepares them."""
    from ..engine import RunParams, _prepare

    truths = {}
    for family, (mset, _) in families.items():
        _, prepared = _prepare(env, mset, RunParams(env_params, None, mparams[family], None), None)
        truths[family] = _family_truth(family, prepared, slate_size)
    return getattr(env_params, "means", None), truths


def _truth_program(inst, families: dict):
    """``f(env_params, mparams, keys)``: the truths of the instance ``env_params`` and, vmapped over ``keys``
    (None: none), of each seed's instance drawn by ``reset`` as in the engine (``engine._prepare``); jitted."""
    import jax

    from ..engine import RESET_STREAM

    fixed, k = inst.env._replace(reset=None), int(inst.slate_size)

    def program(env_params, mparams, keys):
        def seed(key):
            return _scored(fixed, families, k, inst.env.reset(jax.random.fold_in(key, RESET_STREAM), env_params),
                           mparams)

        return _scored(fixed, families, k, env_params, mparams)[1], None if keys is None else jax.vmap(seed)(keys)

    return jax.jit(program)


class TruthTable(Sequence):
    """``truth.json``'s entries of a plan, one per grid setting, each computed on first use (module docstring).

    ``points``: ``(setting, EnvInstance, [(instance seen, {family: (MetricSet, mparams)})])`` per grid setting,
    as built for its policies (a family that does not read a cone sees the instance projected under it);
    ``seeds`` and ``base_seed``: the run's, whose first :data:`TRUTH_SEEDS` keys redraw a
    per-seed instance. Settings of one environment code and slate size share one compiled program (as
    the engine's groups share one compiled run).
    """

    def __init__(self, points: list, seeds: int, base_seed: int):
        self.points, self.seeds, self.base_seed = points, seeds, base_seed
        self._entries: dict = {}
        self._programs: dict = {}

    def __len__(self) -> int:
        return len(self.points)

    def __getitem__(self, i: int) -> dict:
        i = range(len(self.points))[i]
        if i not in self._entries:
            self._entries[i] = self._entry(*self.points[i])
        return self._entries[i]

    def _entry(self, setting: dict, inst, parts: list) -> dict:
        entry = {"setting": setting, "means": _plain(inst.means), "mean_costs": _plain(inst.mean_costs),
                 "families": {}, "per_seed": None}
        for seen, families in parts:  # the instance each family saw: ``inst``, or its projection under a cone
            fixed, per_seed = self._scores(seen, families)
            entry["families"].update(_families_json(fixed))
            if "cone" in seen.info:
                entry["cone"] = {"W": seen.info["cone"], "means": _plain(seen.means)}
            if per_seed is not None:
                rows = entry["per_seed"] = entry["per_seed"] or [{"seed": s, "means": None, "families": {}}
                                                                 for s, _, _ in per_seed]
                for row, (_, means, truths) in zip(rows, per_seed):
                    row["cone_means" if "cone" in seen.info else "means"] = means
                    row["families"].update(truths)
        return entry

    def _scores(self, inst, families: dict):
        """``(truths of the instance, [(seed, means, truths)] or None)`` of one instance's families."""
        import jax

        from ..engine import seed_keys

        per_seed = inst.env.reset is not None and getattr(inst.params, "means", None) is not None
        key = (inst.static_key, int(inst.slate_size), tuple(families), per_seed)
        if key not in self._programs:
            self._programs[key] = _truth_program(inst, families)
        keys = seed_keys(self.base_seed, np.arange(min(TRUTH_SEEDS, self.seeds))) if per_seed else None
        fixed, seeds = self._programs[key](inst.params, {f: mp for f, (_, mp) in families.items()}, keys)
        if not per_seed:
            return fixed, None
        means, truths = seeds
        return fixed, [(s, _plain(means[s]), _families_json(jax.tree_util.tree_map(lambda x: x[s], truths)))
                       for s in range(len(keys))]
