"""The storage seam of mb.Study: a user's own backend (a JSON-lines file, written here against the documented protocol)
and the in-memory one run a study end to end, with a reload in the middle, making the asks and recommendations of
an SQLite study told the same values; the user's backend survives its writer killed with SIGKILL; a version-1
study.db still loads; a backend lacking members is refused."""
import contextlib
import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest

import mobandit_jax as mb
from mobandit_jax.study.storage import MEMBERS, Event, new_event
from mobandit_jax.study.storage.memory import MemoryStorage
from mobandit_jax.study.storage.sqlite import SqliteStorage


class JsonLinesStorage:
    """A user's backend: ``events.jsonl`` (one event a line, appended and fsynced when a step ends; a last line cut
    short by a crash is not an event, and the next step cuts it off) and ``meta.json`` in a folder; a step holds an
    exclusive ``flock`` on ``lock``. It keeps no snapshots."""

    def __init__(self, folder):
        os.makedirs(folder, exist_ok=True)
        self.address = str(folder)
        self._log, self._meta = os.path.join(folder, "events.jsonl"), os.path.join(folder, "meta.json")
        self._lockfile = os.path.join(folder, "lock")
        self._step = None

    @contextlib.contextmanager
    def lock(self):
        with open(self._lockfile, "a") as held:
            fcntl.flock(held, fcntl.LOCK_EX)
            self._step = ([], {})
            try:
                yield self
                events, meta = self._step
                if meta:
                    with open(self._meta + ".tmp", "w") as out:
                        json.dump({**self.meta(), **meta}, out)
                    os.replace(self._meta + ".tmp", self._meta)
                if events:
                    self._cut_partial_line()
                    with open(self._log, "a") as out:
                        out.write("".join(json.dumps(list(e)) + "\n" for e in events))
                        out.flush()
                        os.fsync(out.fileno())
            finally:
                self._step = None

    def _cut_partial_line(self):
        if os.path.exists(self._log):
            with open(self._log, "rb+") as f:
                data = f.read()
                f.truncate(data.rfind(b"\n") + 1)

    def meta(self):
        if not os.path.exists(self._meta):
            return {}
        with open(self._meta) as f:
            return json.load(f)

    def set_meta(self, values):
        self._step[1].update(values)

    def append(self, seq, kind, ticket, worker, arm, slate=None, vals=None, cost=None, attrs=None):
        ev = new_event(seq, kind, ticket, worker, arm, slate, vals, cost, attrs)
        if ev.seq != len(self.events()) + len(self._step[0]) + 1:
            raise mb.StudyError(f"event {ev.seq} is not the next one")
        self._step[0].append(ev)
        return ev

    def events(self, after=0):
        if not os.path.exists(self._log):
            return []
        with open(self._log) as f:
            lines = f.read().split("\n")[:-1]  # whole lines only
        return [Event(*json.loads(line)) for line in lines][after:]

    def put_snapshot(self, seq, data):
        pass

    def snapshot(self):
        return None

    def integrity(self):
        seqs = [e.seq for e in self.events()]
        return "ok" if seqs == list(range(1, len(seqs) + 1)) else "gap"

    def close(self):
        pass


def _spec():
    return {"study": {"arms": [f"m{i}" for i in range(6)], "objectives": ["acc", "speed"], "horizon": 40},
            "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "policies": [{"name": "prefucb"}]}


def _drive(open_study, rounds=14):
    """Ask two at a time and tell seeded values; reopen the study (``open_study(False)``) half way."""
    rng = np.random.default_rng(0)
    study, asked = open_study(True), []
    for r in range(rounds):
        if r == rounds // 2:
            study.close()
            study = open_study(False)
        batch = study.ask(2, worker="w")
        if r == 3:  # one failed evaluation: its arm is asked again
            study.fail(batch.pop())
        for t in batch:
            study.tell(t, [round(float(rng.uniform()), 3), round(float(rng.uniform()), 3)])
        asked.append([t.index for t in batch])
    return study, asked


def test_users_backend_and_memory_make_sqlites_study(tmp_path):
    def open_lite(new):
        return mb.Study.create(tmp_path / "lite", _spec(), seed=4) if new else mb.Study.load(tmp_path / "lite")

    memory, users = MemoryStorage(), {}

    def open_memory(new):
        return mb.Study.create(None, _spec(), seed=4, storage=memory) if new else mb.Study.load(None, storage=memory)

    def open_users(new):  # a new backend instance on the same files, as a restarted process would make
        users["last"] = JsonLinesStorage(tmp_path / "jsonl")
        if new:
            return mb.Study.create(None, _spec(), seed=4, storage=users["last"])
        return mb.Study.load(None, storage=users["last"])

    lite, want = _drive(open_lite)
    for open_study in (open_memory, open_users):
        study, asked = _drive(open_study)
        assert asked == want
        assert study.recommend() == lite.recommend() and study.status() == lite.status()
        a, b = study.history(), lite.history()
        assert a["ticket"].tolist() == b["ticket"].tolist() and a["state"].tolist() == b["state"].tolist()
        assert a[["acc", "speed", "cost"]].equals(b[["acc", "speed", "cost"]])
    assert users["last"].integrity() == "ok" and len(users["last"].events()) == len(lite._store.events())
    assert [e.kind for e in users["last"].events()] == [e.kind for e in lite._store.events()]


KILLED = """
import sys
sys.path.insert(0, sys.argv[2])
import mobandit_jax as mb
from test_study_storage import JsonLinesStorage
study = mb.Study.load(None, storage=JsonLinesStorage(sys.argv[1]))
while True:
    (t,) = study.ask(worker="w")
    study.tell(t, [round(0.1 * (t.index % 7), 3), round(0.05 * (int(t.id[1:]) % 11), 3)])
    print("told", t.id, flush=True)
"""


def test_users_backend_survives_kill_9(tmp_path):
    """A writer on the user's backend killed with SIGKILL: every tell it acknowledged is there, and the reloaded study
    asks and recommends what an SQLite study told the same values does."""
    folder = tmp_path / "jsonl"
    mb.Study.create(None, _spec() | {"study": _spec()["study"] | {"horizon": 10_000}}, seed=2,
                    storage=JsonLinesStorage(folder))
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
           "JAX_PLATFORMS": "cpu"}
    proc = subprocess.Popen([sys.executable, "-c", KILLED, str(folder), os.path.dirname(os.path.abspath(__file__))],
                            stdout=subprocess.PIPE, text=True, env=env)
    told, start = [], time.time()
    while len(told) < 30 and time.time() - start < 120:
        told.append(proc.stdout.readline().split()[1])
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    study = mb.Study.load(None, storage=JsonLinesStorage(folder))
    hist = study.history().set_index("ticket")
    assert (hist.loc[told, "state"] == "told").all() and study._store.integrity() == "ok"
    lite = mb.Study.create(tmp_path / "lite", _spec() | {"study": _spec()["study"] | {"horizon": 10_000}}, seed=2)
    for e in study._store.events():
        if e.kind == "ask":
            (t,) = lite.ask(worker="w")
            assert (t.id, t.index) == (e.ticket, e.arm)
        else:
            lite.tell(e.ticket, json.loads(e.vals))
    assert study.recommend() == lite.recommend() and study.status() == lite.status()
    assert [t.index for t in study.ask(3)] == [t.index for t in lite.ask(3)]


