"""Plugins: a user's policy and environment, in their own module, run from a spec like built-ins.

The module below is written against the documented registration API only (``mb.register_policy``,
``mb.register_env``, ``mb.Policy``, ``mb.Env``, ``mb.EnvInstance``). It is run from TOML through
``[experiment] plugins``, swept over a grid, on two worker processes, interrupted and resumed, and its
numbers are compared with the same code imported in-process (no ``plugins`` key) and with a plain numpy
replay of the policy's choices.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _in_process import run_registered_in_process

from mobandit_jax.cli import main
from mobandit_jax.runner import run_folder

PLUGIN = '''
"""A user's epsilon-greedy policy on the mean scalarization and a Bernoulli table environment."""
from typing import NamedTuple

import numpy as np
import jax
import jax.numpy as jnp

import mobandit_jax as mb


class GreedyState(NamedTuple):
    counts: jax.Array  # (K,)
    sums: jax.Array  # (K, d)


def eps_greedy(num_arms, dim):
    def init(params):
        return GreedyState(jnp.zeros(num_arms), jnp.zeros((num_arms, dim)))

    def select(key, state, params):
        k_explore, k_arm = jax.random.split(key)
        means = state.sums / jnp.maximum(state.counts, 1.0)[:, None]
        score = jnp.where(state.counts > 0, means @ params["w"], jnp.inf)  # unplayed arms first
        explore = jax.random.uniform(k_explore) < params["eps"]
        return jnp.where(explore, jax.random.randint(k_arm, (), 0, num_arms), jnp.argmax(score)).astype(jnp.int32)

    def update(state, action, obs, params):
        return GreedyState(state.counts.at[action].add(1.0), state.sums.at[action].add(obs.reward))

    return mb.Policy(init, select, update)


def configure(ctx, eps):
    w = jnp.full((ctx.dim,), 1.0 / ctx.dim)
    return dict(num_arms=ctx.num_arms, dim=ctx.dim), {"eps": jnp.float32(eps), "w": w}


mb.register_policy("eps_greedy", "preference", eps_greedy, configure, doc="epsilon-greedy, mean scalarization",
                   eps=0.1)


@mb.register_env("bernoulli_table", doc="Bernoulli rewards with the given means", keys=("means",))
def build(section, config):
    means = np.asarray(section["means"], np.float32)
    K, d = means.shape

    def sample(key, arm, pull_index, t, params):
        k = jax.random.fold_in(jax.random.fold_in(key, arm), pull_index)
        return (jax.random.uniform(k, (d,)) < params[arm]).astype(jnp.float32), jnp.float32(1.0)

    return mb.EnvInstance(mb.Env(sample, K, d), jnp.asarray(means), means, static_key=("bernoulli_table", K, d))
'''

SPEC = '''
[experiment]
horizon = 300
seeds = 8
chunk = 2
record_every = 50
{plugins}

[env]
kind = "bernoulli_table"
means = [[0.9, 0.2], [0.2, 0.9], [0.5, 0.5], [0.3, 0.3]]

[preference]
W = [[1.0, 0.0], [0.0, 1.0]]

[[policies]]
name = "eps_greedy"
sweep = {{ eps = [0.05, 0.3] }}

