"""The typed experiment spec (``mobandit_jax.experiment_spec``): ``to_dict`` gives the validated tables exactly as
the dict spec was (what run.json stores and the fingerprint hashes), the grid and the sizes read from it, by hand."""
import copy
import hashlib
import json
import pickle
from pathlib import Path

import pytest

import mobandit_jax as mb
from mobandit_jax.experiment_spec import EXPERIMENT_DEFAULTS, ExperimentSpec, GridPoint
from mobandit_jax.runner import plans
from mobandit_jax.runner import spec as cfg

TABLES = {
    "policies": [{"label": "P", "name": "prefucb", "sweep": {"alpha": [1.0, 2.0, 4.0]}}, {"name": "pareto_ucb"}],
    "env": {"kind": "stochastic", "noise": "beta", "means": [[0.2, 0.7], [0.6, 0.4], [0.5, 0.5]]},
    "experiment": {"seeds": 3, "name": "typed", "horizon": 40},
    "scenarios": [{"name": "a", "setting": {"group": "x"}, "preference.W": [[1.0, 0.0]]},
                  {"name": "b", "env.concentration": 2.0}],
    "sweep": {"env.noise": ["beta", "bernoulli"]},
}


def test_to_dict_is_the_tables_with_the_experiment_defaults_filled_in_their_order():
    spec = cfg.validate(copy.deepcopy(TABLES))
    want = {**TABLES, "experiment": {**EXPERIMENT_DEFAULTS, **TABLES["experiment"]}}  # the dict validate returned
    assert json.dumps(spec.to_dict()) == json.dumps(want)  # keys in the same order: run.json's bytes
    spec.to_dict()["env"]["means"][0][0] = 9.0  # a copy: the spec is not changed through it
    assert spec.env["means"][0][0] == 0.2 and spec.to_dict() == want
    assert ExperimentSpec.from_dict(spec.to_dict()) == spec
    assert pickle.loads(pickle.dumps(spec)) == spec  # what a worker process receives


def test_the_parts_are_named():
    spec = cfg.validate(copy.deepcopy(TABLES))
    assert (spec.experiment.horizon, spec.experiment.seeds, spec.experiment.name) == (40, 3, "typed")
    assert spec.experiment.plugins is None and spec.experiment.paper_schedule is False
    assert spec.env["kind"] == "stochastic" and spec.cone is None and spec.budget is None
    assert [(s.name, s.setting, s.overrides) for s in spec.scenarios] == [
        ("a", {"group": "x"}, {"preference.W": [[1.0, 0.0]]}), ("b", {}, {"env.concentration": 2.0})]
    assert [(p.name, p.label, p.family) for p in spec.policies] == [("prefucb", "P", None),
                                                                    ("pareto_ucb", "pareto_ucb", None)]


def test_the_grid_is_scenarios_times_sweep_values():
    settings = cfg.validate(copy.deepcopy(TABLES)).settings()
    assert [s.setting for s in settings] == [
        {"scenario": "a", "group": "x", "noise": "beta"}, {"scenario": "a", "group": "x", "noise": "bernoulli"},
        {"scenario": "b", "noise": "beta"}, {"scenario": "b", "noise": "bernoulli"}]
    assert [s.cone for s in settings] == [[[1.0, 0.0]]] * 2 + [None] * 2
    assert [s.env["noise"] for s in settings] == ["beta", "bernoulli"] * 2
    assert [s.env.get("concentration") for s in settings] == [None, None, 2.0, 2.0]
    assert all("sweep" not in s.tables and "scenarios" not in s.tables and s.tables["env"] is s.env
               for s in settings)


def test_sizes_by_hand():
    spec = cfg.validate(copy.deepcopy(TABLES))
    runs = (3 + 1) * 4  # the policy points (3 alphas, 1) at each of the 4 settings
    assert spec.seed_rounds() == 40 * 3 * runs
    assert spec.experiment.chunk_size == 3  # at most the seeds
    more = cfg.apply_overrides(spec, ["experiment.seeds=1000"])
    assert more.experiment.chunk_size == 256
    assert cfg.apply_overrides(more, ["experiment.chunk=7"]).experiment.chunk_size == 7
    assert spec.experiment.seeds == 3  # the overrides made new specs