def test_attrs_round_trip_in_every_backend(tmp_path):
    for store in (SqliteStorage(tmp_path / "a", create=True), MemoryStorage(), JsonLinesStorage(tmp_path / "b")):
        with store.lock():
            store.append(1, "ask", "t1", "w", 2)
            store.append(2, "tell", "t1", "w", 2, vals=[0.5, 0.25], cost=1.5, attrs={"gpu": "a100", "n": 3})
        first, second = store.events()
        assert first.attrs is None and first.vals is None and first.cost is None
        assert json.loads(second.attrs) == {"gpu": "a100", "n": 3} and json.loads(second.vals) == [0.5, 0.25]
        assert second.cost == 1.5 and store.events(1) == [second]


def test_version_1_study_db_loads_and_continues(tmp_path):
    """A study.db written by format 1 (no attrs column, meta version 1) loads with the same asks as one made now,
    gains the column and takes new events."""
    now = mb.Study.create(tmp_path / "now", _spec(), seed=1)
    old = tmp_path / "old"
    old.mkdir()
    con = sqlite3.connect(old / "study.db")
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, ticket TEXT NOT NULL, "
                "worker TEXT, arm INTEGER NOT NULL, slate TEXT, vals TEXT, cost REAL, at REAL NOT NULL)")
    con.execute("CREATE TABLE snapshots (seq INTEGER PRIMARY KEY, data BLOB NOT NULL)")
    con.executemany("INSERT INTO meta VALUES (?, ?)", [(k, v) for k, v in now._store.meta().items()
                                                         if k != "version"] + [("version", "1")])
    for t in now.ask(3):
        now.tell(t, [0.25, 0.75])
    con.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", [e[:9] for e in now._store.events()])
    con.commit()
    con.close()
    study = mb.Study.load(old)
    assert study.status() == now.status() and [e.attrs for e in study._store.events()] == [None] * 6
    assert [t.index for t in study.ask(2)] == [t.index for t in now.ask(2)]
    assert "attrs" in [r[1] for r in study._store.conn.execute("PRAGMA table_info(events)")]


def test_a_backend_lacking_members_is_refused(tmp_path):
    class Partial:
        address = "partial"

        def events(self, after=0):
            return []

    with pytest.raises(mb.StudyError) as err:
        mb.Study.create(None, _spec(), storage=Partial())
    message = str(err.value)
    assert "\n" not in message and "Partial" in message
    assert all(m in message for m in MEMBERS if m not in ("address", "events"))


def test_sqlite_writers_copy_the_wal_back_after_their_steps(tmp_path, monkeypatch):
    """A writer queued on study.lock checkpoints the WAL itself every CHECKPOINT_STEPS write steps (SQLite's own
    checkpoint is off): study.db alone, read without its WAL, holds every event up to the last checkpoint, and the
    study with its WAL holds them all."""
    from mobandit_jax.study.storage import sqlite as sqlite_storage

    monkeypatch.setattr(sqlite_storage, "CHECKPOINT_STEPS", 4)
    study = mb.Study.create(tmp_path / "s", _spec(), seed=0)
    assert study.storage.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    for i in range(10):
        (t,) = study.ask()
        study.tell(t, [0.1 * (i % 3), 0.2])
    steps = study.storage._commits  # the tables, the meta row, then one step an event
    assert steps == 22
    alone = sqlite3.connect(f"file:{tmp_path / 's' / 'study.db'}?mode=ro&immutable=1", uri=True)
    seqs = [r[0] for r in alone.execute("SELECT seq FROM events ORDER BY seq")]
    alone.close()
    assert seqs == list(range(1, steps // 4 * 4 - 2 + 1))  # 20 steps checkpointed: the tables, the meta, 18 events
    assert len(study.storage.events()) == 20 and mb.Study.load(tmp_path / "s").status()["told"] == 10
