"""A study in a real PostgreSQL server (started on loopback in a temporary folder): the same asks as an SQLite study
told the same values, a reload, two client processes sharing it, and four clients running through three server
restarts. Skipped, with the reason, where psycopg or the server binaries are missing or the server cannot start."""
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import pytest
from _study_replay import assert_serial_replay

import mobandit_jax as mb

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'mobandit_jax[postgres]')")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _binary(name):
    found = shutil.which(name) or sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))[-1:]
    return found if isinstance(found, str) else (found[0] if found else None)


class Server(str):
    """The server's address, ``postgresql://postgres@127.0.0.1:PORT/postgres`` (other test files add ``?study=...``
    to it), with ``ctl("stop" | "start" | "restart")``; stopping is fast: open sessions are ended."""

    @property
    def url(self) -> str:
        return str(self)


@pytest.fixture(scope="module")
def server():
    initdb, pg_ctl = _binary("initdb"), _binary("pg_ctl")
    if not (initdb and pg_ctl):
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl): install Debian's postgresql package")
    folder = tempfile.mkdtemp(prefix="mobandit-pg-")
    os.chmod(folder, 0o777)
    as_user = []
    if os.geteuid() == 0:  # the server refuses to run as root
        as_user = ["runuser", "-u", "nobody", "--"]
        shutil.chown(folder, "nobody")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = os.path.join(folder, "data")
    run = lambda *cmd: subprocess.run(as_user + list(cmd), capture_output=True, text=True, timeout=120)
    out = run(initdb, "-D", data, "-A", "trust", "-U", "postgres")
    if out.returncode:
        pytest.skip(f"initdb failed: {out.stderr.strip().splitlines()[-1:]}")
    options = f"-k {folder} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off"
    out = run(pg_ctl, "-D", data, "-l", os.path.join(folder, "log"), "-w", "-o", options, "start")
    if out.returncode:
        pytest.skip(f"the PostgreSQL server did not start: {out.stderr.strip().splitlines()[-1:]}")

    def ctl(action):
        fast = [] if action == "start" else ["-m", "fast"]
        out = run(pg_ctl, "-D", data, "-l", os.path.join(folder, "log"), "-w", *fast, "-o", options, action)
        assert out.returncode == 0, out.stderr

    address = Server(f"postgresql://postgres@127.0.0.1:{port}/postgres")
    address.ctl = ctl
    yield address
    run(pg_ctl, "-D", data, "-m", "immediate", "stop")
    shutil.rmtree(folder, ignore_errors=True)


def _spec():
    return {"study": {"arms": [f"m{i}" for i in range(8)], "objectives": ["acc", "speed"], "horizon": 10_000},
            "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "policies": [{"name": "prefucb"}]}


def _drive(study, steps, rng_seed=0):
    rng = np.random.default_rng(rng_seed)
    arms = []
    for _ in range(steps):
        batch = study.ask(2)
        for t in batch:
            study.tell(t, [round(float(rng.uniform()), 3), 0.5])
            arms.append(t.index)
    return arms


def test_postgres_study_matches_sqlite(server, tmp_path):
    url = server.url + "?study=same"
    pg = mb.Study.create(url, _spec(), seed=7)
    lite = mb.Study.create(tmp_path / "s", _spec(), seed=7)
    assert _drive(pg, 10) == _drive(lite, 10)
    again = mb.Study.load(url)
    assert again.status() == lite.status() and again.recommend() == lite.recommend()
    assert [t.index for t in again.ask(3)] == [t.index for t in lite.ask(3)]
    with pytest.raises(mb.StudyError, match="another study"):
        mb.Study.create(url, _spec(), seed=8)


LOOP = """
import sys, mobandit_jax as mb
study = mb.Study.load(sys.argv[1])
for i in range(int(sys.argv[2])):
    (t,) = study.ask(worker=sys.argv[3])
    study.tell(t, [0.1 + 0.01 * (t.index % 7), 0.5])
    print("told", t.id, flush=True)
print("reconnected", study._store.epoch, flush=True)
"""


def _clients(url, n, loops):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, *sys.path]), "JAX_PLATFORMS": "cpu"}
    return [subprocess.Popen([sys.executable, "-c", LOOP, url, str(loops), f"w{i}"], stdout=subprocess.PIPE,
                             text=True, env=env) for i in range(n)]


def test_two_clients_share_a_postgres_study(server):
    url = server.url + "?study=shared"
    mb.Study.create(url, _spec(), seed=0)
    procs = _clients(url, 2, 20)
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    told = [line.split()[1] for out in outs for line in out.splitlines() if line.startswith("told")]
    assert len(told) == 40 and len(set(told)) == 40
    study = mb.Study.load(url)
    events = study._store.events()
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert len({e.ticket for e in events if e.kind == "tell"}) == 40 == study.status()["told"]


