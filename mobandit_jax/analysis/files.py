"""The files of a run folder, as written and read: the marker, atomic writes, ``summary.json`` records.

A run folder holds ``run.json`` (the marker: a JSON object with ``"tool": "mobandit_jax"``, the fingerprint,
precision and spec; runs of earlier versions carry only the fingerprint), ``chunks/`` (the runner's seed
chunks, :mod:`mobandit_jax.runner.run_folder`), and after merging ``curves.npz`` (key
``"{label}|{grid}|{metric}"`` -> ``(seeds, checkpoints)`` cumulative sums, plus ``checkpoints``),
``finals.npz`` (same keys -> ``(seeds,)`` final values), ``recommended.npz`` (``"{label}|{grid}"`` ->
``(seeds, K)`` bool, the set each seed's run recommends), ``grid.json`` (the setting and params of each grid
index per label), ``summary.json`` (``{"records": [{"policy", "params", "setting", "metric", "mean", "std",
"n", "se", "ci_low", "ci_high", "interval"}]}``: the 95% interval of the mean, Wilson's for a rate, Student
t's otherwise; records of earlier versions stop at ``n``), ``metrics.json`` (each label's metric names,
reducers, bounds and goals), ``truth.json`` (per setting: the arm means, mean costs and the optimal set each
family scores against), ``report.md`` and PNG figures (written by
:meth:`mobandit_jax.analysis.results.Results.save`, read back by
:meth:`~mobandit_jax.analysis.results.Results.load`). No pickles anywhere. Files are written atomically
with the mode the umask allows (0644 under umask 022). The runner writes a run folder; this package reads it,
and nothing here imports the runner.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

from .stats import interval_fields
from .trailing import trailing_mean

MARKER = "run.json"
LOCK = ".lock"  # the advisory lock file of a run being written (runner.run_folder.lock)
TOOL = "mobandit_jax"


class RunFolderError(RuntimeError):
    """An output folder this tool must not write to, or a chunk that belongs to another run."""


def run_marker(out) -> dict | None:
    """The ``run.json`` of run folder ``out``; None if ``out`` is missing or empty.

    Refuses (:class:`RunFolderError`) a path that is a file and a non-empty folder without the marker.
    """
    out = Path(out)
    if out.is_symlink() and not out.exists():
        raise RunFolderError(f"--out {out} is a link to nothing ({os.readlink(out)}); give a new or empty folder "
                             "or a run folder")
    if out.exists() and not out.is_dir():
        raise RunFolderError(f"--out {out} is a file, not a folder; give a new or empty folder or a run folder")
    if not out.exists() or not any(p.name != LOCK for p in out.iterdir()):
        return None
    try:
        meta = json.loads((out / MARKER).read_text())
    except (OSError, ValueError):
        meta = None
    if not isinstance(meta, dict) or not (meta.get("tool") == TOOL or "fingerprint" in meta):
        raise RunFolderError(f"{out} is not empty and is not a run folder (no {MARKER} marker of {TOOL}); "
                             "nothing was written: choose a new or empty --out folder")
    return meta


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: Path, write):
    """Write ``path`` atomically: ``write(file)`` fills a temporary file beside it, then a rename."""
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
    atomic_write(path, lambda f: np.savez(f, **arrays))


def write_json(path, obj):
    """Write JSON to ``path`` atomically."""
    atomic_write(path, lambda f: f.write(json.dumps(obj, indent=1, sort_keys=False, default=_jsonable).encode()))


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return str(x)


RECORD_TYPES = {"policy": str, "params": dict, "setting": dict, "metric": str, "mean": (int, float),
                "std": (int, float)}  # the fields of a summary.json record and their types


def record(policy: str, params: dict, setting: dict, metric: str, values, bounds=None) -> dict:
    """A ``summary.json`` record of per-seed ``values``: their mean, standard deviation (ddof 1; 0 for one seed), n,
    and the 95% interval of the mean (:func:`~mobandit_jax.analysis.stats.interval_fields`: ``se``, ``ci_low``,
    ``ci_high`` and ``interval``, Wilson's for a rate, ``bounds == (0, 1)``, else Student t's)."""
    values = np.asarray(values)
    return {"policy": policy, "params": params, "setting": setting, "metric": metric, "mean": float(np.mean(values)),
            "std": float(np.std(values, ddof=1)) if len(values) > 1 else 0.0, "n": int(len(values)),
            **interval_fields(values, bounds)}


def record_problem(r) -> str | None:
    """What is wrong with one summary record (None if it is a record of ``mobandit run``)."""
    if not isinstance(r, dict):
        return f"is {r!r}, not a table"
    for key, kind in RECORD_TYPES.items():
        if key not in r:
            return f"has no {key!r}"
        if not isinstance(r[key], kind) or isinstance(r[key], bool):
            return f"has {key} = {r[key]!r}; expected a {getattr(kind, '__name__', 'number')}"
    return None


GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "eta": "η", "kappa": "κ",
         "lambda": "λ", "mu": "μ", "nu": "ν", "rho": "ρ", "sigma": "σ", "tau": "τ"}  # option names shown as symbols


def plain(value) -> str:
    """A value as a reader writes it: ``0.003``, ``1e-05``, ``klucb``, ``[1, 2]`` (never ``np.float64(..)``)."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return f"{float(value):g}"
    if isinstance(value, (list, tuple, np.ndarray)):
        return "[" + ", ".join(plain(v) for v in value) + "]"
    return str(value)


def option_text(key: str, value) -> str:
    """One policy option as a label part: ``η = 0.003`` (a Greek name as its symbol, :data:`GREEK`)."""
    return f"{GREEK.get(key, key)} = {plain(value)}"


def column(label: str, params: dict) -> str:
    """A policy column name, the same in tables, figures and ``report.md``: its label, plus its options other
    than ``name`` in parentheses when it has any (``THV-UCB (η = 0.003)``, ``PrefUCB (index = klucb)``).

    Args:
      label: the policy's label.
      params: its options at one grid point.

    Returns:
      The name.
    """
    extra = [option_text(k, v) for k, v in params.items() if k != "name"]
    return label + (f" ({', '.join(extra)})" if extra else "")


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
