"""``[env] kind = "replay"``: bootstrap replay of a user's long per-(arm, instance) CSV."""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _user_data import cli_error, run_spec, write_csv

from mobandit_jax import problems, registry  # noqa: F401  (importing problems fills the registry)
from mobandit_jax.kernels.prefix import dense
from mobandit_jax.problems.budget import with_budget
from mobandit_jax.runner import spec as config

HEADER = ["config", "question", "correct", "inv_latency", "tokens"]
# (P(correct), mean inv_latency, mean tokens, instances): arms 0-2 are the Pareto front and cheap,
# arms 3-7 are dominated and expensive
ARMS = [(0.85, 0.30, 60, 30), (0.60, 0.60, 40, 41), (0.30, 0.85, 30, 25), (0.50, 0.25, 150, 33),
        (0.40, 0.40, 160, 28), (0.20, 0.30, 140, 36), (0.55, 0.20, 170, 22), (0.25, 0.50, 150, 40)]

REPLAY_ENV = """\
[env]
kind = "replay"
path = "logs.csv"
arm = "config"
instance = "question"
objectives = ["correct", "inv_latency"]
cost = "tokens"             # optional
"""


def _rows(seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for a, (p, lat, tok, n) in enumerate(ARMS):
        for q in range(n):
            rows.append([f"cfg{a}", f"q{q:03d}", int(rng.random() < p),
                         round(float(np.clip(lat + 0.1 * rng.normal(), 0, 1)), 4), int(tok + rng.integers(-10, 11))])
    rng.shuffle(rows)  # rows in any order
    return rows


def _spec(tmp_path, text, rows=None):
    write_csv(tmp_path / "logs.csv", HEADER, _rows() if rows is None else rows)
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return path


def _env(tmp_path, extra="[budget]\nrho = 8\n", rows=None):
    spec = config.load(_spec(tmp_path, "[experiment]\nhorizon = 10\n\n" + REPLAY_ENV + extra
                             + "\n[[policies]]\nname = \"uniform\"\nfamily = \"budgeted\"\n", rows))
    return with_budget(registry.make_env(spec.env, spec.to_dict()), spec.budget)


def test_truth_is_the_per_arm_mean_with_normalized_costs(tmp_path):
    rows = _rows()
    inst = _env(tmp_path, rows=rows)
    t_max = max(r[4] for r in rows)
    order = list(dict.fromkeys(r[0] for r in rows))  # arms in order of first appearance
    assert inst.info["arms"] == tuple(order)
    for i, name in enumerate(order):
        mine = np.array([r[2:] for r in rows if r[0] == name], float)
        np.testing.assert_allclose(inst.means[i], mine[:, :2].mean(0), rtol=1e-12)
        np.testing.assert_allclose(inst.mean_costs[i], mine[:, 2].mean() / t_max, rtol=1e-12)
        assert inst.min_costs[i] == pytest.approx(mine[:, 2].min() / t_max)
        assert int(inst.params.counts[i]) == len(mine)
    lam = min(r[4] for r in rows) / t_max
    assert inst.cost_floor == pytest.approx(lam)
    B = 8 * len(ARMS) * inst.mean_costs.mean()
    assert inst.budget == pytest.approx(B) and inst.horizon == math.ceil(B / lam) + 1


def _mix32(x):
    """numpy reference of the lowbias32 finalizer on uint32 values held in uint64."""
    m = np.uint64(0xFFFFFFFF)
    x = x ^ (x >> np.uint64(16))
    x = (x * np.uint64(0x7FEB352D)) & m
    x = x ^ (x >> np.uint64(15))
    x = (x * np.uint64(0x846CA68B)) & m
    return x ^ (x >> np.uint64(16))


def _reference_instances(key, arm, pulls, n):
    """numpy reference of the bootstrap stream: instance of pull j of ``arm`` among its ``n`` rows."""
    m = np.uint64(0xFFFFFFFF)
    w = np.asarray(jax.random.key_data(key), np.uint64).ravel()
    arm_key = _mix32(w[0] ^ _mix32(w[-1] ^ _mix32((np.uint64(arm) * np.uint64(0x9E3779B9) + np.uint64(0x85EBCA6B))
                                                  & m)))
    j = np.asarray(pulls, np.uint64)
    return (_mix32(arm_key ^ _mix32((j * np.uint64(0x9E3779B1) + np.uint64(0x7F4A7C15)) & m))
            % np.uint64(n)).astype(int)


def test_a_pull_replays_a_recorded_row_of_that_arm(tmp_path):
    rows = _rows()
    inst = _env(tmp_path, rows=rows)
    t_max = max(r[4] for r in rows)
    key = jax.random.PRNGKey(5)
    pulls = jnp.arange(200)
    for arm, name in enumerate(inst.info["arms"]):
        recorded = [r[2:] for r in rows if r[0] == name]
        y, c = jax.vmap(lambda j: inst.env.sample(key, arm, j, 0, inst.params))(pulls)
        got = np.concatenate([np.asarray(y), np.asarray(c)[:, None]], 1)
        want = np.array([[a, b, t / t_max] for a, b, t in recorded])[
            _reference_instances(key, arm, pulls, len(recorded))]
        np.testing.assert_allclose(got, want, rtol=1e-6)
        assert len({tuple(r) for r in np.round(got, 5)}) > 5  # a bootstrap, not one row
    P = np.asarray(dense(inst.env.prefix_table(key, inst.params, 50), 50))
    y, c = jax.vmap(lambda j: inst.env.sample(key, 3, j, 0, inst.params))(jnp.arange(50))
    np.testing.assert_allclose(P[3, 50], np.concatenate([np.asarray(y).sum(0), [float(np.sum(c))]]), rtol=1e-5)


ONLINE_SPEC = """\
[experiment]
horizon = 10
seeds = 16

{env}
[budget]
rho = 100

[[policies]]
name = "cohv_ucb"
family = "budgeted"

[[policies]]
name = "uniform"
family = "budgeted"
"""


def test_online_spec_cohv_ucb_beats_uniform_on_hv_efficiency_regret(tmp_path):
    res = run_spec(_spec(tmp_path, ONLINE_SPEC.format(env=REPLAY_ENV)), tmp_path / "run")
    cohv, unif = res[("cohv_ucb", "hv_efficiency_regret", ())], res[("uniform", "hv_efficiency_regret", ())]
    assert cohv < 0.6 * unif  # measured 385 vs 822 (16 seeds)


IDENT_SPEC = """\
[experiment]
horizon = 1
seeds = 32

{env}
[sweep]
"budget.rho" = [6, 64]  # CoPSI needs rho >= 5.4 here to pull every arm in its first phase

[[policies]]
name = "copsi"
"""


def test_identification_spec_on_a_replay_improves_with_the_budget(tmp_path):
    res = run_spec(_spec(tmp_path, IDENT_SPEC.format(env=REPLAY_ENV)), tmp_path / "run")
    small, large = res[("copsi", "f1", (("rho", 6),))], res[("copsi", "f1", (("rho", 64),))]
    assert large > 0.9 and large >= small


# ----------------------------------------------------------------------------------------- bad input

def _bad(tmp_path, capsys, rows, env=REPLAY_ENV):
    text = "[experiment]\nhorizon = 10\n\n" + env + "\n[[policies]]\nname = \"cohv_ucb\"\nfamily = \"budgeted\"\n"
    return cli_error(_spec(tmp_path, text, rows), tmp_path, capsys)


def test_an_arm_with_no_instances(tmp_path, capsys):
    rows = [["x", "q1", 1, 0.5, 10], ["y", "q1", 0, 0.4, 12], ["z", "q1", "", "", ""], ["x", "q2", 0, 0.2, 9]]
    err = _bad(tmp_path, capsys, rows)
    assert "logs.csv: arm 'z' (column 'config') has no instances: its row 3 (line 4)" in err


def test_a_partly_empty_observation(tmp_path, capsys):
    err = _bad(tmp_path, capsys, [["x", "q1", 1, 0.5, 10], ["y", "q1", 0, "", 12]])
    assert "logs.csv: column 'inv_latency', row 2 (line 3): empty value" in err


def test_missing_instance_column_and_bad_cost(tmp_path, capsys):
    err = _bad(tmp_path, capsys, [["x", "q1", 1, 0.5, 10]], env=REPLAY_ENV.replace('"question"', '"item"'))
    assert "logs.csv: missing column(s) ['item'] (named by env.instance)" in err
    err = _bad(tmp_path, capsys, [["x", "q1", 1, 0.5, 10], ["y", "q1", 0, 0.4, 0]])
    assert "logs.csv: column 'tokens', row 2 (line 3): cost 0.0 must be > 0" in err
    err = _bad(tmp_path, capsys, [["x", "q1", 1, 0.5, 10], ["x", "q2", 0, 0.4, 3]])
    assert "logs.csv: column 'config' names 1 arm(s); a bandit needs at least 2" in err


def test_quoted_crlf_file_with_blank_lines_reads_like_the_plain_file(tmp_path, capsys):
    rows = _rows()
    plain = _env(tmp_path, rows=rows)
    quoted = "\r\n".join([",".join(HEADER)] + [",".join(f'"{v}"' for v in r) for r in rows[:5]] + [""]
                         + [",".join(map(str, r)) for r in rows[5:]]) + "\r\n"
    (tmp_path / "quoted.csv").write_text(quoted, newline="")
    env = REPLAY_ENV.replace("logs.csv", "quoted.csv")
    spec = config.load(_spec(tmp_path, "[experiment]\nhorizon = 10\n\n" + env
                             + "\n[[policies]]\nname = \"uniform\"\nfamily = \"budgeted\"\n", rows))
    inst = registry.make_env(spec.env, spec.to_dict())
    np.testing.assert_array_equal(inst.means, plain.means)
    np.testing.assert_array_equal(inst.mean_costs, plain.mean_costs)
    # a blank line counts in the numbering: the 6th observation is row 7, line 8
    (tmp_path / "quoted.csv").write_text(quoted.replace(",".join(map(str, rows[5])), "cfg0,q1,1", 1), newline="")
    err = cli_error(tmp_path / "spec.toml", tmp_path, capsys)
    assert "quoted.csv: row 7 (line 8) has 3 fields, the header has 5" in err
