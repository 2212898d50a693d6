"""``[env] kind = "table"``: a user's per-arm CSV (raw scores, lower-is-better, costs) with every family."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _user_data import cli_error, run_spec, write_csv

from mobandit_jax import problems, registry  # noqa: F401  (importing problems fills the registry)
from mobandit_jax.kernels.prefix import dense
from mobandit_jax.problems.budget import with_budget
from mobandit_jax.runner import spec as config

HEADER = ["model", "accuracy", "latency", "safety", "price"]
# accuracy, safety in [0, 1]; latency in ms (lower is better), price in dollars
ROWS = [["a", 0.9, 100, 0.2, 2.0], ["b", 0.6, 300, 0.5, 4.0], ["c", 0.3, 200, 0.8, 1.0], ["d", 0.5, 500, 0.4, 8.0]]

TABLE_ENV = """\
[env]
kind = "table"
path = "my_models.csv"      # relative to the spec file
arm = "model"               # column naming the arms
objectives = ["accuracy", "speed", "safety"]
cost = "price"              # optional: mean cost per pull
noise = "bernoulli"
"""


def _spec(tmp_path, text, rows=None, header=None, name="spec.toml"):
    write_csv(tmp_path / "my_models.csv", header or HEADER, ROWS if rows is None else rows)
    path = tmp_path / name
    path.write_text(text)
    return path


def _env(tmp_path, extra="", rows=None, header=None):
    spec = config.load(_spec(tmp_path, "[experiment]\nhorizon = 10\n\n" + extra
                             + "\n[[policies]]\nname = \"uniform\"\nfamily = \"budgeted\"\n", rows, header))
    return with_budget(registry.make_env(spec.env, spec.to_dict()), spec.budget)


ENV_RAW = """\
[env]
kind = "table"
path = "my_models.csv"
arm = "model"
objectives = ["accuracy", "latency", "safety"]
cost = "price"
normalize = ["latency"]
minimize = ["latency"]

[budget]
rho = 16
"""


def test_truth_normalisation_lower_is_better_costs_and_budget_by_hand(tmp_path):
    inst = _env(tmp_path, ENV_RAW)
    # latency 100, 300, 200, 500 ms -> (500 - x) / (500 - 100); price / 8
    np.testing.assert_allclose(inst.means, [[0.9, 1.0, 0.2], [0.6, 0.5, 0.5], [0.3, 0.75, 0.8], [0.5, 0.0, 0.4]])
    np.testing.assert_allclose(inst.mean_costs, [0.25, 0.5, 0.125, 1.0])
    assert inst.cost_floor == 0.125
    # B = rho K c_bar = 16 * 4 * 0.46875 = 30; T_B = ceil(B / lambda) + 1
    assert inst.budget == pytest.approx(30.0) and inst.budget_ratio == pytest.approx(16.0)
    assert inst.horizon == 241
    # a value already in [0, 1] marked lower-is-better becomes 1 - x
    flipped = _env(tmp_path, ENV_RAW.replace('normalize = ["latency"]', "").replace('"latency"]', '"safety"]')
                   .replace('"latency", ', ""))
    np.testing.assert_allclose(flipped.means, [[0.9, 0.8], [0.6, 0.5], [0.3, 0.2], [0.5, 0.6]])
    normalized = _env(tmp_path, ENV_RAW.replace('normalize = ["latency"]', "normalize = true"))
    np.testing.assert_allclose(normalized.means[:, 0], [1.0, 0.5, 0.0, 2 / 6])
    b = _env(tmp_path, ENV_RAW.replace("rho = 16", "B = 3.5"))
    assert b.budget == 3.5 and b.budget_ratio == pytest.approx(3.5 / (4 * 0.46875))


def test_costed_pulls_and_bulk_sampler_match_the_per_pull_stream(tmp_path):
    inst = _env(tmp_path, ENV_RAW)
    key = jax.random.PRNGKey(3)
    P = np.asarray(dense(inst.env.prefix_table(key, inst.params, 30), 30))
    pull = jax.jit(lambda arm, j: inst.env.sample(key, arm, j, 0, inst.params))
    for arm in range(4):
        loop = np.zeros(4)
        for j in range(30):
            y, c = pull(arm, j)
            assert float(c) == pytest.approx(inst.mean_costs[arm])
            loop += np.concatenate([np.asarray(y), [float(c)]])
        np.testing.assert_allclose(P[arm, 30], loop, atol=1e-5)
    # the rewards are the stochastic env's stream on the same means (shared sampler)
    stoch = registry.make_env({"kind": "stochastic", "means": inst.means.tolist(), "noise": "beta"})
    ys = jax.vmap(lambda j: inst.env.sample(key, 2, j, 0, inst.params)[0])(jnp.arange(8))
    ys0 = jax.vmap(lambda j: stoch.env.sample(key, 2, j, 0, stoch.params)[0])(jnp.arange(8))
    np.testing.assert_array_equal(np.asarray(ys), np.asarray(ys0))


PREFERENCE_SPEC = """\
[experiment]
horizon = 1500
seeds = 12
record_every = 1500

