"""Result files: atomic writes, chunk merging, per-seed final values and ``summary.json`` records.

A run directory holds ``run.json`` (the marker of a run folder: a JSON object with ``"tool":
"mobandit_jax"``, the fingerprint, precision and spec; runs of earlier versions carry only the
fingerprint), ``chunks/chunk_NNNNN.npz`` (one per seed chunk, written atomically, each with an
``identity`` entry: fingerprint, seed index range, precision, chunk size), and after merging ``curves.npz`` (key ``"{label}|{grid}|{metric}"`` ->
``(seeds, checkpoints)`` cumulative sums, plus ``checkpoints``), ``finals.npz`` (same keys ->
``(seeds,)`` final values), ``grid.json`` (the setting and params of each grid index per label),
``summary.json`` (``{"records": [{"policy", "params", "setting", "metric", "mean", "std", "n"}]}``),
``report.md`` and PNG figures (written by :meth:`mobandit_jax.run_results.Results.save`). No pickles anywhere. Files are written with the mode the umask
allows (0644 under umask 022). A folder that is neither empty nor a run folder is never written to.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np


MARKER = "run.json"
TOOL = "mobandit_jax"


class RunFolderError(RuntimeError):
    """An output folder this tool must not write to, or a chunk that belongs to another run."""


def run_marker(out) -> dict | None:
    """The ``run.json`` of run folder ``out``; None if ``out`` is missing or empty.

    Refuses (:class:`RunFolderError`) a path that is a file and a non-empty folder without the marker.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise RunFolderError(f"--out {out} is a file, not a folder; give a new or empty folder or a run folder")
    if not out.exists() or not any(out.iterdir()):
        return None
    try:
        meta = json.loads((out / MARKER).read_text())
    except (OSError, ValueError):
        meta = None
    if not isinstance(meta, dict) or not (meta.get("tool") == TOOL or "fingerprint" in meta):
        raise RunFolderError(f"{out} is not empty and is not a run folder (no {MARKER} marker of {TOOL}); "
                             "nothing was written: choose a new or empty --out folder")
    return meta


def remove_partial_writes(out: Path):
    """Delete temporary files left by a write that was killed before its rename (never read as results)."""
    for folder in (out, out / "chunks"):
        for tmp in folder.glob(".*.tmp") if folder.is_dir() else ():
            tmp.unlink(missing_ok=True)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _atomic(path: Path, write):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), 0o666 & ~_umask())  # mkstemp's 0600 -> what a plain open() would give
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


def chunk_path(out, c: int) -> Path:
    """Path of chunk ``c`` of run folder ``out``."""
    return Path(out) / "chunks" / f"chunk_{c:05d}.npz"


def write_chunk(path, arrays: dict, identity: dict):
    """Write one chunk atomically, its ``identity`` (a JSON object) stored as a text entry."""
    write_npz(path, {**arrays, "identity": np.array(json.dumps(identity, sort_keys=True))})


def chunk_identity(path) -> dict | None:
    """The identity of a chunk file; None if it is missing, unreadable or has no identity."""
    try:
        with np.load(path, allow_pickle=False) as z:
            return json.loads(str(z["identity"]))
    except Exception:  # missing, truncated or foreign: recomputed, never merged
        return None


def column(label: str, params: dict) -> str:
    """A policy column name: its label, plus its options other than ``name`` when it has any."""
    extra = {k: v for k, v in params.items() if k != "name"}
    return label + (f" {extra}" if extra else "")


def final_values(cum: np.ndarray, rounds: np.ndarray, reducer: str) -> np.ndarray:
    """Per-seed summary value from cumulative curves ``(S, C)`` and rounds played ``(S, C)``."""
    last, played = cum[:, -1], rounds[:, -1].astype(np.float64)
    if reducer == "sum":
        return last
    if reducer == "mean":
        return last / np.maximum(played, 1)
    if reducer.startswith("last"):
        from .kernels.trailing import trailing_mean  # here: the kernels package imports JAX

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


def concat_chunks(chunks) -> dict:
    """Concatenate chunk arrays (dicts of the same keys, in seed order) along the seed axis."""
    merged: dict = {}
    for arrays in chunks:
        for k, v in arrays.items():
            merged.setdefault(k, []).append(v)
    return {k: np.concatenate(v, axis=0) for k, v in merged.items()}


def merge_chunks(files) -> dict:
    """Concatenate the given chunk files (identity entries left out) along the seed axis."""
    chunks = []
    for f in files:
        with np.load(f, allow_pickle=False) as z:
            chunks.append({k: z[k] for k in z.files if k != "identity"})
    return concat_chunks(chunks)
