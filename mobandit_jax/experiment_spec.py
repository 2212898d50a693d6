"""The typed experiment spec: a TOML spec's tables, checked by :func:`mobandit_jax.runner.spec.validate` and read
through named parts.

:class:`ExperimentSpec` holds ``experiment`` (:class:`Experiment`), ``env`` (the ``[env]`` table, whose keys its
kind's builder checks), ``cone`` (``[preference] W``, the cone ``C = {x : W x >= 0}`` of seed 000, or None),
``budget`` (the ``[budget]`` table, checked against the environment's costs by
:func:`mobandit_jax.problems.budget.with_budget`), ``scenarios`` (:class:`Scenario`), ``sweep`` (dotted key ->
values) and ``policies`` (:class:`~mobandit_jax.spec_tables.PolicyEntry`). :meth:`ExperimentSpec.to_dict` gives the
tables back as plain data, exactly as validated: what ``run.json`` stores, what a run's fingerprint hashes and what a
TOML file would hold.

The grid: :meth:`ExperimentSpec.settings` expands scenarios x sweep axes into :class:`GridSetting` s (a setting's
labels and the tables resolved there); a policy entry's options at a setting are its
:meth:`~mobandit_jax.spec_tables.PolicyEntry.points`; each run of the plan is a :class:`GridPoint` ``(setting,
params)``, as ``grid.json`` lists them. This module imports no JAX.
"""
from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .errors import ConfigError
from .spec_tables import PolicyEntry, check_matrix

DOTTED_TABLES = ("experiment", "env", "preference", "budget")  # the tables a dotted key ("env.rho") may address
EXPERIMENT_DEFAULTS = {"horizon": 1000, "seeds": 10, "seed": 0, "record_every": 0, "chunk": 0, "setting": {}}
DEFAULT_CHUNK = 256  # seeds per chunk unless experiment.chunk says otherwise


class Experiment(NamedTuple):
    """The ``[experiment]`` table: rounds, seeds, base seed, checkpoint spacing (0: about 100 checkpoints), seeds per
    chunk (0: :data:`DEFAULT_CHUNK`), constant setting labels, and the optional name, plugins and paper schedule."""

    horizon: int
    seeds: int
    seed: int
    record_every: int
    chunk: int
    setting: dict
    name: str | None = None
    plugins: list | None = None
    paper_schedule: bool = False

    @classmethod
    def from_table(cls, table: dict) -> Experiment:
        """The typed table (unchecked; :data:`EXPERIMENT_DEFAULTS` where it has no value).

        Args:
          table: the ``[experiment]`` table.

        Returns:
          The :class:`Experiment`.
        """
        table = {**EXPERIMENT_DEFAULTS, **table}
        return cls(**{k: table[k] for k in cls._fields if k in table})

    @property
    def chunk_size(self) -> int:
        """Seeds per chunk: ``chunk``, or up to :data:`DEFAULT_CHUNK`, at most the seeds."""
        return min(self.chunk or DEFAULT_CHUNK, self.seeds)


class Scenario(NamedTuple):
    """A ``[[scenarios]]`` entry: its name, its own setting labels and the dotted keys it sets."""

    name: str
    setting: dict
    overrides: dict

    @classmethod
    def from_table(cls, table: dict) -> Scenario:
        """The typed entry (unchecked).

        Args:
          table: the ``[[scenarios]]`` entry.

        Returns:
          The :class:`Scenario`.
        """
        return cls(table["name"], table.get("setting", {}),
                   {k: v for k, v in table.items() if k not in ("name", "setting")})


class GridPoint(NamedTuple):
    """One run of a policy entry: its grid setting's labels and its params (the policy's name and options), as
    ``grid.json`` lists them per label."""

    setting: dict
    params: dict

    def to_dict(self) -> dict:
        """``{"setting": ..., "params": ...}``, a ``grid.json`` entry.

        Returns:
          The entry.
        """
        return {"setting": self.setting, "params": self.params}

    @classmethod
    def from_dict(cls, entry: dict) -> GridPoint:
        """A ``grid.json`` entry read back.

        Args:
          entry: ``{"setting": ..., "params": ...}``.

        Returns:
          The :class:`GridPoint`.
        """
        return cls(entry["setting"], entry["params"])


class GridSetting(NamedTuple):
    """One setting of the grid (a scenario and one value of each sweep axis): its labels and the spec's tables
    resolved there, with their ``env`` table, cone and budget."""

    setting: dict
    env: dict
    cone: list | None
    budget: dict | None
    tables: dict  # the resolved tables (no scenarios, no sweep): what an environment's builder gets as its config

    @classmethod
    def resolved(cls, setting: dict, tables: dict) -> GridSetting:
        """The setting of ``tables`` resolved at ``setting``, its matrices (``env.means``, ``preference.W``) checked.

        Args:
          setting: the setting's labels.
          tables: the resolved tables.

        Returns:
          The :class:`GridSetting`.
        """
        env, preference = tables.get("env", {}), tables.get("preference", {})
        if "means" in env:
            check_matrix(env["means"], "env.means")
        if "W" in preference:
            check_matrix(preference["W"], "preference.W")
        return cls(setting, env, preference.get("W"), tables.get("budget"), tables)


