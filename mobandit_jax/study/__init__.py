"""Live ask/tell studies (``mb.Study``): the engine's policies driven by values the user tells, one event at a time.

``storage`` (where the events are kept: the protocol, SQLite, PostgreSQL, memory), ``spec`` (the ``[study]`` spec),
``policy`` (the policy built through the registry), ``drivers`` (how the policy is stepped: the protocol, online and
step-wise), ``view`` (what a driver reads of the study), ``tickets`` and ``states`` (tickets, their states and why a
study waits or ended), ``checks`` (what a told evaluation must be), ``study`` (:class:`Study`: ask, tell, status,
recommend, the replay), ``atomic`` (a call as one storage step), ``known`` (enqueued and added evaluations),
``history`` (the tickets and arms as tables), ``optimize`` (the evaluation loop on an executor) and ``signals`` (its
Ctrl-C), ``plot`` and ``dashboard`` (the study's figure and web page), ``cli`` (``mobandit study ...``). Importing this
package imports no JAX; :class:`Study` loads it on first use.
"""
from .errors import StudyError
from .states import ArmState, EndedBy, EndReason, TicketSource, TicketState

__all__ = ["ArmState", "EndReason", "EndedBy", "Study", "StudyError", "Ticket", "TicketSource", "TicketState"]


def __getattr__(name):
    if name in ("Study", "Ticket"):
        from . import study

        return getattr(study, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
