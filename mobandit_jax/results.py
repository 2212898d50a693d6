"""Result files: atomic writes, chunk merging, per-seed final values and ``summary.json`` records.

A run directory holds ``run.json`` (spec, fingerprint), ``chunks/chunk_NNNNN.npz`` (one per seed
chunk, written atomically), and after merging ``curves.npz`` (key ``"{label}|{grid}|{metric}"`` ->
``(seeds, checkpoints)`` cumulative sums, plus ``checkpoints``), ``finals.npz`` (same keys ->
``(seeds,)`` final values), ``grid.json`` (the setting and params of each grid index per label),
``summary.json`` (``{"records": [{"policy", "params", "setting", "metric", "mean", "std", "n"}]}``),
``report.md`` and PNG figures. No pickles anywhere.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

from .engine import checkpoint_rounds
from .kernels.trailing import trailing_mean


def _atomic(path: Path, write):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_npz(path, arrays: dict):
    """Write ``arrays`` to ``path`` atomically (temporary file, then rename)."""
    _atomic(path, lambda f: np.savez(f, **arrays))


def write_json(path, obj):
    """Write JSON to ``path`` atomically."""
    _atomic(path, lambda f: f.write(json.dumps(obj, indent=1, sort_keys=False, default=_jsonable).encode()))


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)


def chunk_seed_count(path) -> int:
    """Number of seeds stored in a chunk file (-1 if it cannot be read)."""
    try:
        with np.load(path) as z:
            return int(z["seed_index"].shape[0])
    except Exception:  # a truncated file from an interrupted write is recomputed
        return -1


def final_values(cum: np.ndarray, rounds: np.ndarray, reducer: str) -> np.ndarray:
    """Per-seed summary value from cumulative curves ``(S, C)`` and rounds played ``(S, C)``."""
    last, played = cum[:, -1], rounds[:, -1].astype(np.float64)
    if reducer == "sum":
        return last
    if reducer == "mean":
        return last / np.maximum(played, 1)
    if reducer.startswith("last"):
        return trailing_mean(cum, rounds, int(reducer[4:]))[:, -1]
    raise ValueError(f"unknown reducer {reducer!r}; allowed: sum, mean, lastN")


class RunDir:
    """A finished run directory read back: grid, records, timing and spec; arrays on first use."""

    def __init__(self, path, required=("grid.json", "summary.json")):
        self.path = Path(path)
        for name in required:
            if not (self.path / name).is_file():
                raise FileNotFoundError(f"run directory {self.path} has no {name}; run `mobandit run` first")
        self.grid = self._json("grid.json", {})
        self.records = self._json("summary.json", {"records": []})["records"]
        self.timing = self._json("timing.json", {})
        self.spec = self._json("run.json", {}).get("spec", {})
        self._arrays = {}

    def _json(self, name: str, default):
        path = self.path / name
        return json.loads(path.read_text()) if path.is_file() else default

    def _npz(self, name: str) -> dict:
        if name not in self._arrays:
            with np.load(self.path / name) as z:
                self._arrays[name] = {k: z[k] for k in z.files}
        return self._arrays[name]

    @property
    def curves(self) -> dict:
        """``curves.npz``: cumulative curves per ``label|grid|metric`` and ``checkpoints``."""
        return self._npz("curves.npz")

    @property
    def finals(self) -> dict:
        """``finals.npz``: per-seed final values per ``label|grid|metric``."""
        return self._npz("finals.npz")

    def index(self, label: str, **setting):
        """Grid index of ``label`` whose setting matches every given item (compared as text), or None."""
        for g, point in enumerate(self.grid.get(label, [])):
            if all(str(point["setting"].get(k)) == str(v) for k, v in setting.items()):
                return g
        return None


def merge_chunks(out: Path) -> dict:
    """Concatenate the chunk files of a run directory along the seed axis."""
    files = sorted((out / "chunks").glob("chunk_*.npz"))
    merged: dict = {}
    for f in files:
        with np.load(f) as z:
            for k in z.files:
                merged.setdefault(k, []).append(z[k])
    return {k: np.concatenate(v, axis=0) for k, v in merged.items()}


def finalize(plan, out: Path, wall: float) -> dict:
    """Merge chunks, compute final values and records, write every result file and the report."""
    from . import plots, report  # local: matplotlib only when writing results

    merged = merge_chunks(out)
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
                vals = final_values(cum, rounds, plan.reduce[label][m])
                finals[key] = vals
                records.append({
                    "policy": label, "params": point["params"], "setting": point["setting"], "metric": m,
                    "mean": float(np.mean(vals)), "std": float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0,
                    "n": int(len(vals)),
                })
            for extra in ("rounds", "spent"):
                curves[f"{label}|{g}|{extra}"] = merged[f"{label}|{g}|{extra}"]
    write_npz(out / "curves.npz", curves)
    write_npz(out / "finals.npz", finals)
    write_json(out / "grid.json", plan.grid)
    summary = {"records": records}
    write_json(out / "summary.json", summary)
    write_json(out / "timing.json", {"wall_seconds_this_invocation": round(wall, 3), "seeds": int(len(seeds))})
    figures = plots.regret_figures(plan, curves, out)
    report.write(plan, summary, figures, out)
    return summary
