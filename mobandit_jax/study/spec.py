"""A study's spec: the ``[study]`` table (arms, objectives, bounds), ``[preference]``, ``[budget]`` and one policy.

::

    [study]
    arms = ["a", "b", "c"]        # names, or a CSV path with an `arm` column (other columns: each ticket's config)
    objectives = ["accuracy", "speed"]
    lower = [0.0, 0.0]            # each objective's bounds (default [0, 1]); told values outside them are refused
    upper = [1.0, 1.0]
    # noise = 0.1                 # or: the values' sub-Gaussian noise scale, for unbounded values (no lower/upper)
    horizon = 1000                # evaluations (online families) or rounds (fixed confidence); default 1000,
                                  # or 1,000,000 with a [budget] (which ends the study first)
    slate = 0                     # k, the slate size of a slate policy (each ticket then names k arms)
    [preference]
    W = [[1.0, 0.0], [0.0, 1.0]]  # optional cone C = {x : W x >= 0}
    [budget]
    B = 60.0                      # optional, in the user's cost units
    cost = 1.0                    # each evaluation's expected cost: a number, one per arm, or a CSV column name
    replan = true                 # an identifier re-plans its remaining phases at each barrier (default true)
    [[policies]]
    name = "psi_sr"               # exactly one entry: a registered policy and its options
    [experiment]
    plugins = ["my_policies.py"]  # optional: modules that register policies or families (as a run's spec)

Values are maximised. A policy sees them scaled to [0, 1] by the bounds (``(v - lower) / (upper - lower)``), or, with
``noise``, as they are; costs are scaled by the largest expected cost (policies plan with costs in (0, 1]).

``W`` and the ``[[policies]]`` entry are checked as a run's spec checks them (:mod:`mobandit_jax.spec_tables`), the
plugins by :func:`mobandit_jax.plugins.validate`: a bad value gets the same words in a study and in a run.
"""
from __future__ import annotations

import csv
import math
import os
import tomllib
from typing import NamedTuple

from .. import errors
from ..errors import did_you_mean
from ..plugins import validate as check_plugins
from ..spec_tables import PolicyEntry, check_matrix, check_policy
from .errors import StudyError

TOP = ("study", "preference", "budget", "policies", "experiment")
STUDY_KEYS = ("arms", "arm_column", "objectives", "lower", "upper", "noise", "horizon", "slate")
BUDGET_KEYS = ("B", "cost", "replan")
RESERVED = ("ticket", "state", "worker", "arm", "cost", "asked", "told", "pulls", "recommended")
DEFAULT_HORIZON = 1000  # evaluations (online) or rounds (fixed confidence) of a study without a budget
BUDGET_HORIZON = 1_000_000  # with a budget, which then ends the study


class StudySpec(NamedTuple):
    """A validated spec: arm names and configs, objectives, bounds (or noise), cone, budget, expected costs, the
    policy (name, family or None, options), the horizon, and the spec as plain data (what ``meta`` stores)."""

    arms: list
    configs: list
    objectives: list
    lower: list | None
    upper: list | None
    noise: float | None
    W: list | None
    budget: float | None
    costs: list | None
    policy: str
    family: str | None
    options: dict
    horizon: int
    plain: dict
    slate: int = 0
    plugins: list = []
    replan: bool = True
    cost_name: str = "cost units"


