"""TOML experiment specs: parsing, validation with named errors, ``--set`` overrides, grid expansion.

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

from .. import plugins
from ..errors import ConfigError, did_you_mean

TOP_KEYS = ("experiment", "env", "preference", "budget", "scenarios", "sweep", "policies")
EXPERIMENT_KEYS = ("name", "horizon", "seeds", "seed", "record_every", "chunk", "setting", "plugins", "paper_schedule")
PREFERENCE_KEYS = ("W",)
BUDGET_KEYS = ("rho", "B")
DOTTED_TABLES = ("experiment", "env", "preference", "budget")
POLICY_META_KEYS = ("name", "label", "family", "sweep")
MAX_COUNT = 2 ** 31 - 1  # the most rounds or seeds of a run (int32 counters, uint32 seed indices)
MAX_SEED = 2 ** 63 - 1  # the largest base seed of jax.random.PRNGKey
EXPERIMENT_DEFAULTS = {"horizon": 1000, "seeds": 10, "seed": 0, "record_every": 0, "chunk": 0, "setting": {}}


def _check_keys(table: dict, allowed, where: str):
    if not isinstance(table, dict):
        raise ConfigError(f"[{where}] must be a table; got {type(table).__name__}")
    unknown = sorted(set(table) - set(allowed), key=str)
    if unknown:
        raise ConfigError(f"unknown key(s) {unknown} in [{where}]{did_you_mean(unknown[0], allowed)}; "
                          f"allowed keys: {sorted(allowed)}")


def load(path) -> dict:
    """Read and validate a TOML spec file."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"config {str(path)!r} is a folder; give a TOML spec file, e.g. configs/quickstart.toml")
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        with open(path, "rb") as f:
            spec = tomllib.load(f)
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: invalid TOML: {err}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: not a UTF-8 text file (byte {err.start}); a spec must be TOML text") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot be read: {err.strerror}") from None
    return validate(anchor_paths(spec, path.parent))


def anchor_paths(spec: dict, base: Path) -> dict:
    """Make each relative ``env.path`` (in [env], [[scenarios]] and [sweep]) and plugin file relative to ``base``,
    the spec's folder."""
    def anchored(p):
        return str(base / p) if isinstance(p, str) and p and not Path(p).is_absolute() else p

    if isinstance(spec.get("env"), dict) and "path" in spec["env"]:
        spec["env"]["path"] = anchored(spec["env"]["path"])
    for sc in spec.get("scenarios", []) if isinstance(spec.get("scenarios"), list) else []:
        if isinstance(sc, dict) and "env.path" in sc:
            sc["env.path"] = anchored(sc["env.path"])
    sweep = spec.get("sweep")
    if isinstance(sweep, dict) and isinstance(sweep.get("env.path"), list):
        sweep["env.path"] = [anchored(p) for p in sweep["env.path"]]
    exp = spec.get("experiment")
    if isinstance(exp, dict) and isinstance(exp.get("plugins"), list):
        exp["plugins"] = [anchored(e) if isinstance(e, str) and plugins.is_path(e) else e for e in exp["plugins"]]
    return spec


def _check_entries(spec: dict, table: str):
    """``[[table]]`` must be a list of tables; ``[table]`` (single brackets) is named as the mistake."""
    entries = spec.get(table, [])
    if isinstance(entries, dict):
        raise ConfigError(f"[{table}] is a single table; write [[{table}]] (double brackets) before each entry")
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ConfigError(f"'{table}' must be a list of [[{table}]] tables; got {entries!r}")


def _check_matrix(value, key: str):
    """A non-empty rectangular list of lists of numbers (``env.means``, ``preference.W``)."""
    if not isinstance(value, list) or not value or not all(isinstance(row, list) and row for row in value):
        raise ConfigError(f"{key} must be a non-empty list of non-empty rows of numbers; got {value!r}")
    for i, row in enumerate(value):
        if len(row) != len(value[0]):
            raise ConfigError(f"{key} is ragged: row {i} has {len(row)} values, row 0 has {len(value[0])}")
        for j, x in enumerate(row):
            if not isinstance(x, (int, float)) or isinstance(x, bool):
                raise ConfigError(f"{key}[{i}][{j}] = {x!r} is not a number")


