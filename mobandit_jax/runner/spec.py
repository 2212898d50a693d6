"""TOML experiment specs: reading, validation with named errors into an
:class:`~mobandit_jax.experiment_spec.ExperimentSpec`, and ``--set`` overrides.

A spec has these tables (unknown keys fail with the key's name and the allowed keys)::

    [experiment]   horizon, seeds, seed, record_every, chunk, name, setting = {...}
    [env]          kind = "<registered kind>", then that kind's keys
    [preference]   W = [[...], ...]                      (optional; without it, the Pareto order W = I)
    [budget]       rho = 16 or B = 500                   (optional; envs whose pulls cost)
    [[scenarios]]  name = "...", setting = {...}, "<table>.<key>" = value  (overrides dotted keys)
    [sweep]        "<table>.<key>" = [v1, v2, ...]        (cartesian product of axes)
    [[policies]]   name = "<registered>", label, family, sweep = {option = [...]}, options...

A policy's bare name that several families share (``pareto_ucb``) takes the family of the spec's other policies,
else ``family`` or the full name must say it (:func:`mobandit_jax.runner.plans.resolve_policy`).

A policy option may depend on a grid setting: ``eta = {front = {linear = 0.3, convex = 1.0}}`` takes,
at each grid point, the value listed under that point's ``setting["front"]`` (a table with one key, a
setting name, mapping that setting's values to the option's value;
:meth:`~mobandit_jax.spec_tables.PolicyEntry.points`).

Every grid setting (scenario x sweep values) is the spec resolved there
(:meth:`~mobandit_jax.experiment_spec.ExperimentSpec.settings`); its ``setting`` names the scenario (``scenario``,
plus the scenario's own ``setting`` labels) and the last component of each swept key (``env.front`` -> ``front``),
plus the constant labels of ``experiment.setting``. ``--set sweep.env.rho=[2, 4]`` replaces a sweep axis.

The checks that a study's spec shares are :mod:`mobandit_jax.spec_tables`' (the cone ``W``, ``[[policies]]``
entries) and :func:`mobandit_jax.plugins.validate` (``experiment.plugins``).
"""
from __future__ import annotations

import copy
import tomllib
from pathlib import Path

from ..errors import ConfigError, did_you_mean
from ..experiment_spec import DOTTED_TABLES, EXPERIMENT_DEFAULTS, ExperimentSpec, set_dotted
from ..plugins import is_path
from ..plugins import validate as check_plugins
from ..spec_tables import check_policy

TOP_KEYS = ("experiment", "env", "preference", "budget", "scenarios", "sweep", "policies")
EXPERIMENT_KEYS = ("name", "horizon", "seeds", "seed", "record_every", "chunk", "setting", "plugins", "paper_schedule")
PREFERENCE_KEYS = ("W",)
BUDGET_KEYS = ("rho", "B")
MAX_COUNT = 2 ** 31 - 1  # the most rounds or seeds of a run (int32 counters, uint32 seed indices)
MAX_SEED = 2 ** 63 - 1  # the largest base seed of jax.random.PRNGKey


def _check_keys(table: dict, allowed, where: str):
    if not isinstance(table, dict):
        raise ConfigError(f"[{where}] must be a table; got {type(table).__name__}")
    unknown = sorted(set(table) - set(allowed), key=str)
    if unknown:
        raise ConfigError(f"unknown key(s) {unknown} in [{where}]{did_you_mean(unknown[0], allowed)}; "
                          f"allowed keys: {sorted(allowed)}")


def load(path) -> ExperimentSpec:
    """Read and validate a TOML spec file.

    Args:
      path: the file.

    Returns:
      Its :class:`~mobandit_jax.experiment_spec.ExperimentSpec` (relative paths in it taken from the file's folder).
    """
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"config {str(path)!r} is a folder; give a TOML spec file, e.g. configs/quickstart.toml")
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        with open(path, "rb") as f:
            tables = tomllib.load(f)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: invalid TOML: {err}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not a UTF-8 text file (byte {err.start}); a spec must be TOML text") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot be read: {err.strerror}") from None
    return validate(anchor_paths(tables, path.parent))


def anchor_paths(tables: dict, base: Path) -> dict:
    """Make each relative ``env.path`` (in [env], [[scenarios]] and [sweep]) and plugin file relative to ``base``.

    Args:
      tables: a spec file's tables, changed in place.
      base: the spec file's folder.

    Returns:
      ``tables``.
    """
    def anchored(p):
        return str(base / p) if isinstance(p, str) and p and not Path(p).is_absolute() else p

    if isinstance(tables.get("env"), dict) and "path" in tables["env"]:
        tables["env"]["path"] = anchored(tables["env"]["path"])
    for sc in tables.get("scenarios", []) if isinstance(tables.get("scenarios"), list) else []:
        if isinstance(sc, dict) and "env.path" in sc:
            sc["env.path"] = anchored(sc["env.path"])
    sweep = tables.get("sweep")
    if isinstance(sweep, dict) and isinstance(sweep.get("env.path"), list):
        sweep["env.path"] = [anchored(p) for p in sweep["env.path"]]
    exp = tables.get("experiment")
    if isinstance(exp, dict) and isinstance(exp.get("plugins"), list):
        exp["plugins"] = [anchored(e) if isinstance(e, str) and is_path(e) else e for e in exp["plugins"]]
    return tables


