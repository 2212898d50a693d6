"""What a told evaluation must be: its values, cost and attributes, and a ticket that may still be told.

Each check raises :class:`~.errors.StudyError` in one line naming the ticket (or arm) and the offending value, before
anything is applied or written; ``tell``, ``add`` and ``add_csv`` share them.
"""
from __future__ import annotations

import json
import math

import numpy as np

from .. import errors
from .errors import StudyError
from .states import TicketState


def check_values(spec, what: str, action, values) -> list:
    """Told values, checked against the spec's objectives and bounds.

    Args:
      spec: the study's :class:`~.spec.StudySpec`.
      what: the ticket or arm, for the message (``"ticket t3"``).
      action: the ticket's arm index, or a slate's list of indices (then one row of values per arm).
      values: the values told.

    Returns:
      The values as (nested) lists of floats.
    """
    d = len(spec.objectives)
    rows = len(action) if isinstance(action, list) else 0
    try:
        arr = np.asarray(values, float)
    except (TypeError, ValueError):
        raise StudyError(f"values = {errors.plain(values)!r} must be numbers, one per objective "
                         f"{spec.objectives}") from None
    want = (rows, d) if rows else (d,)
    if arr.shape != want:
        count = f"{rows} rows (one per arm of the slate) of {d}" if rows else f"{d}"
        raise StudyError(f"{what}: values has shape {list(arr.shape)}; give {count} values, one per "
                         f"objective {spec.objectives}")
    if not np.all(np.isfinite(arr)):
        raise StudyError(f"{what}: values {arr.tolist()} must be finite numbers (no NaN or infinity); "
                         "fail the ticket if the evaluation failed")
    if spec.lower is not None:
        lo, up = np.asarray(spec.lower), np.asarray(spec.upper)
        bad = np.argwhere((arr < lo) | (arr > up))
        if len(bad):
            j = int(bad[0][-1])
            value = arr.reshape(-1, d)[bad[0][0] if rows else 0, j]
            raise StudyError(f"{what}: {spec.objectives[j]} = {errors.plain(value)!r} "
                             f"lies outside its bounds [{lo[j]}, {up[j]}] (study.lower / study.upper)")
    return arr.tolist()


def check_cost(what: str, cost) -> float | None:
    """A told cost, checked.

    Args:
      what: the ticket or arm, for the message.
      cost: None (the arm's expected cost is charged) or a finite number >= 0.

    Returns:
      The cost as a float, or None.
    """
    if cost is None:
        return None
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost) or cost < 0:
        raise StudyError(f"{what}: cost = {errors.plain(cost)!r} must be a finite number >= 0")
    return float(cost)


def check_attrs(attrs, what: str) -> dict | None:
    """A ticket's attributes, checked.

    Args:
      attrs: None, or a JSON object (a dict with string keys and JSON values).
      what: the ticket or arm, for the message.

    Returns:
      ``attrs``; anything else raises :class:`StudyError` in one line.
    """
    if attrs is None:
        return None
    if not isinstance(attrs, dict) or not all(isinstance(k, str) for k in attrs):
        raise StudyError(f"{what}: attrs = {errors.plain(attrs)!r} must be a JSON object (a dict with string keys)")
    try:
        json.dumps(attrs, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise StudyError(f"{what}: attrs = {errors.plain(attrs)!r} is not JSON ({err})") from None
    return attrs


def check_tellable(rec, values: list, cost: float | None) -> bool:
    """Whether telling ``rec`` these values writes anything: a pending ticket is told once.

    Args:
      rec: the ticket's :class:`~.tickets.TicketRecord`.
      values: the checked values (:func:`check_values`).
      cost: the checked cost, or None.

    Returns:
      True for a pending ticket; False for a told one told the same values again (nothing to write). Any other
      ticket (told other values, queued, failed, abandoned) raises :class:`StudyError` in one line.
    """
    if rec.state == TicketState.TOLD:
        if rec.values == values and (cost is None or cost == rec.cost):
            return False
        raise StudyError(f"ticket {rec.id} was told already with values {rec.values}; a ticket is told once")
    if rec.state == TicketState.QUEUED:
        raise StudyError(f"ticket {rec.id} is enqueued and not handed out yet; tell it once ask returned it")
    if rec.state != TicketState.PENDING:
        raise StudyError(f"ticket {rec.id} was {'abandoned' if rec.state == TicketState.ABANDONED else 'failed'}; "
                         "it cannot be told" + ("" if rec.state == TicketState.ABANDONED
                                                else " (its arm is asked again under a new ticket)"))
    return True