def check_point(resolved: dict):
    """Check the matrix values of one resolved grid point (after scenario and sweep values are set)."""
    if "means" in resolved.get("env", {}):
        _check_matrix(resolved["env"]["means"], "env.means")
    if "W" in resolved.get("preference", {}):
        _check_matrix(resolved["preference"]["W"], "preference.W")


def _check_policy(i: int, pol: dict):
    """The meta keys of a [[policies]] entry: name, label, family strings; sweep a table of non-empty lists."""
    if "name" not in pol:
        raise ConfigError(f"[[policies]] entry {i} needs a 'name' (see `mobandit list`)")
    for key in ("name", "label", "family"):
        if key in pol and (not isinstance(pol[key], str) or not pol[key]):
            raise ConfigError(f"[[policies]] entry {i}: {key} = {pol[key]!r} must be a non-empty string")
    sweep = pol.get("sweep", {})
    if not isinstance(sweep, dict):
        raise ConfigError(f"[[policies]] entry {i} ({pol['name']}): 'sweep' must be a table of lists")
    for k, values in sweep.items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"[[policies]] entry {i} ({pol['name']}): sweep.{k} must be a non-empty list; "
                              f"got {values!r}")


def validate(spec: dict) -> dict:
    """Check the table and key names and the experiment values; fill experiment defaults."""
    _check_keys(spec, TOP_KEYS, "top level")
    for table in ("experiment", "env", "preference", "budget", "sweep"):
        if table in spec and not isinstance(spec[table], dict):
            raise ConfigError(f"[{table}] must be a table; got {spec[table]!r}")
    _check_entries(spec, "policies")
    _check_entries(spec, "scenarios")
    if "env" not in spec:
        raise ConfigError("the spec needs an [env] table with a 'kind' key")
    if "kind" not in spec["env"]:
        raise ConfigError("[env] needs a 'kind' key naming the environment (see `mobandit list`)")
    if not isinstance(spec["env"]["kind"], str):
        raise ConfigError(f"env.kind = {spec['env']['kind']!r} must be a string (see `mobandit list`)")
    if not spec.get("policies"):
        raise ConfigError("the spec needs at least one [[policies]] entry with a 'name'")
    exp = dict(spec.get("experiment", {}))
    _check_keys(exp, EXPERIMENT_KEYS, "experiment")
    exp = {**EXPERIMENT_DEFAULTS, **exp}
    for key in ("horizon", "seeds"):
        if not isinstance(exp[key], int) or isinstance(exp[key], bool) or exp[key] < 1:
            raise ConfigError(f"experiment.{key} = {exp[key]!r}: it must be an integer >= 1")
        if exp[key] > MAX_COUNT:
            raise ConfigError(f"experiment.{key} = {exp[key]!r}: it must be at most {MAX_COUNT} (rounds, pulls and "
                              "seed indices are counted in 32-bit integers)")
    if not isinstance(exp["seed"], int) or isinstance(exp["seed"], bool) or not 0 <= exp["seed"] <= MAX_SEED:
        raise ConfigError(f"experiment.seed = {exp['seed']!r}: it must be an integer from 0 to {MAX_SEED}")
    for key in ("record_every", "chunk"):
        if not isinstance(exp[key], int) or isinstance(exp[key], bool) or exp[key] < 0:
            raise ConfigError(f"experiment.{key} = {exp[key]!r}: it must be an integer >= 0")
    if not isinstance(exp["setting"], dict):
        raise ConfigError("experiment.setting must be a table of constant labels, e.g. {d = 2}")
    if not isinstance(exp.get("paper_schedule", False), bool):
        raise ConfigError(f"experiment.paper_schedule = {exp['paper_schedule']!r} must be true or false")
    if "name" in exp and not isinstance(exp["name"], str):
        raise ConfigError(f"experiment.name = {exp['name']!r} must be a string")
    if "plugins" in exp:
        plugins.validate(exp["plugins"])
    spec = {**spec, "experiment": exp}
    if "preference" in spec:
        _check_keys(spec["preference"], PREFERENCE_KEYS, "preference")
    if "budget" in spec:
        _check_keys(spec["budget"], BUDGET_KEYS, "budget")
    for i, pol in enumerate(spec["policies"]):
        _check_policy(i, pol)
    for i, sc in enumerate(spec.get("scenarios", [])):
        if not isinstance(sc.get("name"), str):
            raise ConfigError(f"[[scenarios]] entry {i} needs a 'name' string")
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
    if len(parts) != 2 or parts[0] not in DOTTED_TABLES:
        raise ConfigError(f"{where}: key {key!r} must be '<table>.<key>' with table one of "
                          f"{', '.join(DOTTED_TABLES)}{did_you_mean(parts[0], DOTTED_TABLES)}")
    return parts


