"""Run folders: a file or a foreign folder is refused untouched, chunks carry their identity and are
never merged into another run, fewer seeds give exactly those seeds, precision is part of the run,
and result files get the mode the umask allows."""
import json
import os
import shutil
import stat
import subprocess
import sys

import numpy as np
import pytest
from _tiny_spec import tiny_spec

from mobandit_jax.cli import main
from mobandit_jax.runner import execution, plans, run_folder
from mobandit_jax.runner import run_folder as results


def _run(capsys, *args):
    code = main(["run", *map(str, args), "--quiet"])
    return code, capsys.readouterr().err.strip().splitlines()


def _snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    """A finished 6-seed, 3-chunk run and its spec file."""
    base = tmp_path_factory.mktemp("done")
    spec = tiny_spec(base / "tiny.toml")
    assert main(["run", str(spec), "--out", str(base / "run"), "--quiet"]) == 0
    return spec, base / "run"


def test_out_naming_a_file_is_refused(tmp_path, capsys, done):
    target = tmp_path / "notes.txt"
    target.write_text("mine")
    code, err = _run(capsys, done[0], "--out", target)
    assert code == 2 and len(err) == 1 and str(target) in err[0] and "is a file" in err[0]
    assert target.read_text() == "mine"


def test_foreign_folder_is_refused_untouched(tmp_path, capsys, done):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "summary.json").write_text('{"my": "numbers"}')
    (folder / "report.md").write_text("# my report")
    before = _snapshot(folder)
    code, err = _run(capsys, done[0], "--out", folder)
    assert code == 2 and len(err) == 1 and str(folder) in err[0] and "run.json" in err[0]
    assert _snapshot(folder) == before


def test_deleted_marker_and_another_spec_merges_nothing(tmp_path, capsys, done):
    folder = tmp_path / "reused"
    shutil.copytree(done[1], folder)
    (folder / "run.json").unlink()
    before = _snapshot(folder)
    other = tiny_spec(tmp_path / "other.toml", horizon=80)
    code, err = _run(capsys, other, "--out", folder)
    assert code == 2 and len(err) == 1 and "not a run folder" in err[0]
    assert _snapshot(folder) == before


def test_chunk_of_another_experiment_is_never_merged(tmp_path, capsys, done):
    other_run = tmp_path / "other"
    assert _run(capsys, tiny_spec(tmp_path / "other.toml", horizon=80), "--out", other_run)[0] == 0
    folder = tmp_path / "mixed"
    shutil.copytree(done[1], folder)
    shutil.copy(results.chunk_path(other_run, 1), results.chunk_path(folder, 1))
    summary = (folder / "summary.json").read_bytes()
    code, err = _run(capsys, done[0], "--out", folder)
    assert code == 2 and len(err) == 1 and "chunk_00001.npz belongs to another experiment" in err[0]
    assert (folder / "summary.json").read_bytes() == summary
    ident = results.read_chunk_identity(results.chunk_path(done[1], 1))
    assert ident["seeds"] == [2, 4] and ident["chunk"] == 2 and ident["precision"] == "float32"


def test_fewer_seeds_on_a_bigger_run_give_exactly_those_seeds(tmp_path, capsys, done):
    folder = tmp_path / "run"
    shutil.copytree(done[1], folder)
    with np.load(done[1] / "finals.npz") as z:
        full = {k: z[k] for k in z.files}
    for seeds in (3, 2):  # 3 ends inside chunk 1 (a 1-seed chunk replaces the 2-seed one on disk)
        assert _run(capsys, done[0], "--out", folder, "--seeds", seeds)[0] == 0
        records = json.loads((folder / "summary.json").read_text())["records"]
        assert {r["n"] for r in records} == {seeds}
        for r in records:
            key = next(k for k in full if k.startswith(f"{r['policy']}|") and k.endswith(f"|{r['metric']}"))
            np.testing.assert_allclose(r["mean"], np.mean(full[key][:seeds]), rtol=1e-12)
    assert _run(capsys, done[0], "--out", folder)[0] == 0  # back to 6 seeds: the first run's numbers
    assert (folder / "summary.json").read_bytes() == (done[1] / "summary.json").read_bytes()


