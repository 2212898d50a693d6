"""A study's tickets: what ``ask`` hands out (:class:`Ticket`) and what the replay keeps of one (:class:`TicketRecord`).

A record is immutable: the replay replaces a ticket's record when an event moves it on (handed out, told, failed), so
the records a driver or a view is given never change under it.
"""
from __future__ import annotations

from typing import NamedTuple

from .states import TicketSource, TicketState


class Ticket(NamedTuple):
    """One evaluation to make: ``id``, the arm's name and index, its configuration (the CSV's other columns) and, for a
    slate policy, the names of the slate's arms (``arm`` and ``index`` are then the slate's first)."""

    id: str
    arm: str
    index: int
    config: dict
    slate: list | None = None


class TicketRecord(NamedTuple):
    """What the replay keeps of one ticket: its id, action (an arm's index, or a slate's list of indices), the worker
    that asked it, its :class:`~.states.TicketState` and :class:`~.states.TicketSource`, when it was asked (seconds
    since the epoch; enqueued: when it was queued) and, once told, its values (one row per arm of a slate), cost,
    time and attributes (a dict, or None); ``told`` is also when it failed or was abandoned."""

    id: str
    action: int | list
    worker: str | None
    state: TicketState
    source: TicketSource
    asked: float
    values: list | None = None
    cost: float | None = None
    told: float | None = None
    attrs: dict | None = None


def ticket_of(spec, rec: TicketRecord) -> Ticket:
    """The :class:`Ticket` the user sees of a record.

    Args:
      spec: the study's :class:`~.spec.StudySpec` (arm names and configurations).
      rec: the ticket's record.

    Returns:
      The ticket: a slate's is named by its first arm, with every arm's name in ``slate``.
    """
    arms = spec.arms
    if isinstance(rec.action, list):
        first = rec.action[0]
        return Ticket(rec.id, arms[first], first, dict(spec.configs[first]), [arms[a] for a in rec.action])
    return Ticket(rec.id, arms[rec.action], int(rec.action), dict(spec.configs[rec.action]), None)
