"""A study's events in a PostgreSQL database, shared by workers on several hosts (:mod:`.base` states the protocol).

An address ``postgresql://user@host:port/db?study=name&reconnect=60`` (the ``postgres`` extra, ``psycopg``): the
tables are named after ``study`` (default ``mobandit``), so one database holds several studies; a step holds a
transaction-scoped advisory lock of the study.

Reconnecting: a step keeps its appended rows aside and writes them when it ends, in one transaction. When the
connection breaks (a server restart, a failover, an idle timeout), the backend reconnects with exponential backoff
(0.05 s doubling to 2 s) for at most ``reconnect`` seconds (default :data:`RECONNECT_S`; ``0``: fail at once), takes
the lock again and goes on with the same step:

- a read that broke is read again under the new lock (nothing was decided on it yet);
- rows that were not yet committed are written under the new lock when no other writer appended meanwhile (the
  decision is then still the one the events make);
- a commit whose acknowledgement was lost with the connection is looked up first: if its first event is in the
  table (same sequence number, ticket, kind and time) the step landed and is not written again;
- if another writer appended meanwhile, the step raises :class:`~.base.RetryError` and the study decides it again on the
  new events, so no ticket is handed out twice.

Past the bound, one line names the server: :class:`~.base.StorageError`.
"""
from __future__ import annotations

import contextlib
import time
import urllib.parse

from ..errors import StudyError
from .base import COLUMNS, Event, RetryError, StorageError, new_event

RECONNECT_S = 60.0  # default bound on reconnecting, seconds (the address's ``reconnect`` parameter)
BACKOFF = (0.05, 2.0)  # first and longest wait between reconnects, seconds


