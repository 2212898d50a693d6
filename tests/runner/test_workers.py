"""Worker processes (one single-device JAX process per core): every seed dealt exactly once, the
same summary as one process byte for byte, one-line errors, and interrupts that keep finished
chunks and leave no worker behind."""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from _tiny_spec import tiny_spec

from mobandit_jax.runner import devices, execution, plans
from mobandit_jax.runner import run_folder as results
from mobandit_jax.runner import spec as cfg
from mobandit_jax.runner import workers as local_workers

MORE_POLICIES = """
[[policies]]
name = "pareto_ucb"
[[policies]]
name = "gt_pf"
"""


@pytest.fixture(autouse=True)
def _device_state_restored(monkeypatch):
    monkeypatch.setenv(devices.LIMIT_ENV, "")  # recorded, so that the test's value is undone after it
    monkeypatch.delenv(devices.LIMIT_ENV)
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))


@pytest.mark.parametrize("workers", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("chunk, seeds", [(1, 4), (4, 4), (5, 7), (6, 20), (64, 130), (3, 1), (2, 40), (256, 4096)])
def test_every_seed_is_in_one_part_within_its_chunk(workers, chunk, seeds):
    chunks = list(range(-(-seeds // chunk)))[1:] + [0]  # resumed runs skip chunks: any order and subset
    width, parts = local_workers.split(chunk, seeds, chunks, workers)
    many = len(chunks) >= 4 * workers  # enough chunks for each worker to take whole ones
    assert width == (chunk if many else -(-chunk // min(workers, chunk)))
    assert (width, seeds, workers) != (128, 4096, 2)  # 16 chunks of 256 over 2 workers: whole chunks
    covered = sorted(s for c, start, n in parts for s in range(start, start + n))
    assert covered == list(range(seeds))  # brute force: each seed once, none invented
    for c, start, n in parts:
        assert c * chunk <= start and start + n <= min((c + 1) * chunk, seeds) and 1 <= n <= width
        assert (start - c * chunk) % width == 0  # parts start at multiples of the width
    assert [c for c, *_ in parts] == sorted([c for c, *_ in parts], key=chunks.index)  # in the given chunk order
    for c in chunks:  # at most one part per worker in each chunk
        assert sum(pc == c for pc, *_ in parts) <= min(workers, chunk)


@pytest.mark.slow  # many processes or a long run: `pytest -m slow`
def test_workers_give_the_in_process_summary_byte_for_byte(tmp_path, monkeypatch):
    path = tiny_spec(tmp_path / "spec.toml", horizon=90, seeds=7, chunk=5, record_every=30)
    path.write_text(path.read_text() + MORE_POLICIES)  # three policy groups
    spec = cfg.load(path)
    execution.execute(plans.build(spec), tmp_path / "one", progress=False)
    started, start = [], local_workers.start_processes

    def counted(target, args, **kwargs):
        started.append(len(args))
        return start(target, args, **kwargs)

    monkeypatch.setattr(local_workers, "start_processes", counted)
    execution.execute(plans.build(spec), tmp_path / "two", progress=False, workers=2)
    assert started == [1]  # this process is worker 0: one process is spawned
    assert len(list((tmp_path / "two" / "chunks").glob("chunk_*.npz"))) == 2  # 7 seeds in chunks of 5
    for name in ("summary.json", "curves.npz", "finals.npz"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name


def _say_then_stop(how, conn, cores):
    """A worker process that says hello, then ends as ``how`` says: exit code 0 or 1, or killed by SIGKILL."""
    conn.send("hello")
    if how == "killed":
        os.kill(os.getpid(), signal.SIGKILL)
    sys.exit(0 if how == "done" else 1)


def test_a_worker_that_dies_is_reported_in_one_line_after_what_it_said():
    links = dict(enumerate(local_workers.start_processes(_say_then_stop, [("done",), ("killed",), ("failed",)])))
    heard, left, waiting = [], [], dict(links)
    while waiting:  # each says hello before it stops, and is heard whenever it stops
        key, message = local_workers.receive(waiting)
        assert message == "hello"
        heard.append(key)
        del waiting[key]
    assert sorted(heard) == [0, 1, 2]
    messages = {1: r"^worker process 1 stopped with exit code -9 \(killed by signal 9: out of memory\? try",
                2: r"^worker process 2 stopped with exit code 1 \(see its error output above\)$"}
    while links:
        try:
            key, message = local_workers.receive(links)
            assert message is None  # ended with exit code 0
            left.append(key)
        except RuntimeError as err:
            key = int(str(err).split()[2])
            assert re.match(messages[key], str(err)), str(err)
        del links[key]
    assert left == [0]
    assert local_workers.receive({}, timeout=0.01) is None


def _failing_task(index, width, parts, tell):
    parts()
    raise ValueError(f"no data for\nworker {index}")
    yield


def _no_own_parts(width, parts):
    return  # this process leaves every part to the worker process
    yield


def test_an_error_in_a_worker_process_stops_the_run_in_one_line():
    with local_workers.Workers(_failing_task, 2, 1) as workers, \
            pytest.raises(RuntimeError, match=r"^worker process 1: ValueError: no data for worker 1$"):
        list(workers.run_chunks(1, 4, [0, 1, 2, 3], _no_own_parts))


def _late_task(index, width, parts, tell):
    time.sleep(2.0)  # a worker process that is still starting up
    for c, start, n in parts():
        yield c, start, {"x": np.full(n, float(start)), "who": np.full(n, index)}


def _own_tagged_parts(width, parts):
    for c, start, n in parts():
        yield c, start, {"x": np.full(n, float(start)), "who": np.zeros(n, int)}


def test_this_process_takes_the_parts_a_late_worker_has_not_taken():
    with local_workers.Workers(_late_task, 2, 2) as workers:
        got = dict(workers.run_chunks(4, 10, [1, 0, 2], _own_tagged_parts))
    assert sorted(got) == [0, 1, 2]
    for c, arrays in got.items():
        seeds = np.arange(c * 4, min(c * 4 + 4, 10))
        assert np.array_equal(arrays["x"], seeds - (seeds - c * 4) % 2)  # each seed holds its part's start
    assert all(np.all(a["who"] == 0) for a in got.values())  # the worker was still asleep


def test_configure_run_asks_for_workers_only_on_a_cpu_without_a_user_device_count(monkeypatch):
    monkeypatch.setattr(devices, "_platform_is_cpu", lambda: True)
    monkeypatch.setattr(devices, "pin", lambda cores: pytest.fail("the parent of workers is not pinned"))
    monkeypatch.setattr(devices, "cpu_cores", lambda: 4)
    monkeypatch.delenv("XLA_FLAGS")
    assert devices.configure_run() == 4 and devices.limit() == 1
    assert os.environ["XLA_FLAGS"] == f"{devices.HOST_COUNT_FLAG}=1"
    monkeypatch.delenv("XLA_FLAGS")
    assert devices.configure_run(3) == 3
    monkeypatch.setattr(devices, "configure", lambda count: None)  # the in-process path
    for kwargs in ({"devices": 1}, {"processes": False}, {"distributed": True}):
        monkeypatch.delenv("XLA_FLAGS", raising=False)
        assert devices.configure_run(**kwargs) == 1, kwargs
    monkeypatch.setenv("XLA_FLAGS", f"{devices.HOST_COUNT_FLAG}=2")  # a user's own count: one process
    assert devices.configure_run() == 1
    assert devices.configure_run(processes=False, chunk=8) == 1
    assert os.environ["XLA_FLAGS"] == f"{devices.HOST_COUNT_FLAG}=2"
    monkeypatch.setattr(devices, "_platform_is_cpu", lambda: False)
    monkeypatch.delenv("XLA_FLAGS")
    assert devices.configure_run() == 1


def test_small_chunks_in_one_process_keep_one_unpinned_device_unless_devices_are_asked_for(monkeypatch):
    monkeypatch.setattr(devices, "_platform_is_cpu", lambda: True)
    monkeypatch.setattr(devices, "cpu_cores", lambda: 4)
    pinned = []
    monkeypatch.setattr(devices, "pin", pinned.append)
    monkeypatch.setattr(devices, "core_slots", lambda jobs: [[0, 1, 2, 3]])
    per_device = devices.MIN_SEEDS_PER_DEVICE
    for chunk, count, want in [(4 * per_device - 1, None, 1), (4 * per_device, None, 4), (None, None, 4),
                               (8, 2, 2), (8, 1, 1)]:
        monkeypatch.delenv("XLA_FLAGS", raising=False)
        assert devices.configure_run(count, processes=False, chunk=chunk) == 1
        assert os.environ["XLA_FLAGS"] == f"{devices.HOST_COUNT_FLAG}={want}", (chunk, count)
    assert pinned == [[0, 1], [0]]  # only an explicit --devices below the core count pins


def test_a_worker_sets_one_host_device_whatever_it_inherits(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", f"--xla_dump_to=/tmp/x {devices.HOST_COUNT_FLAG}=8")
    devices.single_host_device()
    assert os.environ["XLA_FLAGS"] == f"--xla_dump_to=/tmp/x {devices.HOST_COUNT_FLAG}=1"


def test_auto_uses_workers_from_the_size_threshold(tmp_path):
    spec = cfg.load(tiny_spec(tmp_path / "tiny.toml", horizon=1000, seeds=8))
    assert not local_workers.worth_it(spec)  # 8 x 1000 seed-rounds
    seeds = local_workers.MIN_SEED_ROUNDS // 1000
    spec = cfg.apply_overrides(spec, [f"experiment.seeds={seeds}"])
    assert spec.seed_rounds() == 1000 * seeds  # one policy at one grid setting
    assert spec.seed_rounds() < local_workers.MIN_SEED_ROUNDS <= spec.seed_rounds() + 1000
    assert not local_workers.worth_it(spec)
    assert local_workers.worth_it(cfg.apply_overrides(spec, [f"experiment.seeds={seeds + 1}"]))


def _children(pid: int) -> list:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


def _alive(pids) -> list:
    """The processes of ``pids`` that still run (neither gone nor a zombie)."""
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


@pytest.mark.slow  # many processes or a long run: `pytest -m slow`
@pytest.mark.skipif(not Path("/proc/self/stat").exists() or devices.cpu_cores() < 2, reason="Linux, two cores")
def test_interrupted_workers_keep_chunks_leave_no_process_and_resume_to_the_same_summary(tmp_path):
    # long enough that the chunks cannot all be done between the first one and the signal: a worker
    # process ready before this one computes parts ahead, and its chunks are then written in one burst
    spec = tiny_spec(tmp_path / "tiny.toml", horizon=50000, seeds=16, chunk=2, record_every=25000)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    cmd = [sys.executable, "-m", "mobandit_jax.cli", "run", str(spec), "--quiet", "--no-cache", "--workers"]
    assert subprocess.run(cmd + ["off", "--out", str(tmp_path / "ref")], env=env, timeout=600).returncode == 0
    out = tmp_path / "run"
    for signum in (signal.SIGINT, signal.SIGKILL):
        before = len(list(out.glob("chunks/chunk_*.npz")))
        proc = subprocess.Popen(cmd + ["on", "--out", str(out)], env=env, stderr=subprocess.PIPE, text=True)
        end = time.time() + 300
        while proc.poll() is None and time.time() < end and len(list(out.glob("chunks/chunk_*.npz"))) <= before:
            time.sleep(0.02)
        kids = _children(proc.pid)  # the workers (and multiprocessing's resource tracker)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=120)
        if signum == signal.SIGINT:
            assert proc.returncode == 130 and "Traceback" not in err
            assert err.strip().splitlines()[-1].startswith("interrupted: ") and err.strip().count("\n") == 0
        assert proc.returncode == 128 + signum if signum == signal.SIGINT else proc.returncode == -signum
        assert len(kids) >= 2
        end = time.time() + 20
        while _alive(kids) and time.time() < end:
            time.sleep(0.05)
        assert not _alive(kids)
    kept = sum(results.read_chunk_identity(p) is not None for p in out.glob("chunks/chunk_*.npz"))
    assert 2 <= kept < 8
    assert subprocess.run(cmd + ["on", "--out", str(out)], env=env, timeout=600).returncode == 0
    assert (out / "summary.json").read_bytes() == (tmp_path / "ref" / "summary.json").read_bytes()


def test_workers_start_with_sigint_ignored():
    """A Ctrl-C while a worker starts up (before it sets its own handlers) must not print a traceback there."""
    code = [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)"]
    # Python's own handler, whatever the test runner inherited (a background job of a shell ignores SIGINT)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with local_workers.sigint_ignored():
            inside = subprocess.run(code, capture_output=True, text=True, check=True).stdout.strip()
        outside = subprocess.run(code, capture_output=True, text=True, check=True).stdout.strip()
        assert (inside, outside) == ("True", "False")
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)


def _no_setup():
    raise ValueError("no such\nbenchmark")


@pytest.mark.skipif(devices.cpu_cores() < 2, reason="two cores")
def test_the_benchmark_times_worker_processes_together_and_a_failed_one_in_one_line():
    from mobandit_jax.bench import benchmark

    rate, compile_s = benchmark._workers_rate((benchmark._prefucb_setup, ()), 20, 4, 2)
    assert 0 < rate < 4 * 20 / 1e-4 and compile_s > 0  # 4 seeds x 20 rounds, not faster than 0.1 ms
    with pytest.raises(RuntimeError, match=r"^ValueError: no such benchmark$"):
        benchmark._workers_rate((_no_setup, ()), 20, 4, 2)
