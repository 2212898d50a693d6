"""A study's events in ``DIR/study.db`` (SQLite), the default storage (:mod:`.base` states the protocol).

WAL mode (readers do not block the writer), a 60 s busy timeout, and ``synchronous = NORMAL``: a committed event
survives the process that wrote it being killed at any moment (it is in the WAL file); an operating-system crash or
power loss may lose the last few commits, never leave half an event (``synchronous = FULL``, an fsync per event,
costs several milliseconds a commit: set ``MOBANDIT_STUDY_FSYNC=1`` for it). A step holds ``BEGIN IMMEDIATE``, the
database's write lock, so the processes of one machine share a study without handing out a ticket twice. Writers first
queue on an exclusive ``flock`` of ``DIR/study.lock``, so that a waiting writer wakes as soon as the step before it
ends: SQLite's own busy handler sleeps up to 100 ms between tries, which made the slowest of 8 processes' steps wait
seconds on a busy machine. Such writers copy the WAL back into the database themselves, a passive checkpoint every
:data:`CHECKPOINT_STEPS` of their write steps taken after releasing ``study.lock`` (SQLite's automatic checkpoint runs
inside a commit, and its fsync held every queued writer).

A study on a read-only folder opens for reading (``status``, ``recommend``, ``history``; SQLite's ``immutable`` mode
where the WAL index cannot be made); a step that cannot be written there, or on a full disk, raises
:class:`~.base.StorageError` in one line naming the file, and writes nothing.
"""
from __future__ import annotations

import contextlib
import errno
import os
import sqlite3

try:
    import fcntl
except ImportError:  # no flock (Windows): writers queue in SQLite's busy handler alone
    fcntl = None

from ..errors import StudyError
from .base import COLUMNS, Event, StorageError, new_event

DB_NAME = "study.db"
LOCK_NAME = "study.lock"
CHECKPOINT_STEPS = 100  # write steps of a connection between its passive checkpoints of the WAL (after the lock)
TABLES = ("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
          "CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, "
          "ticket TEXT NOT NULL, worker TEXT, arm INTEGER NOT NULL, slate TEXT, vals TEXT, cost REAL, "
          "at REAL NOT NULL, attrs TEXT)",
          "CREATE TABLE IF NOT EXISTS snapshots (seq INTEGER PRIMARY KEY, data BLOB NOT NULL)")