def test_data_files_are_the_files_the_env_tables_name(tmp_path):
    for name in ("a.csv", "b.csv", "c.csv"):
        (tmp_path / name).write_text("x\n")
    tables = {"env": {"kind": "table", "path": str(tmp_path / "b.csv"), "arm": "not a file"},
              "scenarios": [{"name": "s", "env.path": str(tmp_path / "a.csv")}],
              "sweep": {"env.path": [str(tmp_path / "c.csv"), str(tmp_path / "b.csv"), str(tmp_path / "no.csv")]},
              "policies": [{"name": "uniform", "family": "budgeted"}]}
    spec = cfg.validate(tables)
    assert spec.data_files() == [str(tmp_path / n) for n in ("a.csv", "b.csv", "c.csv")]
    assert cfg.validate({**tables, "scenarios": [], "sweep": {}}).data_files() == [str(tmp_path / "b.csv")]


def _sha(name: str, data: bytes) -> bytes:
    return name.encode() + b"\0" + hashlib.sha256(data).digest()


def test_a_plan_hashes_its_data_files_and_its_plugins_source_as_read(tmp_path):
    data = (Path(__file__).parents[1] / "examples" / "llm_models.csv").read_text()
    (tmp_path / "models.csv").write_text(data)
    (tmp_path / "empty_plugin.py").write_text("NOTHING = 0\n")
    csv, plugin = str(tmp_path / "models.csv"), str(tmp_path / "empty_plugin.py")
    tables = {"env": {"kind": "table", "path": csv, "arm": "model", "objectives": ["knowledge", "reasoning"]},
              "experiment": {"horizon": 10, "seeds": 2, "plugins": [plugin]}, "policies": [{"name": "prefucb"}]}
    plan = plans.build(cfg.validate(tables))
    by_hand = {name: hashlib.sha256(_sha(path, Path(path).read_bytes())).hexdigest()[:16]
               for name, path in (("data", csv), ("plugins", plugin))}
    assert (plan.data, plan.plugins) == (by_hand["data"], by_hand["plugins"])
    (tmp_path / "models.csv").write_text(data.replace("0.5731", "0.5732"))
    again = plans.build(cfg.validate(tables))
    assert again.data != plan.data and again.plugins == plan.plugins  # the content counts
    assert plans.build(cfg.validate({**tables, "experiment": {"horizon": 10, "seeds": 2}})).plugins is None


def test_a_grid_point_reads_and_writes_a_grid_json_entry():
    point = GridPoint({"d": 2}, {"name": "thv_ucb", "eta": 0.3})
    assert point.to_dict() == {"setting": {"d": 2}, "params": {"name": "thv_ucb", "eta": 0.3}}
    assert GridPoint.from_dict(json.loads(json.dumps(point.to_dict()))) == point
    assert mb.GridPoint is GridPoint and mb.ExperimentSpec is ExperimentSpec


def test_mb_run_takes_a_typed_spec_and_a_dict_alike():
    tables = {"experiment": {"horizon": 20, "seeds": 2, "record_every": 10}, "env": TABLES["env"],
              "policies": [{"name": "prefucb"}]}
    typed = mb.run(cfg.validate(copy.deepcopy(tables)))
    assert typed.records == mb.run(tables).records and typed.spec == cfg.validate(tables)


def test_a_spec_from_an_earlier_run_json_reads_with_defaults():
    spec = ExperimentSpec.from_dict({"env": {"kind": "dtlz"}, "experiment": {"name": "old"}})
    assert spec.experiment.horizon == EXPERIMENT_DEFAULTS["horizon"] and spec.policies == () and spec.settings()
    with pytest.raises(mb.ConfigError, match="env.means is ragged"):
        ExperimentSpec.from_dict({"env": {"kind": "stochastic", "means": [[0.1], [0.2, 0.3]]}}).settings()
