"""mb.Study when its storage cannot keep a step: a read-only folder, a full disk (simulated ENOSPC, and a real full
tmpfs where mounting works), a study.db of a newer format, and two Study.create of different specs racing on one
folder. Each ends in one line; nothing acknowledged is lost and nothing refused is written."""
import errno
import os
import sqlite3
import subprocess
import sys
import time

import pytest

import mobandit_jax as mb
from mobandit_jax.study.storage import StorageError
from mobandit_jax.study.storage.sqlite import SqliteStorage

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _spec(horizon=100_000, arms=6):
    return {"study": {"arms": [f"m{i}" for i in range(arms)], "objectives": ["acc", "speed"], "horizon": horizon},
            "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "policies": [{"name": "prefucb"}]}


def _one_line(err) -> str:
    message = str(err.value)
    assert "\n" not in message and message
    return message


@pytest.fixture
def tmpfs(tmp_path):
    """A fresh tmpfs of 64 MiB at ``tmp_path / "mnt"`` and a function remounting it with other options; skipped,
    saying why, where this process cannot mount one."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    out = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if out.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {out.stderr.strip()}")

    def remount(options):
        subprocess.run(["mount", "-o", f"remount,{options}", str(mnt)], check=True, capture_output=True)

    yield mnt, remount
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


class _FullDisk(SqliteStorage):
    """SQLite whose appends raise ENOSPC while ``full`` (the error a write on a full disk gets)."""

    full = False

    def append(self, *args, **kwargs):
        if self.full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().append(*args, **kwargs)


def test_enospc_is_one_line_and_not_acknowledged(tmp_path):
    store = _FullDisk(tmp_path / "s", create=True)
    study = mb.Study.create(None, _spec(), seed=0, storage=store)
    (a,) = study.ask()
    study.tell(a, [0.5, 0.5])
    (b,) = study.ask()
    before = study.status()
    store.full = True
    with pytest.raises(StorageError) as err:
        study.tell(b, [0.25, 0.75])
    assert "No space left on device" in _one_line(err) and str(tmp_path / "s") in _one_line(err)
    with pytest.raises(StorageError):
        study.ask(2)
    assert study.status() == before  # the refused tell and asks were not applied in memory either
    assert mb.Study.load(tmp_path / "s").status() == before
    store.full = False
    study.tell(b, [0.25, 0.75])  # the ticket was still pending: told now, once
    again = mb.Study.load(tmp_path / "s")
    assert again.status()["told"] == 2 and again.status()["pending"] == 0
    assert [e.kind for e in again._store.events()] == ["ask", "tell", "ask", "tell"]


def test_full_tmpfs_is_one_line_and_loses_nothing(tmpfs):
    mnt, remount = tmpfs
    remount("size=600k")
    study = mb.Study.create(mnt / "s", _spec(), seed=0)
    acknowledged, refused = [], None
    for _ in range(5000):
        try:
            (t,) = study.ask()
            study.tell(t, [0.5, 0.5])
            acknowledged.append(t.id)
        except StorageError as bad:
            refused = str(bad)
            break
    assert refused is not None, "the 600 KiB tmpfs never filled"
    assert "\n" not in refused and "full" in refused and "study.db" in refused
    status = study.status()
    assert status["told"] == len(acknowledged)
    remount("size=64m")
    assert mb.Study.load(mnt / "s").status() == status
    hist = mb.Study.load(mnt / "s").history().set_index("ticket")
    assert (hist.loc[acknowledged, "state"] == "told").all()
    (t,) = study.ask()  # the same object goes on once there is room
    study.tell(t, [0.5, 0.5])
    again = mb.Study.load(mnt / "s")
    assert again.status()["told"] == len(acknowledged) + 1 and again._store.integrity() == "ok"


def test_read_only_folder_reads_and_refuses_writes_in_one_line(tmpfs):
    mnt, remount = tmpfs
    study = mb.Study.create(mnt / "s", _spec(), seed=0)
    for t in study.ask(4):
        study.tell(t, [0.25, 0.5])
    (pending,) = study.ask()
    status, best, hist = study.status(), study.recommend(), study.history()
    study.close()
    remount("ro")
    ro = mb.Study.load(mnt / "s")
    assert ro.status() == status and ro.recommend() == best and ro.history().equals(hist)
    for call in (lambda: ro.ask(), lambda: ro.tell(pending, [0.5, 0.5]), lambda: ro.fail(pending)):
        with pytest.raises(StorageError) as err:
            call()
        assert "study.db" in _one_line(err) and "read-only" in _one_line(err)
    assert ro.status() == status
    with pytest.raises(StorageError) as err:
        mb.Study.create(mnt / "other", _spec(), seed=0)
    assert "other" in _one_line(err)
    remount("rw")
    assert mb.Study.load(mnt / "s").status() == status


def test_newer_format_is_refused_in_one_line(tmp_path):
    study = mb.Study.create(tmp_path / "s", _spec(), seed=0)
    (t,) = study.ask()
    study.tell(t, [0.5, 0.5])
    status = study.status()
    study.close()
    con = sqlite3.connect(tmp_path / "s" / "study.db")
    con.execute("UPDATE meta SET value = '7' WHERE key = 'version'")
    con.commit()
    with pytest.raises(StorageError) as err:
        mb.Study.load(tmp_path / "s")
    assert "format version 7" in _one_line(err) and "upgrade mobandit_jax" in _one_line(err)
    with pytest.raises(StorageError):
        mb.Study.create(tmp_path / "s", _spec(), seed=0)
    env = {**os.environ, "PYTHONPATH": ROOT, "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-m", "mobandit_jax.cli", "study", "status", str(tmp_path / "s")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1 and "format version 7" in out.stderr
    con.execute("UPDATE meta SET value = '3' WHERE key = 'version'")  # nothing else was touched
    con.commit()
    con.close()
    assert mb.Study.load(tmp_path / "s").status() == status


RACE = """
import sys, time, mobandit_jax as mb
from mobandit_jax.study.policy import build
from mobandit_jax.study.spec import load_spec
spec = {"study": {"arms": ["a", "b", "c"], "objectives": ["acc", "speed"], "horizon": int(sys.argv[2])},
        "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "policies": [{"name": "prefucb"}]}
build(load_spec(spec))  # JAX loaded and the policy built before the start
time.sleep(max(0.0, float(sys.argv[3]) - time.time()))
try:
    mb.Study.create(sys.argv[1], spec, seed=0)
    print("created")
except mb.StudyError as err:
    print("refused", err)
"""


def test_racing_creates_of_different_specs(tmp_path):
    env = {**os.environ, "PYTHONPATH": ROOT, "JAX_PLATFORMS": "cpu"}
    for trial in range(2):
        path = tmp_path / f"s{trial}"
        start = f"{time.time() + 8:.3f}"
        procs = [subprocess.Popen([sys.executable, "-c", RACE, str(path), str(horizon), start], env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for horizon in (100, 200)]
        outs = [p.communicate(timeout=180) for p in procs]
        assert all(p.returncode == 0 for p in procs), [o[1][-500:] for o in outs]
        lines = [o[0].strip() for o in outs]
        assert sorted(line.split()[0] for line in lines) == ["created", "refused"], lines
        refusal = next(line for line in lines if line.startswith("refused"))
        assert "holds another study" in refusal and "\n" not in refusal
        winner = [100, 200][[line.split()[0] for line in lines].index("created")]
        study = mb.Study.load(path)
        assert study.spec.horizon == winner and study._store.integrity() == "ok" and study._store.events() == []
