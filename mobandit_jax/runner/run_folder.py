"""The runner's side of a run folder: its lock, its seed chunks and its identity (the fingerprint).

The run folder's files and how they are read are :mod:`mobandit_jax.analysis.files`; this module adds
what writing one needs: ``chunks/chunk_NNNNN.npz`` (one per seed chunk, written atomically, each with an
``identity`` entry: fingerprint, seed index range, precision, chunk size), merged into the result files by
:meth:`mobandit_jax.analysis.results.Results.merge`. A folder that is neither empty nor a run folder is never
written to; ``chunks/`` must be a folder of the run, not a link elsewhere. While a run writes, its folder is
locked (``.lock``, an advisory ``flock`` held by the writing process, :class:`RunFolderLock`): a second run on the
same folder is refused. A run's fingerprint covers its spec, its plugins' source and the content of every data file the
spec names, so a spec or data file edited between an interrupted run and its resume is another experiment.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
from pathlib import Path

import numpy as np

from ..analysis.files import (  # noqa: F401  (the file format, re-exported for the runner's modules)
    LOCK,
    MARKER,
    TOOL,
    RunFolderError,
    atomic_write,
    run_marker,
    write_json,
    write_npz,
)


def remove_partial_writes(out: Path):
    """Delete temporary files left by a write that was killed before its rename (never read as results):
    the ``.NAME.XXXXXXXX.tmp`` files of :func:`atomic_write`, in the run folder and its ``chunks/`` only.

    Args:
      out: the run folder.

    Returns:
      None.
    """
    chunks = Path(out) / "chunks"
    if chunks.is_symlink() or (chunks.exists() and not chunks.is_dir()):
        raise RunFolderError(f"{chunks} is not a folder of this run (a link or a file): nothing was written; "
                             "choose another --out folder")
    for folder in (Path(out), chunks):
        for tmp in folder.glob(".*.*.tmp") if folder.is_dir() else ():
            if tmp.is_file() and not tmp.is_symlink():
                tmp.unlink(missing_ok=True)


class RunFolderLock:
    """The lock of a run folder that this process writes, held from :func:`lock` to :meth:`release` (or the end of a
    ``with`` block): ``.lock`` in the folder, an advisory ``flock`` on it, the holder's process id as its text. The
    file is there while a run writes the folder (and after a killed run, unlocked)."""

    def __init__(self, out, fd: int):
        self.out, self._fd = Path(out), fd

    def release(self):
        """Delete ``.lock`` and release the lock (once; a second call does nothing).

        Returns:
          None.
        """
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.out / LOCK)
            os.close(self._fd)
            self._fd = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def lock(out) -> RunFolderLock:
    """Lock run folder ``out`` for this process; a folder another run writes is refused (a :class:`RunFolderError`).

    Args:
      out: the run folder (made if missing).

    Returns:
      The :class:`RunFolderLock`, held until released.
    """
    import fcntl

    Path(out).mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(Path(out) / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise RunFolderError(f"{out} is being written by another mobandit run (process {holder}); wait for it "
                                 "to finish or choose another --out folder") from None
        try:  # the file locked is still the folder's .lock (its holder deletes it on release)
            if os.stat(Path(out) / LOCK).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return RunFolderLock(out, fd)


def chunk_path(out, c: int) -> Path:
    """Path of chunk ``c`` of run folder ``out``.

    Args:
      out: the run folder.
      c: the chunk's index.

    Returns:
      ``out/chunks/chunk_NNNNN.npz``.
    """
    return Path(out) / "chunks" / f"chunk_{c:05d}.npz"


def write_chunk(path, arrays: dict, identity: dict):
    """Write one chunk atomically, its ``identity`` (a JSON object) stored as a text entry.

    Args:
      path: the chunk's file (:func:`chunk_path`).
      arrays: its arrays, by name.
      identity: what the chunk holds (:func:`chunk_identity`).

    Returns:
      None.
    """
    write_npz(path, {**arrays, "identity": np.array(json.dumps(identity, sort_keys=True))})


def read_chunk_identity(path) -> dict | None:
    """The identity of a chunk file; None if it is missing, unreadable or has no identity.

    Args:
      path: a chunk file.

    Returns:
      Its identity (a dict), or None.
    """
    try:
        with np.load(path, allow_pickle=False) as z:
            return json.loads(str(z["identity"]))
    except Exception:  # missing, truncated or foreign: recomputed, never merged
        return None


def concat_chunks(chunks) -> dict:
    """Concatenate chunk arrays (dicts of the same keys, in seed order) along the seed axis.

    Args:
      chunks: the chunks' arrays, in seed order.

    Returns:
      ``{name: array}``, each the chunks' arrays concatenated.
    """
    merged: dict = {}
    for arrays in chunks:
        for k, v in arrays.items():
            merged.setdefault(k, []).append(v)
    return {k: np.concatenate(v, axis=0) for k, v in merged.items()}


def merge_chunks(files) -> dict:
    """Concatenate the given chunk files (identity entries left out) along the seed axis.

    Args:
      files: chunk files, in seed order.

    Returns:
      ``{name: array}`` (:func:`concat_chunks`).
    """
    chunks = []
    for f in files:
        with np.load(f, allow_pickle=False) as z:
            chunks.append({k: z[k] for k in z.files if k != "identity"})
    return concat_chunks(chunks)


# The identity of a run folder and of its chunks, from a plan (:mod:`mobandit_jax.runner.plans`).


def precision() -> str:
    """The float precision runs compute in: ``"float64"`` under ``--x64``, else ``"float32"``.

    Returns:
      ``"float64"`` or ``"float32"``.
    """
    import jax  # here: reading a run folder needs no JAX

    return "float64" if jax.config.jax_enable_x64 else "float32"


def fingerprint(plan) -> str:
    """A hash of everything that determines the per-seed results (not the seed count), precision included.

    float32 runs hash as before precision was recorded, so their earlier run folders still resume.

    Args:
      plan: the :class:`~mobandit_jax.runner.plans.Plan`.

    Returns:
      16 hex digits.
    """
    tables = plan.spec.to_dict()
    spec = {k: v for k, v in tables.items() if k != "experiment"}
    exp = {k: v for k, v in tables["experiment"].items() if k not in ("seeds", "chunk")}
    ident = {"spec": spec, "exp": exp, "horizon": plan.horizon, "record_every": plan.record_every, "chunk": plan.chunk}
    if precision() != "float32":
        ident["precision"] = precision()
    from ..engine import COMPENSATED_HORIZON  # here: reading a run folder needs no JAX

    if precision() != "float32" or plan.horizon > COMPENSATED_HORIZON:
        ident["sums"] = 2  # float64 or compensated sums: chunks of the earlier float32 sums are not merged
    if plan.plugins is not None:
        ident["plugins"] = plan.plugins  # the plugins' source: an edited plugin is another experiment
    if plan.data is not None:
        ident["data"] = plan.data  # the data files' content: an edited data file is another experiment
    text = json.dumps(ident, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def chunk_identity(plan, c: int) -> dict:
    """What chunk ``c`` of a run must hold: spec fingerprint, seed index range, precision, chunk size.

    Args:
      plan: the plan.
      c: the chunk's index.

    Returns:
      ``{"fingerprint", "seeds": [lo, hi], "precision", "chunk"}``.
    """
    lo, hi = c * plan.chunk, min((c + 1) * plan.chunk, plan.seeds)
    return {"fingerprint": fingerprint(plan), "seeds": [lo, hi], "precision": precision(), "chunk": plan.chunk}


def chunks_kept(plan, out) -> tuple:
    """``(chunks on disk whose identity matches the plan, chunks in the plan)``.

    Args:
      plan: the plan.
      out: its run folder.

    Returns:
      ``(kept, total)``.
    """
    total = math.ceil(plan.seeds / plan.chunk)
    kept = sum(read_chunk_identity(chunk_path(out, c)) == chunk_identity(plan, c) for c in range(total))
    return kept, total


def marker(plan) -> dict:
    """The ``run.json`` of the plan's run folder: tool, fingerprint, precision, spec, sizes.

    Args:
      plan: the plan.

    Returns:
      The ``run.json`` object (its spec as plain data, :meth:`~mobandit_jax.experiment_spec.ExperimentSpec.to_dict`).
    """
    return {"tool": TOOL, "fingerprint": fingerprint(plan), "precision": precision(), "spec": plan.spec.to_dict(),
            "horizon": plan.horizon, "record_every": plan.record_every, "chunk": plan.chunk}


def check_fingerprint(plan, out) -> RunFolderLock | None:
    """Refuse a folder that is not a run of this tool or holds another experiment; write ``run.json``.

    Process 0 locks the folder, checks and writes the marker and clears temporary files of killed writes, before any
    process writes a chunk.

    Args:
      plan: the :class:`~mobandit_jax.runner.plans.Plan` to run.
      out: its run folder.

    Returns:
      In process 0, the folder's :class:`RunFolderLock`, which the caller releases once the run is written (a
      refused folder is released here); None in the other processes.
    """
    import jax

    from . import sharding

    fp = fingerprint(plan)
    held = None
    try:
        if jax.process_index() == 0:
            run_marker(out)  # refuses a file or a foreign folder before the lock file is made
            held = lock(out)
            old = run_marker(out)
            if old is not None and old.get("fingerprint") != fp and holds_results(out):  # else: nothing to keep
                if old.get("precision", precision()) != precision():
                    raise RunFolderError(
                        f"{out} holds a {old['precision']} run and this run computes in {precision()}; run it "
                        f"{'with' if old['precision'] == 'float64' else 'without'} --x64 or choose another output "
                        "folder")
                raise RunFolderError(f"{out} holds results of a different experiment ({changes(old, plan)}); choose "
                                     "another output folder or delete it")
            write_json(out / MARKER, marker(plan))
            remove_partial_writes(out)
        sharding.barrier(f"run-folder-{fp}")
    except BaseException:
        if held is not None:
            held.release()
        raise
    return held


def holds_results(out) -> bool:
    """Whether run folder ``out`` holds results: a finished chunk or a ``summary.json`` (a run that failed
    before its first chunk leaves none).

    Args:
      out: a run folder.

    Returns:
      True if it holds a finished chunk or a ``summary.json``.
    """
    out = Path(out)
    return (out / "summary.json").exists() or any(
        read_chunk_identity(p) is not None for p in sorted((out / "chunks").glob("chunk_*.npz")))


def _flat(table: dict, prefix: str = "") -> dict:
    flat = {}
    for k, v in table.items():
        flat.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return flat


def changes(old: dict, plan) -> str:
    """How ``plan`` differs from the run of ``run.json`` ``old``: the spec keys that differ (the seed count
    aside), else its plugins or data files, in words.

    Args:
      old: the ``run.json`` of the folder.
      plan: the plan to run there.

    Returns:
      One line: the keys that differ (at most three named), or what else changed.
    """
    if not isinstance(old.get("spec"), dict):
        return f"fingerprint {old.get('fingerprint')} != {fingerprint(plan)}"
    there, here = _flat(old["spec"]), _flat(json.loads(json.dumps(plan.spec.to_dict(), default=str)))
    keys = [k for k in sorted(set(there) | set(here)) if k != "experiment.seeds" and there.get(k) != here.get(k)]
    if not keys:
        return "the same spec; its plugins' source or its data files changed"
    shown = lambda table, k: repr(table[k])[:60] if k in table else "unset"
    return "; ".join(f"{k} = {shown(there, k)} there, {shown(here, k)} in this run" for k in keys[:3]) + (
        f"; and {len(keys) - 3} more key(s)" if len(keys) > 3 else "")


def own_chunk(plan, out, c: int) -> bool:
    """True if chunk ``c`` is on disk with the plan's identity; refuses a chunk of another experiment.

    Args:
      plan: the plan.
      out: its run folder.
      c: the chunk's index.

    Returns:
      True if the chunk is there and is this plan's.
    """
    found = read_chunk_identity(chunk_path(out, c))
    want = chunk_identity(plan, c)
    if found is not None and found.get("fingerprint") != want["fingerprint"]:
        raise RunFolderError(
            f"{chunk_path(out, c)} belongs to another experiment (fingerprint {found.get('fingerprint')} "
            f"!= {want['fingerprint']}); it is not merged: choose another --out folder or delete it")
    return found == want
