"""TOML experiment specs: parsing, validation with named errors, ``--set`` overrides, grid expansion.

A spec has these tables (unknown keys fail with the key's name and the allowed keys)::

    [experiment]   horizon, seeds, seed, record_every, chunk, name, setting = {...}
    [env]          kind = "<registered kind>", then that kind's keys
    [preference]   W = [[...], ...]                      (optional)
    [[scenarios]]  name = "...", setting = {...}, "<table>.<key>" = value  (overrides dotted keys)
    [sweep]        "<table>.<key>" = [v1, v2, ...]        (cartesian product of axes)
    [[policies]]   name = "<registered>", label, family, sweep = {option = [...]}, options...

A policy option may depend on a grid setting: ``eta = {front = {linear = 0.3, convex = 1.0}}`` takes,
at each grid point, the value listed under that point's ``setting["front"]`` (a table with one key, a
setting name, mapping that setting's values to the option's value).

Every grid point (scenario x sweep values) is a full resolved spec; its ``setting`` names the
scenario (``scenario``, plus the scenario's own ``setting`` labels) and the last component of each
swept key (``env.front`` -> ``front``), plus the constant labels of ``experiment.setting``.
``--set sweep.env.rho=[2, 4]`` replaces a sweep axis.
"""
from __future__ import annotations

import copy
import itertools
import tomllib
from pathlib import Path
from typing import Any

TOP_KEYS = ("experiment", "env", "preference", "scenarios", "sweep", "policies")
EXPERIMENT_KEYS = ("name", "horizon", "seeds", "seed", "record_every", "chunk", "setting")
PREFERENCE_KEYS = ("W",)
POLICY_META_KEYS = ("name", "label", "family", "sweep")
EXPERIMENT_DEFAULTS = {"horizon": 1000, "seeds": 10, "seed": 0, "record_every": 0, "chunk": 0, "setting": {}}


class ConfigError(ValueError):
    """A malformed spec: the message names the offending key or value and what is allowed."""


def _check_keys(table: dict, allowed, where: str):
    if not isinstance(table, dict):
        raise ConfigError(f"[{where}] must be a table; got {type(table).__name__}")
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ConfigError(f"unknown key(s) {unknown} in [{where}]; allowed keys: {sorted(allowed)}")