def _check_entries(tables: dict, table: str):
    """``[[table]]`` must be a list of tables; ``[table]`` (single brackets) is named as the mistake."""
    entries = tables.get(table, [])
    if isinstance(entries, dict):
        raise ConfigError(f"[{table}] is a single table; write [[{table}]] (double brackets) before each entry")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ConfigError(f"'{table}' must be a list of [[{table}]] tables; got {entries!r}")


def _check_tables(tables: dict):
    """The top-level tables: known names and kinds, an ``[env]`` with a kind, at least one policy."""
    _check_keys(tables, TOP_KEYS, "top level")
    for table in ("experiment", "env", "preference", "budget", "sweep"):
        if table in tables and not isinstance(tables[table], dict):
            raise ConfigError(f"[{table}] must be a table; got {tables[table]!r}")
    _check_entries(tables, "policies")
    _check_entries(tables, "scenarios")
    if "env" not in tables:
        raise ConfigError("the spec needs an [env] table with a 'kind' key")
    if "kind" not in tables["env"]:
        raise ConfigError("[env] needs a 'kind' key naming the environment (see `mobandit list`)")
    if not isinstance(tables["env"]["kind"], str):
        raise ConfigError(f"env.kind = {tables['env']['kind']!r} must be a string (see `mobandit list`)")
    if not tables.get("policies"):
        raise ConfigError("the spec needs at least one [[policies]] entry with a 'name'")


