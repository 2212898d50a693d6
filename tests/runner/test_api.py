"""mb.run and Results: in memory with nothing written, the same records as `mobandit run`, labelled curves, compare."""
import json
import os

import numpy as np
import pytest
from _tiny_spec import tiny_spec

import mobandit_jax as mb
from mobandit_jax import cli
from mobandit_jax.runner import execution, plans
from mobandit_jax.runner import spec as cfg
from mobandit_jax.runner.spec import ConfigError


def _files(root):
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs)


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A fresh cwd, HOME and XDG cache dir under tmp_path, holding only the tiny spec (2 chunks of 2 seeds)."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    tiny_spec(work / "tiny.toml", horizon=60, seeds=6, chunk=2, record_every=20)
    return tmp_path


def test_run_in_memory_writes_nothing_and_matches_the_cli(sandbox):
    before = _files(sandbox)
    res = mb.run("tiny.toml", seeds=4)
    assert _files(sandbox) == before == ["work/tiny.toml"]
    assert {"regret_gap", "regret_indicator", "optimal_selection_ratio"} <= {r["metric"] for r in res.records}
    assert all(r["n"] == 4 and r["policy"] == "PrefUCB" for r in res.records)
    # The run folder `mobandit run` writes holds the same records and arrays.
    plan = plans.checked_build(cfg.apply_overrides(cfg.load("tiny.toml"), ["experiment.seeds=4"]))
    execution.execute(plan, "cli", progress=False)
    assert json.loads((sandbox / "work/cli/summary.json").read_text())["records"] == res.records
    with np.load(sandbox / "work/cli/curves.npz") as z:
        assert sorted(z.files) == sorted(res.arrays)
        for k in z.files:
            np.testing.assert_array_equal(z[k], res.arrays[k])


def test_curves_are_labelled_and_records_are_their_seed_means(sandbox):
    spec = {"experiment": {"horizon": 60, "seeds": 3, "record_every": 20},
            "env": {"kind": "stochastic", "means": [[0.2, 0.7], [0.6, 0.4], [0.5, 0.5]]},
            "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]}, "sweep": {"env.concentration": [1.0, 4.0]},
            "policies": [{"name": "prefucb", "label": "P"}, {"name": "pareto_ucb", "label": "Q"}]}
    res = mb.run(spec, overrides={"experiment.seeds": 2})
    c = res.curves("regret_gap")
    assert c.values.shape == (2, 2, 2, 3)  # policy x setting x seed x checkpoint
    assert c.policies == ("P", "Q") and c.settings == ({"concentration": 1.0}, {"concentration": 4.0})
    np.testing.assert_array_equal(c.checkpoints, [20, 40, 60])
    for r in res.records:
        if r["metric"] == "regret_gap":  # reducer "sum": the mean over seeds of the last checkpoint
            p, s = c.policies.index(r["policy"]), c.settings.index(r["setting"])
            assert r["mean"] == pytest.approx(float(np.mean(c.values[p, s, :, -1])), rel=1e-6)
    frame = res.frame()
    assert list(frame.columns) == ["policy", "concentration", "metric", "mean", "std", "n", "se", "ci_low", "ci_high"]
    assert len(frame) == len(res.records) == 2 * 2 * len(res.metrics()) and set(frame["n"]) == {2}
    assert res.plot("regret_gap").axes[0].get_title() == "concentration=1.0"
    with pytest.raises(ValueError, match="unknown metric 'nope'"):
        res.curves("nope")
    assert _files(sandbox) == ["work/tiny.toml"]


