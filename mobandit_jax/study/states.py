"""The states of a study's tickets and arms, and why a study waits or ended, as string enums.

Each member is a :class:`enum.StrEnum`: it compares equal to its value (``TicketState.TOLD == "told"``) and is
written as that value by ``json``, ``str`` and f-strings, so the storage, ``status()``, ``history()`` and the command
line show the same words as before these enums existed. ``status()`` and ``history()`` hand out the plain values.
"""
from enum import StrEnum


class TicketState(StrEnum):
    """Where a ticket stands (``history()``'s ``state``): enqueued and not handed out yet, handed out and awaiting
    its tell, told, failed (its arm may be asked again) or abandoned (never counted)."""

    QUEUED = "queued"
    PENDING = "pending"
    TOLD = "told"
    FAILED = "failed"
    ABANDONED = "abandoned"


class TicketSource(StrEnum):
    """How a ticket came (``history()``'s ``source``): chosen by the policy at an ask, enqueued by the user, or a
    finished evaluation added."""

    ASKED = "asked"
    ENQUEUED = "enqueued"
    ADDED = "added"


class EndReason(StrEnum):
    """Why ``ask`` hands out no ticket now (``status()["reason"]``): the method waits for the pending tickets' tells,
    the budget (counting the pending tickets' reservations) cannot pay for the next one, or the method has finished
    (its horizon, schedule or stopping rule)."""

    PENDING = "pending"
    BUDGET = "budget"
    FINISHED = "finished"


class EndedBy(StrEnum):
    """Which rule ended a study (``status()["ended_by"]``): an identifier's schedule of phases completed, the horizon
    (evaluations, or a fixed-confidence method's round cap), a fixed-confidence stopping rule, or the budget."""

    PHASES = "phases"
    HORIZON = "horizon"
    STOPPING_RULE = "stopping_rule"
    BUDGET = "budget"


class ArmState(StrEnum):
    """Where an arm stands in a study (``study.arms()``'s ``state``): an identifier's accepted, rejected or still
    active arm; an online policy's arms are active; an arm never told a value is unevaluated, whatever the policy."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"
    ACTIVE = "active"
    UNEVALUATED = "unevaluated"