@pytest.mark.slow  # many processes or a long run: `pytest -m slow`
def test_four_clients_run_through_three_server_restarts(server):
    """Each restart ends every session (a step may lose its connection before, during or after its commit); the
    clients reconnect within the address's bound, finish, hand out no ticket twice, and the state is the serial
    replay of the events."""
    url = server.url + "?study=restarts&reconnect=60"
    mb.Study.create(url, _spec(), seed=0)
    procs = _clients(url, 4, 100)
    told, reconnects = [], []

    def read(proc):
        for line in proc.stdout:
            (told if line.startswith("told") else reconnects).append(line.split()[1])

    readers = [threading.Thread(target=read, args=(p,), daemon=True) for p in procs]
    for r in readers:
        r.start()
    at_restart = []
    for threshold in (40, 150, 260):
        deadline = time.time() + 300
        while len(told) < threshold and time.time() < deadline and all(p.poll() is None for p in procs):
            time.sleep(0.005)
        at_restart.append(len(told))
        server.ctl("restart")
    for p in procs:
        p.wait(timeout=300)
    for r in readers:
        r.join(timeout=10)
    assert [p.returncode for p in procs] == [0] * 4
    assert all(n < 400 for n in at_restart), at_restart  # every restart came while the clients were running
    assert len(told) == 400 and len(set(told)) == 400
    assert sum(int(n) for n in reconnects) >= 3, reconnects  # the restarts did break the clients' connections
    study = mb.Study.load(url)
    events = study._store.events()
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    asks = [e.ticket for e in events if e.kind == "ask"]
    tells = [e.ticket for e in events if e.kind == "tell"]
    assert len(asks) == len(set(asks)) == 400 and sorted(tells) == sorted(asks) == sorted(told)
    assert study.status()["told"] == 400 and study.status()["pending"] == 0
    assert_serial_replay(study)


def test_unreachable_server_is_one_line(server):
    """Past the reconnect bound, one line names the server; the refused tell was not acknowledged."""
    url = server.url + "?study=gone&reconnect=0.5"
    study = mb.Study.create(url, _spec(), seed=0)
    (t,) = study.ask()
    server.ctl("stop")
    try:
        start = time.monotonic()
        with pytest.raises(mb.StudyError) as err:
            study.tell(t, [0.5, 0.5])
        assert time.monotonic() - start < 15
    finally:
        server.ctl("start")
    message = str(err.value)
    assert "\n" not in message and "127.0.0.1" in message and "reconnect" in message
    again = mb.Study.load(url)
    assert again.status()["told"] == 0 and again.status()["pending"] == 1


def _lose_connection_once(store, *, after_commit, meanwhile=lambda: None):
    """The next step's commit loses its connection: after committing (its acknowledgement lost) or before, with
    ``meanwhile()`` run once the connection (and the lock) is gone."""
    commit, fired = store._commit, []

    def lost():
        if fired:  # the step's retry after reconnecting
            return commit()
        fired.append(True)
        if after_commit:
            commit()
        store.conn.close()
        meanwhile()
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    store._commit = lost


def test_a_commit_whose_acknowledgement_was_lost_is_not_written_again(server):
    url = server.url + "?study=lostack"
    study = mb.Study.create(url, _spec(), seed=0)
    (t,) = study.ask()
    _lose_connection_once(study._store, after_commit=True)
    study.tell(t, [0.5, 0.25])
    del study._store._commit  # the class's own again
    assert study._store.epoch == 1  # it reconnected once
    events = mb.Study.load(url)._store.events()
    assert [(e.seq, e.kind, e.ticket) for e in events] == [(1, "ask", t.id), (2, "tell", t.id)]
    assert study.status()["told"] == 1 and study.status()["pending"] == 0


def test_a_step_overtaken_while_reconnecting_is_decided_again(server):
    """A's ask loses its connection before its commit; B asks and tells meanwhile; A's ask is decided again on B's
    events (a new ticket, after B's), and A's state is the serial replay."""
    url = server.url + "?study=overtaken"
    a = mb.Study.create(url, _spec(), seed=0)
    b = mb.Study.load(url)
    taken = []

    def b_works():
        (t,) = b.ask(worker="b")
        b.tell(t, [0.75, 0.5])
        taken.append(t)

    _lose_connection_once(a._store, after_commit=False, meanwhile=b_works)
    (mine,) = a.ask(worker="a")
    del a._store._commit  # the class's own again
    (theirs,) = taken
    assert mine.id != theirs.id and (theirs.id, mine.id) == ("t1", "t2")  # decided again after B's ticket
    events = a._store.events()
    assert [(e.kind, e.worker) for e in events] == [("ask", "b"), ("tell", "b"), ("ask", "a")]
    a.tell(mine, [0.25, 0.25])
    assert a.status() == mb.Study.load(url).status() and a.status()["told"] == 2
    assert_serial_replay(a)
