"""The driver protocol: how a study steps its policy, one replayed event at a time.

A :class:`~mobandit_jax.study.Study` keeps its events (:mod:`..storage`) and replays them; its driver keeps the
policy's state and decides. The study calls the driver's methods and the driver reads the study only through what it
is given: the :class:`~..tickets.TicketRecord` of the ticket an event moved on, and a frozen
:class:`~..view.StudyView` (the tickets pending and queued, the counts, the cost spent, the budget's arithmetic).

When each method is called, and under which lock (``thread lock``: the study's own, held by every call of a
:class:`Study`; ``storage step``: :meth:`~..storage.base.Storage.lock`, held by the calls that write, ``ask``,
``tell``, ``fail``, ``enqueue`` and ``add``, so that no other process appends in between):

- ``on_enqueue``, ``on_ask``, ``on_tell``, ``on_fail``: while an event is replayed, in the order the events were
  written, under the thread lock (and inside the storage step when the call writes). The same events reach every
  process that opens the study, in the same order.
- ``settle``: after each ``tell``, ``add``, ``fail`` and ``abandon`` event, and once at the end of each replay.
- ``choose`` and ``queue_open``: by ``ask`` (inside the storage step) before it writes each ticket; ``choose`` also by
  ``status`` (thread lock only), which hands out nothing.
- ``check_known``: by ``enqueue`` and ``add`` (inside the storage step), before anything is written.
- ``recommend``, ``confident``, ``ended_by``, ``arm_states``: by ``recommend``, ``status`` and ``arms`` (thread lock
  only), after a replay; ``ended_by`` only with no ticket pending.
- ``snapshot``: where :attr:`Driver.snapshots`, by the storage step of every :data:`~..study.SNAPSHOT_EVERY`-th tell,
  after the tell is applied; ``restore``: when the study opens, once the events up to a kept snapshot are replayed.

What a driver must guarantee:

- **A function of the events.** Its state and its answers depend only on the policy (``built``), the spec, the seed
  and the records it was given, in order: no clock, no randomness but the policy's key stream, so that every process
  replaying the same events makes the same decisions, and a reloaded study asks what it would have asked.
- **Read-only towards the study.** It reads the records and the view; it writes no event (the study does) and keeps
  no view beyond the call.
- **Questions change nothing.** ``choose``, ``queue_open``, ``check_known``, ``recommend``, ``confident``,
  ``ended_by`` and ``arm_states`` leave the decisions as they were: asked again with no event in between, they answer
  the same (``status`` asks without handing out).
- **A reason for nothing.** ``choose`` returns ``Choice(action, None)`` or ``Choice(None, reason)``, a
  :class:`~..states.EndReason`; it hands out an action only where :meth:`~..view.StudyView.affordable` says its
  expected cost fits in the budget.
- **Refusals before writes.** ``check_known`` refuses with one :class:`~..errors.StudyError` line naming the arm and
  why; nothing is written then.
- **Snapshots round-trip.** ``restore(snapshot())``, after the same events, gives the same decisions; bytes that do
  not fit the state are refused (False) and change nothing.
- **Small steps.** The work of each call is bounded by the events it is given, not by the history's length: the
  storage step holds every other worker while it runs.
"""
from __future__ import annotations

import abc
from typing import ClassVar, NamedTuple

import jax

from ..states import EndReason


class Choice(NamedTuple):
    """What a driver would hand out now: an ``action`` (an arm's index, or a slate's list of indices) and no
    ``reason``, or no action and the :class:`~..states.EndReason` why."""

    action: int | list | None
    reason: EndReason | None


def policy_key(seed: int):
    """The policy's key stream of a study (module docstring of :mod:`..study`).

    Args:
      seed: the study's seed.

    Returns:
      The key of seed index 0 of a simulated run of ``seed`` (:mod:`mobandit_jax.engine`), folded with the policy's
      stream number 1; round ``t`` folds ``t`` into it.
    """
    seed_key = jax.random.fold_in(jax.random.PRNGKey(seed), 0)
    return jax.random.fold_in(seed_key, 1)


