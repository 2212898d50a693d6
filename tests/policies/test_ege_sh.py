"""EGE-SH (Kone, Kaufmann and Richert, 2024: empirical gap elimination by successive halving): a hand-checkable
run, a plain numpy loop on the identifier's own reward stream, the budget, and an experiment spec whose
misidentification falls with the budget."""
from __future__ import annotations

import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mobandit_jax as mb
from mobandit_jax import registry
from mobandit_jax.kernels.prefix import dense
from mobandit_jax.policies import identification as I
from mobandit_jax.problems import llm_configs as L
from mobandit_jax.types import Context, Env

DATA = Path(__file__).parents[1] / "data" / "llm_configs_small.csv"

# A, C Pareto; B dominated by A. Dyadic values: every gap is exactly 0.25.
HAND = np.array([[0.5, 0.5], [0.25, 0.25], [0.75, 0.25]])


def _hand_ctx(means, costs, budget, n=2):
    """Every pull of arm i returns its mean and costs c_i: a run is computable by hand."""
    table = np.concatenate([np.repeat(np.asarray(means)[:, None, :], n, 1),
                            np.repeat(np.asarray(costs)[:, None, None], n, 1)], -1)
    params = L.LLMParams(jnp.asarray(table, jnp.float32))
    env = Env(sample=L.sample, num_arms=len(means), dim=2, prefix_table=L.prefix_table)
    ctx = Context.make(num_arms=len(means), dim=2, horizon=1, means=np.asarray(means), mean_costs=np.asarray(costs),
                  budget=budget, cost_floor=float(min(costs)), alloc_costs=np.asarray(costs),
                  min_costs=np.asarray(costs), env=env)
    return ctx, params


def test_schedule_is_successive_halving():
    assert [I.halving_rounds(k) for k in (2, 3, 4, 5, 8, 9, 14, 16, 17)] == [1, 2, 2, 3, 3, 4, 4, 4, 5]
    np.testing.assert_array_equal(I.halving_sizes(14), [14, 7, 4, 2])
    np.testing.assert_array_equal(I.halving_sizes(5), [5, 3, 2])
    # T = 70, ceil(log2 14) = 4: t_r = floor(70 / (4 |A_r|)) = 1, 2, 4, 8 and sum_r |A_r| t_r <= T
    np.testing.assert_array_equal(I.halving_targets(14, 70, np), [1, 3, 7, 15])
    np.testing.assert_array_equal(np.asarray(I.halving_targets(14, jnp.float32(70.0))), [1, 3, 7, 15])
    for T in (5, 70, 333, 4200):
        t = np.diff(I.halving_targets(14, T, np), prepend=0)
        assert int(np.sum(t * I.halving_sizes(14))) <= T


def test_hand_checkable_run_with_the_budget_guard():
    ctx, params = _hand_ctx(HAND, [0.5, 0.25, 1.0], budget=20.0)
    ident, p, key = registry.make_policy("ege_sh", ctx)
    # c_bar = 7/12, T = floor(20 / c_bar) = 34, 2 rounds: t_1 = floor(34 / 6) = 5, t_2 = floor(34 / 4) = 8
    assert int(p.jmax) == 13 and dict(key[1:])["length"] == 16
    res = ident.identify(jax.random.PRNGKey(0), jax.random.PRNGKey(0), params, p)
    rec, spent, N = res.recommended, res.spent, res.pulls
    # round 1: 5 sweeps of {A, B, C} (8.75); the three gaps tie at 0.25 and dominated B is rejected.
    # round 2: 8 sweeps of {A, C} would cost 12 > 20 - 8.75: the guard keeps 7 (10.5). A and C tie,
    # neither dominated: A (lowest index) is accepted, and C, the last arm, too.
    np.testing.assert_array_equal(np.asarray(N), [12, 5, 12])
    assert float(spent) == pytest.approx(8.75 + 10.5)
    np.testing.assert_array_equal(np.asarray(rec), [True, False, True])


