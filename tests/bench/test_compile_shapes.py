"""The shapes whose programs never finished compiling now compile and run (issue 41).

ParetoUCB and ParetoTS drew their within-layer tie-break ``u = jax.random.uniform(key, (n,))`` straight into
the layered fill's max and argmax; with the straight-line Threefry of ``mobandit_jax.runner.threefry`` XLA's
CPU backend fused the whole hash into those reductions, and LLVM did not finish optimising them for 8, 16,
24, 32 or 48 arms (17 arms compiled in seconds). The fill now reads the order of ``u`` from a sort
(:func:`mobandit_jax.kernels.slates.layered_random_k`, the same slates: ``test_kernels_slate.py``). Each run
goes through ``mobandit run`` in a child process without the compilation caches, under a timeout, so a
regression fails here instead of hanging the suite. ``python scripts/compile_bench.py`` times every
registered policy over the arm counts of docs/performance.md.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

TIMEOUT_S = 240  # the five groups compile in about 20 s on a loaded 2-core machine; a hang never ends

CONE_TABLE = """\
[experiment]
name = "cone_table_16"
horizon = 60
seeds = 2
record_every = 20

[env]
kind = "table"
path = "models.csv"
arm = "model"
objectives = ["accuracy", "speed", "safety"]
noise = "gaussian"
sigma = 0.1
k = 3

[preference]
W = [[1.0, 0.0, 1.0], [0.0, 1.0, -0.5]]

[[policies]]
name = "thv_ucb"
[[policies]]
name = "pareto_ucb"
family = "slate"
[[policies]]
name = "scalar_ucb"
[[policies]]
name = "chebyshev_ucb"
[[policies]]
name = "random_k"
[[policies]]
name = "pareto_ts"
"""

DTLZ = """\
[experiment]
name = "dtlz_16"
horizon = 60
seeds = 1
record_every = 20

[env]
kind = "dtlz"
d = 2
n = 16
k = 3
sigma = 0.05
front = "concave"

[[policies]]
name = "pareto_ucb"
family = "slate"
"""


def _run(tmp_path, name: str, text: str) -> dict:
    spec = tmp_path / f"{name}.toml"
    spec.write_text(text)
    env = dict(os.environ, MOBANDIT_NO_CACHE="1")
    out = subprocess.run([sys.executable, "-m", "mobandit_jax.cli", "run", str(spec), "--out",
                          str(tmp_path / name), "--quiet"], capture_output=True, text=True, env=env, timeout=TIMEOUT_S)
    assert out.returncode == 0, out.stderr
    return json.loads((tmp_path / name / "summary.json").read_text())


@pytest.mark.slow  # many processes or a long run: `pytest -m slow`
def test_slates_under_a_cone_on_a_16_arm_table_run(tmp_path):
    rng = np.random.default_rng(1)
    rows = [f"m{i}," + ",".join(f"{x:.3f}" for x in rng.uniform(0.1, 0.9, 3)) for i in range(16)]
    (tmp_path / "models.csv").write_text("model,accuracy,speed,safety\n" + "\n".join(rows) + "\n")
    summary = _run(tmp_path, "cone", CONE_TABLE)
    policies = {r["policy"] for r in summary["records"]}
    assert policies == {"thv_ucb", "pareto_ucb", "scalar_ucb", "chebyshev_ucb", "random_k", "pareto_ts"}, policies
    assert all(np.isfinite(r["mean"]) for r in summary["records"])


def test_pareto_ucb_on_16_dtlz_arms_runs(tmp_path):
    summary = _run(tmp_path, "dtlz", DTLZ)
    assert {r["policy"] for r in summary["records"]} == {"pareto_ucb"}
    assert all(np.isfinite(r["mean"]) for r in summary["records"])


def test_the_compile_benchmark_records_a_timeout_and_goes_on_in_a_new_worker():
    from mobandit_jax.bench import compile_shapes

    job = dict(name="slate/random_k", family="slate", size=5, d=2, k=3)
    worker = compile_shapes.Worker()
    assert worker.compile(job, timeout=0.001) == {"timeout": 0.001} and not worker.alive
    rows = compile_shapes.measure([job, dict(job, size=2, k=1)], timeout=TIMEOUT_S, log=lambda line: None)
    assert [(r["size"], r["k"]) for r in rows] == [(5, 3), (2, 1)]
    assert all(0 < r["compile_s"] < TIMEOUT_S and r["lower_s"] > 0 for r in rows), rows
    table = compile_shapes.markdown(rows, sizes=(2, 5)).splitlines()
    assert table[2].startswith("| `slate/random_k` | 2 | min(3, K-1) | ") and len(table) == 3
