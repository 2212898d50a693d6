"""Interrupts: SIGINT / SIGTERM stop a run with one line and exit 130 / 143, keeping finished chunks, also in
the middle of a long XLA compile (and stop ``mb.run`` there with a KeyboardInterrupt); SIGKILL at random
moments, then a resume, gives the byte-identical summary of an uninterrupted run."""
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from _tiny_spec import tiny_spec

from mobandit_jax.cli import main
from mobandit_jax.runner import run_folder as results

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
    return subprocess.Popen([sys.executable, "-m", "mobandit_jax.cli", "run", str(spec), "--out", str(out),
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
    for _attempt in range(3):
        proc = _start(spec, out, env)
        _wait_for_chunks(proc, out, min(CHUNKS - 1, len(_chunks(out)) + 1))
        time.sleep(rng.uniform(0.0, 0.3))  # mid-chunk, mid-write or mid-merge
        proc.kill()
        killed += proc.wait() == -signal.SIGKILL
    assert killed >= 1
    assert main(["run", str(spec), "--out", str(out), "--quiet"]) == 0
    assert (out / "summary.json").read_bytes() == reference
    assert not list(out.rglob(".*.tmp"))


SLOW_PLUGIN = '''
"""A greedy policy behind an unrolled chain of sorts and products: a program XLA takes long to compile."""
from typing import NamedTuple

import jax
import jax.numpy as jnp

import mobandit_jax as mb

LINKS = 400  # about 15 s of XLA compile on one busy core


class State(NamedTuple):
    counts: jax.Array
    sums: jax.Array


def slow_greedy(num_arms, dim):
    def init(params):
        return State(jnp.zeros(num_arms), jnp.zeros((num_arms, dim)))

    def select(key, state, params):
        x = state.counts
        for i in range(LINKS):
            x = jnp.sort(x * 1.0001 + i)[::-1] @ jnp.ones((num_arms, num_arms)) * 1e-3
        score = jnp.where(state.counts > 0, state.sums.mean(1) / jnp.maximum(state.counts, 1.0), jnp.inf)
        return jnp.argmax(score + 0.0 * jnp.tanh(x)).astype(jnp.int32)

    def update(state, action, obs, params):
        return State(state.counts.at[action].add(1.0), state.sums.at[action].add(obs.reward))

    return mb.Policy(init, select, update)


mb.register_policy("slow_greedy", "preference", slow_greedy, lambda ctx: (dict(num_arms=ctx.num_arms, dim=ctx.dim), {}),
                   doc="greedy, after a long compile")
'''


def _signal_into_compile(cmd, signum, env, into=5.0):
    """Start ``cmd``, send ``signum`` ``into`` seconds after its note ``compiling 1/1`` (stderr); return
    ``(exit status, seconds from the signal to the exit, stderr lines)``."""
    # Python's own SIGINT handler in the child, whatever the test runner inherited (a shell's background job ignores
    # SIGINT, and Python then leaves it ignored)
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    for line in proc.stderr:
        lines.append(line.rstrip("\n"))
        if line.startswith("compiling 1/1"):
            break
    time.sleep(into)
    assert proc.poll() is None, "the compile ended before the signal: make SLOW_PLUGIN's LINKS larger"
    t0 = time.monotonic()
    proc.send_signal(signum)
    rest = proc.stderr.read()  # up to the process's end
    status = proc.wait()
    return status, time.monotonic() - t0, lines + rest.splitlines()


@pytest.mark.slow  # many processes or a long run: `pytest -m slow`
def test_a_signal_five_seconds_into_a_long_compile_ends_the_run_within_two_seconds_and_it_resumes(tmp_path):
    import mobandit_jax as mb

    (tmp_path / "slow_policy.py").write_text(SLOW_PLUGIN)
    spec = tiny_spec(tmp_path / "slow.toml", horizon=200, seeds=4, chunk=2, record_every=50)
    spec.write_text(spec.read_text().replace("prefucb", "slow_greedy").replace("PrefUCB", "Slow").replace(
        "[env]", 'plugins = ["slow_policy.py"]\n\n[env]'))
    env = {**os.environ, "MOBANDIT_NO_CACHE": "1"}  # nothing compiled is kept: each process compiles
    cli = [sys.executable, "-m", "mobandit_jax.cli", "run", str(spec), "--out"]
    api = [sys.executable, "-c", "import sys, mobandit_jax as mb; mb.run(sys.argv[1], out=sys.argv[2], progress=True)",
           str(spec)]
    cases = {"run SIGINT": (cli + [str(tmp_path / "int")], signal.SIGINT),
             "run SIGTERM": (cli + [str(tmp_path / "term")], signal.SIGTERM),
             "mb.run SIGINT": (api + [str(tmp_path / "api")], signal.SIGINT)}
    with ThreadPoolExecutor(len(cases)) as pool:  # side by side: the test waits for the three at once
        ended = dict(zip(cases, pool.map(lambda c: _signal_into_compile(*c, env), cases.values()), strict=False))
    for name in ("run SIGINT", "run SIGTERM"):
        status, seconds, err = ended[name]
        assert status == 128 + cases[name][1] and seconds <= 2.0, (name, status, seconds, err)
        assert err[-1] == "interrupted: 0/2 chunks kept; run the same command to resume", (name, err)
        assert err[:-1] == ["compiling 1 program(s) for 1 device(s)...", "compiling 1/1: Slow"], (name, err)
    status, seconds, err = ended["mb.run SIGINT"]  # Python's status for an uncaught KeyboardInterrupt
    assert status == -signal.SIGINT and seconds <= 2.0, (status, seconds, err)
    assert err[-1] == f"KeyboardInterrupt: interrupted: 0/2 chunks kept in {tmp_path / 'api'}; the same " \
                      f"mb.run(..., out={str(tmp_path / 'api')!r}) resumes", err
    mb.run(spec, out=tmp_path / "term")  # resumed (a full compile); the reference then compiles from the cache
    mb.run(spec, out=tmp_path / "reference")
    assert (tmp_path / "term" / "summary.json").read_bytes() == (tmp_path / "reference" / "summary.json").read_bytes()


def test_a_ctrl_c_ends_the_process_at_once_while_the_writers_are_still_being_imported(tmp_path):
    """``mb.run``'s process ends on Ctrl-C with Python's uncaught ``KeyboardInterrupt``: the import of the run
    folder's writers (matplotlib, seconds on a loaded machine) that the run started meanwhile must not hold its end
    (it did, as a non-daemon thread, for as long as the import took)."""
    (tmp_path / "slow_writer.py").write_text("import time\ntime.sleep(30)\n")
    child = ("import sys, time\n"
             f"sys.path.insert(0, {str(tmp_path)!r})\n"
             "from mobandit_jax.runner import execution\n"
             "execution.WRITERS = ('slow_writer',)\n"
             "execution.prefetch_writers()\n"
             "time.sleep(0.5)\n"
             "print('stopping', flush=True)\n"
             "raise KeyboardInterrupt('interrupted: a line')\n")
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline() == "stopping\n"
    t0 = time.monotonic()
    status = proc.wait(timeout=60)
    assert status == -signal.SIGINT and time.monotonic() - t0 < 10.0, (status, time.monotonic() - t0)
    assert proc.stderr.read().splitlines()[-1] == "KeyboardInterrupt: interrupted: a line"
