"""A preference cone and a budget as axes of every family (the projected problem, budget reports)."""
import copy
import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mobandit_jax as mb
from mobandit_jax.kernels.prefix import dense
from mobandit_jax.problems.cone import apply_cone
from mobandit_jax.registry import make_env
from mobandit_jax.runner import plans
from mobandit_jax.runner import spec as cfg

SLATE = {"experiment": {"name": "slate", "horizon": 120, "seeds": 2, "record_every": 40},
         "env": {"kind": "dtlz", "d": 3, "n": 12, "k": 3, "sigma": 0.05, "front": "concave"},
         "policies": [{"name": "thv_ucb"}, {"name": "pareto_ts"}]}
BUDGETED = {"experiment": {"name": "budgeted", "horizon": 1, "seeds": 2, "record_every": 20},
            "env": {"kind": "llm_configs", "subset": "identification14", "costs": "random", "rho": 2},
            "policies": [{"name": "cohv_ucb"}, {"name": "uniform", "family": "budgeted"}]}
IDENT = {"experiment": {"name": "ident", "horizon": 1, "seeds": 8},
         "env": {"kind": "llm_configs", "subset": "identification14", "costs": "deterministic", "rho": 20},
         "policies": [{"name": "copsi"}, {"name": "psi_sr"}, {"name": "uniform_alloc"}]}


def _records(spec):
    return json.dumps(mb.run(spec).records, sort_keys=True)


def _with_cone(spec, W):
    out = copy.deepcopy(spec)
    out["preference"] = {"W": np.asarray(W, float).tolist()}
    return out


SLATE_D2 = {**SLATE, "env": {**SLATE["env"], "d": 2, "n": 10}}  # the identity test compiles each policy twice


@pytest.mark.parametrize("spec", [SLATE_D2, BUDGETED, IDENT], ids=["slate", "budgeted", "identification"])
def test_identity_cone_gives_the_numbers_without_a_cone(spec):
    d = make_env(spec["env"], {}).env.dim
    assert _records(_with_cone(spec, np.eye(d))) == _records(spec)


def test_a_sweep_over_cones_of_one_shape_compiles_one_program_per_policy():
    spec = copy.deepcopy(SLATE)
    spec["sweep"] = {"preference.W": [[[1, 0, 0], [0, 1, 1]], [[1, 1, 0], [0, 0, 1]], [[2, 0, 1], [0, 1, 0]]]}
    plan = plans.checked_build(cfg.validate(spec))
    assert sorted((g.label, len(g.params)) for g in plan.groups) == [("pareto_ts", 3), ("thv_ucb", 3)]


def test_projected_pulls_are_the_normalised_projections_of_the_rewards():
    rng = np.random.default_rng(3)
    inst = mb.problems.stochastic.make_stochastic(rng.uniform(0, 1, (5, 3)), "beta")
    W = np.array([[1.0, -0.5, 0.0], [0.2, 0.3, 0.5]])
    cone = apply_cone(inst, W)
    key = jax.random.PRNGKey(7)
    for arm, j in [(0, 0), (3, 5), (4, 11)]:
        r, c = inst.env.sample(key, arm, j, 0, inst.params)
        s, c2 = cone.env.sample(key, arm, j, 0, cone.params)
        low, up = np.minimum(W, 0).sum(1), np.maximum(W, 0).sum(1)
        np.testing.assert_allclose(np.asarray(s), (np.asarray(r, float) @ W.T - low) / (up - low), rtol=1e-6, atol=1e-7)
        assert float(c) == float(c2)
    np.testing.assert_allclose(cone.means, (inst.means @ W.T - np.minimum(W, 0).sum(1)) / np.abs(W).sum(1))
    assert cone.static_key[:2] == ("cone", 2) and cone.env.dim == 2


