"""Benchmarks of mb.Study (not tests): an in-process ask + tell round trip on SQLite (PrefUCB, K = 50, d = 3), and
Study.load of a 10,000-event study. Usage: python scripts/bench_study.py [--events 10000]"""
import argparse
import statistics
import tempfile
import time

import numpy as np

import mobandit_jax as mb


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--trips", type=int, default=500)
    args = parser.parse_args()
    K, d = 50, 3
    spec = {"study": {"arms": [f"a{i}" for i in range(K)], "objectives": [f"o{j}" for j in range(d)],
                      "horizon": 1_000_000},
            "preference": {"W": np.eye(d).tolist()}, "policies": [{"name": "prefucb"}]}
    rng = np.random.default_rng(0)
    means = rng.uniform(0.1, 0.9, (K, d))
    with tempfile.TemporaryDirectory() as tmp:
        study = mb.Study.create(f"{tmp}/s", spec, seed=0)
        for _ in range(60):  # warm-up: the forced first pulls, and every jitted function compiled
            (t,) = study.ask()
            study.tell(t, rng.binomial(1, means[t.index]).astype(float).tolist())
        times = []
        for _ in range(args.trips):
            start = time.perf_counter()
            (t,) = study.ask()
            study.tell(t, rng.binomial(1, means[t.index]).astype(float).tolist())
            times.append(time.perf_counter() - start)
        median = statistics.median(times) * 1e3
        print(f"ask + tell round trip (PrefUCB, K = {K}, d = {d}, SQLite): median {median:.3f} ms over"
              f" {args.trips} trips (p90 {np.percentile(times, 90) * 1e3:.3f} ms)")
        while len(study._store.events()) < args.events:
            (t,) = study.ask()
            study.tell(t, rng.binomial(1, means[t.index]).astype(float).tolist())
        n = len(study._store.events())
        study.close()
        start = time.perf_counter()
        again = mb.Study.load(f"{tmp}/s")
        told = again.status()["told"]  # the first status applies the replayed state (its next choice)
        elapsed = time.perf_counter() - start
        print(f"Study.load of a {n}-event study, then its status: {elapsed:.2f} s (told {told})")


if __name__ == "__main__":
    main()
