"""User modules that register policies, environments or metric sets, imported before a plan is built.

A spec names them in ``[experiment] plugins``; an installed package names them as entry points of the
group ``mobandit_jax.plugins`` (each entry point a module to import)::

    [experiment]
    plugins = ["my_policies.py", "my_pkg.envs"]   # a file (relative to the spec's folder), or a module

:func:`mobandit_jax.runner.plans.build` calls :func:`load` first, so the plugins are imported in every
process that builds the plan: the ``mobandit`` process, each worker process and each host. A plugin's
source is part of the run's fingerprint (:func:`digest`): editing it never resumes chunks computed by
the old code. A bad plugin (a missing file or module, an error while importing it, a name that clashes
with a registered one) is a one-line :class:`~mobandit_jax.errors.ConfigError` naming the plugin.
This module imports no JAX; importing a plugin imports what the plugin imports.
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.metadata
import importlib.util
import sys
from pathlib import Path

from ..errors import ConfigError

ENTRY_POINT_GROUP = "mobandit_jax.plugins"
_LOADED: dict = {}  # plugin file or module name -> (module name, source digest) imported in this process
_ENTRY_POINTS_LOADED = False


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
    from .run_folder import content_digest

    return content_digest([(e, _source(e)) for e in spec.get("experiment", {}).get("plugins") or []])


def _registries():
    from .. import metrics, policies, problems  # noqa: F401  (importing fills the registries with the built-ins)
    from ..registry import ENVS, FAMILIES, POLICIES

    return POLICIES, ENVS, FAMILIES


def _plugin_modules() -> set:
    from ..registry import PLUGIN_MODULES

    return PLUGIN_MODULES


@contextlib.contextmanager
def _importing(name: str):
    """Rows registered in this block belong to plugin module ``name`` (whatever module their callables
    come from), so an edited plugin's rows are all dropped before it is imported again."""
    from ..registry import IMPORTING

    _plugin_modules().add(name)
    IMPORTING.append(name)
    try:
        yield
    finally:
        IMPORTING.pop()


def _forget(module: str):
    """Drop the registry rows a module registered (before it is imported again with new source)."""
    for registry in _registries():
        for name in [n for n, e in registry.items() if e.module == module]:
            del registry[name]
    sys.modules.pop(module, None)


def _import_file(path: str) -> str:
    resolved = Path(path).resolve()
    for name, module in list(sys.modules.items()):  # already imported (e.g. by the user's own script)
        if getattr(module, "__file__", None) and Path(module.__file__).resolve() == resolved:
            return name
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
    key = str(Path(entry).resolve()) if is_path(entry) else entry
    if key in _LOADED:
        name, old = _LOADED[key]
        if old == source:
            return
        _forget(name)  # edited since it was imported in this process: import the new source
    try:
        if is_path(entry):
            name = _import_file(entry)
        else:
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
    _LOADED[key] = (name, source)


def load(entries):
    """Import the built-ins, the installed entry points and then each plugin ``entries`` names (once each)."""
    _registries()
    load_entry_points()
    for entry in entries or []:
        _load_one(entry, "experiment.plugins: plugin")


def load_entry_points():
    """Import each module of the ``mobandit_jax.plugins`` entry-point group, once per process."""
    global _ENTRY_POINTS_LOADED
    if _ENTRY_POINTS_LOADED:
        return
    _ENTRY_POINTS_LOADED = True
    for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            point.load()
        except Exception as err:  # noqa: BLE001 -- an installed package's module, reported in one line
            raise ConfigError(f"entry point {point.name!r} = {point.value!r} of group {ENTRY_POINT_GROUP!r}: "
                              f"importing it raised {type(err).__name__}: {' '.join(str(err).split())}") from None