def load(path) -> dict:
    """Read and validate a TOML spec file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        with open(path, "rb") as f:
            spec = tomllib.load(f)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: invalid TOML: {err}") from None
    return validate(spec)


def validate(spec: dict) -> dict:
    """Check the table and key names and the experiment values; fill experiment defaults."""
    _check_keys(spec, TOP_KEYS, "top level")
    if "env" not in spec:
        raise ConfigError("the spec needs an [env] table with a 'kind' key")
    if "kind" not in spec["env"]:
        raise ConfigError("[env] needs a 'kind' key naming the environment (see `mobandit list`)")
    if not spec.get("policies"):
        raise ConfigError("the spec needs at least one [[policies]] entry with a 'name'")
    exp = dict(spec.get("experiment", {}))
    _check_keys(exp, EXPERIMENT_KEYS, "experiment")
    exp = {**EXPERIMENT_DEFAULTS, **exp}
    for key in ("horizon", "seeds"):
        if not isinstance(exp[key], int) or isinstance(exp[key], bool) or exp[key] < 1:
            raise ConfigError(f"experiment.{key} = {exp[key]!r}: it must be an integer >= 1")
    for key in ("seed", "record_every", "chunk"):
        if not isinstance(exp[key], int) or isinstance(exp[key], bool) or exp[key] < 0:
            raise ConfigError(f"experiment.{key} = {exp[key]!r}: it must be an integer >= 0")
    if not isinstance(exp["setting"], dict):
        raise ConfigError("experiment.setting must be a table of constant labels, e.g. {d = 2}")
    spec = {**spec, "experiment": exp}
    if "preference" in spec:
        _check_keys(spec["preference"], PREFERENCE_KEYS, "preference")
    for i, pol in enumerate(spec["policies"]):
        if "name" not in pol:
            raise ConfigError(f"[[policies]] entry {i} needs a 'name' (see `mobandit list`)")
        if "sweep" in pol and not isinstance(pol["sweep"], dict):
            raise ConfigError(f"[[policies]] entry {i} ({pol['name']}): 'sweep' must be a table of lists")
    for i, sc in enumerate(spec.get("scenarios", [])):
        if "name" not in sc:
            raise ConfigError(f"[[scenarios]] entry {i} needs a 'name'")
        if not isinstance(sc.get("setting", {}), dict):
            raise ConfigError(f"[[scenarios]] {sc['name']!r}: 'setting' must be a table of labels")
        for key in sc:
            if key not in ("name", "setting"):
                _split_dotted(key, f"[[scenarios]] {sc['name']!r}")
    for key, values in spec.get("sweep", {}).items():
        _split_dotted(key, "[sweep]")
        if not isinstance(values, list) or not values:
            raise ConfigError(f"[sweep] {key!r} must be a non-empty list of values; got {values!r}")
    return spec


def _split_dotted(key: str, where: str):
    parts = key.split(".")
    if len(parts) != 2 or parts[0] not in ("experiment", "env", "preference"):
        raise ConfigError(
            f"{where}: key {key!r} must be '<table>.<key>' with table one of experiment, env, preference"
        )
    return parts


def set_dotted(spec: dict, key: str, value: Any):
    """Set ``table.key`` (or ``table.key.subkey``) in a spec, creating tables as needed.

    ``sweep.<table>.<key>`` addresses the sweep axis ``"<table>.<key>"`` (whose name holds a dot).
    """
    if key.startswith("sweep.") and key.count(".") == 2:
        spec.setdefault("sweep", {})[key[len("sweep."):]] = value
        return
    parts = key.split(".")
    node = spec
    for p in parts[:-1]:
        node = node.setdefault(p, {})
        if not isinstance(node, dict):
            raise ConfigError(f"--set {key}: {p!r} is not a table")
    node[parts[-1]] = value


def parse_override(text: str):
    """Parse ``key=value`` with a TOML value (bare words are strings)."""
    if "=" not in text:
        raise ConfigError(f"--set {text!r}: expected key=value, e.g. experiment.horizon=500")
    key, raw = text.split("=", 1)
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key.strip(), value


def apply_overrides(spec: dict, overrides) -> dict:
    """Apply ``--set`` overrides and re-validate."""
    spec = copy.deepcopy(spec)
    for text in overrides or ():
        key, value = parse_override(text)
        set_dotted(spec, key, value)
    return validate(spec)


def _label(value):
    return value if isinstance(value, (int, float, str, bool)) else str(value)


def grid_points(spec: dict):
    """Expand scenarios x sweep axes into ``[(setting, resolved_spec), ...]``."""
    scenarios = spec.get("scenarios") or [None]
    axes = list(spec.get("sweep", {}).items())
    points = []
    for sc in scenarios:
        for combo in itertools.product(*[values for _, values in axes]):
            resolved = copy.deepcopy({k: v for k, v in spec.items() if k not in ("scenarios", "sweep")})
            setting = dict(spec["experiment"].get("setting", {}))
            if sc is not None:
                setting["scenario"] = sc["name"]
                setting.update(sc.get("setting", {}))
                for key, value in sc.items():
                    if key not in ("name", "setting"):
                        set_dotted(resolved, key, copy.deepcopy(value))
            for (key, _), value in zip(axes, combo):
                set_dotted(resolved, key, copy.deepcopy(value))
                setting[key.split(".")[-1]] = _label(value)
            points.append((setting, resolved))
    return points


def _by_setting(name: str, key: str, value, setting: dict | None):
    """Resolve ``{setting_name = {setting_value = v, ...}}`` at ``setting`` (other values unchanged)."""
    if not (isinstance(value, dict) and setting is not None):
        return value
    if len(value) != 1 or not isinstance(next(iter(value.values())), dict):
        raise ConfigError(f"policy {name!r}: option {key} = {value!r} must be a value or "
                          "{<setting> = {<setting value> = value, ...}}")
    (axis, table), = value.items()
    if axis not in setting:
        raise ConfigError(f"policy {name!r}: option {key} depends on setting {axis!r}, which this grid point "
                          f"does not have; settings: {sorted(setting)}")
    label = str(setting[axis])
    if label not in table:
        raise ConfigError(f"policy {name!r}: option {key} has no value for {axis} = {label!r}; "
                          f"listed: {sorted(table)}")
    return table[label]


def policy_points(entry: dict, setting: dict | None = None):
    """Expand one [[policies]] entry's ``sweep`` into a list of option dicts.

    With ``setting`` (a grid point's labels), options given per setting value are resolved there.
    """
    options = {k: v for k, v in entry.items() if k not in POLICY_META_KEYS}
    sweep = entry.get("sweep", {})
    keys = list(sweep)
    for k in keys:
        if not isinstance(sweep[k], list) or not sweep[k]:
            raise ConfigError(f"policy {entry['name']!r}: sweep.{k} must be a non-empty list")
    out = []
    for combo in itertools.product(*[sweep[k] for k in keys]):
        point = {**options, **dict(zip(keys, combo))}
        out.append({k: _by_setting(entry["name"], k, v, setting) for k, v in point.items()})
    return out