class PostgresStorage:
    """The events of a study in a PostgreSQL database (module docstring).

    Args:
      url: ``postgresql://...`` with optional ``study`` (table prefix) and ``reconnect`` (seconds) parameters.
      create: make the tables (an existing study is opened as it is).
      reconnect: the reconnect bound in seconds (overrides the address's).
    """

    def __init__(self, url: str, create: bool = False, reconnect: float | None = None):
        try:
            import psycopg
        except ImportError:
            raise StudyError("a postgresql:// study needs psycopg: pip install 'mobandit_jax[postgres]'") from None
        self._psycopg = psycopg
        parts = urllib.parse.urlsplit(str(url))
        query = urllib.parse.parse_qs(parts.query)
        name = query.pop("study", ["mobandit"])[0]
        if not name.replace("_", "").isalnum():
            raise StudyError(f"study = {name!r} in the address: use letters, digits and '_'")
        bound = query.pop("reconnect", [RECONNECT_S])[0] if reconnect is None else reconnect
        try:
            self.reconnect = float(bound)
            assert self.reconnect >= 0
        except (TypeError, ValueError, AssertionError):
            raise StudyError(f"reconnect = {bound!r} in the address: give seconds, a number >= 0") from None
        self.address = self.folder = str(url)
        self.server = f"{parts.hostname}:{parts.port or 5432}"
        self._dsn = urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query, doseq=True)))
        self.events_t, self.meta_t, self.snap_t = f"{name}_events", f"{name}_meta", f"{name}_snapshots"
        self.key = int.from_bytes(name.encode()[:7].ljust(7, b"\0"), "big")
        self.epoch = 0  # connections opened so far
        self._step = None  # [events, meta rows, snapshots, epoch of the lock held] while a step is open
        try:
            self.conn = psycopg.connect(self._dsn, autocommit=True)
        except psycopg.Error as err:
            raise StudyError(f"cannot connect to {self.server}: {_first_line(err)}") from None
        if create:
            with self.lock():
                self._create_tables()
        elif not self.meta():
            raise StudyError(f"no study {name!r} at {self.server}; create one with `mobandit study new SPEC ADDRESS`")
        self._upgrade()

    # ------------------------------------------------------------------ connection

    def _create_tables(self):
        self.conn.execute(f"CREATE TABLE IF NOT EXISTS {self.meta_t} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self.conn.execute(f"CREATE TABLE IF NOT EXISTS {self.events_t} (seq BIGINT PRIMARY KEY, kind TEXT NOT NULL, "
                          "ticket TEXT NOT NULL, worker TEXT, arm INTEGER NOT NULL, slate TEXT, vals TEXT, "
                          "cost DOUBLE PRECISION, at DOUBLE PRECISION NOT NULL, attrs TEXT)")
        self.conn.execute(f"CREATE TABLE IF NOT EXISTS {self.snap_t} (seq BIGINT PRIMARY KEY, data BYTEA NOT NULL)")

    def _upgrade(self):
        """Give a version-1 events table format 2's ``attrs`` column."""
        if not self._read("SELECT 1 FROM information_schema.columns WHERE table_name = %s AND column_name = 'attrs'",
                          (self.events_t,)):
            with self.lock():
                self.conn.execute(f"ALTER TABLE {self.events_t} ADD COLUMN IF NOT EXISTS attrs TEXT")

    def _lost(self, err) -> bool:
        """Whether ``err`` left the connection broken (as opposed to a refused statement)."""
        return isinstance(err, self._psycopg.OperationalError) and (self.conn.closed or self.conn.broken)

    def _reconnecting(self, action):
        """``action()``, reconnecting with backoff and calling it again while the connection breaks."""
        deadline, wait, reopen = None, BACKOFF[0], False
        while True:
            try:
                if reopen:
                    self._open()
                return action()
            except (self._psycopg.Error, _UnreachableError) as err:
                if not (isinstance(err, _UnreachableError) or self._lost(err)):
                    raise
                deadline = deadline or time.monotonic() + self.reconnect
                if time.monotonic() + wait > deadline:
                    raise StorageError(f"lost the PostgreSQL server at {self.server} and could not reconnect within "
                                       f"{self.reconnect:g} s (the address's reconnect=): {_first_line(err)}; the "
                                       "step was not acknowledged") from None
                time.sleep(wait)
                wait, reopen = min(2 * wait, BACKOFF[1]), True

    def _open(self):
        with contextlib.suppress(Exception):
            self.conn.close()
        try:
            self.conn = self._psycopg.connect(self._dsn, autocommit=True, connect_timeout=5)
        except self._psycopg.Error as err:
            raise _UnreachableError(str(err)) from None
        self.epoch += 1

    def _begin(self):
        """Open a transaction holding the study's lock (again, on a new connection)."""
        self.conn.execute("BEGIN")
        self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (self.key,))
        self._step[3] = self.epoch

    def _held(self):
        """Take the lock again if the connection was re-opened since it was taken."""
        if self._step is not None and self._step[3] != self.epoch:
            self._begin()

    # ------------------------------------------------------------------ the protocol

    @contextlib.contextmanager
    def lock(self):
        """A write step holding the study's advisory lock; its rows are written when it ends (module docstring).
        See :class:`~.base.Storage`.

        Returns:
          A context manager: leaving it normally commits the step, leaving it by an exception discards it.
        """
        self._step = [[], {}, {}, None]
        try:
            self._reconnecting(self._begin)
            yield self
            self._reconnecting(self._commit)
        except BaseException:
            with contextlib.suppress(Exception):
                if not self.conn.closed:
                    self.conn.execute("ROLLBACK")
            raise
        finally:
            self._step = None

    def _commit(self):
        events, meta, snaps, held = self._step
        if held != self.epoch:  # the lock was lost with a connection: look at what happened meanwhile
            self._begin()
            if events:
                row = self.conn.execute(f"SELECT kind, ticket, at FROM {self.events_t} WHERE seq = %s",
                                        (events[0].seq,)).fetchone()
                if row is not None:
                    self.conn.execute("ROLLBACK")
                    if tuple(row) == (events[0].kind, events[0].ticket, events[0].at):
                        return  # it landed; only its acknowledgement was lost
                    raise RetryError(f"other writers appended to the study at {self.server} while its connection was "
                                "restored; the step is decided again")
        for k, v in meta.items():
            self.conn.execute(f"INSERT INTO {self.meta_t} (key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE "
                              "SET value = excluded.value", (k, v))
        if events:
            with self.conn.cursor() as cur:
                cur.executemany(f"INSERT INTO {self.events_t} ({COLUMNS}) VALUES "
                                "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", events)
        for seq, data in snaps.items():
            self.conn.execute(f"INSERT INTO {self.snap_t} (seq, data) VALUES (%s, %s) ON CONFLICT (seq) DO NOTHING",
                              (seq, data))
        self.conn.execute("COMMIT")

    def _read(self, sql, args=()):
        def read():
            if self._step is None:
                return self.conn.execute(sql, args).fetchall()
            self._held()
            return self.conn.execute(sql, args).fetchall()

        return self._reconnecting(read)

    def meta(self) -> dict:
        """The study's ``meta`` rows; empty for a new store. See :class:`~.base.Storage`.

        Returns:
          Key -> value, as strings; empty for a new store.
        """
        try:
            return dict(self._read(f"SELECT key, value FROM {self.meta_t}"))
        except self._psycopg.errors.UndefinedTable:
            if self._step is not None:
                raise
            return {}

    def set_meta(self, values: dict):
        """Write ``meta`` rows (inside :meth:`lock`). See :class:`~.base.Storage`.

        Args:
          values: key -> value, kept as strings.

        Returns:
          None.
        """
        self._step[1].update({str(k): str(v) for k, v in values.items()})

    def append(self, seq, kind, ticket, worker, arm, slate=None, vals=None, cost=None, attrs=None) -> Event:
        """Append event ``seq`` (inside :meth:`lock`; written when the step ends). See :class:`~.base.Storage`.

        Args:
          seq: its sequence number (it and the other arguments as :meth:`.base.Storage.append` says).

        Returns:
          The :class:`~.base.Event` written.
        """
        ev = new_event(seq, kind, ticket, worker, arm, slate, vals, cost, attrs)
        self._step[0].append(ev)
        return ev

    def events(self, after: int = 0) -> list:
        """The events after sequence number ``after``, in order. See :class:`~.base.Storage`.

        Args:
          after: a sequence number (0: every event).

        Returns:
          The :class:`~.base.Event` rows, in order.
        """
        rows = self._read(f"SELECT {COLUMNS} FROM {self.events_t} WHERE seq > %s ORDER BY seq", (after,))
        return [Event(*r) for r in rows]

    def put_snapshot(self, seq: int, data: bytes):
        """Keep the policy state after event ``seq`` (inside :meth:`lock`; written when the step ends).
        See :class:`~.base.Storage`.

        Args:
          seq: the event after which it holds.
          data: the state's bytes.

        Returns:
          None.
        """
        self._step[2][int(seq)] = bytes(data)

    def snapshot(self):
        """``(seq, data)`` of the latest snapshot, or None. See :class:`~.base.Storage`.

        Returns:
          ``(seq, data)``, or None where none is kept.
        """
        rows = self._read(f"SELECT seq, data FROM {self.snap_t} ORDER BY seq DESC LIMIT 1")
        return None if not rows else (rows[0][0], bytes(rows[0][1]))

    def integrity(self) -> str:
        """``"ok"`` (PostgreSQL checks its own pages). See :class:`~.base.Storage`.

        Returns:
          ``"ok"``, or what is damaged.
        """
        return "ok"

    def close(self):
        """Close the connection. See :class:`~.base.Storage`.

        Returns:
          None.
        """
        self.conn.close()


class _UnreachableError(Exception):
    """A reconnect that failed (the server is still down)."""


def _first_line(err) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
