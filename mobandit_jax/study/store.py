"""A study's append-only events table, in SQLite (the default) or PostgreSQL.

Every event (``ask``, ``tell``, ``fail``, ``abandon``) is one row, written in its own transaction that is committed
before the call that wrote it returns, so a process killed at any moment leaves whole events only. A study's state is
the replay of its events (:mod:`.study`); a writer holds the table's write lock (SQLite ``BEGIN IMMEDIATE``, a
PostgreSQL transaction-scoped advisory lock) while it reads the events it has not seen, decides, and appends, so
several processes (or hosts, with PostgreSQL) share one study without handing out a ticket twice.

SQLite: ``DIR/study.db`` in WAL mode (readers do not block the writer), a 60 s busy timeout, and ``synchronous =
NORMAL``: a committed event survives the process that wrote it being killed at any moment (it is in the WAL file);
an operating-system crash or power loss may lose the last few commits, never leave half an event (``synchronous =
FULL``, an fsync per event, costs several milliseconds a commit: set ``MOBANDIT_STUDY_FSYNC=1`` for it).
PostgreSQL: a ``postgresql://`` path (the ``postgres`` extra, ``psycopg``); its tables are named after the
address's ``study`` query parameter (default ``mobandit``), so one database holds several studies.
"""
from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
import urllib.parse
from typing import NamedTuple

from .errors import StudyError

DB_NAME = "study.db"
VERSION = "1"


class Event(NamedTuple):
    """One row: its sequence number, kind, ticket id, worker, arm (or the first of a slate), slate (arm indices, JSON
    text, or None), told values (JSON text, or None), cost, and the time it was written (seconds since the epoch)."""

    seq: int
    kind: str
    ticket: str
    worker: str | None
    arm: int
    slate: str | None
    vals: str | None
    cost: float | None
    at: float


COLUMNS = "seq, kind, ticket, worker, arm, slate, vals, cost, at"


def _row(seq, kind, ticket, worker, arm, slate, vals, cost) -> tuple:
    return (int(seq), kind, ticket, worker, int(arm), None if slate is None else json.dumps([int(a) for a in slate]),
            None if vals is None else json.dumps(vals), cost, time.time())


def is_postgres(path) -> bool:
    """Whether ``path`` names a PostgreSQL study (``postgresql://`` or ``postgres://``)."""
    return str(path).startswith(("postgresql://", "postgres://"))


def open_store(path, create: bool = False):
    """The store of the study at ``path`` (a folder, or a ``postgresql://`` address).

    Args:
      path: the study's folder or address.
      create: make the folder and tables (an existing study is opened as it is; :meth:`meta` tells whose it is).

    Returns:
      A :class:`SqliteStore` or :class:`PostgresStore`.
    """
    if is_postgres(path):
        return PostgresStore(str(path), create)
    return SqliteStore(str(path), create)


