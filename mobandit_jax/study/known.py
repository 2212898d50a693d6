"""Starting a study from what is known: enqueued arms, finished evaluations added, and per-ticket attributes.

:meth:`~.study.Study.enqueue` writes an ``enqueue`` event: a queued ticket that the next ``ask`` of any process hands
out before the policy chooses, then told as usual. :meth:`~.study.Study.add` and :meth:`~.study.Study.add_csv` write
``add`` events: a ticket told at once, its values, cost and attributes in the row. Each call is one atomic step of the
storage (:mod:`.atomic`). What a policy makes of them is its driver's rule (:meth:`check_known` of
:mod:`.drivers`): an online policy counts them as pulls (within the horizon); an identifier takes them only where its
current phase (fixed budget) or round (fixed confidence) still owes the arm a pull, so that its allocation, and the
guarantee stated for it, are kept. With a budget each reserves (enqueued) or charges (added) its cost, refused where it
does not fit in what is left.
"""
from __future__ import annotations

import json
from types import SimpleNamespace

from .. import errors
from ..errors import did_you_mean
from .atomic import rewind
from .errors import StudyError
from .storage import StorageError
from .storage.base import raise_version

KNOWN_VERSION = "3"  # the storage format that holds enqueue and add events


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


def arm_index(study, arm) -> int:
    """The index of the arm named ``arm`` (a did-you-mean where it is misspelt); a slate study takes no single arm."""
    if study.spec.slate or getattr(study._built.policy, "slate_size", 0):
        raise StudyError("a slate study's tickets are slates its policy chooses; enqueue and add take single arms "
                         "of a study without a slate")
    if not isinstance(arm, str) or arm not in study.spec.arms:
        raise StudyError(f"unknown arm {errors.plain(arm)!r}{did_you_mean(str(arm), study.spec.arms)}; the arms "
                         f"are the spec's [study] arms")
    return study.spec.arms.index(arm)


def _fits(study, what: str, cost: float):
    if not study.affordable(cost):
        left = study.spec.budget - study._spent - study.reserved()
        raise StudyError(f"{what}: its cost {errors.plain(cost)} does not fit in the {errors.plain(left)} left of the "
                         f"budget B = {errors.plain(study.spec.budget)} (the pending and queued tickets' reservations "
                         "counted)")


def enqueue(study, arm: str) -> str:
    """Write an ``enqueue`` event for ``arm`` (inside the study's storage step).

    Args:
      study: the :class:`~.study.Study`, synced.
      arm: the arm's name.

    Returns:
      The queued ticket's id.
    """
    index = arm_index(study, arm)
    study._driver.check_known(study, index, "enqueue")
    _fits(study, f"enqueue {arm!r}", study.expected_cost(index))
    tid = study._new_id()
    raise_version(study._store, KNOWN_VERSION)
    ev = study._store.append(study._seen + 1, "enqueue", tid, None, index)
    study._apply(ev)
    study._seen = ev.seq
    return tid


def add_rows(study, rows: list, where: str | None) -> list:
    """Write an ``add`` event for each row in one storage step: all of them, or none.

    Args:
      study: the :class:`~.study.Study`.
      rows: dicts of ``arm``, ``values``, ``cost`` (or None), ``attrs`` (or None).
      where: the file they came from, named in messages with the row's number (its header is row 1).

    Returns:
      The new tickets' ids.
    """
    applied = False
    try:
        with study._lock, study._store.lock():
            study._sync()
            ids = []
            for i, row in enumerate(rows):
                try:
                    ids.append(_add_one(study, row))
                except StudyError as err:
                    raise StudyError(f"{where} row {i + 2}: {err}" if where else str(err)) from None
                applied = True
            return ids
    except StudyError as err:
        if applied and not isinstance(err, StorageError):
            rewind(study)  # the rows before the refused one were applied in memory, never written
        raise


def _add_one(study, row) -> str:
    index = arm_index(study, row["arm"])
    tid = study._new_id()
    ticket = SimpleNamespace(id=tid, action=index)
    vals = study._values(ticket, row["values"])
    cost = study._cost(ticket, row.get("cost"))
    attrs = check_attrs(row.get("attrs"), f"arm {row['arm']!r}")
    study._driver.check_known(study, index, "add")
    if cost is None and study.spec.costs:
        cost = study.expected_cost(index)
    _fits(study, f"add {row['arm']!r}", cost or 0.0)
    raise_version(study._store, KNOWN_VERSION)
    study._write_told("add", tid, None, index, vals, cost, attrs)
    return tid
