"""Interrupts: SIGINT / SIGTERM stop a run with one line and exit 130 / 143, keeping finished chunks;
SIGKILL at random moments, then a resume, gives the byte-identical summary of an uninterrupted run."""
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from _tiny_spec import tiny_spec
from mobandit_jax.runner import run_folder as results
from mobandit_jax.runner.cli import main

CHUNKS = 8


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A spec of 8 one-seed chunks, its uninterrupted summary, and a JAX compile cache for the subprocesses."""
    base = tmp_path_factory.mktemp("interrupts")
    spec = tiny_spec(base / "tiny.toml", horizon=1500, seeds=CHUNKS, chunk=1, record_every=100)
    assert main(["run", str(spec), "--out", str(base / "reference"), "--quiet"]) == 0
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(base / "cache"),
           "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    return spec, (base / "reference" / "summary.json").read_bytes(), env


def _start(spec, out, env):
    return subprocess.Popen([sys.executable, "-m", "mobandit_jax.runner.cli", "run", str(spec), "--out", str(out),
                             "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _chunks(out):
    return sorted((out / "chunks").glob("chunk_*.npz")) if (out / "chunks").is_dir() else []


def _wait_for_chunks(proc, out, n, timeout=60.0):
    end = time.time() + timeout
    while len(_chunks(out)) < n and proc.poll() is None and time.time() < end:
        time.sleep(0.02)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_stops_with_one_line_and_keeps_chunks(setup, tmp_path, signum):
    spec, reference, env = setup
    out = tmp_path / "run"
    proc = _start(spec, out, env)
    _wait_for_chunks(proc, out, 2)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    kept = sum(results.read_chunk_identity(p) is not None for p in _chunks(out))
    assert proc.returncode == 128 + signum, err
    assert err.strip().splitlines() == [f"interrupted: {kept}/{CHUNKS} chunks kept; run the same command to resume"]
    assert 2 <= kept < CHUNKS and "Traceback" not in err
    assert main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    assert (out / "summary.json").read_bytes() == reference


def test_sigkill_at_random_moments_then_resume_gives_the_same_summary(setup, tmp_path):
    spec, reference, env = setup
    out = tmp_path / "run"
    rng = random.Random(14)
    killed = 0
    for attempt in range(3):
        proc = _start(spec, out, env)
        _wait_for_chunks(proc, out, min(CHUNKS - 1, len(_chunks(out)) + 1))
        time.sleep(rng.uniform(0.0, 0.3))  # mid-chunk, mid-write or mid-merge
        proc.kill()
        killed += proc.wait() == -signal.SIGKILL
    assert killed >= 1
    assert main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    assert (out / "summary.json").read_bytes() == reference
    assert not list(out.rglob(".*.tmp"))
