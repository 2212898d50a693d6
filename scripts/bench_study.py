"""Benchmark of mb.Study under many workers (not a test): N processes (SQLite) or N clients (PostgreSQL) run ask/tell
loops on one study (PrefUCB, K = 50, d = 3) whose history already holds H events; the latency of each ask and of each
ask + tell, median and 99th percentile, against one process alone, for each history length. At the end it checks that
no ticket was handed out twice and every told ticket is told in the study.

The history is written straight through the storage (ask/tell pairs of arms in turn, told seeded values) with a
snapshot of the policy state at its end, as a study's own tells keep one every 1,000; each worker then loads the study,
runs a few warm-up loops (compiling), waits until every worker is ready and times its loops. ``--evaluation-ms``
makes each worker sleep that long between its ask and its tell (an evaluation that takes time; 0: loops that do nothing
else, the most contended case); the latencies never include that time.

Usage: python scripts/bench_study.py [--backend sqlite|postgres] [--address postgresql://...] [--workers 8]
       [--loops 200] [--history 1000 100000] [--evaluation-ms 0] [--json OUT]
"""
import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K, D = 50, 3
WARMUP = 10


def spec() -> dict:
    """The benchmarked study: PrefUCB on K = 50 arms, d = 3 objectives, the Pareto cone."""
    return {"study": {"arms": [f"a{i}" for i in range(K)], "objectives": [f"o{j}" for j in range(D)],
                      "horizon": 10_000_000},
            "preference": {"W": np.eye(D).tolist()}, "policies": [{"name": "prefucb"}]}