def test_a_round_removes_the_largest_gaps_preferring_dominated_arms():
    # Gaps over all five (Eq. 1): A .0625, B .25, C .25, D .125, E .0625; B, D, E dominated by A.
    mu = np.array([[0.5, 0.5], [0.25, 0.25], [0.75, 0.25], [0.375, 0.375], [0.4375, 0.4375]])
    gamma, dominated = I.empirical_gaps(jnp.asarray(mu), jnp.ones(5, bool))
    np.testing.assert_allclose(np.asarray(gamma), [0.0625, 0.25, 0.25, 0.125, 0.0625])
    np.testing.assert_array_equal(np.asarray(dominated), [False, True, False, True, True])
    ctx, params = _hand_ctx(mu, [1.0] * 5, budget=60.0)
    ident, p, _ = registry.make_policy("ege_sh", ctx)
    res = ident.identify(jax.random.PRNGKey(0), jax.random.PRNGKey(0), params, p)
    rec, spent, N = res.recommended, res.spent, res.pulls
    # T = 60, 3 rounds of |A_r| = 5, 3, 2 arms: t_r = 4, 6, 10. Round 1 removes floor(5/2) = 2 arms, the two
    # tied at .25: B (dominated, rejected) first, then C (accepted). Round 2 over {A, D, E}: gaps .0625,
    # .125, .0625: D is rejected. Round 3 over {A, E}: tied at .0625, dominated E is rejected; A is last.
    np.testing.assert_array_equal(np.asarray(N), [20, 4, 4, 10, 20])
    assert float(spent) == pytest.approx(5 * 4 + 3 * 6 + 2 * 10)
    np.testing.assert_array_equal(np.asarray(rec), [True, False, True, False, False])


# ------------------------------------------------------------------ numpy loop of EGE-SH

def _gaps_loop(mu, active):
    act = [i for i in range(len(mu)) if active[i]]
    dm = {i: max(min(mu[j] - mu[i]) for j in act if j != i) for i in act}
    gamma, dom = {}, {}
    for i in act:
        dom[i] = dm[i] > 0
        if dom[i]:
            gamma[i] = dm[i]
        else:
            gamma[i] = min(min(max(mu[i] - mu[j]), max(max(mu[j] - mu[i]), 0.0) + max(dm[j], 0.0))
                           for j in act if j != i)
    return gamma, dom


