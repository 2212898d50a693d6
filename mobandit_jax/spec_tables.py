"""The spec tables that an experiment's spec and a study's spec share, each checked here once.

- ``[preference] W``: the cone ``C = {x : W x >= 0}`` of seed 000 (Def. 1), a matrix of finite numbers
  (:func:`check_matrix`; an experiment's ``env.means`` is checked the same way);
- a ``[[policies]]`` entry: a registered policy's name, label, family, the options it sweeps and the others
  (:func:`check_policy` gives a :class:`PolicyEntry`).

The third table they share, ``[experiment] plugins``, is checked where plugins are loaded
(:func:`mobandit_jax.plugins.validate`).

The run's parser (:mod:`mobandit_jax.runner.spec`) reports a bad value as a
:class:`~mobandit_jax.errors.ConfigError`, the study's (:mod:`mobandit_jax.study.spec`) as its ``StudyError``: each
check raises the error class its caller names, in one line naming the key. This module imports no JAX.
"""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple

from .errors import ConfigError, plain

POLICY_META_KEYS = ("name", "label", "family", "sweep")  # the keys of a [[policies]] entry that are not options


def check_matrix(value, key: str, columns: int | None = None, error=ConfigError) -> list:
    """A non-empty rectangular list of rows of finite numbers (``preference.W``, ``env.means``).

    Args:
      value: the spec's value.
      key: its dotted key, named in errors.
      columns: the number of columns each row must have (None: that of row 0).
      error: the error class raised (:class:`~mobandit_jax.errors.ConfigError` or a subclass).

    Returns:
      ``value`` itself, checked.
    """
    if not isinstance(value, list) or not value or not all(isinstance(row, list) and row for row in value):
        raise error(f"{key} must be a non-empty list of non-empty rows of numbers; got {plain(value)!r}")
    width = len(value[0]) if columns is None else columns
    for i, row in enumerate(value):
        if len(row) != width:
            raise error(f"{key} is ragged: row {i} has {len(row)} values, row 0 has {width}" if columns is None else
                        f"{key}[{i}] has {len(row)} values; it needs {columns}, one per objective")
        for j, x in enumerate(row):
            if not isinstance(x, (int, float)) or isinstance(x, bool):
                raise error(f"{key}[{i}][{j}] = {plain(x)!r} is not a number")
            if not math.isfinite(x):
                raise error(f"{key}[{i}][{j}] = {x!r} is not a finite number")
    return value


class PolicyEntry(NamedTuple):
    """One ``[[policies]]`` entry (:func:`check_policy`).

    ``sweep``: each swept option's non-empty list of values; ``options``: the other options, each a value or a
    table of values per grid setting, ``{<setting> = {<setting value> = value, ...}}`` (:meth:`points`).
    """

    name: str
    label: str
    family: str | None
    sweep: dict
    options: dict

    @classmethod
    def from_table(cls, entry: dict) -> PolicyEntry:
        """The typed entry (unchecked; :func:`check_policy` checks it first).

        Args:
          entry: the ``[[policies]]`` table.

        Returns:
          The :class:`PolicyEntry` (its label is its name where it gives none).
        """
        return cls(entry["name"], entry.get("label", entry["name"]), entry.get("family"), dict(entry.get("sweep", {})),
                   {k: v for k, v in entry.items() if k not in POLICY_META_KEYS})

    def points(self, setting: dict | None = None) -> list:
        """The entry's option dicts: one per combination of its swept values (the product, in sweep order).

        Args:
          setting: a grid point's labels, where options given per setting value are resolved (None: left as they
            are).

        Returns:
          A list of ``{option: value}``.
        """
        keys = list(self.sweep)
        out = []
        for combo in itertools.product(*[self.sweep[k] for k in keys]):
            point = {**self.options, **dict(zip(keys, combo, strict=True))}
            out.append({k: self._by_setting(k, v, setting) for k, v in point.items()})
        return out

    def _by_setting(self, key: str, value, setting: dict | None):
        """Resolve ``{setting_name = {setting_value = v, ...}}`` at ``setting`` (other values unchanged)."""
        if not (isinstance(value, dict) and setting is not None):
            return value
        if len(value) != 1 or not isinstance(next(iter(value.values())), dict):
            raise ConfigError(f"policy {self.name!r}: option {key} = {value!r} must be a value or "
                              "{<setting> = {<setting value> = value, ...}}")
        (axis, table), = value.items()
        if axis not in setting:
            raise ConfigError(f"policy {self.name!r}: option {key} depends on setting {axis!r}, which this grid point "
                              f"does not have; settings: {sorted(setting)}")
        label = str(setting[axis])
        if label not in table:
            raise ConfigError(f"policy {self.name!r}: option {key} has no value for {axis} = {label!r}; "
                              f"listed: {sorted(table)}")
        return table[label]


def check_policy(i: int, entry: dict, error=ConfigError) -> PolicyEntry:
    """A ``[[policies]]`` entry: ``name`` (required), ``label`` and ``family`` non-empty strings, ``sweep`` a table
    of non-empty lists; every other key is an option.

    Args:
      i: the entry's index, named in errors.
      entry: the spec's table.
      error: the error class raised.

    Returns:
      The :class:`PolicyEntry` (its label is its name where it gives none).
    """
    if "name" not in entry:
        raise error(f"[[policies]] entry {i} needs a 'name' (see `mobandit list`)")
    for key in ("name", "label", "family"):
        if key in entry and (not isinstance(entry[key], str) or not entry[key]):
            raise error(f"[[policies]] entry {i}: {key} = {plain(entry[key])!r} must be a non-empty string")
    sweep = entry.get("sweep", {})
    if not isinstance(sweep, dict):
        raise error(f"[[policies]] entry {i} ({entry['name']}): 'sweep' must be a table of lists")
    for k, values in sweep.items():
        if not isinstance(values, list) or not values:
            raise error(f"[[policies]] entry {i} ({entry['name']}): sweep.{k} must be a non-empty list; "
                        f"got {plain(values)!r}")
    return PolicyEntry.from_table(entry)
