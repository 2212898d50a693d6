"""A plugin registers a whole new policy family (its policy, metric set and truth) and runs it like a built-in.

The module below uses the documented registration API only (``mb.register_family``, ``mb.register_policy``,
``mb.MetricSet``, ``mb.Metric``) and edits no file of the project. It is run from TOML through ``[experiment]
plugins`` on two worker processes, swept over an option and two settings, interrupted and resumed; its
``truth.json`` is checked against numpy, its report and ``mobandit compare`` read it, and its numbers equal
those of the same module imported in-process.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _in_process import run_registered_in_process

PLUGIN = '''
"""The max-min family: the goal is the arm whose worst objective is best; round-robin, then greedy."""
from typing import NamedTuple

import jax
import jax.numpy as jnp

import mobandit_jax as mb


class MaxMinTruth(NamedTuple):
    worst: jax.Array  # (K,) min_j mu_ij
    best: jax.Array  # () max_i min_j mu_ij


def metrics(ctx):
    worst = ctx.means.min(axis=1)
    truth = MaxMinTruth(jnp.asarray(worst, jnp.float32), jnp.asarray(worst.max(), jnp.float32))

    def step(mp, action, obs):
        return {"maxmin_regret": mp.best - mp.worst[action], "cost": obs.cost}

    return mb.MetricSet((mb.Metric("maxmin_regret", "sum", "best worst-objective mean minus the played arm's"),
                         mb.Metric("cost", "sum", "cost of the pull")), step), truth


def truth(mp, slate_size):
    return {"maxmin_arms": mp.worst == mp.best, "maxmin_value": mp.best}


class State(NamedTuple):
    t: jax.Array
    counts: jax.Array
    sums: jax.Array


def explore_commit(num_arms, dim):
    def init(params):
        return State(jnp.zeros((), jnp.int32), jnp.zeros(num_arms), jnp.zeros((num_arms, dim)))

    def select(key, state, params):
        means = state.sums / jnp.maximum(state.counts, 1.0)[:, None]
        greedy = jnp.argmax(jnp.min(means, axis=1))
        return jnp.where(state.t < params["m"] * num_arms, state.t % num_arms, greedy).astype(jnp.int32)

    def update(state, action, obs, params):
        return State(state.t + 1, state.counts.at[action].add(1.0), state.sums.at[action].add(obs.reward))

    return mb.Policy(init, select, update)


def configure(ctx, m):
    return dict(num_arms=ctx.num_arms, dim=ctx.dim), {"m": jnp.int32(m)}


mb.register_family("maxmin", kind="online", metrics=metrics, truth=truth, doc="best worst objective")
mb.register_policy("explore_commit", "maxmin", explore_commit, configure, doc="round-robin, then greedy", m=2)
'''

SPEC = '''
[experiment]
name = "maxmin"
horizon = 120
seeds = 6
chunk = 2
record_every = 20
{plugins}

[env]
kind = "stochastic"
noise = "bernoulli"

[[scenarios]]
name = "three"
"env.means" = [[0.9, 0.2], [0.5, 0.6], [0.4, 0.4]]

[[scenarios]]
name = "four"
"env.means" = [[0.3, 0.8], [0.7, 0.5], [0.2, 0.2], [0.6, 0.55]]

[[policies]]
name = "explore_commit"
sweep = {{ m = [1, 5] }}
'''
MEANS = {"three": [[0.9, 0.2], [0.5, 0.6], [0.4, 0.4]], "four": [[0.3, 0.8], [0.7, 0.5], [0.2, 0.2], [0.6, 0.55]]}


def _cli(*args):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    proc = subprocess.run([sys.executable, "-m", "mobandit_jax.cli", *map(str, args)], capture_output=True,
                          text=True, env=env, timeout=600)
    return proc.returncode, proc.stderr.strip().splitlines()


def _arrays(folder, name):
    with np.load(folder / name) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The plugin's spec run on two worker processes, then resumed after losing chunks; and the same module
    imported by a script in another process, its spec without ``plugins``."""
    base = tmp_path_factory.mktemp("family")
    (base / "user").mkdir()
    (base / "user" / "maxmin_family.py").write_text(textwrap.dedent(PLUGIN))
    spec = base / "user" / "spec.toml"
    spec.write_text(SPEC.format(plugins='plugins = ["maxmin_family.py"]'))
    out = base / "workers"
    args = ("run", spec, "--out", out, "--quiet", "--workers", "on", "--devices", "2")
    code, err = _cli(*args)
    assert code == 0, err
    first = (out / "summary.json").read_bytes()
    chunks = sorted((out / "chunks").glob("chunk_*.npz"))
    assert len(chunks) == 3
    for path in chunks[1:] + [out / "summary.json", out / "curves.npz", out / "truth.json"]:  # as if stopped early
        path.unlink()
    code, err = _cli(*args)
    assert code == 0, err
    run_registered_in_process(base / "user", "maxmin_family", spec, base / "in_process")
    return base, first


