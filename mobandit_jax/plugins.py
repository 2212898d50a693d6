"""User modules that register policies, environments or metric sets, imported before a plan is built.

A spec names them in ``[experiment] plugins``; an installed package names them as entry points of the
group ``mobandit_jax.plugins`` (each entry point a module to import)::

    [experiment]
    plugins = ["my_policies.py", "my_pkg.envs"]   # a file (relative to the spec's folder), or a module

:func:`mobandit_jax.runner.plans.build` calls :func:`load` first, so the plugins are imported in every
process that builds the plan: the ``mobandit`` process, each worker process and each host; a live study's
policy (:mod:`mobandit_jax.study.policy`) calls it too. A plugin's source is part of the run's fingerprint
(:func:`digest`): editing it never resumes chunks computed by the old code. What was imported is kept where the
import lives: each plugin module carries the digest of the source it was imported from (:data:`SOURCE_ATTR`),
so a plugin is imported once per process and again only when its source changed, and the rows it registered
are marked as a plugin's in the registries (:func:`mobandit_jax.registry.plugin_rows`); this module keeps no
state of its own. A bad plugin (a missing file or module, an error while importing it, a name that clashes
with a registered one) is a one-line :class:`~mobandit_jax.errors.ConfigError` naming the plugin.
This module imports no JAX; importing a plugin imports what the plugin imports.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import sys
from pathlib import Path

from .digest import content_digest
from .errors import ConfigError

ENTRY_POINT_GROUP = "mobandit_jax.plugins"
SOURCE_ATTR = "__mobandit_plugin_source__"  # on an imported plugin module: the sha256 of the source it ran


def is_path(entry: str) -> bool:
    """True if a ``plugins`` entry names a file (it ends in ``.py`` or holds a ``/``), not a module."""
    return entry.endswith(".py") or "/" in entry or "\\" in entry


def validate(entries) -> list:
    """``experiment.plugins``: a list of non-empty strings, each file present (modules are found on import)."""
    if not isinstance(entries, list) or not all(isinstance(e, str) and e.strip() for e in entries):
        raise ConfigError(f"experiment.plugins = {entries!r} must be a list of file paths (my_policies.py) or "
                          "module names (my_pkg.envs)")
    for e in entries:
        if is_path(e) and not Path(e).is_file():
            raise ConfigError(f"experiment.plugins: plugin file {e!r} does not exist (a path is relative to the "
                              "spec's folder)")
    return entries


def _source(entry: str) -> bytes:
    """The source of a plugin: its file's bytes, or its module's file (b"" for a module without a file)."""
    if is_path(entry):
        try:
            return Path(entry).read_bytes()
        except OSError as err:
            raise ConfigError(f"experiment.plugins: plugin file {entry!r} cannot be read: {err.strerror}") from None
    try:
        found = importlib.util.find_spec(entry)
    except (ImportError, ValueError) as err:
        raise ConfigError(f"experiment.plugins: plugin module {entry!r} cannot be found: {err}") from None
    if found is None:
        raise ConfigError(f"experiment.plugins: no module named {entry!r} (is it installed or on PYTHONPATH?)")
    origin = Path(found.origin) if found.origin and found.has_location else None
    return origin.read_bytes() if origin is not None and origin.is_file() else b""


def digest(spec: dict) -> str | None:
    """A hash of the source of every plugin the spec names (None if it names none)."""
    return content_digest([(e, _source(e)) for e in spec.get("experiment", {}).get("plugins") or []])


def _registries():
    from . import metrics, policies, problems  # noqa: F401  (importing fills the registries with the built-ins)
    from .registry import ENVS, FAMILIES, POLICIES

    return POLICIES, ENVS, FAMILIES


def _importing(name: str):
    from .registry import plugin_rows

    return plugin_rows(name)


def _forget(module: str):
    """Drop the registry rows a module registered (before it is imported again with new source)."""
    for registry in _registries():
        for name in [n for n, e in registry.items() if e.module == module]:
            del registry[name]
    sys.modules.pop(module, None)


def _imported(entry: str) -> str | None:
    """The name in ``sys.modules`` of a plugin already imported (by a spec, or by the user's own script)."""
    if not is_path(entry):
        return entry if entry in sys.modules else None
    resolved = Path(entry).resolve()
    for name, module in list(sys.modules.items()):
        if getattr(module, "__file__", None) and Path(module.__file__).resolve() == resolved:
            return name
    return None


def _import_file(path: str) -> str:
    resolved = Path(path).resolve()
    name = resolved.stem if resolved.stem not in sys.modules and resolved.stem.isidentifier() else (
        f"mobandit_plugin_{hashlib.sha256(str(resolved).encode()).hexdigest()[:12]}")
    spec = importlib.util.spec_from_file_location(name, resolved)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with _importing(name):
            spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return name


def _load_one(entry: str, label: str):
    source = hashlib.sha256(_source(entry)).hexdigest()
    name = _imported(entry)
    old = getattr(sys.modules[name], SOURCE_ATTR, None) if name else None
    if old == source:
        return
    if old is not None:
        _forget(name)  # edited since it was imported in this process: import the new source
        name = None
    try:  # a module the user's own code imported already is not imported again: its rows stay as registered
        if name is None and is_path(entry):
            name = _import_file(entry)
        elif name is None:
            name = entry
            with _importing(entry):
                importlib.import_module(entry)
    except ConfigError:
        raise
    except ModuleNotFoundError as err:
        raise ConfigError(f"{label} {entry!r}: cannot import it: {err}") from None
    except Exception as err:  # noqa: BLE001 -- a user's module: any error it raises is reported in one line
        raise ConfigError(f"{label} {entry!r}: importing it raised {type(err).__name__}: "
                          f"{' '.join(str(err).split())}") from None
    setattr(sys.modules[name], SOURCE_ATTR, source)


def load(entries):
    """Import the built-ins, the installed entry points and then each plugin ``entries`` names (once each)."""
    _registries()
    load_entry_points()
    for entry in entries or []:
        _load_one(entry, "experiment.plugins: plugin")


def load_entry_points():
    """Import each module of the ``mobandit_jax.plugins`` entry-point group (Python imports each once)."""
    for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            point.load()
        except Exception as err:  # noqa: BLE001 -- an installed package's module, reported in one line
            raise ConfigError(f"entry point {point.name!r} = {point.value!r} of group {ENTRY_POINT_GROUP!r}: "
                              f"importing it raised {type(err).__name__}: {' '.join(str(err).split())}") from None
