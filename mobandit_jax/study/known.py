"""Starting a study from what is known: enqueued arms, finished evaluations added, and per-ticket attributes.

:meth:`~.study.Study.enqueue` writes an ``enqueue`` event: a queued ticket that the next ``ask`` of any process hands
out before the policy chooses, then told as usual. :meth:`~.study.Study.add` and :meth:`~.study.Study.add_csv` write
``add`` events: a ticket told at once, its values, cost and attributes in the row. Each call is one atomic step of the
storage (:mod:`.atomic`). What a policy makes of them is its driver's rule (:meth:`~.drivers.base.Driver.check_known`):
an online policy counts them as pulls (within the horizon); an identifier takes them only where its current phase
(fixed budget) or round (fixed confidence) still owes the arm a pull, so that its allocation, and the guarantee stated
for it, are kept. With a budget each reserves (enqueued) or charges (added) its cost, refused where it does not fit in
what is left. The functions here decide; the study writes.
"""
from __future__ import annotations

from typing import NamedTuple

from .. import errors
from ..errors import did_you_mean
from .checks import check_attrs, check_cost, check_values
from .errors import StudyError

KNOWN_VERSION = "3"  # the storage format that holds enqueue and add events


class Known(NamedTuple):
    """A finished evaluation to add, checked: the arm's index, its values, cost (None without a budget) and
    attributes."""

    index: int
    values: list
    cost: float | None
    attrs: dict | None


def arm_index(view, arm) -> int:
    """The index of the arm named ``arm``.

    Args:
      view: the study now (:class:`~.view.StudyView`).
      arm: the arm's name.

    Returns:
      Its index; a misspelt name is refused with a did-you-mean, and a slate study takes no single arm.
    """
    spec = view.spec
    if spec.slate or getattr(view.built.policy, "slate_size", 0):
        raise StudyError("a slate study's tickets are slates its policy chooses; enqueue and add take single arms "
                         "of a study without a slate")
    if not isinstance(arm, str) or arm not in spec.arms:
        raise StudyError(f"unknown arm {errors.plain(arm)!r}{did_you_mean(str(arm), spec.arms)}; the arms "
                         f"are the spec's [study] arms")
    return spec.arms.index(arm)


def _fits(view, what: str, cost: float):
    if not view.affordable(cost):
        left = view.spec.budget - view.spent - view.reserved()
        raise StudyError(f"{what}: its cost {errors.plain(cost)} does not fit in the {errors.plain(left)} left of the "
                         f"budget B = {errors.plain(view.spec.budget)} (the pending and queued tickets' reservations "
                         "counted)")


def check_enqueue(view, driver, arm) -> int:
    """Whether ``arm`` may be enqueued now (inside the study's storage step).

    Args:
      view: the study now.
      driver: its driver (:class:`~.drivers.base.Driver`), whose rule takes or refuses the pull.
      arm: the arm's name.

    Returns:
      The arm's index; a refusal is one :class:`StudyError` line, before anything is written.
    """
    index = arm_index(view, arm)
    driver.check_known(view, index, "enqueue")
    _fits(view, f"enqueue {arm!r}", view.expected_cost(index))
    return index


def check_add(view, driver, row: dict, ticket: str) -> Known:
    """Whether a finished evaluation may be added now (inside the study's storage step).

    Args:
      view: the study now (the rows added before this one applied).
      driver: its driver, whose rule takes or refuses the pull.
      row: a dict of ``arm``, ``values``, ``cost`` (or None), ``attrs`` (or None).
      ticket: the id its ticket will have, for messages.

    Returns:
      The checked :class:`Known` (a budgeted study charges the arm's expected cost where the row gives none); a
      refusal is one :class:`StudyError` line, before anything is written.
    """
    index = arm_index(view, row["arm"])
    vals = check_values(view.spec, f"ticket {ticket}", index, row["values"])
    cost = check_cost(f"ticket {ticket}", row.get("cost"))
    attrs = check_attrs(row.get("attrs"), f"arm {row['arm']!r}")
    driver.check_known(view, index, "add")
    if cost is None and view.spec.costs:
        cost = view.expected_cost(index)
    _fits(view, f"add {row['arm']!r}", cost or 0.0)
    return Known(index, vals, cost, attrs)
