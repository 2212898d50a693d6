"""Whole-command wall times of start-up and of every core against one, alternated, as ratios.

``python scripts/startup_bench.py quickstart [--reps N]``: a bare JAX start-up
(``python -c "import jax, jax.numpy as jnp; jnp.zeros(3)"``), the quickstart with an empty cache
(a fresh ``XDG_CACHE_HOME``) and the quickstart with a warm one, each run ``N`` times in turn; prints
each one's median and the ratios cold / bare and warm / bare.

``python scripts/startup_bench.py cores --seeds 1024 [--reps N]``: ``scripts/perf_prefucb.toml`` at
4,000 rounds with every core against ``--devices 1``, both with a warm cache, in turn; prints the
medians and their ratio. Every run writes a fresh run folder (``--quiet``); nothing is kept.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "mobandit_jax.cli"]


def _timed(cmd, env) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    return time.perf_counter() - t0


def _env(cache: str) -> dict:
    return {**os.environ, "XDG_CACHE_HOME": cache, "MPLBACKEND": "Agg"}


def quickstart(reps: int, work: Path):
    spec = str(ROOT / "configs" / "quickstart.toml")
    warm = str(work / "warm")

    def run(cache):
        return CLI + ["run", spec, "--out", tempfile.mkdtemp(dir=work) + "/q", "--quiet"], _env(cache)

    _timed(*run(warm))  # fills the warm cache
    bare_cmd = [sys.executable, "-c", "import jax, jax.numpy as jnp; jnp.zeros(3)"]
    times = {"bare": [], "cold": [], "warm": []}
    for _ in range(reps):
        times["bare"].append(_timed(bare_cmd, dict(os.environ)))
        times["cold"].append(_timed(*run(tempfile.mkdtemp(dir=work))))
        times["warm"].append(_timed(*run(warm)))
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"{k:5s} median {med[k]:.2f} s  runs {', '.join(f'{x:.2f}' for x in v)}")
    print(f"cold / bare {med['cold'] / med['bare']:.2f}x   warm / bare {med['warm'] / med['bare']:.2f}x")


def cores(seeds: int, reps: int, work: Path):
    spec = str(ROOT / "scripts" / "perf_prefucb.toml")
    cache = str(work / "cache")

    def run(*more):
        return CLI + ["run", spec, "--seeds", str(seeds), "--set", "experiment.horizon=4000", "--quiet",
                      "--out", tempfile.mkdtemp(dir=work) + "/r", *more], _env(cache)

    _timed(*run())
    _timed(*run("--devices", "1"))  # both warm
    every, one = [], []
    for _ in range(reps):
        every.append(_timed(*run()))
        one.append(_timed(*run("--devices", "1")))
    a, b = statistics.median(every), statistics.median(one)
    print(f"every core median {a:.2f} s  runs {', '.join(f'{x:.2f}' for x in every)}")
    print(f"--devices 1 median {b:.2f} s  runs {', '.join(f'{x:.2f}' for x in one)}")
    print(f"speed-up {b / a:.2f}x ({seeds} seeds)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=("quickstart", "cores"))
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--seeds", type=int, default=1024)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        if args.what == "quickstart":
            quickstart(args.reps, Path(work))
        else:
            cores(args.seeds, args.reps, Path(work))
    return 0


if __name__ == "__main__":
    sys.exit(main())
