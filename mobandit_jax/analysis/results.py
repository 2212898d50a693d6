"""``Results``: the merged results of one experiment, in memory (records, curves, final values).

``mobandit run`` and ``mb.run`` both merge their seed chunks into a :class:`Results`:
``Results.save`` writes the run folder's result files (``curves.npz``, ``finals.npz``,
``grid.json``, ``summary.json``, ``timing.json``, figures and ``report.md``; file layout in
:mod:`mobandit_jax.runner.run_folder`), and ``Results.load`` reads a run folder back.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..runner import run_folder as files
from ..engine import checkpoint_rounds
from ..runner.run_folder import column


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


@dataclass
class Results:
    """The merged results of one experiment: records, curves and final values per seed.

    ``grid[label]`` lists each grid point's ``setting`` and ``params``; ``names[label]`` the
    metrics and ``reduce[label][metric]`` their reducers (empty for a folder read back by
    :meth:`load`); ``arrays`` the contents of ``curves.npz`` and ``finals`` of ``finals.npz``.
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
                    records.append({
                        "policy": label, "params": point["params"], "setting": point["setting"], "metric": m,
                        "mean": float(np.mean(vals)), "std": float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0,
                        "n": int(len(vals)),
                    })
                for extra in ("rounds", "spent"):
                    curves[f"{label}|{g}|{extra}"] = merged[f"{label}|{g}|{extra}"]
        return cls(plan.spec, plan.grid, plan.names, plan.reduce, plan.horizon, plan.record_every, plan.base_seed,
                   curves, finals, records, wall, marker)

    @classmethod
    def load(cls, path) -> "Results":
        """A run folder read back (``summary.json``, ``grid.json``, ``run.json``, the ``.npz`` arrays)."""
        run = files.RunDir(path)
        names: dict = {}
        for r in run.records:
            names.setdefault(r["policy"], [])
            if r["metric"] not in names[r["policy"]]:
                names[r["policy"]].append(r["metric"])
        marker = run._json(files.MARKER, {})
        exp = run.spec.get("experiment", {})
        arrays = run.curves if (run.path / "curves.npz").is_file() else {}
        finals = run.finals if (run.path / "finals.npz").is_file() else {}
        horizon = int(arrays["checkpoints"][-1]) if "checkpoints" in arrays else marker.get("horizon", 0)
        return cls(run.spec, run.grid, {k: tuple(v) for k, v in names.items()}, {}, horizon,
                   marker.get("record_every", 0), exp.get("seed", 0), arrays, finals, run.records,
                   run.timing.get("wall_seconds_this_invocation", 0.0), marker)

    def metrics(self) -> list:
        """The metric names of the records, in order of first appearance."""
        return list(dict.fromkeys(r["metric"] for r in self.records))

    def _check_metric(self, metric: str):
        if metric not in self.metrics():
            raise ValueError(f"unknown metric {metric!r}; this run has: {self.metrics()}")

    def curves(self, metric: str) -> Curves:
        """The cumulative curves of ``metric`` as ``Curves(values (policy, setting, seed, checkpoint), ...)``."""
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
        return plots.metric_figure(self, self.arrays, metric)

    def save(self, out) -> "Results":
        """Write the run folder files of ``mobandit run`` to ``out`` (a new or empty folder, or this run's folder)."""
        out = Path(out)
        old = files.run_marker(out)
        fp = self.marker.get("fingerprint")
        if old is not None and old.get("fingerprint") != fp:
            raise files.RunFolderError(f"{out} holds results of a different experiment (fingerprint "
                                       f"{old.get('fingerprint')} != {fp}); choose another folder")
        if self.marker:
            files.write_json(out / files.MARKER, self.marker)
        self.write(out)
        return self

    def write(self, out: Path):
        """Write the result files (not the ``run.json`` marker) into run folder ``out``."""
        from . import plots, report  # local: matplotlib only when writing results

        files.write_npz(out / "curves.npz", self.arrays)
        files.write_npz(out / "finals.npz", self.finals)
        files.write_json(out / "grid.json", self.grid)
        summary = {"records": self.records}
        files.write_json(out / "summary.json", summary)
        files.write_json(out / "timing.json", {"wall_seconds_this_invocation": round(self.wall, 3),
                                                "seeds": int(len(self.arrays["seed_index"]))})
        figures = plots.regret_figures(self, self.arrays, out)
        report.write(self, summary, figures, out)
