"""A study in a real PostgreSQL server (started on loopback in a temporary folder): the same asks as an SQLite study
told the same values, a reload, and two client processes sharing it. Skipped, with the reason, where psycopg or the
server binaries are missing or the server cannot start."""
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import mobandit_jax as mb

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'mobandit_jax[postgres]')")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _binary(name):
    found = shutil.which(name) or sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))[-1:]
    return found if isinstance(found, str) else (found[0] if found else None)


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
    out = run(pg_ctl, "-D", data, "-l", os.path.join(folder, "log"), "-w", "-o",
              f"-k {folder} -p {port} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
    if out.returncode:
        pytest.skip(f"the PostgreSQL server did not start: {out.stderr.strip().splitlines()[-1:]}")
    yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
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
    url = server + "?study=same"
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
"""


def test_two_clients_share_a_postgres_study(server):
    url = server + "?study=shared"
    mb.Study.create(url, _spec(), seed=0)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, *sys.path]), "JAX_PLATFORMS": "cpu"}
    procs = [subprocess.Popen([sys.executable, "-c", LOOP, url, "20", f"w{i}"], stdout=subprocess.PIPE, text=True,
                              env=env) for i in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    told = [line.split()[1] for out in outs for line in out.splitlines()]
    assert len(told) == 40 and len(set(told)) == 40
    study = mb.Study.load(url)
    events = study._store.events()
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert len({e.ticket for e in events if e.kind == "tell"}) == 40 == study.status()["told"]
