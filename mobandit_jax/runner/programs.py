"""Compiled programs kept between runs, so that a repeated run neither traces, lowers nor compiles.

JAX's persistent compilation cache (:mod:`mobandit_jax.runner.cache`) skips XLA's compile only: a run
still traces and lowers every program to find its entry (about a second for the quickstart's four
groups). This cache keeps each group's compiled executable
(``jax.experimental.serialize_executable``) in ``programs/`` of the package's cache directory
(:mod:`mobandit_jax.runner.cache`), under a key that names everything the program is made of:

- the plan's fingerprint (:func:`mobandit_jax.runner.run_folder.fingerprint`: the spec but its seed
  count, horizon, checkpoints, precision, plugins' source, data files' content) and its chunk size,
  the group's position and label, its parameters' structure, shapes and dtypes, the seed width;
- the source of this package, the JAX and jaxlib versions, the backend and its devices, the CPU
  (XLA compiles for the host's instruction set), ``XLA_FLAGS``, the runtime settings and JAX's
  configuration values that shape a program.

A program with a host callback (the live progress bar's) is never kept, as in JAX's cache. An
entry that cannot be read back (another JAX, a truncated file) is compiled again and replaced. The
folder is bounded (:func:`mobandit_jax.runner.cache.programs_max_bytes`): beyond it, writing an entry deletes
the entries least recently used (a load marks its entry used), so that versions of the package or
specs a user left behind do not pile up.
The cache is on where :func:`mobandit_jax.runner.cache.configure` turned it on with JAX's
(``mobandit`` does, unless ``--no-cache`` or ``MOBANDIT_NO_CACHE=1``), which sets
``MOBANDIT_PROGRAMS_DIR`` for this process and its workers; a library user who never calls it gets
neither. Loading an entry runs code from the cache directory, as JAX's own cache does: keep it
private to the user.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import pickle
import platform
from pathlib import Path

import jax

from . import cache, run_folder

DIR_ENV = "MOBANDIT_PROGRAMS_DIR"  # set by mobandit_jax.runner.cache.configure
# JAX configuration values that change no program (caches, logging, printing, dumps)
_UNRELATED = ("cache", "log", "traceback", "pprint", "dump", "explain", "leaked", "timeout", "color")


def directory() -> Path | None:
    """Where programs are kept.

    Returns:
      ``$MOBANDIT_PROGRAMS_DIR`` (set by :func:`mobandit_jax.runner.cache.configure`), or None: the cache is off.
    """
    folder = os.environ.get(DIR_ENV)
    return Path(folder) if folder else None


@functools.cache
def _source_digest() -> str:
    """A hash of every Python file of this package (names and contents)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


