"""Each bad case ends in a correct result or one line naming the right key and what is allowed: CSV columns,
run folders of another spec or without results, the run lock, a closed pipe, identification budgets, Python
overrides, the preference matrix; and ``repr(Results)`` is one short paragraph."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _tiny_spec import tiny_spec

import mobandit_jax as mb
from mobandit_jax.cli import main
from mobandit_jax.errors import ConfigError
from mobandit_jax.runner import plans, run_folder
from mobandit_jax.runner import spec as cfg

CSV = "model,question,acc,speed,tokens\na,q1,0.5,0.2,30\na,q2,0.6,0.1,40\nb,q1,0.2,0.9,50\nb,q2,0.3,0.8,60\n"
TABLE = "model,acc,speed,price\na,0.5,0.2,3\nb,0.6,0.3,2\nc,0.2,0.9,1\nd,0.4,0.4,2\ne,0.7,0.1,3\nf,0.3,0.6,1\n"


def _replay(tmp_path, **env):
    (tmp_path / "data.csv").write_text(CSV)
    section = {"kind": "replay", "path": str(tmp_path / "data.csv"), "arm": "model", "instance": "question",
               "objectives": ["acc", "speed"], "cost": "tokens", **env}
    return {"experiment": {"horizon": 30, "seeds": 2, "record_every": 10}, "env": section,
            "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "policies": [{"name": "prefucb"}]}


@pytest.mark.parametrize("key, column, named", [("instance", "prompt", "env.instance"),
                                                 ("objectives", ["acc", "sped"], "env.objectives"),
                                                 ("cost", "tok", "env.cost")])
def test_a_missing_replay_column_is_blamed_on_its_own_key(tmp_path, key, column, named):
    with pytest.raises(ConfigError) as err:
        mb.run(_replay(tmp_path, **{key: column}))
    msg = str(err.value)
    missing = column[-1] if isinstance(column, list) else column
    closest = {"prompt": "", "sped": " (did you mean 'speed'?)", "tok": " (did you mean 'tokens'?)"}[missing]
    assert msg.startswith(f"{tmp_path / 'data.csv'}: missing column(s) [{missing!r}] (named by {named}){closest}; "
                          "the header (line 1) has ['model', 'question', 'acc', 'speed', 'tokens']"), msg


def test_a_run_folder_of_another_spec_is_refused_naming_the_keys_that_differ(tmp_path):
    spec = tiny_spec(tmp_path / "tiny.toml", horizon=60, seeds=2, chunk=1, record_every=20)
    mb.run(spec, out=tmp_path / "run")
    with pytest.raises(ConfigError) as err:  # a finished run; its spec with another horizon
        mb.run(spec, out=tmp_path / "run", overrides={"experiment.horizon": 80})
    assert str(err.value) == (f"out {tmp_path / 'run'}: {tmp_path / 'run'} holds results of a different experiment "
                              "(experiment.horizon = 60 there, 80 in this run); choose another output folder or "
                              "delete it")
    other = tiny_spec(tmp_path / "other.toml", horizon=60, seeds=2, chunk=1, record_every=10)
    code = subprocess.run([sys.executable, "-m", "mobandit_jax.cli", "run", str(other), "--out",
                           str(tmp_path / "run"), "--quiet", "--no-cache"], capture_output=True, text=True)
    assert code.returncode == 2 and code.stderr.splitlines() == [
        f"error: {tmp_path / 'run'} holds results of a different experiment (experiment.record_every = 20 there, 10 "
        "in this run); choose another output folder or delete it"]
    assert mb.run(spec, out=tmp_path / "run", seeds=1).records  # the seed count is no other experiment


def test_a_folder_whose_run_failed_before_its_first_chunk_takes_the_corrected_run(tmp_path):
    plugin = tmp_path / "mine.py"
    plugin.write_text(textwrap.dedent('''
        import jax.numpy as jnp
        import mobandit_jax as mb

        def first_arm(num_arms):
            def select(key, state, params):
                raise RuntimeError("this select is broken")

            return mb.Policy(lambda params: jnp.zeros(()), select, lambda state, action, obs, params: state)

        mb.register_policy("first_arm", "preference", first_arm, lambda ctx: (dict(num_arms=ctx.num_arms), {}),
                           doc="always arm 0")
    '''))
    spec = tiny_spec(tmp_path / "tiny.toml", horizon=40, seeds=2, chunk=1, record_every=20)
    spec.write_text(spec.read_text().replace("[env]", f"plugins = [{str(plugin)!r}]\n\n[env]").replace(
        '"prefucb"', '"first_arm"'))
    with pytest.raises(RuntimeError, match="this select is broken"):
        mb.run(spec, out=tmp_path / "run")
    assert (tmp_path / "run" / "run.json").exists() and not run_folder.holds_results(tmp_path / "run")
    plugin.write_text(plugin.read_text().replace('raise RuntimeError("this select is broken")', "return jnp.int32(0)"))
    fixed = mb.run(spec, out=tmp_path / "run")  # the corrected plugin is another fingerprint, and runs there
    assert fixed.records == mb.run(spec).records
    assert [r["mean"] for r in fixed.records if r["metric"] == "optimal_selection_ratio"] == [0.0]  # arm 0 only


def test_the_lock_file_is_there_while_a_run_writes_and_gone_after(tmp_path):
    spec = tiny_spec(tmp_path / "tiny.toml", horizon=40, seeds=2, chunk=1, record_every=20)
    held = run_folder.lock(tmp_path / "run")
    assert (tmp_path / "run" / ".lock").read_text().strip() == str(os.getpid())
    with pytest.raises(run_folder.RunFolderError, match=f"written by another mobandit run .process {os.getpid()}"):
        run_folder.lock(tmp_path / "run")  # a second lock of the folder, even in this process, is refused
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--quiet", "--no-cache"]) == 2
    held.release()
    held.release()  # once released, releasing again does nothing
    assert not (tmp_path / "run" / ".lock").exists()
    with run_folder.lock(tmp_path / "run"):
        assert (tmp_path / "run" / ".lock").exists()
    assert not (tmp_path / "run" / ".lock").exists()
    assert main(["run", str(spec), "--out", str(tmp_path / "run"), "--quiet", "--no-cache"]) == 0
    assert not (tmp_path / "run" / ".lock").exists() and (tmp_path / "run" / "summary.json").exists()


def test_a_closed_pipe_ends_the_report_quietly(tmp_path):
    spec = tiny_spec(tmp_path / "tiny.toml", horizon=40, seeds=2, chunk=1, record_every=20)
    res = mb.run(spec, out=tmp_path / "run")
    (tmp_path / "run" / "report.md").write_text("line\n" * 200_000)  # more than a pipe holds
    shell = f"{sys.executable} -m mobandit_jax.cli report {tmp_path / 'run'} | head -n 2"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", shell], capture_output=True, text=True)
    assert done.stdout == "line\nline\n" and done.stderr == "" and done.returncode == 0, done
    text = repr(res)  # and the results in one short paragraph
    assert text == ("Results(1 policy ['PrefUCB'], 1 setting(s), 2 seed(s), horizon 40, metrics "
                    "['regret_indicator', 'regret_gap', 'optimal_selection_ratio', 'reward_0', 'reward_1', "
                    "'reward_2'], 6 records)")


def _identification(tmp_path, budget):
    (tmp_path / "table.csv").write_text(TABLE)
    return {"experiment": {"horizon": 1, "seeds": 2},
            "env": {"kind": "table", "path": str(tmp_path / "table.csv"), "arm": "model",
                    "objectives": ["acc", "speed"], "cost": "price"},
            **({"budget": budget} if budget is not None else {}), "policies": [{"name": "psi_sr"}]}


def test_an_identification_budget_below_one_pull_of_every_arm_is_refused_with_the_smallest_one(tmp_path):
    # costs 3, 2, 1, 2, 3, 1 over the largest: one pull of each of the six arms costs 12 / 3 = 4 = rho K c_bar, rho = 1;
    # PSI-SR's first phase needs T = B / c_bar > K unit pulls: B >= 7 * 2 / 3 (14 price)
    for budget, shown in (({"B": 3.9}, "3.9 (11.7 price)"), ({"rho": 0.5}, "2 (6 price)")):
        with pytest.raises(ConfigError) as err:
            mb.run(_identification(tmp_path, budget))
        assert str(err.value) == (f"policy 'psi_sr': budget B = {shown} is below the 4.66667 (14 price) its first "
                                  "phase needs to evaluate each of the 6 arms once (B in units of the largest cost): "
                                  "give budget.B >= 4.66667 or budget.rho >= 1.16667 (env.rho for kind 'llm_configs')")
    spec = _identification(tmp_path, {"B": 4.0})
    spec["policies"] = [{"name": "uniform_alloc"}]
    spent = [r["mean"] for r in mb.run(spec).records if r["metric"] == "budget_spent"]
    assert spent == [1.0]  # B = 4: uniform allocation pulls each arm once and spends it all
    with pytest.raises(ConfigError) as err:
        mb.run(_identification(tmp_path, None))
    assert str(err.value) == ("policy 'psi_sr': fixed-budget identification needs a budget: add a [budget] table "
                              "with rho (B = rho * K * mean cost) or B (in units of the largest cost)")


def test_python_overrides_are_named_overrides_and_the_preference_family_names_its_policy(small_spec):
    with pytest.raises(ConfigError, match=r"^overrides 'experiment\.horizon': expected key=value"):
        mb.run(small_spec, overrides=["experiment.horizon"])
    with pytest.raises(ConfigError, match=r"^overrides 'experiment\.horizon\.x': 'horizon' is not a table$"):
        mb.run(small_spec, overrides={"experiment.horizon.x": 3})
    with pytest.raises(ConfigError, match=r"cannot be set with overrides; edit the spec$"):
        mb.run(small_spec, overrides={"policies.x": 1})
    assert main(["run", "nowhere.toml", "--set", "experiment.horizon"]) == 2  # the CLI keeps --set (its own test)
    del small_spec["preference"]  # the preference family then reads the Pareto order W = I
    small_spec["policies"] = [{"name": "prefucb", "label": "Mine"}]
    plan = plans.checked_build(cfg.validate(small_spec))
    np.testing.assert_array_equal(plan.groups[0].params[0].cone, np.eye(len(small_spec["env"]["means"][0])))