def set_dotted(tables: dict, key: str, value, option: str = "--set"):
    """Set ``table.key`` (or ``table.key.subkey``) in a spec's tables, creating tables as needed.

    ``sweep.<table>.<key>`` addresses the sweep axis ``"<table>.<key>"`` (whose name holds a dot).

    Args:
      tables: the spec's tables, changed in place.
      key: the dotted key.
      value: its new value.
      option: what set it, named in errors (``--set``, ``overrides``).
    """
    if key.startswith("sweep.") and key.count(".") == 2:
        tables.setdefault("sweep", {})[key[len("sweep."):]] = value
        return
    parts = key.split(".")
    node = tables
    for p in parts[:-1]:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise ConfigError(f"{option} {key!r}: {p!r} is not a table")
    node[parts[-1]] = value


def _label(value):
    return value if isinstance(value, (int, float, str, bool)) else str(value)


@dataclass(frozen=True)
class ExperimentSpec:
    """A validated experiment spec (module docstring); build it with :func:`mobandit_jax.runner.spec.validate` (or,
    from tables validated before, :meth:`from_dict`)."""

    experiment: Experiment
    env: dict
    cone: list | None
    budget: dict | None
    scenarios: tuple
    sweep: dict
    policies: tuple
    tables: dict = field(repr=False)  # the validated tables, as plain data (to_dict)

    @classmethod
    def from_dict(cls, tables: dict) -> ExperimentSpec:
        """The typed spec of tables validated before (``run.json``'s spec, :meth:`to_dict`); nothing is checked.

        Args:
          tables: the tables.

        Returns:
          The :class:`ExperimentSpec`.
        """
        tables = copy.deepcopy(tables)
        return cls(Experiment.from_table(tables.get("experiment", {})), tables.get("env", {}),
                   tables.get("preference", {}).get("W"), tables.get("budget"),
                   tuple(Scenario.from_table(sc) for sc in tables.get("scenarios", [])), tables.get("sweep", {}),
                   tuple(PolicyEntry.from_table(entry) for entry in tables.get("policies", [])), tables)

    def to_dict(self) -> dict:
        """The tables as plain data, exactly as validated (experiment defaults filled in).

        Returns:
          A copy of the tables.
        """
        return copy.deepcopy(self.tables)

    def settings(self) -> list:
        """The grid: every scenario (or none) x every combination of the sweep axes' values.

        A setting's labels are ``experiment.setting``'s, the scenario's name (``scenario``) and its own labels, and
        the last component of each swept key with its value (``env.front`` -> ``front``).

        Returns:
          A list of :class:`GridSetting`, scenarios outermost.
        """
        axes = list(self.sweep.items())
        out = []
        for sc in self.scenarios or [None]:
            for combo in itertools.product(*[values for _, values in axes]):
                resolved = copy.deepcopy({k: v for k, v in self.tables.items() if k not in ("scenarios", "sweep")})
                setting = dict(self.experiment.setting)
                if sc is not None:
                    setting["scenario"] = sc.name
                    setting.update(sc.setting)
                    for key, value in sc.overrides.items():
                        set_dotted(resolved, key, copy.deepcopy(value))
                for (key, _), value in zip(axes, combo, strict=True):
                    set_dotted(resolved, key, copy.deepcopy(value))
                    setting[key.split(".")[-1]] = _label(value)
                out.append(GridSetting.resolved(setting, resolved))
        return out

    def seed_rounds(self) -> int:
        """The size of the spec's work: rounds x seeds x runs (grid settings x policy points).

        Returns:
          The product.
        """
        runs = sum(len(entry.points()) for entry in self.policies) * len(self.settings())
        return self.experiment.horizon * self.experiment.seeds * runs

    def data_files(self) -> list:
        """The files the environment tables name: each string value of ``[env]``, of a ``[[scenarios]]`` ``env.*``
        key or of a ``[sweep]`` ``env.*`` list that is a path to a file.

        Returns:
          The paths, sorted.
        """
        values = list(self.env.values())
        values += [v for sc in self.scenarios for k, v in sc.overrides.items() if k.startswith("env.")]
        values += [v for k, vs in self.sweep.items() if k.startswith("env.") for v in vs]
        return sorted({v for v in values if isinstance(v, str) and v and Path(v).is_file()})