{env}
[preference]
W = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0]]

[[policies]]
name = "prefucb"

[[policies]]
name = "pareto_ucb"
"""
# Under W, a cone-dominates b, c and d (a - b = (.1, .1, -.1): every row >= 0), which are Pareto optimal
# (each is best somewhere in the third objective); e is cone-optimal (second objective).
PREF_ROWS = [["a", 0.8, 0.8, 0.3, 1], ["b", 0.7, 0.7, 0.4, 1], ["c", 0.6, 0.6, 0.5, 1], ["d", 0.5, 0.5, 0.6, 1],
             ["e", 0.3, 0.9, 0.2, 1]]


def test_preference_spec_prefucb_beats_pareto_ucb_on_gap_regret(tmp_path):
    header = ["model", "accuracy", "speed", "safety", "price"]
    spec = _spec(tmp_path, PREFERENCE_SPEC.format(env=TABLE_ENV), PREF_ROWS, header)
    res = run_spec(spec, tmp_path / "run")
    pref, pareto = res[("prefucb", "regret_gap", ())], res[("pareto_ucb", "regret_gap", ())]
    # ParetoUCB keeps pulling the 3 cone-dominated Pareto arms (gaps 0.1-0.3): hundreds of gap units
    assert pref < 0.5 * pareto and pareto > 50


BUDGET_SPEC = """\
[experiment]
horizon = 10
seeds = 4

{env}
[budget]
rho = 16

[sweep]
"budget.rho" = [4, 8]  # CoPSI needs rho >= 3.5 here to pull every arm in its first phase

[[policies]]
name = "cohv_ucb"
family = "budgeted"

[[policies]]
name = "copsi"