class SqliteStore:
    """The events of a study in ``DIR/study.db`` (module docstring)."""

    def __init__(self, folder: str, create: bool):
        self.folder = folder
        db = os.path.join(folder, DB_NAME)
        if create:
            os.makedirs(folder, exist_ok=True)
        elif not os.path.exists(db):
            raise StudyError(f"no study at {folder!r} (no {DB_NAME}); create one with `mobandit study new SPEC DIR`")
        self.path = db
        self.conn = sqlite3.connect(db, timeout=60.0, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=" + ("FULL" if os.environ.get("MOBANDIT_STUDY_FSYNC") == "1"
                                                               else "NORMAL"))
        if create:
            with self.lock():
                self.conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
                self.conn.execute("CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                                  "kind TEXT NOT NULL, ticket TEXT NOT NULL, worker TEXT, arm INTEGER NOT NULL, "
                                  "slate TEXT, vals TEXT, cost REAL, at REAL NOT NULL)")
                self.conn.execute("CREATE TABLE IF NOT EXISTS snapshots (seq INTEGER PRIMARY KEY, data BLOB NOT NULL)")

    @contextlib.contextmanager
    def lock(self):
        """A write transaction: the events read and appended inside it are one atomic step."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def meta(self) -> dict:
        """The study's ``meta`` rows (``spec``, ``seed``, ``version``); empty for a new store."""
        try:
            return dict(self.conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.OperationalError:
            return {}

    def set_meta(self, values: dict):
        """Write ``meta`` rows (inside :meth:`lock`)."""
        self.conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)", list(values.items()))

    def append(self, seq, kind, ticket, worker, arm, slate=None, vals=None, cost=None) -> Event:
        """Append event ``seq`` (inside :meth:`lock`, the next after the last one read: a writer that has not read
        every event fails on the primary key instead of writing)."""
        row = _row(seq, kind, ticket, worker, arm, slate, vals, cost)
        self.conn.execute(f"INSERT INTO events ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
        return Event(*row)

    def events(self, after: int = 0) -> list:
        """The events after sequence number ``after``, in order."""
        rows = self.conn.execute(f"SELECT {COLUMNS} FROM events WHERE seq > ? ORDER BY seq", (after,)).fetchall()
        return [Event(*r) for r in rows]

    def put_snapshot(self, seq: int, data: bytes):
        """Keep the policy state after event ``seq`` (inside :meth:`lock`)."""
        self.conn.execute("INSERT OR REPLACE INTO snapshots (seq, data) VALUES (?, ?)", (int(seq), data))

    def snapshot(self):
        """``(seq, data)`` of the latest snapshot, or None."""
        try:
            return self.conn.execute("SELECT seq, data FROM snapshots ORDER BY seq DESC LIMIT 1").fetchone()
        except sqlite3.OperationalError:
            return None

    def integrity(self) -> str:
        """SQLite's ``PRAGMA integrity_check`` (``"ok"`` for a sound file)."""
        return self.conn.execute("PRAGMA integrity_check").fetchone()[0]

    def close(self):
        """Close the connection."""
        self.conn.close()


class PostgresStore:
    """The events of a study in a PostgreSQL database (module docstring); needs ``psycopg`` (``pip install
    mobandit_jax[postgres]``)."""

    def __init__(self, url: str, create: bool):
        try:
            import psycopg
        except ImportError:
            raise StudyError("a postgresql:// study needs psycopg: pip install 'mobandit_jax[postgres]'") from None
        parts = urllib.parse.urlsplit(url)
        query = urllib.parse.parse_qs(parts.query)
        name = query.pop("study", ["mobandit"])[0]
        if not name.replace("_", "").isalnum():
            raise StudyError(f"study = {name!r} in the address: use letters, digits and '_'")
        self.folder = url
        self.prefix = name
        dsn = urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query, doseq=True)))
        try:
            self.conn = psycopg.connect(dsn, autocommit=True)
        except psycopg.Error as err:
            raise StudyError(f"cannot connect to {parts.hostname}:{parts.port}: {str(err).splitlines()[0]}") from None
        self.events_t, self.meta_t, self.snap_t = f"{name}_events", f"{name}_meta", f"{name}_snapshots"
        self.key = int.from_bytes(name.encode()[:7].ljust(7, b"\0"), "big")
        if create:
            with self.lock():
                self.conn.execute(f"CREATE TABLE IF NOT EXISTS {self.meta_t} (key TEXT PRIMARY KEY, "
                                  "value TEXT NOT NULL)")
                self.conn.execute(f"CREATE TABLE IF NOT EXISTS {self.events_t} (seq BIGINT PRIMARY KEY, "
                                  "kind TEXT NOT NULL, ticket TEXT NOT NULL, worker TEXT, arm INTEGER NOT NULL, "
                                  "slate TEXT, vals TEXT, cost DOUBLE PRECISION, at DOUBLE PRECISION NOT NULL)")
                self.conn.execute(f"CREATE TABLE IF NOT EXISTS {self.snap_t} (seq BIGINT PRIMARY KEY, "
                                  "data BYTEA NOT NULL)")
        elif not self.meta():
            raise StudyError(f"no study {name!r} at {parts.hostname}:{parts.port}; create one with "
                             "`mobandit study new SPEC ADDRESS`")

    @contextlib.contextmanager
    def lock(self):
        """A write transaction holding the study's advisory lock."""
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (self.key,))
            yield self

    def meta(self) -> dict:
        """The study's ``meta`` rows; empty for a new store."""
        try:
            with self.conn.transaction():
                return dict(self.conn.execute(f"SELECT key, value FROM {self.meta_t}").fetchall())
        except Exception:  # noqa: BLE001  (no table yet)
            return {}

    def set_meta(self, values: dict):
        """Write ``meta`` rows (inside :meth:`lock`)."""
        for k, v in values.items():
            self.conn.execute(f"INSERT INTO {self.meta_t} (key, value) VALUES (%s, %s)", (k, v))

    def append(self, seq, kind, ticket, worker, arm, slate=None, vals=None, cost=None) -> Event:
        """Append event ``seq`` (inside :meth:`lock`), as :meth:`SqliteStore.append`."""
        row = _row(seq, kind, ticket, worker, arm, slate, vals, cost)
        self.conn.execute(f"INSERT INTO {self.events_t} ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)", row)
        return Event(*row)

    def events(self, after: int = 0) -> list:
        """The events after sequence number ``after``, in order."""
        rows = self.conn.execute(f"SELECT {COLUMNS} FROM {self.events_t} WHERE seq > %s ORDER BY seq",
                                 (after,)).fetchall()
        return [Event(*r) for r in rows]

    def put_snapshot(self, seq: int, data: bytes):
        """Keep the policy state after event ``seq`` (inside :meth:`lock`)."""
        self.conn.execute(f"INSERT INTO {self.snap_t} (seq, data) VALUES (%s, %s) ON CONFLICT (seq) DO NOTHING",
                          (int(seq), data))

    def snapshot(self):
        """``(seq, data)`` of the latest snapshot, or None."""
        with self.conn.transaction():
            row = self.conn.execute(f"SELECT seq, data FROM {self.snap_t} ORDER BY seq DESC LIMIT 1").fetchone()
        return None if row is None else (row[0], bytes(row[1]))

    def integrity(self) -> str:
        """``"ok"`` (PostgreSQL checks its own pages)."""
        return "ok"

    def close(self):
        """Close the connection."""
        self.conn.close()
