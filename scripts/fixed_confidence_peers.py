"""Run the authors' fixed-confidence Pareto set identification code beside the pac family, on the same instances.

    python scripts/fixed_confidence_peers.py --linear-psi PATH [--crepon PATH] [--seeds 200,2000] [--crepon-seeds N]
        [--only NAME] [--methods auer,ape,track_and_stop] [--repeat N] [--x64] [--gap G] [--out FILE]

``--linear-psi``: a checkout of ``cyrille-kone/linear_psi``; its C++ (``cpp/src``) is compiled here with
``g++ -O3 -march=native`` together with a small driver that calls ``psi_auer::loop`` and ``psi_ape::loop`` seed by seed.
``--crepon``: a checkout of ``elise-crepon/sequential-pareto-learning-experiments``; its Python
``track_and_stop`` runs seed by seed (numpy; its general cost ``PCnd``, cell enumeration, for d = 2 and 3 alike),
on the Gaussian instances, on ``--crepon-seeds`` seeds (default: ``--seeds``; their Python takes seconds a seed on the
larger instances). Nothing of either is copied into this repository.

For each instance (Bernoulli and Gaussian, K from 5 to 20, d = 2 and 3, Kone et al.'s COV-BOOST and the benchmark's
Bernoulli instance) and each delta
(``--gap G``: instead, :func:`gapped` Bernoulli and Gaussian instances with K = 5, 12 and 20, d = 2 and 3, whose pairs
are at least ``G`` apart, so a run's length is set by ``G``) it prints, per method, the mean sample complexity with
its standard error and the error rate of both implementations, whether they agree (means within 5% or 3 standard
errors of the difference, whichever is larger; error rates within 3 standard errors), and the seconds per seed on one
core (with ``--repeat N``, the medians of N runs of each side taken in turn), then the rows as a markdown table (that
of ``docs/pac.md``).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import tomllib

import numpy as np

from mobandit_jax.bench.fixed_confidence import bench_instance, engine_runner, outcome

COV_BOOST = os.path.join(os.path.dirname(__file__), "..", "configs", "fixed_confidence", "cov_boost.toml")
DRIVER = r"""
#include <cstdio>
#include <chrono>
#include "utils.hpp"
#include "bandits.hpp"
#include "policies.hpp"
int main() {
    size_t K, D, n; int gauss; double sigma, delta; char method[16];
    if (scanf("%15s %zu %zu %d %lf %lf %zu", method, &K, &D, &gauss, &sigma, &delta, &n) != 7) return 2;
    std::vector<std::vector<double>> mu(K, std::vector<double>(D));
    for (auto& row : mu) for (auto& x : row) if (scanf("%lf", &x) != 1) return 2;
    bandit* b = gauss ? (bandit*) new gaussian(mu, std::vector<double>(D, sigma)) : (bandit*) new bernoulli(mu);
    psi_auer auer(*b); psi_ape ape(*b);
    auto start = std::chrono::steady_clock::now();
    for (size_t s = 0; s < n; ++s) {
        auto r = std::string(method) == "auer" ? auer.loop(s, delta) : ape.loop(s, delta);
        printf("%d %zu\n", (int) r.first, r.second);
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    printf("seconds %.6f\n", secs);
}
"""


def build_linear_psi(path: str, workdir: str) -> str:
    """Compile linear_psi's C++ with the driver (``-O3 -march=native``); the binary's path."""
    src = os.path.join(path, "cpp", "src")
    if not os.path.isdir(src):
        sys.exit(f"--linear-psi {path}: no cpp/src here; give a checkout of cyrille-kone/linear_psi")
    driver = os.path.join(workdir, "driver.cxx")
    with open(driver, "w") as f:
        f.write(DRIVER)
    exe = os.path.join(workdir, "linear_psi_driver")
    subprocess.run(["g++", "-O3", "-march=native", "-std=c++17", "-I", src, driver] +
                   [os.path.join(src, f) for f in ("utils.cxx", "bandits.cxx", "policies.cxx")] + ["-o", exe],
                   check=True)
    return exe


def run_linear_psi(exe: str, method: str, means, gauss: bool, sigma: float, delta: float, seeds: int):
    """``(found (n,), samples (n,), seconds)`` of linear_psi's ``method`` on seeds 0..n-1."""
    K, D = np.shape(means)
    text = f"{method} {K} {D} {int(gauss)} {sigma} {delta} {seeds}\n" + \
        " ".join(repr(float(x)) for x in np.ravel(means)) + "\n"
    out = subprocess.run([exe], input=text, capture_output=True, text=True, check=True).stdout.split("\n")
    rows = np.array([[int(v) for v in line.split()] for line in out[:seeds]])
    return rows[:, 0].astype(bool), rows[:, 1], float(out[seeds].split()[1])


def run_crepon(path: str, means, sigma: float, delta: float, seeds: int):
    """``(found, samples, seconds)`` of Crepon et al.'s ``track_and_stop`` (C-tracking, their any-dimension cost
    ``PCnd``) on unit-variance means."""
    sys.path.insert(0, path)
    import track_and_stop as tns  # noqa: E402  (the peer checkout, given on the command line)

    mu = np.asarray(means, float) / sigma
    found, samples = [], []
    start = time.perf_counter()
    for s in range(seeds):
        np.random.seed(s)
        _, ok, t = tns.track_and_stop(mu, math.log(1 / delta), tracking="C", T=1, silent=True)
        found.append(bool(ok))
        samples.append(int(t))
    return np.array(found), np.array(samples), time.perf_counter() - start


def agree(a, b) -> tuple:
    """``(means agree, error rates agree)`` of two ``(found, samples)`` results (module docstring)."""
    (fa, sa), (fb, sb) = a, b
    se = math.sqrt(np.var(sa, ddof=1) / len(sa) + np.var(sb, ddof=1) / len(sb))
    tol = max(0.05 * abs(np.mean(sb)), 3 * se)
    pa, pb = 1 - np.mean(fa), 1 - np.mean(fb)
    se_p = math.sqrt(max(pa * (1 - pa), 1 / len(fa)) / len(fa) + max(pb * (1 - pb), 1 / len(fb)) / len(fb))
    return bool(abs(np.mean(sa) - np.mean(sb)) <= tol), bool(abs(pa - pb) <= 3 * se_p)


def instances(rng) -> list:
    """``(name, means, gaussian, sigma)``: Bernoulli and Gaussian instances, K from 5 to 20, d = 2 and 3, Kone et
    al.'s COV-BOOST and the benchmark's Bernoulli instance."""
    out = []
    for K, d in ((5, 2), (10, 2), (20, 2), (5, 3), (10, 3), (20, 3)):
        out.append((f"bernoulli K={K} d={d}", rng.uniform(0.1, 0.9, (K, d)), False, 0.5))
        out.append((f"gaussian K={K} d={d}", rng.uniform(0.0, 1.0, (K, d)), True, 0.5))
    with open(COV_BOOST, "rb") as fh:  # Kone et al.'s instance, each response over its standard deviation
        out.append(("cov_boost K=20 d=3", np.asarray(tomllib.load(fh)["env"]["means"], float), True, 1.0))
    # the benchmark's instance (mobandit bench --algorithms auer,ape): two arms 0.002 apart in one objective make a
    # few seeds take a hundred times the others' samples
    out.append(("bench bernoulli K=8 d=2", bench_instance(), False, 0.5))
    return out


def gapped(K: int, d: int, gap: float):
    """``(K, d)`` means in ``[0.05, 0.8]``: ``F = ceil(K / 3)`` Pareto arms on the line ``x + y = 1`` (the other
    objectives 0.5), neighbours ``gap`` apart in ``x`` and ``y``; arm ``k >= F`` lies ``gap (k // F + 1/2)`` below
    Pareto arm ``k % F`` in every objective (clipped at 0.05), so that each is also dominated by that arm's neighbours
    (by ``gap / 2``; had a dominated arm tied a Pareto arm in one objective, a run that wrongly discarded its other
    dominator could never end). The instance's difficulty is set by ``gap``, not by chance."""
    F = -(-K // 3)
    x = 0.5 + (np.arange(F) - (F - 1) / 2) * gap
    front = np.full((F, d), 0.5)
    front[:, 0], front[:, 1] = x, 1 - x
    below = [np.maximum(front[k % F] - gap * (k // F + 0.5), 0.05) for k in range(F, K)]
    return np.concatenate([front, np.reshape(below, (-1, d))])


def gapped_instances(gap: float) -> list:
    """``(name, means, gaussian, sigma)``: :func:`gapped` Bernoulli and Gaussian instances, K = 5, 12, 20, d = 2, 3."""
    return [(f"{kind} K={K} d={d} gap={gap:g}", gapped(K, d, gap), kind == "gaussian", 0.5)
            for K in (5, 12, 20) for d in (2, 3) for kind in ("bernoulli", "gaussian")]


def compare(name, delta, method, peer, run, means, seeds: int, repeat: int) -> dict:
    """One row: ``peer()`` (``(found, samples, seconds)``) and our compiled ``run()`` timed in turn ``repeat`` times
    (theirs, ours, theirs, ...), the median seconds per seed of each, samples and errors of the last run of each."""
    peer_s, ours_s = [], []
    for _ in range(repeat):
        pf, ps, psec = peer()
        peer_s.append(psec / len(ps))
        start = time.perf_counter()
        out = run()
        ours_s.append((time.perf_counter() - start) / seeds)
    of, os_ = outcome(out, means)
    same_mean, same_err = agree((of, os_), (pf, ps))
    return dict(instance=name, delta=delta, method=method, seeds=len(os_), peer_seeds=len(ps),
                ours_mean=float(np.mean(os_)), ours_se=float(np.std(os_, ddof=1) / math.sqrt(len(os_))),
                peer_mean=float(np.mean(ps)), peer_se=float(np.std(ps, ddof=1) / math.sqrt(len(ps))),
                ours_error=float(1 - np.mean(of)), peer_error=float(1 - np.mean(pf)),
                means_agree=same_mean, errors_agree=same_err,
                ours_s_per_seed=float(np.median(ours_s)), peer_s_per_seed=float(np.median(peer_s)),
                speedup=float(np.median(peer_s) / np.median(ours_s)))


def markdown(rows) -> str:
    """The rows as the table of ``docs/pac.md``."""
    lines = ["| instance | delta | method | seeds (ours / theirs) | ours: mean samples ± se "
             "| theirs: mean samples ± se | error ours / theirs | agree (means, errors) | s per seed ours / theirs "
             "| theirs / ours |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        yes = lambda b: "yes" if b else "no"  # noqa: E731
        lines.append(f"| {r['instance']} | {r['delta']:g} | {r['method']} | {r['seeds']} / {r['peer_seeds']} | "
                     f"{r['ours_mean']:.0f} ± {r['ours_se']:.0f} | {r['peer_mean']:.0f} ± {r['peer_se']:.0f} | "
                     f"{r['ours_error']:.2f} / {r['peer_error']:.2f} | {yes(r['means_agree'])}, "
                     f"{yes(r['errors_agree'])} | {r['ours_s_per_seed']:.2e} / {r['peer_s_per_seed']:.2e} | "
                     f"**{r['speedup']:.2f}** |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--linear-psi", required=True, help="checkout of cyrille-kone/linear_psi")
    ap.add_argument("--crepon", help="checkout of elise-crepon/sequential-pareto-learning-experiments")
    ap.add_argument("--seeds", default="200", help="comma-separated seed counts, a row each (e.g. 200,2000)")
    ap.add_argument("--crepon-seeds", type=int, help="seeds of Crepon et al.'s Python (default: the seed count)")
    ap.add_argument("--deltas", default="0.1,0.01")
    ap.add_argument("--only", default="", help="run the instances whose name contains this")
    ap.add_argument("--methods", default="auer,ape,track_and_stop", help="comma-separated subset")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs of each side, in turn; the medians count")
    ap.add_argument("--cap", type=int, default=2_000_000, help="our round cap")
    ap.add_argument("--out", help="write the rows as JSON here")
    ap.add_argument("--x64", action="store_true", help="ours in float64 (default: the engine's float32)")
    ap.add_argument("--gap", type=float, help="the gapped instances with this gap (gapped()) instead of the random")
    a = ap.parse_args(argv)
    import jax

    jax.config.update("jax_enable_x64", a.x64)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        exe = build_linear_psi(a.linear_psi, work)
        chosen = instances(np.random.default_rng(2024)) if a.gap is None else gapped_instances(a.gap)
        for name, means, gauss, sigma in chosen:
            if a.only not in name:
                continue
            for delta, seeds in ((float(x), int(n)) for x in a.deltas.split(",") for n in a.seeds.split(",")):
                peers = {"auer": lambda: run_linear_psi(exe, "auer", means, gauss, sigma, delta, seeds),
                         "ape": lambda: run_linear_psi(exe, "ape", means, gauss, sigma, delta, seeds)}
                if a.crepon and gauss:
                    peers["track_and_stop"] = lambda: run_crepon(a.crepon, means, sigma, delta, a.crepon_seeds or seeds)
                for method in a.methods.split(","):
                    if method in peers:
                        run = engine_runner(method, means, gauss, sigma, delta, seeds, a.cap)
                        rows.append(compare(name, delta, method, peers[method], run, means, seeds, a.repeat))
                        print(json.dumps(rows[-1]), flush=True)
    print(markdown(rows))
    if a.out:
        with open(a.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