[[policies]]
name = "thv_ucb"
family = "slate"
"""


def test_budgeted_identification_and_slate_families_run_on_a_table(tmp_path):
    env = TABLE_ENV.replace('"speed"', '"latency"') + 'normalize = ["latency"]\nminimize = ["latency"]\nk = 2\n'
    res = run_spec(_spec(tmp_path, BUDGET_SPEC.format(env=env)), tmp_path / "run")
    assert {s for *_, s in res} == {(("rho", 4),), (("rho", 8),)}
    for rho in (4, 8):
        assert 0 <= res[("copsi", "f1", (("rho", rho),))] <= 1
        assert res[("cohv_ucb", "hv_efficiency_regret", (("rho", rho),))] >= 0
        assert 0 < res[("thv_ucb", "vstar", (("rho", rho),))] <= 1


# ----------------------------------------------------------------------------------------- bad input

def _bad(tmp_path, capsys, rows=None, env=TABLE_ENV, extra=""):
    header = ["model", "accuracy", "speed", "safety", "price"]
    good = [["a", 0.8, 0.8, 0.3, 1], ["b", 0.7, 0.7, 0.4, 2], ["c", 0.6, 0.6, 0.5, 3]]
    text = ("[experiment]\nhorizon = 10\n\n" + env + extra
            + "\n[[policies]]\nname = \"cohv_ucb\"\nfamily = \"budgeted\"\n")
    return cli_error(_spec(tmp_path, text, good if rows is None else rows, header), tmp_path, capsys)


def test_missing_column_is_named(tmp_path, capsys):
    err = _bad(tmp_path, capsys, env=TABLE_ENV.replace('"safety"]', '"safety", "cost"]'))
    assert "my_models.csv: missing column(s) ['cost'] (named by env.objectives)" in err


@pytest.mark.parametrize("value,what", [("fast", "'fast' is not a number"), ("", "'' is not a number"),
                                        ("nan", "value 'nan' is NaN"), ("inf", "value 'inf' is infinite")])
def test_non_numeric_nan_or_infinite_value_names_column_and_row(tmp_path, capsys, value, what):
    err = _bad(tmp_path, capsys, rows=[["a", 0.8, 0.8, 0.3, 1], ["b", 0.7, value, 0.4, 2]])
    assert "my_models.csv: column 'speed', row 2 (line 3): " + what in err


def test_value_outside_unit_interval_without_normalisation(tmp_path, capsys):
    err = _bad(tmp_path, capsys, rows=[["a", 0.8, 0.8, 0.3, 1], ["b", 0.7, 120, 0.4, 2]])
    assert "column 'speed', row 2 (line 3): value 120.0 is outside [0, 1]" in err and "env.normalize" in err


def test_duplicate_arm_names(tmp_path, capsys):
    err = _bad(tmp_path, capsys, rows=[["a", 0.8, 0.8, 0.3, 1], ["b", 0.7, 0.7, 0.4, 2], ["a", 0.6, 0.6, 0.5, 3]])
    assert "my_models.csv: column 'model', row 3 (line 4): duplicate arm 'a' (first at row 1 (line 2))" in err


@pytest.mark.parametrize("cost", [0, -2])
def test_cost_of_zero_or_below(tmp_path, capsys, cost):
    err = _bad(tmp_path, capsys, rows=[["a", 0.8, 0.8, 0.3, 1], ["b", 0.7, 0.7, 0.4, cost]])
    assert f"my_models.csv: column 'price', row 2 (line 3): cost {float(cost)} must be > 0" in err


def test_path_that_does_not_exist_relative_to_the_spec(tmp_path, capsys):
    err = _bad(tmp_path, capsys, env=TABLE_ENV.replace("my_models.csv", "other/models.csv"))
    assert f"data file '{tmp_path / 'other' / 'models.csv'}' does not exist" in err


def test_fewer_than_two_arms(tmp_path, capsys):
    err = _bad(tmp_path, capsys, rows=[["a", 0.8, 0.8, 0.3, 1]])
    assert "my_models.csv: column 'model' names 1 arm(s); a bandit needs at least 2" in err


def test_budget_on_an_env_without_costs(tmp_path, capsys):
    err = _bad(tmp_path, capsys, env=TABLE_ENV.replace('cost = "price"', ""), extra="[budget]\nrho = 4\n")
    assert "[budget] needs an environment whose pulls cost" in err
    err = _bad(tmp_path, capsys, extra="[budget]\nrho = 4\nB = 2\n")
    assert "[budget] needs exactly one of 'rho'" in err
    err = _bad(tmp_path, capsys, extra="[budget]\nrho = -1\n")
    assert "budget.rho = -1 must be a positive number" in err


def test_budget_keys_in_scenarios_and_overrides(tmp_path):
    text = (ENV_RAW + '\n[[scenarios]]\nname = "tight"\n"budget.rho" = 2\n\n'
            '[[scenarios]]\nname = "fixed"\n"budget.B" = 5.0\n')
    spec = config.load(_spec(tmp_path, "[experiment]\nhorizon = 10\n\n" + text.replace("rho = 16\n", "")
                             + "\n[[policies]]\nname = \"uniform\"\nfamily = \"budgeted\"\n"))
    budgets = {p.setting["scenario"]: with_budget(registry.make_env(p.env, p.tables), p.budget).budget
               for p in spec.settings()}
    assert budgets == pytest.approx({"tight": 2 * 4 * 0.46875, "fixed": 5.0})
    over = config.apply_overrides(spec, ["budget.rho=3", "sweep.budget.rho=[1, 2]"])
    assert over.budget["rho"] == 3 and over.sweep["budget.rho"] == [1, 2]
    with pytest.raises(config.ConfigError,
                       match=r"unknown key\(s\) \['rhoo'\] in \[budget\] \(did you mean 'rho'\?\); allowed keys: "
                             r"\['B', 'rho'\]"):
        config.apply_overrides(spec, ["budget.rhoo=3"])