def set_dotted(spec: dict, key: str, value: Any, option: str = "--set"):
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
            raise ConfigError(f"{option} {key!r}: {p!r} is not a table")
    node[parts[-1]] = value


def parse_override(text: str, option: str = "--set"):
    """Parse ``key=value`` with a TOML value (bare words are strings); ``option`` names it in errors."""
    if "=" not in text:
        raise ConfigError(f"{option} {text!r}: expected key=value, e.g. experiment.horizon=500")
    key, raw = text.split("=", 1)
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key.strip(), value


def _get_dotted(spec: dict, key: str):
    """The value a ``--set`` key addresses now, or None."""
    if key.startswith("sweep.") and key.count(".") == 2:
        return spec.get("sweep", {}).get(key[len("sweep."):]) if isinstance(spec.get("sweep"), dict) else None
    node = spec
    for p in key.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(p)
    return node


def _check_override(spec: dict, key: str, raw: str, value, option: str = "--set"):
    """A ``--set`` value must not replace a table, and text must not replace a number or a list."""
    shown = f"{key}={raw}" if f"{key}={raw}".isprintable() else repr(f"{key}={raw}")
    if not key or any(not p for p in key.split(".")):
        raise ConfigError(f"{option} {shown}: expected key=value with a dotted key, e.g. experiment.horizon=500")
    old = _get_dotted(spec, key)
    if key in ("policies", "scenarios") or key.startswith(("policies.", "scenarios.")):
        raise ConfigError(f"{option} {shown}: [[{key.split('.')[0]}]] entries cannot be set with {option}; "
                          "edit the spec")
    if (key in TOP_KEYS or isinstance(old, dict)) and not isinstance(value, dict):
        raise ConfigError(f"{option} {shown}: {key!r} is a table; set one of its keys, e.g. experiment.horizon=500")
    if isinstance(value, str) and isinstance(old, (int, float, list)) and not isinstance(old, bool):
        kind = "a list" if isinstance(old, list) else "a number"
        raise ConfigError(f"{option} {shown}: expected {kind} (the spec has {old!r}); got the text {value!r}")


def apply_overrides(spec: dict, overrides, option: str = "--set") -> dict:
    """Apply ``--set`` overrides (``key=value`` strings, or a dict of dotted keys to values) and re-validate;
    ``option`` names them in errors (``overrides`` for ``mb.run``)."""
    spec = copy.deepcopy(spec)
    if isinstance(overrides, dict):
        items = [(key, value, repr(value)) for key, value in overrides.items()]
    else:
        items = [(*parse_override(text, option), text.split("=", 1)[1]) for text in overrides or ()]
    for key, value, raw in items:
        _check_override(spec, key, raw, value, option)
        set_dotted(spec, key, value, option)
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
            for (key, _), value in zip(axes, combo, strict=False):
                set_dotted(resolved, key, copy.deepcopy(value))
                setting[key.split(".")[-1]] = _label(value)
            check_point(resolved)
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
        point = {**options, **dict(zip(keys, combo, strict=False))}
        out.append({k: _by_setting(entry["name"], k, v, setting) for k, v in point.items()})
    return out


def parse_bytes(text: str) -> int:
    """``"512MB"``, ``"2GiB"``, ``"1e9"`` -> bytes."""
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


DEFAULT_CHUNK = 256  # seeds per chunk unless experiment.chunk says otherwise


def chunk_size(spec: dict) -> int:
    """Seeds per chunk of a validated spec: ``experiment.chunk``, or up to :data:`DEFAULT_CHUNK`."""
    exp = spec["experiment"]
    return min(exp["chunk"] or DEFAULT_CHUNK, exp["seeds"])


def seed_rounds(spec: dict) -> int:
    """The size of a spec's work: rounds x seeds x runs (grid points x policy points)."""
    runs = sum(len(policy_points(entry)) for entry in spec["policies"]) * len(grid_points(spec))
    return spec["experiment"]["horizon"] * spec["experiment"]["seeds"] * runs