class Driver(abc.ABC):
    """A study's driver (module docstring: when each method is called and what a driver guarantees).

    Args:
      built: the policy (:class:`~..policy.Built`).
      spec: the study's :class:`~..spec.StudySpec`.
      seed: the study's seed (:func:`policy_key`).
    """

    snapshots: ClassVar[bool] = False
    """Whether the driver keeps its state in snapshots (:meth:`snapshot`, :meth:`restore`)."""

    @abc.abstractmethod
    def __init__(self, built, spec, seed: int):
        """The driver before any event (the policy's initial state)."""

    def on_enqueue(self, rec) -> None:
        """A ticket was enqueued: the next ``ask`` hands it out before the policy chooses.

        Args:
          rec: its record (state ``queued``).

        Returns:
          None. The default does nothing.
        """
        return None

    def on_ask(self, rec) -> None:
        """A new ticket was handed out (asked, or added with its values; an enqueued one handed out is not new).

        Args:
          rec: its record (state ``pending``).

        Returns:
          None. The default does nothing.
        """
        return None

    @abc.abstractmethod
    def on_tell(self, rec) -> None:
        """A ticket was told (asked or added): its values and cost are an observation of its action.

        Args:
          rec: its record (state ``told``, with ``values`` and ``cost``).

        Returns:
          None.
        """

    def on_fail(self, rec) -> None:
        """A pending ticket failed or was abandoned: it will not be told.

        Args:
          rec: its record (state ``failed`` or ``abandoned``).

        Returns:
          None. The default does nothing.
        """
        return None

    def settle(self, view) -> None:
        """Move on where the told events allow it (an identifier crosses its barriers, ends a phase the budget
        cannot pay for, or stops).

        Args:
          view: the study after the event (:class:`~..view.StudyView`).

        Returns:
          None. The default does nothing.
        """
        return None

    @abc.abstractmethod
    def choose(self, view) -> Choice:
        """What the policy would hand out next, given the pending tickets.

        Args:
          view: the study now.

        Returns:
          A :class:`Choice`: an action, or the reason there is none.
        """

    @abc.abstractmethod
    def queue_open(self, view) -> bool:
        """Whether an enqueued ticket may be handed out now.

        Args:
          view: the study now.

        Returns:
          True where the method has room for it.
        """

    @abc.abstractmethod
    def check_known(self, view, arm: int, how: str) -> None:
        """Refuse an evaluation the method would not take (:class:`~..errors.StudyError`, one line).

        Args:
          view: the study now.
          arm: the arm's index.
          how: ``"enqueue"`` or ``"add"``, for the message.

        Returns:
          None where it is taken.
        """

    @abc.abstractmethod
    def recommend(self):
        """The method's recommended set now.

        Returns:
          A boolean mask over the arms.
        """

    def confident(self) -> bool | None:
        """Whether a fixed-confidence stopping rule has fired.

        Returns:
          True or False for a fixed-confidence method; None for any other (the default).
        """
        return None

    @abc.abstractmethod
    def ended_by(self, view):
        """The rule that ended the study (called with no ticket pending).

        Args:
          view: the study now.

        Returns:
          An :class:`~..states.EndedBy`, or None while the method goes on.
        """

    @abc.abstractmethod
    def arm_states(self, recommended) -> list:
        """Each arm's :class:`~..states.ArmState` for the method.

        Args:
          recommended: :meth:`recommend`'s mask.

        Returns:
          One state per arm.
        """

    def snapshot(self) -> bytes:
        """The driver's state as bytes (where :attr:`snapshots`).

        Returns:
          Bytes that :meth:`restore` reads.
        """
        raise NotImplementedError(f"{type(self).__name__} keeps no snapshots")

    def restore(self, data: bytes) -> bool:
        """Set the state from :meth:`snapshot`'s bytes, with the events up to it replayed (where :attr:`snapshots`).

        Args:
          data: the bytes.

        Returns:
          Whether they fitted (the default: False, and nothing changes).
        """
        return False