@functools.cache
def _cpu() -> str:
    """The host CPU's model and instruction-set flags (Linux), else what ``platform`` says."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        lines = []
    wanted = [ln for ln in lines if ln.split(":")[0].strip() in ("model name", "flags", "Features", "CPU part")]
    return "\n".join(sorted(set(wanted))) or f"{platform.machine()} {platform.processor()}"


def _environment(mesh) -> dict:
    """What a compiled program depends on besides the plan: code, versions, devices, flags."""
    import jaxlib

    devices = list(mesh.devices.flat)
    config = {k: str(v) for k, v in sorted(jax.config.values.items()) if not any(w in k for w in _UNRELATED)}
    return {"source": _source_digest(), "jax": jax.__version__, "jaxlib": jaxlib.__version__,
            "platform": devices[0].platform, "version": devices[0].client.platform_version,
            "devices": [(d.id, d.device_kind) for d in devices], "axes": list(mesh.axis_names),
            "cpu": _cpu(), "xla_flags": os.environ.get("XLA_FLAGS", ""),
            "defaults": os.environ.get("MOBANDIT_XLA_DEFAULTS", ""), "config": config}


def signature(tree) -> tuple:
    """The structure, shapes and dtypes of a pytree of arrays (what a program's arguments look like).

    Args:
      tree: a pytree of arrays (or array-likes).

    Returns:
      ``(treedef as text, (shape, dtype name) per leaf...)``.
    """
    import numpy as np

    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return (str(treedef),) + tuple((np.shape(x), str(jax.numpy.asarray(x).dtype)) for x in leaves)


def path(plan, index: int, params, width: int, mesh) -> Path | None:
    """Where a group's compiled program is kept.

    Args:
      plan: the run's plan.
      index: the group's position in ``plan.groups``.
      params: the group's stacked parameters.
      width: seeds per call.
      mesh: the devices it is compiled for.

    Returns:
      The entry's path under :func:`directory` (named by a hash of everything the program is made of), or None:
      the cache is off.
    """
    folder = directory()
    if folder is None:
        return None
    ident = {"plan": run_folder.fingerprint(plan), "chunk": plan.chunk, "group": index,
             "label": plan.groups[index].label, "params": signature(params), "width": width,
             "env": _environment(mesh)}
    return folder / hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:32]


def load(path: Path | None, mesh):
    """The compiled program kept at ``path``, loaded onto ``mesh``'s devices; a load marks the entry used.

    Args:
      path: the entry (:func:`path`), or None.
      mesh: the devices to load it on.

    Returns:
      The program, or None (no path, no entry, or one that cannot be read back).
    """
    from jax.experimental import serialize_executable

    if path is None or not path.exists():
        return None
    try:
        payload, in_tree, out_tree = pickle.loads(path.read_bytes())
        os.utime(path)  # used now: the last to go when the folder is trimmed
        return serialize_executable.deserialize_and_load(payload, in_tree, out_tree,
                                                         execution_devices=list(mesh.devices.flat))
    except Exception:  # noqa: BLE001 -- an unreadable entry is compiled again and replaced
        return None


@contextlib.contextmanager
def fresh_compiles():
    """JAX's persistent cache neither read nor written in this block, for the programs compiled to be kept here:
    an executable that JAX read from its own cache cannot be serialised again (jaxlib 0.10 writes it without
    its kernels, and loading it fails on the first call).

    Returns:
      The context manager; JAX's setting is restored when the block ends.
    """
    from jax.experimental.compilation_cache import compilation_cache

    before = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    compilation_cache.reset_cache()  # JAX decides once per process whether its cache is used: decide again
    try:
        yield
    finally:
        jax.config.update("jax_enable_compilation_cache", before)
        compilation_cache.reset_cache()


def compile_and_keep(lowered, path: Path | None):
    """Compile a lowered program and keep it.

    Args:
      lowered: a lowered program (``jax.jit(...).lower(...)``).
      path: its entry (:func:`path`); None: not kept.

    Returns:
      ``lowered.compile()``, written to ``path`` atomically (unless the program cannot be serialised, e.g. one
      with a host callback, or the folder cannot be written), the folder then trimmed (:func:`trim`).
    """
    from jax.experimental import serialize_executable

    program = lowered.compile()
    if path is None:
        return program
    try:
        data = pickle.dumps(serialize_executable.serialize(program))
        run_folder.atomic_write(path, lambda f: f.write(data))
        trim(path.parent)
    except Exception:  # noqa: BLE001 -- an unwritable cache only costs the next run its compile
        pass
    return program


def trim(folder: Path, max_bytes: int | None = None):
    """Delete ``folder``'s entries, least recently used first, until they hold at most ``max_bytes``. Entries
    another process deletes meanwhile are skipped.

    Args:
      folder: the programs' folder.
      max_bytes: the bound (default: :func:`mobandit_jax.runner.cache.programs_max_bytes`).

    Returns:
      None.
    """
    if max_bytes is None:
        max_bytes = cache.programs_max_bytes()
    entries = []
    for entry in os.scandir(folder):
        with contextlib.suppress(OSError):
            info = entry.stat()
            entries.append((info.st_mtime, info.st_size, entry.path))
    total = sum(size for _, size, _ in entries)
    for _, size, name in sorted(entries):
        if total <= max_bytes:
            break
        with contextlib.suppress(OSError):
            os.remove(name)
        total -= size