def _num(value, key: str, *, positive=False, nonneg=False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise StudyError(f"{key} = {errors.plain(value)!r} must be a finite number")
    if positive and value <= 0:
        raise StudyError(f"{key} = {errors.plain(value)!r} must be > 0")
    if nonneg and value < 0:
        raise StudyError(f"{key} = {errors.plain(value)!r} must be >= 0")
    return float(value)


def _numbers(value, key: str, n: int) -> list:
    if not isinstance(value, list) or len(value) != n:
        raise StudyError(f"{key} = {errors.plain(value)!r} must be a list of {n} numbers (one per objective)")
    return [_num(v, f"{key}[{i}]") for i, v in enumerate(value)]


def _rows(path, what: str) -> list:
    """A CSV file's rows as dicts (one line naming ``what`` if it cannot be read)."""
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as err:
        raise StudyError(f"{what} = {str(path)!r}: cannot read it ({err.strerror})") from None


def _cell(text):
    """A CSV cell as an int, a float or the text itself."""
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _read_csv(path: str, column: str):
    rows = _rows(path, "study.arms")
    if not rows or column not in rows[0]:
        have = sorted(rows[0]) if rows else []
        raise StudyError(f"study.arms = {path!r} needs a column {column!r} (study.arm_column); columns: {have}")
    names = [r[column] for r in rows]
    configs = [{k: _cell(v) for k, v in r.items() if k != column} for r in rows]
    return names, configs


def read_evaluations(path, objectives: list, arm_column: str = "arm", cost_column: str = "cost") -> list:
    """Finished evaluations from a CSV file, as :meth:`~.study.Study.add_rows` takes them.

    Args:
      path: the file: a column ``arm_column`` with the arm's name, one column per objective, optionally
        ``cost_column``; every other column goes into the row's ``attrs`` (numbers as numbers).
      objectives: the study's objectives (their columns).
      arm_column: the arms' column.
      cost_column: the costs' column (optional in the file).

    Returns:
      One dict (``arm``, ``values``, ``cost``, ``attrs``) a row; a missing column or a cell that is not a number
      where one is needed is one :class:`StudyError` line naming the file, row and column.
    """
    rows = _rows(path, "--csv")
    need = [arm_column, *objectives]
    have = list(rows[0]) if rows else []
    missing = [c for c in need if c not in have]
    if not rows or missing:
        raise StudyError(f"{str(path)!r} needs the columns {need} (the arm and one per objective; optionally "
                         f"{cost_column!r}); {'it has no rows' if not rows else f'missing {missing}; columns: {have}'}")
    out = []
    for i, r in enumerate(rows):
        cells = {}
        for c in [*objectives, cost_column]:
            text = (r.get(c) or "").strip()
            if c == cost_column and not text:
                continue
            cell = _cell(text)
            if isinstance(cell, str):
                raise StudyError(f"{str(path)!r} row {i + 2}: {c} = {text!r} must be a number")
            cells[c] = cell
        attrs = {k: _cell(v) for k, v in r.items() if k not in (arm_column, cost_column, *objectives)}
        out.append(dict(arm=r[arm_column], values=[cells[o] for o in objectives], cost=cells.get(cost_column),
                        attrs=attrs or None))
    return out


def load_spec(spec, base: str | None = None) -> StudySpec:
    """Validate a spec (a TOML path or a dict of the same tables) into a :class:`StudySpec`.

    Args:
      spec: the spec.
      base: the folder relative CSV paths are read from (default: the TOML file's, else the working folder).

    Returns:
      The :class:`StudySpec`; a bad key or value raises :class:`StudyError` in one line.
    """
    data, base = _read(spec, base)
    study = _study_table(data)
    names, configs, plain = _arms(data, study, base)
    objectives = _objectives(study)
    noise, lower, upper = _bounds(study, len(objectives))
    slate = study.get("slate", 0)
    if isinstance(slate, bool) or not isinstance(slate, int) or not 0 <= slate < len(names):
        raise StudyError(f"study.slate = {errors.plain(slate)!r} must be a whole number from 1 to K - 1 = "
                         f"{len(names) - 1} (the slate size k of a slate policy; 0: none)")
    horizon = study.get("horizon", DEFAULT_HORIZON if "budget" not in data else BUDGET_HORIZON)
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
        raise StudyError(f"study.horizon = {errors.plain(horizon)!r} must be a whole number >= 1")
    W = _cone(data, len(objectives))
    budget, costs, replan, cost_name = _budget(data, names, configs)
    plugins = _plugins(data, base)
    if "experiment" in data:
        plain = {**plain, "experiment": {"plugins": plugins}}
    policy = _policy(data)
    return StudySpec(names, configs, list(objectives), lower, upper, noise, W, budget, costs, policy.name,
                     policy.family, dict(policy.options), int(horizon), plain, slate, plugins, replan, cost_name)


def _read(spec, base: str | None) -> tuple:
    """``(tables, base folder)`` of a TOML path or a dict of tables."""
    if isinstance(spec, str | os.PathLike):
        try:
            with open(spec, "rb") as f:
                data = tomllib.load(f)
        except OSError as err:
            raise StudyError(f"cannot read the spec {str(spec)!r} ({err.strerror})") from None
        except tomllib.TOMLDecodeError as err:
            raise StudyError(f"the spec {str(spec)!r} is not valid TOML: {err}") from None
        base = base or os.path.dirname(os.path.abspath(spec))
    elif isinstance(spec, dict):
        data = spec
    else:
        raise StudyError(f"a spec is a TOML path or a dict, not {type(spec).__name__}")
    return data, base or os.getcwd()


def _study_table(data: dict) -> dict:
    """The ``[study]`` table, after the tables' and its keys' names are checked."""
    unknown = sorted(set(data) - set(TOP) - {"_configs"})  # _configs: a stored spec's CSV rows
    if unknown:
        raise StudyError(f"unknown table(s) {unknown} in a study spec{did_you_mean(unknown[0], TOP)}; allowed: "
                         f"{list(TOP)}")
    study = data.get("study")
    if not isinstance(study, dict):
        raise StudyError("the spec needs a [study] table with arms and objectives")
    bad = sorted(set(study) - set(STUDY_KEYS))
    if bad:
        raise StudyError(f"unknown key(s) {bad} in [study]{did_you_mean(bad[0], STUDY_KEYS)}; allowed: "
                         f"{list(STUDY_KEYS)}")
    return study


def _arms(data: dict, study: dict, base: str) -> tuple:
    """``(arm names, their configs, the spec as plain data)``: names listed, or read from a CSV file's column."""
    arms = study.get("arms")
    column = study.get("arm_column", "arm")
    plain = {k: v for k, v in data.items()}
    if isinstance(arms, str):
        path = arms if os.path.isabs(arms) else os.path.join(base, arms)
        names, configs = _read_csv(path, column)
        plain = {**plain, "study": {**study, "arms": names}, "_configs": configs}
    elif isinstance(arms, list) and arms and all(isinstance(a, str) for a in arms):
        names = list(arms)
        configs = data.get("_configs") or [{} for _ in names]
    else:
        raise StudyError(f"study.arms = {errors.plain(arms)!r} must be a non-empty list of names or a CSV path")
    if len(set(names)) != len(names):
        dup = sorted({a for a in names if names.count(a) > 1})
        raise StudyError(f"study.arms names {dup} more than once; each arm needs its own name")
    if len(names) < 2:
        raise StudyError(f"study.arms has {len(names)} arm; a study needs at least 2")
    return names, configs, plain


def _objectives(study: dict) -> list:
    """``study.objectives``: distinct names, none a column name of ``history()`` or ``arms()``."""
    objectives = study.get("objectives")
    if not (isinstance(objectives, list) and objectives and all(isinstance(o, str) and o for o in objectives)):
        raise StudyError(f"study.objectives = {errors.plain(objectives)!r} must be a non-empty list of names")
    reserved = set(RESERVED) & set(objectives)
    if reserved or len(set(objectives)) != len(objectives):
        raise StudyError(f"study.objectives = {errors.plain(objectives)!r}: names must be distinct and not one of "
                         f"{', '.join(RESERVED)} (column names of history() and arms())")
    return objectives


def _bounds(study: dict, d: int) -> tuple:
    """``(noise, lower, upper)``: a noise scale and no bounds, or bounds (default ``[0, 1]``) and no noise."""
    noise = study.get("noise")
    if noise is not None:
        if "lower" in study or "upper" in study:
            raise StudyError("[study] gives noise and lower/upper: give bounds (values in [lower, upper]) or a noise "
                             "scale (unbounded values), not both")
        return _num(noise, "study.noise", positive=True), None, None
    lower = _numbers(study.get("lower", [0.0] * d), "study.lower", d)
    upper = _numbers(study.get("upper", [1.0] * d), "study.upper", d)
    for i, (lo, up) in enumerate(zip(lower, upper, strict=True)):
        if not lo < up:
            raise StudyError(f"study.lower[{i}] = {lo} must be below study.upper[{i}] = {up}")
    return None, lower, upper


def _cone(data: dict, d: int) -> list | None:
    """``[preference] W`` as rows of ``d`` floats (:func:`~mobandit_jax.spec_tables.check_matrix`), or None."""
    if "preference" not in data:
        return None
    pref = data["preference"]
    if not isinstance(pref, dict) or set(pref) != {"W"}:
        other = sorted(set(pref) - {"W"}) if isinstance(pref, dict) else []
        hint = f": unknown key(s) {other}{did_you_mean(other[0], ['W'])}" if other else ""
        raise StudyError(f"[preference] takes one key, W: a list of rows of d numbers{hint}")
    return [[float(x) for x in row] for row in check_matrix(pref["W"], "preference.W", d, StudyError)]


def _budget(data: dict, names: list, configs: list) -> tuple:
    """``(B, expected cost per arm, replan, cost name)`` of ``[budget]`` (``(None, None, True, "cost units")``
    without one)."""
    if "budget" not in data:
        return None, None, True, "cost units"
    b = data["budget"]
    bad = sorted(set(b) - set(BUDGET_KEYS)) if isinstance(b, dict) else ["?"]
    if bad or "B" not in b:
        hint = (f"got {errors.plain(b)!r}" if not isinstance(b, dict) else
                f"unknown key(s) {bad}{did_you_mean(bad[0], BUDGET_KEYS)}" if bad else "no B")
        raise StudyError(f"[budget] takes B (the budget, in your cost units), cost (each evaluation's expected "
                         f"cost: a number, a list, or a CSV column) and replan (true or false): {hint}")
    budget = _num(b["B"], "budget.B", positive=True)
    replan = b.get("replan", True)
    if not isinstance(replan, bool):
        raise StudyError(f"budget.replan = {errors.plain(replan)!r} must be true or false")
    cost = b.get("cost", 1.0)
    if isinstance(cost, str):
        if any(cost not in c for c in configs):
            raise StudyError(f"budget.cost = {errors.plain(cost)!r} names no column of study.arms; columns: "
                             f"{sorted(configs[0])}")
        costs = [_num(c[cost], f"budget.cost ({cost} of arm {a!r})", positive=True)
                 for a, c in zip(names, configs, strict=True)]
    elif isinstance(cost, list):
        if len(cost) != len(names):
            raise StudyError(f"budget.cost has {len(cost)} entries; give one per arm ({len(names)})")
        costs = [_num(c, f"budget.cost[{i}]", positive=True) for i, c in enumerate(cost)]
    else:
        costs = [_num(cost, "budget.cost", positive=True)] * len(names)
    return budget, costs, replan, cost if isinstance(cost, str) else "cost units"


def _plugins(data: dict, base: str) -> list:
    """``[experiment] plugins`` (its only key in a study spec), each file anchored at ``base``
    (:func:`mobandit_jax.plugins.validate`)."""
    if "experiment" not in data:
        return []
    exp = data["experiment"]
    if not isinstance(exp, dict) or set(exp) - {"plugins"}:
        other = sorted(set(exp) - {"plugins"}) if isinstance(exp, dict) else []
        hint = f" (unknown key(s) {other}{did_you_mean(other[0], ['plugins'])})" if other else ""
        raise StudyError("[experiment] in a study spec takes one key, plugins: the files or modules that "
                         f"register your policies or families{hint}")
    return check_plugins(exp.get("plugins") or [], base, StudyError)


def _policy(data: dict) -> PolicyEntry:
    """The one ``[[policies]]`` entry (:func:`~mobandit_jax.spec_tables.check_policy`), which sweeps nothing."""
    policies = data.get("policies")
    if not isinstance(policies, list) or len(policies) != 1 or not isinstance(policies[0], dict):
        n = len(policies) if isinstance(policies, list) else 0
        raise StudyError(f"a study takes exactly one [[policies]] entry (a registered name and its options); got {n}")
    entry = check_policy(0, {k: v for k, v in policies[0].items() if k != "sweep"}, StudyError)
    if "sweep" in policies[0]:
        raise StudyError(f"[[policies]] {entry.name}: a study runs one configuration; give options, not a sweep")
    return entry
