"""The driver of an identifier, through its :class:`~mobandit_jax.types.Stepwise` form between barriers (module
docstring of :mod:`..study`; the protocol: :mod:`.base`).

At each barrier the step-wise ``select`` says how many pulls of each arm the current phase (fixed budget) or round
(fixed confidence) needs; the driver hands them out in sweeps of one pull of each arm still owed, waits (reason
``pending``) until all are told, and applies them in one ``update``. With a budget a sweep is handed out only where it
fits, and with ``[budget] replan`` the remaining phases are re-planned at each barrier from the measured costs."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..errors import StudyError
from ..policy import fold
from ..states import ArmState, EndedBy, EndReason
from .base import Choice, Driver, policy_key

SETTLE_STEPS = 10_000  # barriers one settle may cross (each at least ends a phase or round)


def _masks(state):
    """An identifier state's ``(accepted, active)`` masks (on the state or the method's state it wraps), or None."""
    for s in (state, getattr(state, "state", None)):
        if s is not None and hasattr(s, "accepted") and hasattr(s, "active"):
            return np.asarray(s.accepted, bool), np.asarray(s.active, bool)
    return None


class StepwiseDriver(Driver):
    """An identifier's :class:`~mobandit_jax.types.Stepwise` form, between barriers.

    Args:
      built: the policy (:class:`~..policy.Built`), an identifier with a step-wise form.
      spec: the study's :class:`~..spec.StudySpec`.
      seed: the study's seed.
    """

    def __init__(self, built, spec, seed: int):
        from ...policies.identification import schedule_of

        self.built, self.spec = built, spec
        step, self.params = built.policy.stepwise, built.params
        self.step = step
        self.key_pol = policy_key(seed)
        self._select = jax.jit(step.select)
        self._update = jax.jit(step.update)
        self._short = jax.jit(step.short)
        self._stopped = jax.jit(step.stopped)
        self._recommend = jax.jit(step.recommend)
        self._confident = None if step.confident is None else jax.jit(step.confident)
        # re-planning (spec [budget] replan): the phases' schedule, re-planned at each barrier from measured costs
        self.schedule = schedule_of(step) if spec.replan and spec.budget is not None else None
        self.state = jax.jit(step.init)(self.params)
        self.dtype = np.dtype(jax.dtypes.canonicalize_dtype(jnp.float64))
        self.b = 0
        self.by_budget = False
        self._new_round()

    def _new_round(self):
        K = len(self.spec.arms)
        self.need = np.asarray(self._select(fold(self.key_pol, self.b), self.state, self.params)).astype(np.int64)
        self.handed = np.zeros(K, np.int64)
        self.told_n = np.zeros(K, np.int64)
        self.rs = np.zeros((K, self.built.dim))
        self.cs = np.zeros(K)
        self.done = bool(self._stopped(self.state, self.params))

    def on_ask(self, rec) -> None:
        """Count the pull handed out against the current phase or round.

        Args:
          rec: the new ticket's record.

        Returns:
          None.
        """
        self.handed[rec.action] += 1

    def on_enqueue(self, rec) -> None:
        """Reserve the pull the current phase or round owes the arm for the queued ticket.

        Args:
          rec: the queued ticket's record.

        Returns:
          None.
        """
        self.handed[rec.action] += 1

    def queue_open(self, view) -> bool:
        """An enqueued arm was owed a pull by the current phase or round, which waits for it.

        Args:
          view: the study now (not read).

        Returns:
          True until the method has ended.
        """
        return not self.done

    def check_known(self, view, arm: int, how: str) -> None:
        """Take an enqueued or added evaluation of ``arm`` only where the current phase (fixed budget) or round
        (fixed confidence) still owes the arm a pull, so that the method's allocation, and its guarantee, are kept;
        refuse it otherwise (:class:`StudyError` naming the arm, the phase and its allocation).

        Args:
          view: the study now.
          arm: the arm's index.
          how: ``"enqueue"`` or ``"add"``.

        Returns:
          None where it is taken.
        """
        name = self.spec.arms[arm]
        if self.done:
            raise StudyError(f"cannot {how} {name!r}: the method has ended ({self.choose(view).reason}); an "
                             "evaluation beyond its schedule would not change its recommendation")
        if self.handed[arm] < self.need[arm]:
            return
        what = "round" if self._confident is not None else "phase"
        raise StudyError(f"cannot {how} {name!r}: {what} {self.b + 1} allocates it {int(self.need[arm])} "
                         f"evaluation(s), all handed out or told already ({int(self.told_n[arm])} told); a "
                         f"{what} takes only the pulls its allocation owes (a pull beyond it would break the "
                         f"method's guarantee): {how} it while a {what} owes it one")

    def on_fail(self, rec) -> None:
        """Give the failed pull back to the phase or round, which hands it out again.

        Args:
          rec: the failed or abandoned ticket's record.

        Returns:
          None.
        """
        self.handed[rec.action] -= 1

    def on_tell(self, rec) -> None:
        """Add the told values and cost to the current phase's or round's sums.

        Args:
          rec: the told ticket's record.

        Returns:
          None.
        """
        a = rec.action
        self.told_n[a] += 1
        self.rs[a] += self.built.to_policy(np.asarray(rec.values, float))
        self.cs[a] += (rec.cost or 0.0) / self.built.cost_scale

    def _apply_round(self, view):
        if self.schedule is not None:
            self._replan(view)
        self.state = self._update(self.state, self.told_n.astype(np.int32), self.rs.astype(self.dtype),
                                  self.cs.astype(self.dtype), self.params)
        self.b += 1
        self._new_round()

    def _replan(self, view):
        """Re-plan the rest of the phases from the measured mean costs and the budget left (:func:`replan`)."""
        from ...policies.identification import replan

        scale = self.built.cost_scale
        costs = np.array([view.expected_cost(i) for i in range(len(self.spec.arms))]) / scale
        left = (self.spec.budget - view.spent) / scale
        self.params = replan(self.schedule, self.state, self.built.params, costs, left, pulls=self.told_n)

    def _next(self):
        """The next arm to hand out and its sweep's level (the pulls of it handed out), or None."""
        open_ = self.handed < self.need
        if not open_.any():
            return None
        level = self.handed[open_].min()
        arm = int(np.flatnonzero(open_ & (self.handed == level))[0])
        return arm, level

    def _fits(self, view, nxt) -> bool:
        """Whether the next arm may be handed out: the rest of its sweep fits in the budget, or, re-planning in the
        last phase, the arm itself does (the last sweep is handed out arm by arm as the budget allows)."""
        arm, level = nxt
        if view.affordable(self._sweep_cost(view, level)):
            return True
        last = self.schedule is not None and int(self.state.r) >= self.schedule.phases
        return last and view.affordable(view.expected_cost(arm))

    def _sweep_cost(self, view, level) -> float:
        rest = (self.need > level) & (self.handed == level)
        return sum(view.expected_cost(i) for i in np.flatnonzero(rest))

    def settle(self, view) -> None:
        """Cross every barrier the told events allow: apply a phase or round once all its pulls are told, end one
        whose next sweep the budget cannot pay for (``short``), until the method waits or stops.

        Args:
          view: the study after the event.

        Returns:
          None.
        """
        for _ in range(SETTLE_STEPS):
            if self.done or (self.handed > self.told_n).any():
                return
            if self.need.sum() > 0 and (self.told_n == self.need).all():
                self._apply_round(view)
                continue
            nxt = self._next()
            if nxt is not None and self._fits(view, nxt):
                return
            if self.told_n.sum() > 0:
                self._apply_round(view)
                continue
            self.state = self._short(self.state, self.params)
            self._new_round()
            if self.done:
                self.by_budget = True

    def choose(self, view) -> Choice:
        """The next arm of the current sweep.

        Args:
          view: the study now.

        Returns:
          The :class:`Choice`: none once the method has ended (``finished``; ``budget`` where the budget ended it),
          while the phase's or round's pulls are all out (``pending``) or where the sweep does not fit (``budget``).
        """
        if self.done:
            return Choice(None, EndReason.BUDGET if self.by_budget else EndReason.FINISHED)
        nxt = self._next()
        if nxt is None:
            return Choice(None, EndReason.PENDING)
        if not self._fits(view, nxt):
            return Choice(None, EndReason.BUDGET)
        return Choice(nxt[0], None)

    def recommend(self):
        """The identifier's recommended set from its state.

        Returns:
          A boolean mask over the arms.
        """
        return self._recommend(self.state, self.params)

    def confident(self) -> bool | None:
        """Whether a fixed-confidence method's stopping rule has fired.

        Returns:
          True or False; None for a fixed-budget method.
        """
        return None if self._confident is None else bool(self._confident(self.state, self.params))

    def ended_by(self, view):
        """The rule that ended the study.

        Args:
          view: the study now (nothing pending; not read).

        Returns:
          The :class:`EndedBy` rule (the budget, the schedule's phases, the stopping rule, or the round cap), or None
          while the method goes on.
        """
        if not self.done:
            return None
        if self.by_budget:
            return EndedBy.BUDGET
        confident = self.confident()
        if confident is None:
            return EndedBy.PHASES
        return EndedBy.STOPPING_RULE if confident else EndedBy.HORIZON

    def arm_states(self, recommended) -> list:
        """Each arm's state from the method's accepted and active masks; once it has ended, its recommended arms are
        accepted and the others rejected.

        Args:
          recommended: :meth:`recommend`'s mask.

        Returns:
          One :class:`ArmState` per arm.
        """
        K = len(self.spec.arms)
        if self.done:
            return [ArmState.ACCEPTED if m else ArmState.REJECTED for m in recommended]
        masks = _masks(self.state)
        if masks is None:
            return [ArmState.ACTIVE] * K
        accepted, active = masks
        return [ArmState.ACCEPTED if a else ArmState.ACTIVE if b else ArmState.REJECTED
                for a, b in zip(accepted, active, strict=True)]
