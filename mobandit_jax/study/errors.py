"""The error a study raises for bad input (no JAX: the ``mobandit study`` command reports it before JAX loads)."""
from ..errors import ConfigError


class StudyError(ConfigError):
    """A bad spec, ticket or told value: one line naming the key or value and what is allowed. Nothing was written."""
