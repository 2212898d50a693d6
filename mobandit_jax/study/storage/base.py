"""The storage protocol of a study: where its append-only events, its ``meta`` rows and its cached snapshots live.

A study's state is the replay of its events (:mod:`..study`), so a backend keeps rows and serialises writers; it knows
nothing of policies. :class:`Storage` lists what a backend provides; the backends are :mod:`.sqlite` (``DIR/study.db``,
the default), :mod:`.postgres` (a ``postgresql://`` address) and :mod:`.memory` (one process, for tests and
notebooks). A user's own backend is any object with these methods (``mb.Study.create(None, spec,
storage=MyStorage(...))``); the tests run one written on a JSON-lines file against SQLite.

What a backend must guarantee:

- **An atomic step.** Everything between entering and leaving :meth:`Storage.lock` is one step: the events read
  inside it are every event up to the moment the step began, no other writer appends in between, and the rows
  appended inside it (events, ``meta`` rows, snapshots) are all kept or none are. Leaving the block normally commits
  the step; when that commit fails, the block raises (so the call that wrote is not acknowledged) and nothing of the
  step is kept. An exception inside the block discards the step.
- **Durability on return.** A committed step survives the process being killed at any moment after the block returns.
- **Sequence numbers.** Events are numbered 1, 2, 3, ... with no gap; :meth:`Storage.append` is given the next
  number, and a writer that has not read every event cannot write it (the step fails).
- **Failures in one line.** A step the backend cannot keep (a read-only folder, a full disk, a server unreachable past
  its reconnect bound) raises :class:`StorageError`, whose message names the file or server; a step that must be
  decided again because other writers appended while a lost connection was being restored raises :class:`RetryError`
  (the study replays and runs the call again).
- **Format versions.** ``meta["version"]`` is the format that wrote the rows (:data:`VERSION`); :func:`check_version`
  refuses a newer one. Version 2 added the events' ``attrs`` column; a version-1 store loads with ``attrs`` None.
  Version 3 added the ``enqueue`` and ``add`` events: a store is raised to it (:func:`raise_version`) by the step that
  writes its first one, so that a package reading only version 2 refuses it instead of misreading it.
"""
from __future__ import annotations

import contextlib
import json
import time
from typing import NamedTuple, Protocol

from ..errors import StudyError

VERSION = "3"  # 1: the first format; 2: events gained ``attrs`` (a JSON object told with the ticket, or None);
# 3: events of kinds ``enqueue`` and ``add``
KINDS = ("ask", "tell", "fail", "abandon", "enqueue", "add")  # enqueue: an arm queued for the next ask; add: a finished
# evaluation added (its values, cost and attrs in the row)
MEMBERS = ("address", "lock", "meta", "set_meta", "append", "events", "put_snapshot", "snapshot", "integrity", "close")


class StorageError(StudyError):
    """A step the storage could not keep (read-only, disk full, server unreachable): one line naming where; nothing
    of the step was written and the call that tried it was not acknowledged."""


class RetryError(StorageError):
    """Other writers appended while a lost connection was restored: the step must be decided again on the new
    events (a study does so by itself; the message is shown only when it keeps happening)."""


class Event(NamedTuple):
    """One row: its sequence number, kind (:data:`KINDS`), ticket id, worker, arm (or the first of a slate), slate
    (arm indices as JSON text, or None), told values (JSON text, or None), cost, the time it was written (seconds
    since the epoch), and attributes (a JSON object as text, or None)."""

    seq: int
    kind: str
    ticket: str
    worker: str | None
    arm: int
    slate: str | None
    vals: str | None
    cost: float | None
    at: float
    attrs: str | None = None


COLUMNS = ", ".join(Event._fields)


