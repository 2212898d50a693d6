"""User modules that register policies, environments or metric sets, imported before a plan is built.

A spec names them in ``[experiment] plugins``; an installed package names them as entry points of the
group ``mobandit_jax.plugins`` (each entry point a module to import)::

    [experiment]
    plugins = ["my_policies.py", "my_pkg.envs"]   # a file (relative to the spec's folder), or a module

:func:`mobandit_jax.runner.plans.build` calls :func:`load` first, so the plugins are imported in every process that
builds the plan: the ``mobandit`` process, each worker process and each host; a live study's policy
(:mod:`mobandit_jax.study.policy`) calls it too. :func:`validate` checks the entries of a run's or a study's spec. A
plugin's source, as :func:`load` imported it, is part of the run's fingerprint (:func:`load` returns each plugin's
source and the plan hashes them): editing it never resumes chunks computed by the old code. What was imported is
kept where the import lives: each plugin module carries the digest of the source it was imported from
(:data:`SOURCE_ATTR`), so a plugin is imported once per process and again only when its source changed, and the rows
it registered are marked as a plugin's in the registries (:func:`mobandit_jax.registry.plugin_rows`); this module
keeps no state of its own. A bad plugin (a missing file or module, an error while importing it, a name that clashes
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

from .errors import ConfigError, plain

ENTRY_POINT_GROUP = "mobandit_jax.plugins"
SOURCE_ATTR = "__mobandit_plugin_source__"  # on an imported plugin module: the sha256 of the source it ran


def is_path(entry: str) -> bool:
    """Whether a ``plugins`` entry names a file (it ends in ``.py`` or holds a ``/``), not a module.

    Args:
      entry: the entry.

    Returns:
      True for a file.
    """
    return entry.endswith(".py") or "/" in entry or "\\" in entry


def validate(entries, base=None, error=ConfigError) -> list:
    """``experiment.plugins`` of a run's or a study's spec: a list of non-empty strings, each a module or a file that
    exists (a module is found when it is imported).

    Args:
      entries: the spec's value.
      base: the folder a relative file path is taken from (None: the paths stay as written).
      error: the error class raised (:class:`~mobandit_jax.errors.ConfigError` or a subclass).

    Returns:
      The entries, each relative file path anchored at ``base``.
    """
    if not isinstance(entries, list) or not all(isinstance(e, str) and e.strip() for e in entries):
        raise error(f"experiment.plugins = {plain(entries)!r} must be a list of file paths (my_policies.py) or "
                    "module names (my_pkg.envs)")
    anchored = [str(Path(base) / e) if base is not None and is_path(e) and not Path(e).is_absolute() else e
                for e in entries]
    for e in anchored:
        if is_path(e) and not Path(e).is_file():
            raise error(f"experiment.plugins: plugin file {e!r} does not exist (a path is relative to the spec's "
                        "folder)")
    return anchored


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


def _load_one(entry: str, label: str) -> bytes:
    """Import one plugin (again where its source changed since it was imported); its source."""
    text = _source(entry)
    source = hashlib.sha256(text).hexdigest()
    name = _imported(entry)
    old = getattr(sys.modules[name], SOURCE_ATTR, None) if name else None
    if old == source:
        return text
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
    return text


def load(entries) -> list:
    """Import the built-ins, the installed entry points and then each plugin ``entries`` names (once each).

    Args:
      entries: a spec's ``experiment.plugins`` (None: none).

    Returns:
      ``[(entry, source bytes)]``: each plugin's source, as imported (a run's fingerprint holds their hash,
      :func:`mobandit_jax.digest.content_digest`).
    """
    _registries()
    load_entry_points()
    return [(entry, _load_one(entry, "experiment.plugins: plugin")) for entry in entries or []]


def load_entry_points():
    """Import each module of the ``mobandit_jax.plugins`` entry-point group (Python imports each once)."""
    for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            point.load()
        except Exception as err:  # noqa: BLE001 -- an installed package's module, reported in one line
            raise ConfigError(f"entry point {point.name!r} = {point.value!r} of group {ENTRY_POINT_GROUP!r}: "
                              f"importing it raised {type(err).__name__}: {' '.join(str(err).split())}") from None
