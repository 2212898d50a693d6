"""Live ask/tell studies (``mb.Study``): the engine's policies driven by values the user tells, one event at a time.

``storage`` (where the events are kept: the protocol, SQLite, PostgreSQL, memory), ``spec`` (the ``[study]`` spec),
``policy`` (the policy built through the registry), ``drivers`` (online and step-wise stepping), ``study``
(:class:`Study`), ``atomic`` (a call as one storage step), ``optimize`` (the evaluation loop on an executor), ``cli``
(``mobandit study ...``). Importing this package imports no JAX; :class:`Study` loads it on first use.
"""
from .errors import StudyError

__all__ = ["Study", "StudyError", "Ticket"]


def __getattr__(name):
    if name in ("Study", "Ticket"):
        from . import study

        return getattr(study, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