[[policies]]
name = "prefucb"
'''


def _write(folder, plugin=PLUGIN, plugins='plugins = ["my_plugin.py"]'):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "my_plugin.py").write_text(textwrap.dedent(plugin))
    spec = folder / "spec.toml"
    spec.write_text(SPEC.format(plugins=plugins))
    return spec


def _cli(*args, cwd=None, env=None):
    env = {**os.environ, **(env or {})}
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run([sys.executable, "-m", "mobandit_jax.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=600)
    return proc.returncode, proc.stderr.strip().splitlines()


def _records(folder):
    return json.loads((folder / "summary.json").read_text())["records"]


def _curves(folder):
    with np.load(folder / "curves.npz") as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def plugin_runs(tmp_path_factory):
    """The plugin spec run on two worker processes, and the same code registered in-process."""
    base = tmp_path_factory.mktemp("plugins")
    spec = _write(base / "user")
    code, err = _cli("run", spec, "--out", base / "workers", "--quiet", "--workers", "on", "--devices", "2")
    assert code == 0, err
    run_registered_in_process(base / "user", "my_plugin", spec, base / "in_process")
    return base, spec


def test_a_plugin_from_a_spec_gives_the_numbers_of_the_same_code_registered_in_process(plugin_runs):
    base, _ = plugin_runs
    workers, in_process = _records(base / "workers"), _records(base / "in_process")
    assert len(workers) == len(in_process) > 0
    assert workers == in_process
    a, b = _curves(base / "workers"), _curves(base / "in_process")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    grid = json.loads((base / "workers" / "grid.json").read_text())
    assert [p["params"]["eps"] for p in grid["eps_greedy"]] == [0.05, 0.3]  # the sweep ran as a grid


def test_a_plugin_policy_plays_by_its_own_rule(plugin_runs):
    """Independent check: only the dominated arm 3 has a gap (``preference_gaps``); eps-greedy plays it
    about eps/K of the rounds, so more exploration costs more, and either costs less than uniform play."""
    import mobandit_jax as mb

    base, _ = plugin_runs
    regret = {json.dumps(r["params"]): r["mean"] for r in _records(base / "workers")
              if r["metric"] == "regret_gap" and r["policy"] == "eps_greedy"}
    low = regret[json.dumps({"name": "eps_greedy", "eps": 0.05})]
    high = regret[json.dumps({"name": "eps_greedy", "eps": 0.3})]
    gaps = np.asarray(mb.preference_gaps(np.array([[0.9, 0.2], [0.2, 0.9], [0.5, 0.5], [0.3, 0.3]]), np.eye(2)))
    assert gaps[:3].tolist() == [0.0, 0.0, 0.0] and gaps[3] > 0
    assert 0 < low < high < 300 * gaps.mean()


def test_a_plugin_run_resumes_after_an_interruption_to_the_same_numbers(plugin_runs, tmp_path):
    base, spec = plugin_runs
    out = tmp_path / "resumed"
    code, err = _cli("run", spec, "--out", out, "--quiet", "--workers", "on", "--devices", "2")
    assert code == 0, err
    chunks = sorted((out / "chunks").glob("chunk_*.npz"))
    assert len(chunks) == 4
    for path in chunks[1:3] + [out / "summary.json", out / "curves.npz"]:  # as a run stopped after two chunks
        path.unlink()
    code, err = _cli("run", spec, "--out", out, "--quiet", "--workers", "on", "--devices", "2")
    assert code == 0, err
    assert (out / "summary.json").read_bytes() == (base / "workers" / "summary.json").read_bytes()


def test_an_edited_plugin_is_another_experiment_and_never_resumes_old_chunks(tmp_path):
    spec = _write(tmp_path / "user")
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--quiet", "--seeds", "2"]) == 0
    edited = PLUGIN.replace("means @ params[\"w\"]", "means @ params[\"w\"] * 1.0")
    (tmp_path / "user" / "my_plugin.py").write_text(edited)
    code, err = _cli("run", spec, "--out", tmp_path / "run", "--quiet", "--seeds", "2")
    assert code == 2 and len(err) == 1 and "different experiment" in err[0], err


def test_mb_run_honours_the_plugins_key(tmp_path):
    import tomllib

    import mobandit_jax as mb

    spec_path = _write(tmp_path / "user")
    spec = tomllib.loads(spec_path.read_text())
    spec["experiment"]["plugins"] = [str(tmp_path / "user" / "my_plugin.py")]
    spec["experiment"]["seeds"] = 2
    res = mb.run(spec)
    assert {r["policy"] for r in res.records} == {"eps_greedy", "prefucb"}
    assert "preference/eps_greedy" in mb.POLICIES and mb.POLICIES.resolve("eps_greedy") == "preference/eps_greedy"


BAD = {
    "missing": (None, 'plugins = ["nowhere.py"]', "nowhere.py"),
    "import_error": ("import not_a_module_anywhere\n", None, "my_plugin.py"),
    "raises": ("raise RuntimeError('broken on purpose')\n", None, "broken on purpose"),
    "clash": ("import mobandit_jax as mb\nmb.register_policy('prefucb', 'preference', lambda: None, "
              "lambda ctx: ({}, {}))\n", None, "registered already"),
    "not_a_policy": ("import mobandit_jax as mb\nmb.register_policy('bad_pol', 'preference', lambda: 42, "
                     "lambda ctx: ({}, {}))\n", None, "not a Policy"),
    "module": (None, 'plugins = ["no_such_pkg.policies"]', "no_such_pkg.policies"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_plugin_is_one_line_naming_it_and_exit_2(tmp_path, case):
    source, plugins, named = BAD[case]
    if source is not None:
        source = source + ("" if case != "not_a_policy" else "")
    spec = _write(tmp_path / "user", plugin=PLUGIN if source is None else source,
                  plugins=plugins or 'plugins = ["my_plugin.py"]')
    if case == "not_a_policy":
        spec.write_text(spec.read_text().replace('name = "eps_greedy"\nsweep = { eps = [0.05, 0.3] }',
                                                 'name = "bad_pol"').replace('kind = "bernoulli_table"',
                                                                             'kind = "stochastic"'))
    code, err = _cli("run", spec, "--out", tmp_path / "run", "--quiet", "--seeds", "2")
    assert code == 2 and len(err) == 1 and named in err[0] and "Traceback" not in err[0], err
    assert not (tmp_path / "run" / "summary.json").exists()


def test_an_installed_package_registers_through_the_entry_point_group(tmp_path):
    site = tmp_path / "site"
    (site / "user_algos").mkdir(parents=True)
    (site / "user_algos" / "__init__.py").write_text(PLUGIN)
    dist = site / "user_algos-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: user-algos\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[mobandit_jax.plugins]\nuser_algos = user_algos\n")
    spec = _write(tmp_path / "user", plugins="")
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    code, err = _cli("run", spec, "--out", tmp_path / "run", "--quiet", "--seeds", "2", env={"PYTHONPATH": path})
    assert code == 0, err
    assert {r["policy"] for r in _records(tmp_path / "run")} == {"eps_greedy", "prefucb"}
    assert run_folder.run_marker(tmp_path / "run")["spec"]["env"]["kind"] == "bernoulli_table"


def test_a_plugin_that_registers_a_built_in_factory_is_edited_and_reloaded_in_one_process(tmp_path):
    import mobandit_jax as mb

    source = ('import mobandit_jax as mb\nfrom mobandit_jax.policies import preference as p\n'
              'mb.register_policy("my_klucb", "preference", p.prefucb, lambda ctx, **o: {tag}, index="klucb")\n')
    row = mb.POLICIES["preference/prefucb"]
    (tmp_path / "reuse.py").write_text(source.format(tag="row.configure(ctx, **o)").replace(
        "import mobandit_jax as mb\n", "import mobandit_jax as mb\nrow = mb.POLICIES['preference/prefucb']\n"))
    spec = {"experiment": {"horizon": 20, "seeds": 2, "record_every": 10, "plugins": [str(tmp_path / "reuse.py")]},
            "env": {"kind": "stochastic", "means": [[0.2, 0.7], [0.6, 0.4], [0.1, 0.1]]},
            "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "policies": [{"name": "my_klucb"}, {"name": "prefucb"}]}
    first = mb.run(spec)
    assert mb.POLICIES["preference/my_klucb"].module != row.module  # the row belongs to the plugin
    (tmp_path / "reuse.py").write_text((tmp_path / "reuse.py").read_text() + "# edited\n")
    second = mb.run(spec)  # the edited plugin is imported again: its rows are replaced, not clashed
    values = {r["policy"]: r["mean"] for r in second.records if r["metric"] == "regret_gap"}
    assert values["my_klucb"] == values["prefucb"]  # the same factory and configuration as the built-in
    assert [r["mean"] for r in first.records] == [r["mean"] for r in second.records]
