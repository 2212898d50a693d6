"""The Python API: ``mb.run(spec) -> Results``, an experiment run from Python with its results in memory.

``run`` takes a TOML spec path or a dict with the same tables, builds and executes it as
``mobandit run`` does (:mod:`mobandit_jax.runner.plans`, :mod:`mobandit_jax.runner.execution`), and returns a
:class:`mobandit_jax.analysis.results.Results`; with ``out=None`` nothing is written to disk (the seed
chunks are kept in memory).
"""
from __future__ import annotations

import copy
import os

from . import execution, plans
from . import spec as cfg
from .run_folder import run_marker
from ..analysis.results import Results


def run(spec, *, out=None, seeds: int | None = None, overrides=None, progress: bool = False) -> Results:
    """Run an experiment spec (a TOML path, or a dict with the same tables) and return its :class:`Results`.

    ``seeds`` overrides ``experiment.seeds``; ``overrides`` is a list of ``key=value`` strings (as
    ``--set``) or a dict of dotted keys to values. With ``out=None`` nothing is written to disk;
    with a folder, the run resumes from and writes to it exactly as ``mobandit run --out``.
    """
    if isinstance(spec, (str, os.PathLike)):
        spec = cfg.load(spec)
    elif isinstance(spec, dict):
        spec = cfg.validate(copy.deepcopy(spec))
    else:
        raise TypeError(f"spec must be a TOML path or a dict of tables; got {type(spec).__name__}")
    if isinstance(overrides, dict):
        overrides = {**overrides, **({"experiment.seeds": seeds} if seeds is not None else {})}
    else:
        overrides = list(overrides or []) + ([f"experiment.seeds={seeds}"] if seeds is not None else [])
    spec = cfg.apply_overrides(spec, overrides)
    if out is not None:
        run_marker(out)  # a file or a foreign folder is refused before anything is built
    plan = plans.checked_build(spec)
    return execution.execute(plan, out, progress=progress)