def test_a_plugin_family_resumes_to_the_numbers_of_its_first_run(runs):
    base, first = runs
    assert (base / "workers" / "summary.json").read_bytes() == first


def test_a_plugin_family_from_toml_equals_its_in_process_registration(runs):
    base, _ = runs
    a, b = base / "workers", base / "in_process"
    for name in ("summary.json", "grid.json", "metrics.json", "truth.json"):
        assert json.loads((a / name).read_text()) == json.loads((b / name).read_text()), name
    for name in ("curves.npz", "finals.npz", "recommended.npz"):
        x, y = _arrays(a, name), _arrays(b, name)
        assert x.keys() == y.keys() and all(np.array_equal(x[k], y[k]) for k in x), name
    grid = json.loads((a / "grid.json").read_text())["explore_commit"]
    assert [(p["setting"]["scenario"], p["params"]["m"]) for p in grid] == [
        ("three", 1), ("three", 5), ("four", 1), ("four", 5)]  # the sweep ran over both settings
    meta = json.loads((a / "metrics.json").read_text())
    assert meta == {"names": {"explore_commit": ["maxmin_regret", "cost"]},
                    "reduce": {"explore_commit": {"maxmin_regret": "sum", "cost": "sum"}},
                    "families": {"explore_commit": "maxmin"}}


def test_a_plugin_family_writes_its_truth_and_its_report(runs):
    base, _ = runs
    out = base / "workers"
    settings = json.loads((out / "truth.json").read_text())["settings"]
    assert [s["setting"]["scenario"] for s in settings] == ["three", "four"]
    for entry in settings:
        worst = np.asarray(MEANS[entry["setting"]["scenario"]]).min(axis=1)  # numpy, not the plugin
        family = entry["families"]["maxmin"]
        assert family["maxmin_arms"] == (worst == worst.max()).tolist()
        np.testing.assert_allclose(family["maxmin_value"], worst.max(), rtol=1e-6)
    records = json.loads((out / "summary.json").read_text())["records"]
    for r in records:
        if r["metric"] == "maxmin_regret":  # at most the horizon times the largest gap, and never negative
            worst = np.asarray(MEANS[r["setting"]["scenario"]]).min(axis=1)
            assert 0 <= r["mean"] <= 120 * (worst.max() - worst.min())
    longer = {r["setting"]["scenario"]: r["mean"] for r in records if r["metric"] == "maxmin_regret"
              and r["params"]["m"] == 5}
    # "three": worst objectives (0.2, 0.5, 0.4); m = 5 round-robin pulls of each arm cost 5 (0.3 + 0 + 0.1) at least
    assert longer["three"] >= 5 * (0.5 - 0.2) + 5 * (0.5 - 0.4) - 1e-5
    report = (out / "report.md").read_text()
    assert "### maxmin_regret" in report and "maxmin_regret.png" in report


def test_a_plugin_family_is_compared_like_a_built_in(runs, tmp_path):
    base, _ = runs
    code, err = _cli("compare", base / "workers", base / "in_process", "--out", tmp_path / "cmp.png")
    assert code == 0, err
    assert (tmp_path / "cmp.png").is_file()