class SqliteStorage:
    """The events of a study in ``DIR/study.db`` (module docstring).

    Args:
      folder: the study's folder.
      create: make the folder and tables (an existing study is opened as it is).
    """

    def __init__(self, folder, create: bool = False):
        self.address = self.folder = str(folder)
        self._commits = 0  # write steps committed through this connection
        self.path = os.path.join(self.folder, DB_NAME)
        if not create and not os.path.exists(self.path):
            raise StudyError(f"no study at {self.folder!r} (no {DB_NAME}); create one with "
                             "`mobandit study new SPEC DIR`")
        try:
            if create:
                os.makedirs(self.folder, exist_ok=True)
            self.conn = self._connect()
            if create:
                with self.lock():
                    for table in TABLES:
                        self.conn.execute(table)
        except (OSError, sqlite3.Error) as err:
            raise self._refused(err) from None
        self._gate = self._open_gate()
        if self._gate is not None:  # writers queue on the gate: checkpoints are taken after it is released
            self.conn.execute("PRAGMA wal_autocheckpoint=0")
        self._columns = COLUMNS if self._has_attrs() else COLUMNS.replace("attrs", "NULL")

    def _connect(self):
        conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=" + ("FULL" if os.environ.get("MOBANDIT_STUDY_FSYNC") == "1"
                                                  else "NORMAL"))
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.OperationalError:
            if not _read_only(self.folder):
                raise
            conn.close()  # a read-only folder: no WAL index can be made there, and nobody can write
            return sqlite3.connect(f"file:{self.path}?mode=ro&immutable=1", uri=True, isolation_level=None,
                                   check_same_thread=False)

    def _open_gate(self):
        """The descriptor of ``DIR/study.lock`` that writers queue on, or None (no flock, or a read-only folder)."""
        if fcntl is None:
            return None
        try:
            return os.open(os.path.join(self.folder, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            return None

    def _has_attrs(self) -> bool:
        """Whether the events table has format 2's ``attrs`` column (a version-1 file gains it when writable)."""
        cols = [r[1] for r in self.conn.execute("PRAGMA table_info(events)").fetchall()]
        if not cols or "attrs" in cols:
            return True
        try:
            with self.lock():
                self.conn.execute("ALTER TABLE events ADD COLUMN attrs TEXT")
            return True
        except StorageError:
            return False  # read-only: read it as it is

    def _refused(self, err) -> StorageError:
        text = str(err).splitlines()[0] if str(err) else type(err).__name__
        full = getattr(err, "errno", None) == errno.ENOSPC or "full" in text
        why = " (its folder is read-only)" if _read_only(self.folder) else " (the disk is full)" if full else ""
        return StorageError(f"cannot write the study at {self.path!r}: {text}{why}; nothing was written")

    @contextlib.contextmanager
    def lock(self):
        """A write step (``BEGIN IMMEDIATE`` ... ``COMMIT``, queued on ``study.lock``): the events read and appended
        inside it are one atomic step; a step that cannot be written raises :class:`~.base.StorageError` and is
        rolled back. See :class:`~.base.Storage`.

        Returns:
          A context manager: leaving it normally commits the step, leaving it by an exception discards it.
        """
        gate = getattr(self, "_gate", None)
        if gate is not None:
            fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            with self._step():
                yield self
        finally:
            if gate is not None:
                fcntl.flock(gate, fcntl.LOCK_UN)
        self._commits += 1
        if gate is not None and self._commits % CHECKPOINT_STEPS == 0:
            with contextlib.suppress(sqlite3.Error):  # the WAL copied back outside the lock; it keeps every event
                self.conn.execute("PRAGMA wal_checkpoint(PASSIVE)")

    @contextlib.contextmanager
    def _step(self):
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as err:
            raise self._refused(err) from None
        try:
            yield self
        except BaseException as err:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
            if isinstance(err, sqlite3.Error | OSError):
                raise self._refused(err) from None
            raise
        try:
            self.conn.execute("COMMIT")
        except (sqlite3.Error, OSError) as err:
            with contextlib.suppress(sqlite3.Error):
                self.conn.execute("ROLLBACK")
            raise self._refused(err) from None

    def meta(self) -> dict:
        """The study's ``meta`` rows (``spec``, ``seed``, ``version``); empty for a new store.
        See :class:`~.base.Storage`.

        Returns:
          Key -> value, as strings; empty for a new store.
        """
        try:
            return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.OperationalError:
            return {}

    def set_meta(self, values: dict):
        """Write ``meta`` rows (inside :meth:`lock`). See :class:`~.base.Storage`.

        Args:
          values: key -> value, kept as strings.

        Returns:
          None.
        """
        self.conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
                              "excluded.value", list(values.items()))

    def append(self, seq, kind, ticket, worker, arm, slate=None, vals=None, cost=None, attrs=None) -> Event:
        """Append event ``seq`` (inside :meth:`lock`, the next after the last one read: a writer that has not read
        every event fails on the primary key instead of writing). See :class:`~.base.Storage`.

        Args:
          seq: its sequence number (it and the other arguments as :meth:`.base.Storage.append` says).

        Returns:
          The :class:`~.base.Event` written.
        """
        ev = new_event(seq, kind, ticket, worker, arm, slate, vals, cost, attrs)
        self.conn.execute(f"INSERT INTO events ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", ev)
        return ev

    def events(self, after: int = 0) -> list:
        """The events after sequence number ``after``, in order. See :class:`~.base.Storage`.

        Args:
          after: a sequence number (0: every event).

        Returns:
          The :class:`~.base.Event` rows, in order.
        """
        rows = self.conn.execute(f"SELECT {self._columns} FROM events WHERE seq > ? ORDER BY seq",
                                 (after,)).fetchall()
        return [Event(*r) for r in rows]

    def put_snapshot(self, seq: int, data: bytes):
        """Keep the policy state after event ``seq`` (inside :meth:`lock`). See :class:`~.base.Storage`.

        Args:
          seq: the event after which it holds.
          data: the state's bytes.

        Returns:
          None.
        """
        self.conn.execute("INSERT OR REPLACE INTO snapshots (seq, data) VALUES (?, ?)", (int(seq), data))

    def snapshot(self):
        """``(seq, data)`` of the latest snapshot, or None. See :class:`~.base.Storage`.

        Returns:
          ``(seq, data)``, or None where none is kept.
        """
        try:
            return self.conn.execute("SELECT seq, data FROM snapshots ORDER BY seq DESC LIMIT 1").fetchone()
        except sqlite3.OperationalError:
            return None

    def integrity(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` (``"ok"`` for a sound file). See :class:`~.base.Storage`.

        Returns:
          ``"ok"``, or what is damaged.
        """
        return self.conn.execute("PRAGMA integrity_check").fetchone()[0]

    def close(self):
        """Close the connection and the lock file. See :class:`~.base.Storage`.

        Returns:
          None.
        """
        self.conn.close()
        if getattr(self, "_gate", None) is not None:
            os.close(self._gate)
            self._gate = None


def _read_only(folder: str) -> bool:
    """Whether ``folder`` cannot be written: a read-only mount (root writes anywhere else), or no permission."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY) or not os.access(folder, os.W_OK)
    except OSError:
        return False