def prefill(where, events: int, chunk: int = 5000):
    """Create a study at ``where`` whose history holds ``events`` events (ask/tell pairs), then keep a snapshot.

    Args:
      where: a folder or a ``postgresql://`` address.
      events: how many events (even).
      chunk: events a write step.
    """
    import mobandit_jax as mb

    study = mb.Study.create(where, spec(), seed=0)
    store, rng = study._store, np.random.default_rng(1)
    for start in range(0, events, chunk):
        with store.lock():
            for seq in range(start + 1, min(start + chunk, events) + 1, 2):
                arm, tid = (seq // 2) % K, f"t{seq // 2 + 1}"  # tickets numbered as a study numbers them
                store.append(seq, "ask", tid, "prefill", arm)
                store.append(seq + 1, "tell", tid, "prefill", arm, vals=rng.uniform(size=D).round(3).tolist())
    study.close()
    study = mb.Study.load(where)  # replays the history once
    with study._store.lock():
        study._store.put_snapshot(events, study._driver.snapshot())
    study.close()


def worker(where, loops: int, name: str, barrier: str, workers: int, evaluation: float = 0.0):
    """One worker: load, warm up, wait until all ``workers`` are ready (a file each in the folder ``barrier``), then
    time ``loops`` ask + tell loops, sleeping ``evaluation`` seconds between an ask and its tell (not timed).

    Prints one JSON line: ``load`` (seconds to load the study and apply its state, compiling included), ``ask``
    and ``trip`` latencies in seconds, the ``tickets`` it was handed, and for each write step of the timed loops the
    seconds it ``waited`` for the storage's lock and ``held`` it (its commit included).
    """
    import mobandit_jax as mb

    t0 = time.perf_counter()
    study = mb.Study.load(where)
    study.status()  # the replayed state applied
    load = time.perf_counter() - t0
    rng = np.random.default_rng(int(name.lstrip("w")))
    for _ in range(WARMUP):
        (t,) = study.ask(worker=name)
        study.tell(t, rng.uniform(size=D).round(3).tolist())
    waited, held = _timed_steps(study.storage)
    open(os.path.join(barrier, name), "w").close()
    while len(os.listdir(barrier)) < workers:
        time.sleep(0.005)
    asks, trips, tickets = [], [], []
    waited.clear(), held.clear()
    for _ in range(loops):
        t0 = time.perf_counter()
        (t,) = study.ask(worker=name)
        t1 = time.perf_counter()
        if evaluation:
            time.sleep(evaluation)
        t2 = time.perf_counter()
        study.tell(t, rng.uniform(size=D).round(3).tolist())
        t3 = time.perf_counter()
        asks.append(t1 - t0)
        trips.append(t1 - t0 + t3 - t2)
        tickets.append(t.id)
    print(json.dumps({"load": load, "ask": asks, "trip": trips, "tickets": tickets, "waited": waited, "held": held}),
          flush=True)


def _timed_steps(store):
    """Time every write step of ``store`` from now on: two lists it fills, the seconds each step waited for the
    lock and the seconds it held it."""
    step, waited, held = store.lock, [], []

    @contextlib.contextmanager
    def timed():
        t0 = time.perf_counter()
        with step():
            t1 = time.perf_counter()
            yield
        waited.append(t1 - t0)
        held.append(time.perf_counter() - t1)

    store.lock = timed
    return waited, held


def run_workers(where, workers: int, loops: int, evaluation: float = 0.0) -> list:
    """Start ``workers`` processes on the study at ``where`` together; return their parsed outputs."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]),
           "JAX_PLATFORMS": "cpu"}
    with tempfile.TemporaryDirectory() as barrier:
        procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), "--worker", str(where), str(loops),
                                   f"w{i}", barrier, str(workers), str(evaluation)],
                                  stdout=subprocess.PIPE, text=True, env=env)
                 for i in range(workers)]
        outs = [p.communicate(timeout=1800)[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit(f"a worker failed: exit codes {[p.returncode for p in procs]}")
    return [json.loads(out.strip().splitlines()[-1]) for out in outs]


def check(where, results) -> int:
    """Every ticket handed out once, and told in the study; returns the number of told tickets."""
    import mobandit_jax as mb

    tickets = [t for r in results for t in r["tickets"]]
    if len(tickets) != len(set(tickets)):
        raise SystemExit("a ticket was handed out twice")
    hist = mb.Study.load(where).history().set_index("ticket")
    if not (hist.loc[tickets, "state"] == "told").all():
        raise SystemExit("a ticket a worker told is not told in the study")
    return len(tickets)


def summary(results) -> dict:
    """Median and 99th percentile (ms) of the ask and ask + tell latencies, over every worker's loops."""
    asks = np.concatenate([r["ask"] for r in results]) * 1e3
    trips = np.concatenate([r["trip"] for r in results]) * 1e3
    waited = np.concatenate([r["waited"] for r in results]) * 1e3
    held = np.concatenate([r["held"] for r in results]) * 1e3
    held_ask = np.concatenate([r["held"][0::2] for r in results]) * 1e3  # a loop's steps: its ask, then its tell
    held_tell = np.concatenate([r["held"][1::2] for r in results]) * 1e3
    return {"ask_median_ms": float(np.median(asks)), "ask_p99_ms": float(np.percentile(asks, 99)),
            "trip_median_ms": float(np.median(trips)), "trip_p99_ms": float(np.percentile(trips, 99)),
            "trip_max_ms": float(trips.max()), "load_s": float(np.median([r["load"] for r in results])),
            "n": int(trips.size), "lock_wait_median_ms": float(np.median(waited)),
            "lock_wait_p99_ms": float(np.percentile(waited, 99)), "lock_held_median_ms": float(np.median(held)),
            "lock_held_p99_ms": float(np.percentile(held, 99)), "lock_held_ask_median_ms": float(np.median(held_ask)),
            "lock_held_tell_median_ms": float(np.median(held_tell))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--address", help="postgresql://... (the postgres backend)")
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--loops", type=int, default=200)
    parser.add_argument("--history", type=int, nargs="+", default=[1000, 100_000])
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--evaluation-ms", type=float, default=0.0,
                        help="each worker sleeps this long between an ask and its tell (not timed)")
    parser.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        where, loops, name, barrier, workers, evaluation = args.worker
        return worker(where, int(loops), name, barrier, int(workers), float(evaluation))
    if args.backend == "postgres" and not args.address:
        parser.error("--backend postgres needs --address postgresql://...")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for history in args.history:
            for n in sorted({1, args.workers}):
                where = (f"{tmp}/h{history}w{n}" if args.backend == "sqlite"
                         else f"{args.address}{'&' if '?' in args.address else '?'}study=bench_{history}_{n}_"
                              f"{os.getpid()}")
                t0 = time.perf_counter()
                prefill(where, history)
                filled = time.perf_counter() - t0
                results = run_workers(where, n, args.loops, args.evaluation_ms / 1e3)
                told = check(where, results)
                row = {"backend": args.backend, "history": history, "workers": n, "evaluation_ms": args.evaluation_ms,
                       "told": told, **summary(results)}
                rows.append(row)
                print(f"{args.backend:8s} history {history:>7,d}  {n} worker(s) x {args.loops}"
                      f"{f' ({args.evaluation_ms:g} ms evaluations)' if args.evaluation_ms else ''}: ask median "
                      f"{row['ask_median_ms']:.2f} ms, p99 {row['ask_p99_ms']:.2f} ms; ask + tell median "
                      f"{row['trip_median_ms']:.2f} ms, p99 {row['trip_p99_ms']:.2f} ms, max {row['trip_max_ms']:.1f} "
                      f"ms; a write step waits {row['lock_wait_median_ms']:.2f} ms "
                      f"(p99 {row['lock_wait_p99_ms']:.2f}) and "
                      f"holds the lock {row['lock_held_median_ms']:.2f} ms (p99 {row['lock_held_p99_ms']:.2f}; "
                      f"an ask {row['lock_held_ask_median_ms']:.2f}, a tell {row['lock_held_tell_median_ms']:.2f}); "
                      f"load {row['load_s']:.1f} s (prefill {filled:.1f} s; {told} tickets, none twice)",
                      flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