def test_projected_prefix_sums_add_the_projected_pulls():
    inst = make_env({"kind": "llm_configs", "subset": "identification14", "costs": "deterministic", "rho": 20}, {})
    W = np.array([[1.0, 1.0], [1.0, -2.0], [0.0, 1.0]])
    cone = apply_cone(inst, W)
    key = jax.random.PRNGKey(1)
    n = 40
    per_pull = np.asarray(inst.env.prefix_table(key, inst.params, n).levels[0], np.float64)
    per_pull = per_pull.reshape(per_pull.shape[0], -1, per_pull.shape[-1])[:, :n]
    low, up = np.minimum(W, 0).sum(1), np.maximum(W, 0).sum(1)
    want = np.concatenate([(per_pull[..., :2] @ W.T - low) / (up - low), per_pull[..., 2:]], axis=-1)
    want = np.concatenate([np.zeros_like(want[:, :1]), np.cumsum(want, axis=1)], axis=1)
    got = np.asarray(dense(cone.env.prefix_table(key, cone.params, n), n))
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_identification_under_a_cone_scores_against_the_cone_optimal_set():
    W = [[1.0, 0.5], [-0.3, 1.0]]
    res = mb.run(_with_cone(IDENT, W))
    truth = res.truth(0)
    want = np.asarray(mb.cone_optimal_mask(jnp.asarray(truth["means"]), jnp.asarray(W)))
    assert truth["families"]["identification"]["pareto"] == want.tolist()
    assert truth["cone"]["W"] == W and want.sum() < len(want)
    mis = {r["policy"]: r["mean"] for r in res.records if r["metric"] == "misidentification"}
    assert set(mis) == {"copsi", "psi_sr", "uniform_alloc"} and all(0 <= v <= 1 for v in mis.values())


def test_thv_ucb_under_a_cone_beats_random_slates_on_the_projected_regret():
    spec = _with_cone(SLATE, [[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    spec["experiment"].update(horizon=400, seeds=4)
    spec["policies"] = [{"name": "thv_ucb"}, {"name": "random_k"}]
    rec = {(r["policy"], r["metric"]): r["mean"] for r in mb.run(spec).records}
    assert rec["thv_ucb", "alpha_regret_pos"] < 0.5 * rec["random_k", "alpha_regret_pos"]
    assert rec["thv_ucb", "hv_last100"] > rec["random_k", "hv_last100"]


def test_unbounded_rewards_are_refused_by_a_policy_that_needs_them_in_0_1(tmp_path):
    spec = tmp_path / "u.toml"
    spec.write_text('[experiment]\nname = "u"\nhorizon = 10\nseeds = 1\n[env]\nkind = "stochastic"\n'
                    'noise = "gaussian"\nclip = false\nmeans = [[1.5, -2.0], [0.3, 0.9]]\n'
                    '[[policies]]\nname = "thv_ucb"\n')
    cmd = [sys.executable, "-m", "mobandit_jax.cli", "run", str(spec), "--out", str(tmp_path / "o")]
    out = subprocess.run(cmd, capture_output=True, text=True)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "'thv_ucb' needs rewards in [0, 1]" in out.stderr and "clip = false" in out.stderr


CSV = "arm,a,b,cost\nx0,0.2,0.7,0.5\nx1,0.6,0.4,1.0\nx2,0.55,0.65,0.8\nx3,0.3,0.3,0.2\nx4,0.7,0.2,0.6\n"


def test_a_budget_stops_preference_and_slate_runs_and_is_reported_per_unit_spent(tmp_path):
    (tmp_path / "arms.csv").write_text(CSV)
    spec = {"experiment": {"name": "b", "horizon": 10, "seeds": 3, "record_every": 5},
            "env": {"kind": "table", "path": str(tmp_path / "arms.csv"), "arm": "arm", "objectives": ["a", "b"],
                    "cost": "cost", "k": 2},
            "budget": {"B": 10}, "sweep": {"budget.B": [6, 12]}, "preference": {"W": [[1.0, 0.0], [0.0, 1.0]]},
            "policies": [{"name": "prefucb"}, {"name": "thv_ucb"}]}
    plan = plans.checked_build(cfg.validate(copy.deepcopy(spec)))
    assert sorted((g.label, len(g.params)) for g in plan.groups) == [("prefucb", 2), ("thv_ucb", 2)]
    res = mb.run(spec, out=tmp_path / "run")
    costs = np.array([0.5, 1.0, 0.8, 0.2, 0.6])
    for label in ("prefucb", "thv_ucb"):
        for g, B in enumerate([6, 12]):
            spent = res.arrays[f"{label}|{g}|spent"][:, -1]
            assert np.all(spent <= B + 1e-6) and np.all(spent > B - costs.max() * (2 if label == "thv_ucb" else 1))
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## Against the budget spent" in report and "regret_gap per unit of budget" in report
    assert (tmp_path / "run" / "regret_gap_by_budget.png").is_file()
    spent = res.curves("spent").values
    assert spent.shape[:2] == (2, 2) and np.all(np.diff(spent, axis=-1) >= 0)
