"""The Python API: ``mb.run(spec) -> Results``, an experiment run from Python with its results in memory.

``run`` takes a TOML spec path, a dict with the same tables or a validated
:class:`~mobandit_jax.experiment_spec.ExperimentSpec`, builds and executes it as
``mobandit run`` does (:mod:`mobandit_jax.runner.plans`, :mod:`mobandit_jax.runner.execution`), and returns a
:class:`mobandit_jax.analysis.results.Results`; with ``out=None`` nothing is written to disk (the seed
chunks are kept in memory). Every bad argument raises :class:`mobandit_jax.errors.ConfigError` (a
``ValueError``) with a one-line message, before anything runs. This module imports no JAX until
:func:`run` builds a plan, so ``mobandit reproduce`` shares its folder checks before it starts JAX.
"""
from __future__ import annotations

import copy
import datetime
import numbers
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError, plain
from ..experiment_spec import ExperimentSpec
from . import spec as cfg
from .run_folder import RunFolderError, chunks_kept, run_marker

if TYPE_CHECKING:
    from ..analysis.results import Results

MAX_SEEDS = cfg.MAX_COUNT  # 2**31 - 1: the bound spec.validate sets on experiment.seeds (32-bit seed indices)
TOML_VALUES = (str, int, float, bool, list, dict, datetime.date, datetime.time)


def check_seeds(seeds, name: str = "seeds") -> int:
    """``seeds`` as an int if it is a seed count from 1 to :data:`MAX_SEEDS`; else a one-line ConfigError.

    Args:
      seeds: the value given.
      name: its name in the error.

    Returns:
      ``seeds`` as an int.
    """
    if isinstance(seeds, bool) or not isinstance(seeds, numbers.Integral) or not 1 <= seeds <= MAX_SEEDS:
        raise ConfigError(f"{name}={plain(seeds)!r}: the number of seeds must be an integer from 1 to {MAX_SEEDS} "
                          "(2**31 - 1: seed indices are 32-bit integers)")
    return int(seeds)


def check_folder_path(path, name: str) -> Path:
    """``path`` as a Path, refused (one-line ConfigError) where it or a folder above it is a file.

    Args:
      path: the path given.
      name: its name in the error (``out``, ``--runs``).

    Returns:
      The :class:`~pathlib.Path`.
    """
    path = Path(path)
    below = next((p for p in (path, *path.parents) if p.exists()), None)
    if below is not None and not below.is_dir():
        raise ConfigError(f"{name} {path}: {below} is a file, not a folder")
    return path


def check_out(out, name: str = "out") -> Path:
    """``out`` as a Path if it is a new folder, an empty one or a run folder; else a one-line ConfigError.

    A file, a path below a file and what :func:`mobandit_jax.runner.run_folder.run_marker` refuses (a
    folder holding files but no ``run.json`` marker) are refused.

    Args:
      out: the folder given.
      name: its name in the error.

    Returns:
      The :class:`~pathlib.Path`.
    """
    if not isinstance(out, (str, os.PathLike)):
        raise ConfigError(f"{name}={out!r}: expected a folder path (a str or a Path), or None")
    path = check_folder_path(out, name)
    try:
        run_marker(path)
    except RunFolderError as err:  # a folder holding files but no run.json marker, a link to nothing
        raise ConfigError(f"{name} {path}: {err}") from None
    return path


