"""mb.Study across processes: a writer killed with SIGKILL loses no returned event, two writers share a study
(unique tickets, none told twice, the state equal to a serial replay of the tells), and scripts/bench_study.py's
workers on a prefilled history do the same (a small run of the benchmark)."""
import importlib.util
import os
import signal
import subprocess
import sys
import time

from _study_replay import assert_serial_replay

import mobandit_jax as mb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _spec(arms=10):
    return {"study": {"arms": [f"m{i}" for i in range(arms)], "objectives": ["acc", "speed"], "horizon": 10_000},
            "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "policies": [{"name": "prefucb"}]}


LOOP = """
import sys, mobandit_jax as mb
study = mb.Study.load(sys.argv[1])
for i in range(int(sys.argv[2])):
    (t,) = study.ask(worker=sys.argv[3])
    print("asked", t.id, t.index, flush=True)
    study.tell(t, [0.1 + 0.01 * (t.index % 7), 0.5])
    print("told", t.id, flush=True)
"""


def _loop(path, n, worker):
    env = {**os.environ, "PYTHONPATH": ROOT, "JAX_PLATFORMS": "cpu"}
    return subprocess.Popen([sys.executable, "-c", LOOP, str(path), str(n), worker], stdout=subprocess.PIPE,
                            text=True, env=env)


def test_kill_9_keeps_every_returned_event(tmp_path):
    path = tmp_path / "s"
    mb.Study.create(path, _spec(), seed=0)
    proc = _loop(path, 100_000, "w")
    lines = []
    start = time.time()
    while len(lines) < 40 and time.time() - start < 60:
        lines.append(proc.stdout.readline().split())
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    study = mb.Study.load(path)
    hist = study.history().set_index("ticket")
    for line in lines:
        if line and line[0] == "asked":
            assert hist.loc[line[1], "arm"] == f"m{line[2]}"
        elif line and line[0] == "told":
            assert hist.loc[line[1], "state"] == "told"
    assert study._store.integrity() == "ok"
    assert (hist["state"] == "pending").sum() <= 1


def test_two_processes_share_a_study(tmp_path):
    path = tmp_path / "s"
    mb.Study.create(path, _spec(), seed=0)
    procs = [_loop(path, 50, f"w{i}") for i in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    told = [line.split()[1] for out in outs for line in out.splitlines() if line.startswith("told")]
    assert len(told) == 100 and len(set(told)) == 100
    study = mb.Study.load(path)
    events = study._store.events()
    tells = [e for e in events if e.kind == "tell"]
    assert len(tells) == 100 and len({e.ticket for e in tells}) == 100
    assert len({e.ticket for e in events if e.kind == "ask"}) == 100
    assert_serial_replay(study)  # the state is the serial replay of the tells, in the order written


def test_bench_workers_on_a_prefilled_history(tmp_path):
    spec = importlib.util.spec_from_file_location("bench_study", os.path.join(ROOT, "scripts", "bench_study.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = tmp_path / "s"
    bench.prefill(path, 600, chunk=250)
    results = bench.run_workers(path, 3, 15, 0.001)  # 1 ms evaluations, not timed
    assert bench.check(path, results) == 45
    study = mb.Study.load(path)
    events = study._store.events()
    assert [e.seq for e in events] == list(range(1, 600 + 2 * 3 * (15 + bench.WARMUP) + 1))
    assert study.status()["told"] == 300 + 3 * (15 + bench.WARMUP) and study.status()["pending"] == 0
    assert study._store.snapshot()[0] == 600
    row = bench.summary(results)
    assert row["n"] == 45 and 0 < row["ask_median_ms"] <= row["trip_median_ms"] <= row["trip_p99_ms"]
    assert 0 < row["lock_held_median_ms"] <= row["lock_held_p99_ms"] and row["lock_wait_median_ms"] >= 0
    assert sum(len(r["held"]) for r in results) == 2 * 45  # an ask and a tell a loop, each one write step
    assert_serial_replay(study)
