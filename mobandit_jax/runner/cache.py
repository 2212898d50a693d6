"""The persistent compilation cache the CLI keeps, so a repeated run skips XLA compilation.

Compiled programs are stored by JAX (``jax_compilation_cache_dir``) under the user's cache
directory, ``$XDG_CACHE_HOME/mobandit_jax/jax`` or ``~/.cache/mobandit_jax/jax``; a program is
looked up by a hash of its HLO, the backend and the JAX version, so a stale entry is never used.
Whole programs, traced, lowered and compiled, are kept beside it (:func:`programs_dir`,
:mod:`mobandit_jax.runner.programs`). ``--no-cache`` or ``MOBANDIT_NO_CACHE=1`` turns both off;
``JAX_COMPILATION_CACHE_DIR``, when set, is left to JAX. Importing the package changes nothing: the
CLI calls :func:`configure`, which sets the matching environment variables (read by JAX when it is
imported: by this process later, and by worker processes) and, if JAX is imported already, its
configuration.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

DISABLE_ENV = "MOBANDIT_NO_CACHE"
PROGRAMS_ENV = "MOBANDIT_PROGRAMS_DIR"  # read by mobandit_jax.runner.programs
PROGRAMS_MAX_BYTES_ENV = "MOBANDIT_PROGRAMS_MAX_BYTES"
PROGRAMS_MAX_BYTES = 2 ** 30  # unless PROGRAMS_MAX_BYTES_ENV says otherwise (a full reproduction keeps about 220 MB)


def default_dir() -> Path:
    """Where JAX's compiled programs are kept unless ``JAX_COMPILATION_CACHE_DIR`` says otherwise.

    Returns:
      ``$XDG_CACHE_HOME/mobandit_jax/jax``, or ``~/.cache/mobandit_jax/jax``.
    """
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mobandit_jax" / "jax"


def disabled_by_env() -> bool:
    """Whether the environment turns the caches off.

    Returns:
      ``True`` where ``MOBANDIT_NO_CACHE`` is set to anything but empty, ``0``, ``false`` or ``no``.
    """
    return os.environ.get(DISABLE_ENV, "").strip().lower() not in ("", "0", "false", "no")


def programs_dir() -> Path:
    """Where whole compiled programs are kept (:mod:`mobandit_jax.runner.programs`).

    Returns:
      ``programs/`` beside :func:`default_dir`, or ``DIR-programs`` beside a ``JAX_COMPILATION_CACHE_DIR`` of
      ``DIR``.
    """
    given = os.environ.get("JAX_COMPILATION_CACHE_DIR")
    if given:
        return Path(given).with_name(Path(given).name + "-programs")
    return default_dir().parent / "programs"


def programs_max_bytes() -> int:
    """The bound of :func:`programs_dir` in bytes.

    Returns:
      ``MOBANDIT_PROGRAMS_MAX_BYTES`` (a whole number), else :data:`PROGRAMS_MAX_BYTES`.

    Raises:
      ValueError: ``MOBANDIT_PROGRAMS_MAX_BYTES`` is not a whole number (one line naming it).
    """
    given = os.environ.get(PROGRAMS_MAX_BYTES_ENV, "").strip()
    if not given:
        return PROGRAMS_MAX_BYTES
    if not given.isdigit():
        raise ValueError(f"{PROGRAMS_MAX_BYTES_ENV}={given!r}: the bound of the kept programs must be a whole "
                         "number of bytes")
    return int(given)


def configure(enabled: bool = True) -> Path | None:
    """Turn the persistent cache on (every compiled program is kept), and the cache of whole programs
    (:mod:`mobandit_jax.runner.programs`), or both off.

    Args:
      enabled: ``False`` (``--no-cache``) turns both off, as ``MOBANDIT_NO_CACHE`` does.

    Returns:
      JAX's cache directory, or ``None`` where the cache is off or its directory cannot be made.

    Raises:
      ValueError: a bad ``MOBANDIT_PROGRAMS_MAX_BYTES`` (see :func:`programs_max_bytes`).
    """
    if not enabled or disabled_by_env():
        os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"
        os.environ.pop(PROGRAMS_ENV, None)
        _update_jax("jax_enable_compilation_cache", False)
        return None
    programs_max_bytes()  # a bad MOBANDIT_PROGRAMS_MAX_BYTES is an error now, not a cache silently left untrimmed
    try:
        programs_dir().mkdir(parents=True, exist_ok=True)
        os.environ[PROGRAMS_ENV] = str(programs_dir())
    except OSError:
        pass  # an unwritable cache directory only costs the tracing and compile time
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return Path(os.environ["JAX_COMPILATION_CACHE_DIR"])
    path = default_dir()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # an unwritable cache directory only costs the compile time
    os.environ["JAX_COMPILATION_CACHE_DIR"] = str(path)
    os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"] = "0"
    _update_jax("jax_compilation_cache_dir", str(path))
    _update_jax("jax_persistent_cache_min_compile_time_secs", 0.0)
    return path


def _update_jax(option: str, value):
    """Set a JAX option now if JAX is imported (otherwise JAX reads the environment variable when it is)."""
    if "jax" in sys.modules:
        sys.modules["jax"].config.update(option, value)