def test_half_written_files_are_never_read_as_chunks(tmp_path, capsys, done):
    folder = tmp_path / "run"
    shutil.copytree(done[1], folder)
    stale = folder / "chunks" / ".chunk_00001.npz.abc123.tmp"
    stale.write_bytes(b"PK\x03\x04 partial")
    chunk = results.chunk_path(folder, 2)
    chunk.write_bytes(chunk.read_bytes()[:100])  # truncated, as if written in place and killed
    (folder / "summary.json").unlink()
    assert _run(capsys, done[0], "--out", folder)[0] == 0
    assert not stale.exists() and results.read_chunk_identity(chunk) is not None
    assert (folder / "summary.json").read_bytes() == (done[1] / "summary.json").read_bytes()


def test_result_files_have_the_mode_the_umask_allows(tmp_path, capsys, done):
    old = os.umask(0o022)
    try:
        assert _run(capsys, done[0], "--out", tmp_path / "run")[0] == 0
        os.umask(0o077)
        results.write_json(tmp_path / "private.json", {})
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "run").rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"summary.json", "curves.npz", "finals.npz", "grid.json", "run.json", "report.md",
            "chunk_00000.npz"} <= names
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in files} == {p.name: 0o644 for p in files}
    assert stat.S_IMODE((tmp_path / "private.json").stat().st_mode) == 0o600


def test_precision_is_part_of_the_run(tmp_path, capsys, monkeypatch, done):
    folder = tmp_path / "f64"
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-m", "mobandit_jax.cli", "run", str(done[0]), "--out", str(folder),
                           "--quiet", "--x64"], capture_output=True, text=True, env=env)  # global option after run
    assert proc.returncode == 0, proc.stderr
    assert json.loads((folder / "run.json").read_text())["precision"] == "float64"
    assert results.read_chunk_identity(results.chunk_path(folder, 0))["precision"] == "float64"
    summary = (folder / "summary.json").read_bytes()
    code, err = _run(capsys, done[0], "--out", folder)  # this process computes in float32
    assert code == 2 and len(err) == 1 and "holds a float64 run" in err[0] and "float32" in err[0]
    assert (folder / "summary.json").read_bytes() == summary
    monkeypatch.setattr(run_folder, "precision", lambda: "float64")  # as under --x64, without changing JAX
    code, err = _run(capsys, done[0], "--out", done[1])
    assert code == 2 and len(err) == 1 and "holds a float32 run" in err[0] and "with --x64" not in err[0]


def test_chunk_writes_on_their_thread_are_waited_for_and_their_errors_stop_the_run(tmp_path, monkeypatch):
    from mobandit_jax.runner import spec as config

    plan = plans.build(config.load(tiny_spec(tmp_path / "tiny.toml")))  # 3 chunks of 2 seeds
    write, run_seeds, calls = results.write_chunk, execution.run_seeds, []

    def slow_write(path, arrays, ident):  # still writing when the next chunk fails
        import time

        time.sleep(0.5)
        write(path, arrays, ident)

    def failing_second_chunk(*args):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return run_seeds(*args)

    monkeypatch.setattr(results, "write_chunk", slow_write)
    monkeypatch.setattr(execution, "run_seeds", failing_second_chunk)
    with pytest.raises(KeyboardInterrupt):
        execution.execute(plan, tmp_path / "run", progress=False)
    assert run_folder.chunks_kept(plan, tmp_path / "run") == (1, 3)  # the first chunk was computed: it is kept

    def full_disk(path, arrays, ident):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results, "write_chunk", full_disk)
    monkeypatch.setattr(execution, "run_seeds", run_seeds)
    with pytest.raises(OSError, match="No space left"):
        execution.execute(plan, tmp_path / "run", progress=False)
    assert run_folder.chunks_kept(plan, tmp_path / "run") == (1, 3)