def new_event(seq, kind, ticket, worker, arm, slate=None, vals=None, cost=None, attrs=None) -> Event:
    """The event a backend's :meth:`Storage.append` writes: Python values encoded as the row keeps them.

    Args:
      seq: its sequence number; kind, ticket, worker, arm: as :class:`Event`.
      slate: the slate's arm indices, or None.
      vals: the told values (nested lists of numbers), or None.
      cost: the told cost, or None.
      attrs: a JSON-able dict, or None.

    Returns:
      The :class:`Event`, stamped with the current time.
    """
    return Event(int(seq), kind, ticket, worker, int(arm),
                 None if slate is None else json.dumps([int(a) for a in slate]),
                 None if vals is None else json.dumps(vals), None if cost is None else float(cost), time.time(),
                 None if attrs is None else json.dumps(attrs, sort_keys=True))


def check_version(meta: dict, where: str):
    """Refuse a store written by a newer format than this package reads (one line naming ``where``).

    Args:
      meta: the store's ``meta`` rows.
      where: its folder or address, for the message.

    Returns:
      None; a newer format raises :class:`StorageError`.
    """
    version = meta.get("version", "1")
    if not str(version).isdigit() or int(version) > int(VERSION):
        raise StorageError(f"{where!r} holds a study of format version {version}, newer than this mobandit_jax "
                           f"reads (up to {VERSION}): upgrade mobandit_jax to open it")


def raise_version(store, version: str):
    """Raise ``store``'s format to ``version`` where it is older (inside :meth:`Storage.lock`).

    Args:
      store: the :class:`Storage`.
      version: the format the step about to be written needs.

    Returns:
      None.
    """
    if int(store.meta().get("version", "1")) < int(version):
        store.set_meta({"version": version})


class Storage(Protocol):
    """What a study's backend provides (module docstring: the guarantees); :data:`MEMBERS` names them."""

    address: str  # its folder or address, named in messages

    def lock(self) -> contextlib.AbstractContextManager:
        """A write step: reads and appends inside it are one atomic step, committed on leaving it.

        Returns:
          A context manager; leaving it normally commits the step (or raises :class:`StorageError`, keeping nothing),
          leaving it by an exception discards the step.
        """

    def meta(self) -> dict:
        """The ``meta`` rows.

        Returns:
          ``spec``, ``seed``, ``version`` (and any other key written) as strings; empty for a new store.
        """

    def set_meta(self, values: dict) -> None:
        """Write ``meta`` rows (inside :meth:`lock`), replacing a row of the same key.

        Args:
          values: key -> value, kept as strings.

        Returns:
          None.
        """

    def append(self, seq, kind, ticket, worker, arm, slate=None, vals=None, cost=None, attrs=None) -> Event:
        """Append an event (inside :meth:`lock`; :func:`new_event` makes the row).

        Args:
          seq: its sequence number, the next after the last event read.
          kind: one of :data:`KINDS`.
          ticket: the ticket's id.
          worker: the worker's name, or None.
          arm: the arm's index (a slate's first).
          slate: a slate's arm indices, or None.
          vals: the told values, or None.
          cost: the told cost, or None.
          attrs: the ticket's attributes (a dict), or None.

        Returns:
          The :class:`Event` written.
        """

    def events(self, after: int = 0) -> list:
        """The events written after one.

        Args:
          after: a sequence number (0: every event).

        Returns:
          The :class:`Event` rows with a sequence number above ``after``, in order.
        """

    def put_snapshot(self, seq: int, data: bytes) -> None:
        """Keep a cached policy state (inside :meth:`lock`; a backend may drop it).

        Args:
          seq: the event after which it holds.
          data: the state's bytes.

        Returns:
          None.
        """

    def snapshot(self):
        """The latest kept snapshot.

        Returns:
          ``(seq, data)``, or None where none is kept.
        """

    def integrity(self) -> str:
        """Check the stored rows.

        Returns:
          ``"ok"``, or what is damaged.
        """

    def close(self) -> None:
        """Release connections and files.

        Returns:
          None.
        """