def _is_count(value, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _check_experiment(table: dict) -> dict:
    """The ``[experiment]`` table's keys and values, with :data:`EXPERIMENT_DEFAULTS` filled in."""
    _check_keys(table, EXPERIMENT_KEYS, "experiment")
    exp = {**EXPERIMENT_DEFAULTS, **table}
    for key in ("horizon", "seeds"):
        if not _is_count(exp[key], 1):
            raise ConfigError(f"experiment.{key} = {exp[key]!r}: it must be an integer >= 1")
        if exp[key] > MAX_COUNT:
            raise ConfigError(f"experiment.{key} = {exp[key]!r}: it must be at most {MAX_COUNT} (rounds, pulls and "
                              "seed indices are counted in 32-bit integers)")
    if not _is_count(exp["seed"], 0) or exp["seed"] > MAX_SEED:
        raise ConfigError(f"experiment.seed = {exp['seed']!r}: it must be an integer from 0 to {MAX_SEED}")
    for key in ("record_every", "chunk"):
        if not _is_count(exp[key], 0):
            raise ConfigError(f"experiment.{key} = {exp[key]!r}: it must be an integer >= 0")
    if not isinstance(exp["setting"], dict):
        raise ConfigError("experiment.setting must be a table of constant labels, e.g. {d = 2}")
    if not isinstance(exp.get("paper_schedule", False), bool):
        raise ConfigError(f"experiment.paper_schedule = {exp['paper_schedule']!r} must be true or false")
    if "name" in exp and not isinstance(exp["name"], str):
        raise ConfigError(f"experiment.name = {exp['name']!r} must be a string")
    if "plugins" in exp:
        check_plugins(exp["plugins"])
    return exp


def _check_grid(tables: dict):
    """The ``[[scenarios]]`` entries (a name, labels, dotted keys) and the ``[sweep]`` axes (non-empty lists)."""
    for i, sc in enumerate(tables.get("scenarios", [])):
        if not isinstance(sc.get("name"), str):
            raise ConfigError(f"[[scenarios]] entry {i} needs a 'name' string")
        if not isinstance(sc.get("setting", {}), dict):
            raise ConfigError(f"[[scenarios]] {sc['name']!r}: 'setting' must be a table of labels")
        for key in sc:
            if key not in ("name", "setting"):
                _split_dotted(key, f"[[scenarios]] {sc['name']!r}")
    for key, values in tables.get("sweep", {}).items():
        _split_dotted(key, "[sweep]")
        if not isinstance(values, list) or not values:
            raise ConfigError(f"[sweep] {key!r} must be a non-empty list of values; got {values!r}")


def validate(tables: dict) -> ExperimentSpec:
    """Check the table and key names and the experiment values; fill experiment defaults.

    Args:
      tables: the spec's tables (a TOML file's, or the dict ``mb.run`` takes); not changed.

    Returns:
      The :class:`~mobandit_jax.experiment_spec.ExperimentSpec`; a bad key or value raises one
      :class:`~mobandit_jax.errors.ConfigError` line naming it.
    """
    _check_tables(tables)
    tables = {**tables, "experiment": _check_experiment(dict(tables.get("experiment", {})))}
    if "preference" in tables:
        _check_keys(tables["preference"], PREFERENCE_KEYS, "preference")
    if "budget" in tables:
        _check_keys(tables["budget"], BUDGET_KEYS, "budget")
    for i, entry in enumerate(tables["policies"]):
        check_policy(i, entry)
    _check_grid(tables)
    return ExperimentSpec.from_dict(tables)


def _split_dotted(key: str, where: str):
    parts = key.split(".")
    if len(parts) != 2 or parts[0] not in DOTTED_TABLES:
        raise ConfigError(f"{where}: key {key!r} must be '<table>.<key>' with table one of "
                          f"{', '.join(DOTTED_TABLES)}{did_you_mean(parts[0], DOTTED_TABLES)}")
    return parts


def parse_override(text: str, option: str = "--set"):
    """Parse ``key=value`` with a TOML value (bare words are strings).

    Args:
      text: the override.
      option: what gave it, named in errors.

    Returns:
      ``(key, value)``.
    """
    if "=" not in text:
        raise ConfigError(f"{option} {text!r}: expected key=value, e.g. experiment.horizon=500")
    key, raw = text.split("=", 1)
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key.strip(), value


def _get_dotted(tables: dict, key: str):
    """The value a ``--set`` key addresses now, or None."""
    if key.startswith("sweep.") and key.count(".") == 2:
        return tables.get("sweep", {}).get(key[len("sweep."):]) if isinstance(tables.get("sweep"), dict) else None
    node = tables
    for p in key.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(p)
    return node


def _check_override(tables: dict, key: str, raw: str, value, option: str = "--set"):
    """A ``--set`` value must not replace a table, and text must not replace a number or a list."""
    shown = f"{key}={raw}" if f"{key}={raw}".isprintable() else repr(f"{key}={raw}")
    if not key or any(not p for p in key.split(".")):
        raise ConfigError(f"{option} {shown}: expected key=value with a dotted key, e.g. experiment.horizon=500")
    old = _get_dotted(tables, key)
    if key in ("policies", "scenarios") or key.startswith(("policies.", "scenarios.")):
        raise ConfigError(f"{option} {shown}: [[{key.split('.')[0]}]] entries cannot be set with {option}; "
                          "edit the spec")
    if (key in TOP_KEYS or isinstance(old, dict)) and not isinstance(value, dict):
        raise ConfigError(f"{option} {shown}: {key!r} is a table; set one of its keys, e.g. experiment.horizon=500")
    if isinstance(value, str) and isinstance(old, (int, float, list)) and not isinstance(old, bool):
        kind = "a list" if isinstance(old, list) else "a number"
        raise ConfigError(f"{option} {shown}: expected {kind} (the spec has {old!r}); got the text {value!r}")


def apply_overrides(spec, overrides, option: str = "--set") -> ExperimentSpec:
    """Apply ``--set`` overrides and validate the result.

    Args:
      spec: an :class:`~mobandit_jax.experiment_spec.ExperimentSpec`, or a dict of tables (not changed).
      overrides: ``key=value`` strings, or a dict of dotted keys to values.
      option: what gave them, named in errors (``overrides`` for ``mb.run``).

    Returns:
      The :class:`~mobandit_jax.experiment_spec.ExperimentSpec` with the overrides.
    """
    tables = spec.to_dict() if isinstance(spec, ExperimentSpec) else copy.deepcopy(spec)
    if isinstance(overrides, dict):
        items = [(key, value, repr(value)) for key, value in overrides.items()]
    else:
        items = [(*parse_override(text, option), text.split("=", 1)[1]) for text in overrides or ()]
    for key, value, raw in items:
        _check_override(tables, key, raw, value, option)
        set_dotted(tables, key, value, option)
    return validate(tables)


def parse_bytes(text: str) -> int:
    """A size in bytes.

    Args:
      text: ``"512MB"``, ``"2GiB"``, ``"1e9"``.

    Returns:
      The bytes (``--max-memory``'s error where the text is no size).
    """
    units = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}
    t = text.strip().upper()
    num = t.rstrip("KMGIB")
    unit = t[len(num):]
    try:
        size = float(num) * units[unit]
    except (KeyError, ValueError):
        size = float("nan")
    if not 1 <= size < float("inf"):
        raise ConfigError(f"--max-memory {text!r}: expected a size such as 512MB or 2GiB")
    return int(size)
