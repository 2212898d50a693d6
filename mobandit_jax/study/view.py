"""What a driver (:mod:`.drivers`) reads of a study: a frozen view of its replayed state, and the budget's arithmetic.

A :class:`StudyView` is made by the study when it calls a driver, from the events replayed so far: a named tuple of
immutable records and read-only arrays (a told event replaces the study's cost arrays rather than change them), so a
driver reads the study without reaching into it, cannot change it, and sees what it was given for as long as it holds
it. Its budget rules are the study's own (module docstring of :mod:`.study`): a ticket reserves its arm's expected
cost while it is pending or queued, and a new one is handed out only where the cost spent, the reservations and its
own expected cost fit in ``B``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from .spec import StudySpec
from .tickets import TicketRecord

if TYPE_CHECKING:
    from .policy import Built


class StudyView(NamedTuple):
    """A study's replayed state, read-only (module docstring).

    Attributes:
      spec: the study's :class:`~.spec.StudySpec`.
      built: the policy it drives (:class:`~.policy.Built`).
      told: the tickets told so far (asked and added).
      pending: the records of the tickets handed out and not yet told, failed or abandoned, in the order asked.
      queued: the records of the enqueued tickets not yet handed out, in the order enqueued.
      spent: the told costs summed, in the user's units.
      cost_counts: per arm, the told evaluations that paid for it (a slate's cost is shared by its arms); read-only.
      cost_sums: per arm, the told costs summed (a slate's arms each pay an equal share); read-only.
    """

    spec: StudySpec
    built: Built
    told: int
    pending: tuple[TicketRecord, ...]
    queued: tuple[TicketRecord, ...]
    spent: float
    cost_counts: np.ndarray
    cost_sums: np.ndarray

    def expected_cost(self, arm: int) -> float:
        """An arm's expected cost.

        Args:
          arm: the arm's index.

        Returns:
          Its mean told cost, else the spec's ``[budget] cost`` of it, in the user's units; 0 without a budget.
        """
        if self.spec.costs is None:
            return 0.0
        if self.cost_counts[arm] > 0:
            return float(self.cost_sums[arm] / self.cost_counts[arm])
        return float(self.spec.costs[arm])

    def reserved(self) -> float:
        """What the pending and the queued tickets reserve of the budget.

        Returns:
          The expected cost of every arm of those tickets, summed.
        """
        return sum(self.expected_cost(a) for rec in self.pending + self.queued for a in np.atleast_1d(rec.action))

    def affordable(self, cost: float) -> bool:
        """Whether ``cost`` more fits in the budget.

        Args:
          cost: the expected cost of what would be handed out.

        Returns:
          True where the cost spent, the reservations and ``cost`` fit in ``B`` (always, without a budget).
        """
        if self.spec.budget is None:
            return True
        return self.spent + self.reserved() + cost <= self.spec.budget * (1 + 1e-12)