def ege_sh_numpy(S, T, budget):
    """Plain EGE-SH with ``T`` unit pulls on the prefix sums ``S`` (K, n + 1, d + 1) of the stream, charged the
    stream's cost column; returns (recommended, spent, N)."""
    K, d = S.shape[0], S.shape[2] - 1
    rounds = math.ceil(math.log2(K))
    active, accepted = [True] * K, [False] * K
    N, goal, spent = np.zeros(K, int), 0, 0.0
    for _ in range(rounds):
        arms = [i for i in range(K) if active[i]]
        goal += T // (len(arms) * rounds)  # t_r more pulls of every active arm
        n = N[arms[0]]
        while n < goal:  # complete sweeps while the budget allows
            sweep = sum(S[i, n + 1, d] - S[i, n, d] for i in arms)
            if spent + sweep > budget:
                break
            spent += sweep
            n += 1
        N[arms] = n
        mu = [S[i, N[i], :d] / N[i] if N[i] > 0 else np.zeros(d) for i in range(K)]
        gamma, dom = _gaps_loop(mu, active)
        for _ in range(len(arms) // 2):  # the largest gaps, one after another
            gmax = max(gamma[i] for i in gamma if active[i])
            tied = [i for i in gamma if active[i] and gamma[i] >= gmax - max(1e-6 * abs(gmax), 1e-9)]
            pref = [i for i in tied if dom[i]]
            e = min(pref) if pref else min(tied)
            accepted[e] = not dom[e]
            active[e] = False
    return np.array([a or b for a, b in zip(accepted, active, strict=False)]), spent, N


@pytest.mark.parametrize("costs", ["deterministic", "random"])
@pytest.mark.parametrize("rho", [5.0, 40.0])
def test_matches_numpy_loop_on_the_same_stream(rho, costs):
    inst = L.build_instance(dataset=str(DATA), subset="identification14", rho=rho, costs=costs, n_profile=12)
    ident, p, key = registry.make_policy("ege_sh", Context.of(inst, 1))
    length, jmax = dict(key[1:])["length"], int(p.jmax)
    T = round(rho * 14)  # B / c_bar = rho K
    assert math.floor(inst.budget / np.mean(inst.alloc_costs) * (1 + 1e-9)) == T == int(p.unit_pulls)
    keys = jax.random.split(jax.random.PRNGKey(int(rho)), 6)
    res = jax.jit(jax.vmap(lambda k: ident.identify(k, k, inst.params, p)))(keys)
    for s, k in enumerate(keys):
        S = np.asarray(dense(L.prefix_table(k, inst.params, length), jmax), np.float64)
        ref, ref_spent, ref_N = ege_sh_numpy(S, T, float(p.budget))
        np.testing.assert_array_equal(np.asarray(res.recommended[s]), ref)
        np.testing.assert_array_equal(np.asarray(res.pulls[s]), ref_N)
        assert float(res.spent[s]) == pytest.approx(ref_spent, rel=1e-5)
        assert ref_N.max() <= jmax


def test_budget_is_never_exceeded():
    keys = jax.random.split(jax.random.PRNGKey(5), 32)
    for rho, costs, c_max in ((4.0, "random", "instance"), (10.0, "deterministic", "arm_mean"),  # rho >= ceil(log2 K)
                              (150.0, "random", "instance")):
        inst = L.build_instance(dataset=str(DATA), subset="identification14", rho=rho, costs=costs, n_profile=12,
                                c_max=c_max)
        ident, p, _ = registry.make_policy("ege_sh", Context.of(inst, 1))
        res = jax.jit(jax.vmap(lambda k: ident.identify(k, k, inst.params, p)))(keys)
        spent, pulls = np.asarray(res.spent, np.float64), np.asarray(res.pulls, np.float64)
        assert np.all(spent <= float(p.budget) * (1 + 1e-6)), (rho, costs)
        assert np.all(pulls.max(1) <= int(p.jmax))
        if costs == "deterministic":
            np.testing.assert_allclose(spent, pulls @ np.asarray(inst.alloc_costs, np.float64), rtol=1e-5)
    # an expensive Pareto arm that survives every round: the guard cuts the last rounds, still within B
    ctx, params = _hand_ctx(np.array([[0.9, 0.9], [0.2, 0.3], [0.3, 0.2], [0.1, 0.1]]), [1.0, 0.1, 0.1, 0.1], 8.0)
    ident, p, _ = registry.make_policy("ege_sh", ctx)
    res = ident.identify(jax.random.PRNGKey(0), jax.random.PRNGKey(0), params, p)
    rec, spent, N = res.recommended, res.spent, res.pulls
    # T = floor(8 / 0.325) = 24, t_r = 3, 6. Round 1 (3 sweeps of 1.3) removes D (gap .8) and, of A, B, C tied
    # at .6, dominated B; round 2: of the 6 sweeps of {A, C} (1.1 each) only 3 fit in 8 - 3.9.
    assert float(spent) <= 8.0 and float(spent) == pytest.approx(3 * 1.3 + 3 * 1.1)
    np.testing.assert_array_equal(np.asarray(N), [6, 3, 6, 3])
    np.testing.assert_array_equal(np.asarray(rec), [True, False, False, False])


def test_misidentification_falls_with_the_budget(tmp_path):
    # three Pareto arms, two dominated ones (by 0.2 and 0.5): an easy instance
    rows = [("a", 0.9, 0.15, 1.0), ("b", 0.15, 0.9, 2.0), ("c", 0.6, 0.6, 1.5), ("d", 0.4, 0.4, 1.0),
            ("e", 0.1, 0.1, 3.0)]
    csv = tmp_path / "models.csv"
    csv.write_text("model,x,y,price\n" + "".join(f"{m},{x},{y},{c}\n" for m, x, y, c in rows))
    spec = {"experiment": {"horizon": 1, "seeds": 64},
            "env": {"kind": "table", "path": str(csv), "arm": "model", "objectives": ["x", "y"], "cost": "price",
                    "noise": "bernoulli"},
            "budget": {"rho": 3},
            "sweep": {"budget.rho": [3, 16, 256]},  # rho = ceil(log2 K) = 3: the first round's one pull of each arm
            "policies": [{"name": "ege_sh"}]}
    res = mb.run(spec)
    mis = {r["setting"]["rho"]: r["mean"] for r in res.records if r["metric"] == "misidentification"}
    assert sorted(mis) == [3, 16, 256]
    assert mis[3] >= mis[16] >= mis[256] and mis[256] < 0.1 < mis[3]
    budget = {r["setting"]["rho"]: r["mean"] for r in res.records if r["metric"] == "budget_spent"}
    assert all(0 < v <= 1 for v in budget.values())
