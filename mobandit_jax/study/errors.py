"""The error a study raises for bad input (no JAX: the ``mobandit study`` command reports it before JAX loads), and
how its messages show a value."""
from ..errors import ConfigError


class StudyError(ConfigError):
    """A bad spec, ticket or told value: one line naming the key or value and what is allowed. Nothing was written."""


def shown(value) -> str:
    """``value`` as the user wrote it, for a message: numbers plain (``1.5``, never ``np.float64(1.5)``), numpy
    arrays and scalars as lists and numbers.

    Args:
      value: anything.

    Returns:
      Its ``repr`` after numpy scalars and arrays (also inside lists, tuples and dicts) became Python values.
    """
    return repr(_plain(value))


def _plain(value):
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        return value.tolist()
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
