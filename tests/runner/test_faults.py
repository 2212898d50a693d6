"""Faults around a run folder: two runs on one folder, links, edited data, killed workers, a full disk.

Each ends in a correct result or one line (exit 2, no traceback), and nothing that existed before is lost.
"""
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _tiny_spec import tiny_spec

from mobandit_jax.cli import main
from mobandit_jax.runner import run_folder

TABLE = "name,quality,speed\nA,0.9,0.2\nB,0.3,0.8\nC,0.5,0.5\nD,0.2,0.1\n"
TABLE_SPEC = """
[experiment]
horizon = 60
seeds = 4
chunk = 1
record_every = 20

[env]
kind = "table"
path = "models.csv"
arm = "name"
objectives = ["quality", "speed"]
noise = "bernoulli"

[preference]
W = [[1.0, 0.0], [0.0, 1.0]]

[[policies]]
name = "prefucb"
"""


def _env():
    return {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}


def _cmd(spec, out, *more):
    return [sys.executable, "-m", "mobandit_jax.cli", "run", str(spec), "--out", str(out), "--quiet", *more]


def _one_line(proc_or_err):
    lines = proc_or_err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc_or_err, proc_or_err
    return lines[0]


def test_a_second_run_on_a_folder_being_written_is_refused_and_the_first_finishes(tmp_path):
    spec = tiny_spec(tmp_path / "tiny.toml", horizon=30000, seeds=8, chunk=1, record_every=10000)
    out = tmp_path / "run"
    first = subprocess.Popen(_cmd(spec, out, "--workers", "off"), env=_env(), stderr=subprocess.PIPE, text=True)
    end = time.time() + 120
    while not (out / "chunks").is_dir() and first.poll() is None and time.time() < end:
        time.sleep(0.05)
    second = subprocess.run(_cmd(spec, out, "--workers", "off"), env=_env(), capture_output=True, text=True,
                            timeout=300)
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert second.returncode == 2 and "being written by another mobandit run" in _one_line(second.stderr)
    assert main(["run", str(spec), "--out", str(tmp_path / "ref"), "--quiet"]) == 0
    assert (out / "summary.json").read_bytes() == (tmp_path / "ref" / "summary.json").read_bytes()


def test_the_lock_is_released_so_the_same_folder_runs_again_in_one_process(tmp_path):
    spec = tiny_spec(tmp_path / "tiny.toml")
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--quiet"]) == 0  # resumes: nothing to do


def test_a_data_file_edited_between_an_interrupted_run_and_its_resume_is_refused(tmp_path, capsys):
    (tmp_path / "models.csv").write_text(TABLE)
    spec = tmp_path / "spec.toml"
    spec.write_text(TABLE_SPEC)
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    for path in sorted((out / "chunks").glob("chunk_*.npz"))[2:] + [out / "summary.json"]:
        path.unlink()  # as a run stopped after two chunks
    kept = {p.name: p.read_bytes() for p in (out / "chunks").glob("chunk_*.npz")}
    (tmp_path / "models.csv").write_text(TABLE.replace("0.9,0.2", "0.1,0.2"))
    capsys.readouterr()
    assert main(["run", str(spec), "--out", str(out), "--quiet"]) == 2
    assert "different experiment" in _one_line(capsys.readouterr().err)
    assert {p.name: p.read_bytes() for p in (out / "chunks").glob("chunk_*.npz")} == kept  # nothing merged or lost
    (tmp_path / "models.csv").write_text(TABLE)  # the data back as it was: the run resumes
    assert main(["run", str(spec), "--out", str(out), "--quiet"]) == 0