def test_save_writes_a_run_folder_that_compare_reads(sandbox, capsys):
    res = mb.run("tiny.toml", overrides=["experiment.seeds=2", "experiment.horizon=40"])
    res.save("a")
    for name in ("run.json", "summary.json", "curves.npz", "finals.npz", "grid.json", "report.md", "regret_gap.png"):
        assert (sandbox / "work/a" / name).is_file(), name
    back = mb.Results.load("a")
    assert back.records == res.records and back.grid == res.grid
    other = mb.run("tiny.toml", overrides={"experiment.seeds": 2, "preference.W": [[1.0, 0.0, 0.0]]})
    other.save("b")
    with pytest.raises(RuntimeError, match="different experiment"):
        other.save("a")
    assert cli.main(["compare", "a", "b", "--metric", "regret_gap", "--out", "cmp.png"]) == 0
    out = capsys.readouterr().out
    mean = {n: r["mean"] for n, rr in (("a", res), ("b", other)) for r in rr.records if r["metric"] == "regret_gap"}
    row = next(line for line in out.splitlines() if line.startswith("| default | PrefUCB |"))
    assert row.split("|")[3].strip().startswith(f"{mean['a']:.4g} [") and row.split("|")[4].strip().startswith(
        f"{mean['b']:.4g} [")
    assert (sandbox / "work/cmp.png").stat().st_size > 0
    assert cli.main(["compare", "a", "b", "--metric", "regret_gap", "regret_indicator", "--out", "two.png"]) == 0
    assert capsys.readouterr().out.count("### ") == 2
    assert cli.main(["compare", "a", "--metric", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--metric 'nope' is in none of the runs" in err and err.count("\n") == 1


BAD_ARGUMENTS = {  # id: (mb.run arguments, text of the one-line ConfigError)
    "spec_number": ((42,), {},
                    "spec must be a TOML path (a str or a Path), a dict of tables or an ExperimentSpec; got int"),
    "spec_bytes": ((b"tiny.toml",), {}, "got bytes"),
    "spec_none": ((None,), {}, "got NoneType"),
    "spec_missing": (("nope.toml",), {}, "config file 'nope.toml' does not exist"),
    "spec_folder": ((".",), {}, "config '.' is a folder"),
    "table_not_a_table": (({"experiment": 3, "env": {"kind": "stochastic"}, "policies": [{"name": "prefucb"}]},), {},
                          "[experiment] must be a table; got 3"),
    "no_policies": (({"env": {"kind": "stochastic"}},), {}, "at least one [[policies]] entry"),
    "key_not_text": (({"env": {"kind": "stochastic", 1: 2}, "policies": [{"name": "prefucb"}]},), {},
                     "spec.env: key 1 is a int; spec keys are strings"),
    "value_none": (({"env": {"kind": "stochastic"}, "experiment": {"horizon": None}, "policies": []},), {},
                   "spec.experiment.horizon = None is a NoneType; spec values are TOML values"),
    "value_tuple": (({"env": {"kind": "stochastic"}, "policies": ({"name": "prefucb"},)},), {},
                    "spec.policies = ({'name': 'prefucb'},) is a tuple"),
    "misspelt_key": (({"env": {"kind": "stochastic"}, "experiment": {"horizn": 3}, "policies": [{"name": "prefucb"}]},),
                     {}, "unknown key(s) ['horizn'] in [experiment]"),
    **{f"seeds_{v!r}": (("tiny.toml",), {"seeds": v}, f"seeds={v!r}: the number of seeds must be an integer from 1 to "
                        "2147483647") for v in (0, -1, 2.5, True, "3", 10**12)},
    "seeds_in_overrides": (("tiny.toml",), {"overrides": ["experiment.seeds=10000000000"]},
                           "experiment.seeds = 10000000000: it must be at most 2147483647"),
    "overrides_text": (("tiny.toml",), {"overrides": "x"}, "overrides='x': expected a list of 'key=value' strings"),
    "overrides_number": (("tiny.toml",), {"overrides": 5}, "overrides=5: expected a list"),
    "override_without_equals": (("tiny.toml",), {"overrides": ["x"]}, "'x': expected key=value"),
    "override_not_text": (("tiny.toml",), {"overrides": [3]}, "overrides: 3 is a int; each override is a 'key=value'"),
    "override_key_not_text": (("tiny.toml",), {"overrides": {1: 2}}, "overrides: key 1 is a int; the keys are dotted"),
    "override_value_none": (("tiny.toml",), {"overrides": {"experiment.horizon": None}},
                            "overrides['experiment.horizon'] = None is a NoneType"),
    "override_unknown_key": (("tiny.toml",), {"overrides": {"experiment.horizn": 5}},
                             "unknown key(s) ['horizn'] in [experiment]"),
    "override_unknown_table": (("tiny.toml",), {"overrides": ["nope.key=1"]}, "unknown key(s) ['nope'] in [top level]"),
    "override_unknown_env_key": (("tiny.toml",), {"overrides": {"env.concentraton": 2.0}}, "concentraton"),
    "out_number": (("tiny.toml",), {"out": 3}, "out=3: expected a folder path"),
    "out_file": (("tiny.toml",), {"out": "tiny.toml"}, "out tiny.toml: tiny.toml is a file, not a folder"),
    "out_below_a_file": (("tiny.toml",), {"out": "tiny.toml/run"}, "out tiny.toml/run: tiny.toml is a file"),
    "out_foreign": (("tiny.toml",), {"out": "mine"}, "out mine: mine is not empty and is not a run folder"),
    "progress_text": (("tiny.toml",), {"progress": "yes"}, "progress='yes': expected True or False"),
}


@pytest.mark.parametrize("case", sorted(BAD_ARGUMENTS))
def test_every_bad_argument_of_run_is_a_one_line_config_error_and_writes_nothing(sandbox, case):
    args, kwargs, expected = BAD_ARGUMENTS[case]
    (sandbox / "work/mine").mkdir()
    (sandbox / "work/mine/notes.txt").write_text("mine")
    before = _files(sandbox)
    with pytest.raises(ConfigError) as err:
        mb.run(*args, **kwargs)
    assert expected in str(err.value) and "\n" not in str(err.value), str(err.value)
    assert isinstance(err.value, ValueError) and not isinstance(err.value, (KeyError, TypeError))
    assert _files(sandbox) == before


def test_run_into_a_run_folder_of_another_experiment_is_a_config_error(sandbox):
    mb.run("tiny.toml", seeds=2, out="r")
    before = _files(sandbox)
    with pytest.raises(ConfigError, match="out r: r holds results of a different experiment"):
        mb.run("tiny.toml", seeds=2, out="r", overrides=["experiment.horizon=40"])
    assert _files(sandbox) == before
    assert mb.run("tiny.toml", seeds=2, out="r").records  # the same experiment resumes there


def test_the_seeds_argument_takes_integers_up_to_the_specs_bound():
    from mobandit_jax.runner import api

    assert api.MAX_SEEDS == cfg.MAX_COUNT == 2**31 - 1
    assert api.check_seeds(api.MAX_SEEDS) == 2**31 - 1 and api.check_seeds(np.int64(3)) == 3
    with pytest.raises(ConfigError, match=r"--seeds=2147483648: the number of seeds"):
        api.check_seeds(2**31, "--seeds")


@pytest.mark.parametrize("extra, expected", [
    (["--seeds", "10000000000"], "experiment.seeds = 10000000000: it must be at most 2147483647"),
    (["--set", "experiment.seeds=10000000000"], "experiment.seeds = 10000000000: it must be at most 2147483647"),
    (["--seeds", "0"], "experiment.seeds = 0: it must be an integer >= 1"),
])
def test_cli_refuses_an_absurd_seed_count_in_one_line_before_running(sandbox, capsys, monkeypatch, extra, expected):
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))  # the CLI sets it; restored after
    assert cli.main(["run", "tiny.toml", "--out", "out", "--quiet", *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0], err
    assert not (sandbox / "work/out").exists()
