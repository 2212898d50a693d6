"""A study's events in memory, for tests and notebooks (:mod:`.base` states the protocol).

One :class:`MemoryStorage` instance is shared by the :class:`~mobandit_jax.study.Study` objects (and threads) of one
process that are given it; it is gone with the process. A step's rows are kept aside and added at once when the step
ends, under a lock, so a step is all or nothing.
"""
from __future__ import annotations

import contextlib
import threading

from .base import Event, StorageError, new_event


class MemoryStorage:
    """Events, ``meta`` rows and snapshots in lists and dicts (module docstring).

    Args:
      address: a name shown in messages.
    """

    def __init__(self, address: str = "memory"):
        self.address = address
        self._meta: dict = {}
        self._events: list = []
        self._snapshots: dict = {}
        self._mutex = threading.RLock()
        self._step = None  # (events, meta, snapshots) appended in the open step

    @contextlib.contextmanager
    def lock(self):
        """A write step: what is appended inside it is added when it ends normally, and dropped if it raises.
        See :class:`~.base.Storage`.

        Returns:
          A context manager: leaving it normally commits the step, leaving it by an exception discards it.
        """
        with self._mutex:
            if self._step is not None:
                raise StorageError(f"{self.address!r}: a step is already open in this thread")
            self._step = ([], {}, {})
            try:
                yield self
                events, meta, snaps = self._step
                if events and events[0].seq != len(self._events) + 1:
                    raise StorageError(f"{self.address!r}: event {events[0].seq} is not the next "
                                       f"({len(self._events) + 1})")
                self._events += events
                self._meta.update(meta)
                self._snapshots.update(snaps)
            finally:
                self._step = None

    def _open_step(self):
        if self._step is None:
            raise StorageError(f"{self.address!r}: write inside `with storage.lock():`")
        return self._step

    def meta(self) -> dict:
        """The ``meta`` rows; empty for a new store. See :class:`~.base.Storage`.

        Returns:
          Key -> value, as strings; empty for a new store.
        """
        with self._mutex:
            return dict(self._meta)

    def set_meta(self, values: dict):
        """Write ``meta`` rows (inside :meth:`lock`). See :class:`~.base.Storage`.

        Args:
          values: key -> value, kept as strings.

        Returns:
          None.
        """
        self._open_step()[1].update({str(k): str(v) for k, v in values.items()})

    def append(self, seq, kind, ticket, worker, arm, slate=None, vals=None, cost=None, attrs=None) -> Event:
        """Append event ``seq`` (inside :meth:`lock`). See :class:`~.base.Storage`.

        Args:
          seq: its sequence number (it and the other arguments as :meth:`.base.Storage.append` says).

        Returns:
          The :class:`~.base.Event` written.
        """
        events = self._open_step()[0]
        ev = new_event(seq, kind, ticket, worker, arm, slate, vals, cost, attrs)
        if ev.seq != len(self._events) + len(events) + 1:
            raise StorageError(f"{self.address!r}: event {ev.seq} is not the next "
                               f"({len(self._events) + len(events) + 1})")
        events.append(ev)
        return ev

    def events(self, after: int = 0) -> list:
        """The events after sequence number ``after``, in order. See :class:`~.base.Storage`.

        Args:
          after: a sequence number (0: every event).

        Returns:
          The :class:`~.base.Event` rows, in order.
        """
        with self._mutex:
            return self._events[max(int(after), 0):]

    def put_snapshot(self, seq: int, data: bytes):
        """Keep the policy state after event ``seq`` (inside :meth:`lock`). See :class:`~.base.Storage`.

        Args:
          seq: the event after which it holds.
          data: the state's bytes.

        Returns:
          None.
        """
        self._open_step()[2][int(seq)] = bytes(data)

    def snapshot(self):
        """``(seq, data)`` of the latest snapshot, or None. See :class:`~.base.Storage`.

        Returns:
          ``(seq, data)``, or None where none is kept.
        """
        with self._mutex:
            if not self._snapshots:
                return None
            seq = max(self._snapshots)
            return seq, self._snapshots[seq]

    def integrity(self) -> str:
        """``"ok"`` when the events are numbered 1, 2, ... without a gap. See :class:`~.base.Storage`.

        Returns:
          ``"ok"``, or what is damaged.
        """
        with self._mutex:
            bad = [e.seq for i, e in enumerate(self._events) if e.seq != i + 1]
        return "ok" if not bad else f"events out of sequence at {bad[:3]}"

    def close(self):
        """Nothing to release (the rows stay while the instance lives). See :class:`~.base.Storage`.

        Returns:
          None.
        """