def test_out_through_links_never_touches_a_users_files(tmp_path, capsys):
    spec = tiny_spec(tmp_path / "tiny.toml")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    (mine / ".draft.tmp").write_text("keep me too")
    link = tmp_path / "link"
    link.symlink_to(mine)
    assert main(["run", str(spec), "--out", str(link), "--quiet"]) == 2  # a link to a user's folder
    assert "not a run folder" in _one_line(capsys.readouterr().err)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    assert main(["run", str(spec), "--out", str(dangling), "--quiet"]) == 2
    assert "link to nothing" in _one_line(capsys.readouterr().err)
    out = tmp_path / "run"
    assert main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    for p in (out / "chunks").glob("chunk_*.npz"):
        p.unlink()
    (out / "chunks").rmdir()
    (out / "chunks").symlink_to(mine)  # chunks/ through a link into the user's folder
    assert main(["run", str(spec), "--out", str(out), "--quiet"]) == 2
    assert "not a folder of this run" in _one_line(capsys.readouterr().err)
    (out / "chunks").unlink()
    user_file = tmp_path / "precious.json"
    user_file.write_text("precious")
    (out / "summary.json").unlink()
    (out / "summary.json").symlink_to(user_file)  # a result file that is a link: replaced, its target kept
    assert main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    assert user_file.read_text() == "precious" and not (out / "summary.json").is_symlink()
    assert sorted(p.name for p in mine.iterdir()) == [".draft.tmp", "notes.txt"]
    assert (mine / "notes.txt").read_text() == "keep me" and (mine / ".draft.tmp").read_text() == "keep me too"


def test_a_full_disk_stops_the_run_with_one_line_and_the_folder_resumes(tmp_path, capsys, monkeypatch):
    spec = tiny_spec(tmp_path / "tiny.toml")
    assert main(["run", str(spec), "--out", str(tmp_path / "ref"), "--quiet"]) == 0
    write, calls = run_folder.write_chunk, []

    def fills_up(path, arrays, identity):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device", str(path))
        write(path, arrays, identity)

    monkeypatch.setattr(run_folder, "write_chunk", fills_up)
    capsys.readouterr()
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--quiet"]) == 2
    assert "No space left on device" in _one_line(capsys.readouterr().err)
    monkeypatch.setattr(run_folder, "write_chunk", write)
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    assert (tmp_path / "run" / "summary.json").read_bytes() == (tmp_path / "ref" / "summary.json").read_bytes()


def _workers(pid):
    out = subprocess.run(["pgrep", "-P", str(pid), "-f", "multiprocessing.spawn"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


@pytest.mark.slow  # many processes or a long run: `pytest -m slow`
@pytest.mark.skipif(not Path("/proc/self/stat").exists() or os.cpu_count() < 2, reason="Linux, two cores")
def test_a_killed_worker_stops_the_run_with_one_line_and_the_run_resumes(tmp_path):
    spec = tiny_spec(tmp_path / "tiny.toml", horizon=50000, seeds=16, chunk=2, record_every=25000)
    ref = tmp_path / "ref"
    assert subprocess.run(_cmd(spec, ref, "--workers", "off", "--no-cache"), env=_env(), timeout=600).returncode == 0
    out = tmp_path / "run"
    killed = 0
    for _attempt in range(3):  # the abort at exit it guards against came one time in a few
        before = len(list(out.glob("chunks/chunk_*.npz")))
        proc = subprocess.Popen(_cmd(spec, out, "--workers", "on", "--no-cache"), env=_env(), stderr=subprocess.PIPE,
                                text=True)
        end = time.time() + 300
        while proc.poll() is None and time.time() < end and len(list(out.glob("chunks/chunk_*.npz"))) <= before:
            time.sleep(0.02)
        if proc.poll() is not None:
            break  # finished before a worker could be killed
        kids = _workers(proc.pid)
        if not kids:  # this process took the last parts before its worker was ready: the worker has left
            assert proc.wait(timeout=300) == 0
            break
        os.kill(kids[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=120)
        if proc.returncode == 0:  # the worker had handed in its last part when it was killed: nothing was lost
            assert (out / "summary.json").read_bytes() == (ref / "summary.json").read_bytes()
            shutil.rmtree(out)  # and the next try starts again, to kill a worker that still has parts
            continue
        killed += 1
        assert proc.returncode == 2, (proc.returncode, err)
        assert "worker process" in _one_line(err)
    assert killed >= 1
    proc = subprocess.run(_cmd(spec, out, "--workers", "on"), env=_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert (out / "summary.json").read_bytes() == (ref / "summary.json").read_bytes()