def _check_toml(value, where: str):
    """Keys are strings and values TOML values (str, int, float, bool, date/time, lists and tables of them)."""
    if not isinstance(value, TOML_VALUES):
        raise ConfigError(f"{where} = {value!r} is a {type(value).__name__}; spec values are TOML values: "
                          "str, int, float, bool, list or dict")
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_toml(item, f"{where}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ConfigError(f"{where}: key {key!r} is a {type(key).__name__}; spec keys are strings")
            _check_toml(item, f"{where}.{key}")


def _load(spec) -> ExperimentSpec:
    """A TOML spec path or a dict of tables, validated (the dict is copied), or a validated spec."""
    if isinstance(spec, ExperimentSpec):
        return spec
    if isinstance(spec, (str, os.PathLike)):
        return cfg.load(spec)
    if not isinstance(spec, dict):
        raise ConfigError(f"spec must be a TOML path (a str or a Path), a dict of tables or an ExperimentSpec; got "
                          f"{type(spec).__name__}")
    tables = plain(spec)  # numpy numbers and arrays as the Python numbers and lists TOML would give
    _check_toml(tables, "spec")
    return cfg.validate(copy.deepcopy(tables))


def _overrides(overrides, seeds):
    """``overrides`` (a list of ``key=value`` strings or a dict of dotted keys) plus ``seeds``, checked."""
    if seeds is not None:
        seeds = check_seeds(seeds)
    if overrides is None or isinstance(overrides, (list, tuple)):
        texts = list(overrides or ())
        for text in texts:
            if not isinstance(text, str):
                raise ConfigError(f"overrides: {text!r} is a {type(text).__name__}; each override is a "
                                  "'key=value' string, e.g. 'experiment.horizon=500'")
        return texts + ([f"experiment.seeds={seeds}"] if seeds is not None else [])
    if isinstance(overrides, dict):
        overrides = plain(overrides)
        for key, value in overrides.items():
            if not isinstance(key, str):
                raise ConfigError(f"overrides: key {key!r} is a {type(key).__name__}; the keys are dotted spec keys "
                                  "such as 'experiment.horizon'")
            _check_toml(value, f"overrides[{key!r}]")
        return {**overrides, **({"experiment.seeds": seeds} if seeds is not None else {})}
    raise ConfigError(f"overrides={overrides!r}: expected a list of 'key=value' strings (e.g. "
                      "['experiment.horizon=500']) or a dict of dotted keys to values, or None")


def run(spec, *, out=None, seeds: int | None = None, overrides=None, progress: bool = False) -> Results:
    """Run an experiment spec (a TOML path, a dict with the same tables, or a validated
    :class:`~mobandit_jax.experiment_spec.ExperimentSpec`) and return its :class:`Results`.

    ``seeds`` (1 to :data:`MAX_SEEDS`) overrides ``experiment.seeds``; ``overrides`` is a list of
    ``key=value`` strings (as ``--set``) or a dict of dotted keys to values. With ``out=None`` nothing is
    written to disk; with a folder (new, empty or a run folder of the same experiment), the run resumes
    from and writes to it exactly as ``mobandit run --out``.

    Args:
      spec: a TOML path, a dict with the same tables, or an :class:`~mobandit_jax.experiment_spec.ExperimentSpec`.
      out: ``None`` (nothing written) or a run folder.
      seeds: overrides ``experiment.seeds``.
      overrides: ``["key=value", ...]`` or ``{"dotted.key": value}``.
      progress: show the progress bar on standard error.

    Returns:
      The run's :class:`~mobandit_jax.analysis.results.Results`.

    Raises:
      ConfigError: a ``ValueError`` with a one-line message naming the argument, key or value and what is
        allowed, for every bad argument: a spec that is not a path, a dict or a spec, a missing file, a folder, bad
        tables or values, a bad seed count, overrides or out folder.
      KeyboardInterrupt: on Ctrl-C, with one line saying what was kept.
    """
    if not isinstance(progress, bool):
        raise ConfigError(f"progress={progress!r}: expected True or False")
    spec = cfg.apply_overrides(_load(spec), _overrides(overrides, seeds), option="overrides")
    if out is not None:
        out = check_out(out)  # a file or a foreign folder is refused before anything is built
    from . import background, execution, plans  # JAX from here on

    plan = plans.checked_build(spec)
    try:
        with background.keyboard_interrupts():
            return execution.execute(plan, out, progress=progress)
    except RunFolderError as err:  # a run folder of another experiment or precision
        raise ConfigError(f"out {out}: {err}") from None
    except KeyboardInterrupt:  # Ctrl-C, within a tenth of a second even while XLA compiles
        raise KeyboardInterrupt(interrupted(plan, out)) from None


def interrupted(plan, out) -> str:
    """What an interrupted ``run(plan's spec, out=out)`` keeps, in one line.

    Args:
      plan: the plan that ran.
      out: its run folder, or None.

    Returns:
      The line.
    """
    if out is None:
        return "interrupted: nothing kept (out=None keeps the chunks in memory); pass out=FOLDER to resume later"
    kept, total = chunks_kept(plan, out)
    return f"interrupted: {kept}/{total} chunks kept in {out}; the same mb.run(..., out={str(out)!r}) resumes"
