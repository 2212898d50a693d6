"""Xue et al. identification: gaps (Eq. 1), CoPSI (Algorithm 2) on hand-checkable and noisy
instances against a plain numpy loop, PSI-SR, uniform allocation and the identification metrics."""
from __future__ import annotations

import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mobandit_jax import metrics, registry  # noqa: F401  (importing metrics fills its registry)
from mobandit_jax.kernels.prefix import dense
from mobandit_jax.policies import identification as I
from mobandit_jax.problems import llm_configs as L
from mobandit_jax.types import Context, Env, IdentifyResult

DATA = Path(__file__).parents[1] / "data" / "llm_configs_small.csv"

# A, C Pareto; B dominated by A. Dyadic values: every gap below is exactly 0.25.
HAND = np.array([[0.5, 0.5], [0.25, 0.25], [0.75, 0.25]])


def test_gaps_hand_computed():
    gamma, dominated = I.empirical_gaps(jnp.asarray(HAND), jnp.ones(3, bool))
    np.testing.assert_array_equal(np.asarray(dominated), [False, True, False])
    np.testing.assert_allclose(np.asarray(gamma), [0.25, 0.25, 0.25])
    m, M = I.pairwise_margins(jnp.asarray(HAND))
    assert float(m[1, 0]) == 0.25 and float(m[1, 2]) == 0.0 and float(M[2, 1]) == 0.5
    # a second hand case with distinct gaps: D=(0.5, 0.125) dominated by A only, margin 0.
    mu = np.array([[0.5, 0.5], [0.25, 0.25], [0.75, 0.25], [0.375, 0.125]])
    gamma, dominated = I.empirical_gaps(jnp.asarray(mu), jnp.ones(4, bool))
    # Delta^-_D = max(m(D,A)=.125, m(D,B)=-.125, m(D,C)=.125) = .125
    assert float(gamma[3]) == 0.125 and bool(dominated[3])


def test_gaps_inactive_arms_are_ignored():
    mu = jnp.asarray(HAND)
    gamma, dominated = I.empirical_gaps(mu, jnp.array([False, True, True]))  # A inactive: B undominated
    assert not bool(dominated[1]) and float(gamma[0]) == -np.inf


def test_tie_rule_prefers_dominated_arm():
    order = [0, 2, 1]  # A, C, B: the dominated arm has the largest index
    mu = jnp.asarray(HAND[order])
    gamma, dominated = I.empirical_gaps(mu, jnp.ones(3, bool))
    assert int(I.choose_arm(gamma, dominated, jnp.ones(3, bool))) == 2
    # without a dominated maximizer: the lowest index
    gamma, dominated = I.empirical_gaps(mu, jnp.array([True, True, False]))
    assert int(I.choose_arm(gamma, dominated, jnp.array([True, True, False]))) == 0


def _hand_ctx(means, costs, budget, lam, n=2):
    table = np.concatenate([np.repeat(np.asarray(means)[:, None, :], n, 1),
                            np.repeat(np.asarray(costs)[:, None, None], n, 1)], -1)
    params = L.LLMParams(jnp.asarray(table, jnp.float32))
    env = Env(sample=L.sample, num_arms=len(means), dim=2, prefix_table=L.prefix_table)
    ctx = Context.make(num_arms=len(means), dim=2, horizon=1, means=np.asarray(means), mean_costs=np.asarray(costs),
                  budget=budget, cost_floor=lam, alloc_costs=np.asarray(costs), min_costs=np.asarray(costs), env=env)
    return ctx, params


def test_copsi_hand_checkable_instance():
    costs = [0.5, 0.25, 1.0]
    ctx, params = _hand_ctx(HAND, costs, budget=20.0, lam=0.25)
    ident, p, static = registry.make_policy("copsi", ctx)
    key = jax.random.PRNGKey(0)
    rec, spent, N = ident.identify(key, key, params, p)[:3]
    # L = 1 + 1/1.25 + 1/1.5; n_1 = floor(20 / (L 1.75)) = 4, B rejected; n_2 = floor(20 / (L 1.5)) = 5
    Lk = 1 + 1 / 1.25 + 1 / 1.5
    assert math.floor(20 / (Lk * 1.75)) == 4 and math.floor(20 / (Lk * 1.5)) == 5
    np.testing.assert_array_equal(np.asarray(N), [5, 4, 5])
    assert float(spent) == pytest.approx(4 * 1.75 + 1 * 1.5)
    np.testing.assert_array_equal(np.asarray(rec), [True, False, True])
    assert float(I.l_k_lambda(3, 0.25)) == pytest.approx(Lk)


def test_budget_guard_truncates_to_complete_sweeps():
    costs = [0.5, 0.25, 1.0]
    ctx, params = _hand_ctx(HAND, costs, budget=5.0, lam=0.25)
    P = L.prefix_table(jax.random.PRNGKey(0), params, 50)
    N, spent, sums = I.top_up(P, jnp.zeros(3, jnp.int32), jnp.ones(3, bool), jnp.int32(50), jnp.float32(0.0),
                              jnp.float32(5.0), 50)
    np.testing.assert_array_equal(np.asarray(N), [2, 2, 2])  # 2 sweeps cost 3.5; 3 would cost 5.25
    assert float(spent) == pytest.approx(3.5)
    np.testing.assert_array_equal(np.asarray(sums), np.asarray(dense(P, 50))[np.arange(3), np.asarray(N)])


# ------------------------------------------------------------------ numpy loop of Algorithm 2

def _gaps_loop(mu, active):
    K = len(mu)
    act = [i for i in range(K) if active[i]]
    dm = {}
    for i in act:
        dm[i] = max(min(mu[j][d] - mu[i][d] for d in range(2)) for j in act if j != i)
    gamma, dom = {}, {}
    for i in act:
        dom[i] = dm[i] > 0
        if dom[i]:
            gamma[i] = dm[i]
        else:
            vals = []
            for j in act:
                if j == i:
                    continue
                Mij = max(mu[i][d] - mu[j][d] for d in range(2))
                Mji = max(mu[j][d] - mu[i][d] for d in range(2))
                vals.append(min(Mij, max(Mji, 0) + max(dm[j], 0)))
            gamma[i] = min(vals)
    return gamma, dom


def algorithm2_numpy(vals, costs, budget, target):
    """Plain loop: phases with targets ``target(r, active, C_r)``, charged from ``vals[:, :, 2]``."""
    K = vals.shape[0]
    active, accepted = [True] * K, [False] * K
    N, spent = 0, 0.0
    for r in range(1, K):
        C_r = sum(costs[i] for i in range(K) if active[i])
        goal = max(target(r, sum(active), C_r), N)
        while goal > N:  # complete sweeps while the budget allows
            sweep = sum(vals[i, N, 2] for i in range(K) if active[i])
            if spent + sweep > budget + 1e-6:
                goal = N
                break
            spent += sweep
            N += 1
        mu = [vals[i, :N, :2].mean(0) if N > 0 else np.zeros(2) for i in range(K)]
        gamma, dom = _gaps_loop(mu, active)
        gmax = max(gamma.values())
        tied = [i for i in gamma if gamma[i] >= gmax - max(1e-6 * abs(gmax), 1e-9)]
        pref = [i for i in tied if dom[i]]
        e = min(pref) if pref else min(tied)
        accepted[e] = not dom[e]
        active[e] = False
    return np.array([a or b for a, b in zip(accepted, active, strict=False)]), spent


@pytest.mark.parametrize("name", ["copsi", "psi_sr"])
@pytest.mark.parametrize("rho", [5.0, 40.0])
def test_elimination_matches_numpy_loop(name, rho):
    inst = L.build_instance(dataset=str(DATA), subset="identification14", rho=rho, costs="deterministic",
                            n_profile=12)
    ctx = Context.of(inst, 1)
    ident, p, key = registry.make_policy(name, ctx)
    jmax = int(p.jmax)
    c, B, K, lam = np.asarray(inst.alloc_costs), inst.budget, 14, inst.cost_floor
    Lk = 1 + sum(1 / (1 + (l - 1) * lam) for l in range(2, K + 1))
    lb = 0.5 + sum(1 / i for i in range(2, K + 1))
    T = round(rho) * K  # B = rho K c_bar
    if name == "copsi":
        target = lambda r, k, C: math.floor(B / (Lk * C))
    else:
        target = lambda r, k, C: math.ceil(max(T - K, 0) / (lb * (K + 1 - r)))
    agree = 0
    for seed in range(4):
        key = jax.random.PRNGKey(seed)
        rec, spent, _ = ident.identify(key, key, inst.params, p)[:3]
        vals = np.asarray(L.pull_values(key, inst.params, jmax + 1), np.float64)
        ref, ref_spent = algorithm2_numpy(vals, c, B, target)
        agree += int(np.array_equal(np.asarray(rec), ref))
        assert float(spent) == pytest.approx(ref_spent, rel=1e-4)
        assert float(spent) <= B * (1 + 1e-6)
    assert agree == 4


def test_uniform_alloc_spends_complete_rounds():
    inst = L.build_instance(dataset=str(DATA), subset="identification14", rho=10.0, costs="deterministic",
                            n_profile=12)
    ctx = Context.of(inst, 1)
    ident, p, _ = registry.make_policy("uniform_alloc", ctx)
    key = jax.random.PRNGKey(3)
    rec, spent, N = ident.identify(key, key, inst.params, p)[:3]
    n = math.floor(inst.budget / inst.alloc_costs.sum())
    assert n == 10  # rho = B / (K c_bar) complete rounds
    np.testing.assert_array_equal(np.asarray(N), np.full(14, n))
    vals = np.asarray(L.pull_values(key, inst.params, n), np.float64)
    mu = vals[:, :n, :2].mean(1)
    expect = [not any(np.all(mu[j] > mu[i]) for j in range(14)) for i in range(14)]
    np.testing.assert_array_equal(np.asarray(rec), expect)


def test_identification_metrics_hand_computed():
    means = HAND
    ctx = Context.make(num_arms=3, dim=2, horizon=1, means=means, budget=8.0)
    mset, (truth, budget) = registry.make_metrics("identification", ctx)
    np.testing.assert_array_equal(np.asarray(truth), [True, False, True])
    assert float(budget) == 8.0
    mp = (truth, budget)
    spent = lambda s: IdentifyResult(None, jnp.float32(s), None)
    mis, f1, use = mset.values(mp, jnp.array([True, False, True]), spent(6.0))
    assert float(mis) == 0.0 and float(f1) == 1.0 and float(use) == pytest.approx(0.75)
    mis, f1, use = mset.values(mp, jnp.array([True, True, False]), spent(8.0))  # |P^ & P*| = 1, 2*1/(2+2)
    assert float(mis) == 1.0 and float(f1) == pytest.approx(0.5) and float(use) == 1.0
    mis, f1, _ = mset.values(mp, jnp.array([False, False, False]), spent(0.0))
    assert float(f1) == 0.0
    assert mset.names == ("misidentification", "f1", "budget_spent")
    assert mset.reduce == ("mean", "mean", "mean")
    with pytest.raises(ValueError, match="positive budget B, got None"):
        registry.make_metrics("identification", Context.make(num_arms=3, dim=2, horizon=1, means=means))


def test_identification_rejects_bad_floor_and_budget():
    ctx, _ = _hand_ctx(HAND, [0.5, 0.25, 1.0], budget=20.0, lam=0.0)
    with pytest.raises(ValueError, match="0 < lambda <= 1, got 0.0"):
        registry.make_policy("copsi", ctx)
    ctx, _ = _hand_ctx(HAND, [0.5, 0.25, 1.0], budget=0.1, lam=0.25)
    with pytest.raises(ValueError, match=r"^policy 'psi_sr': budget B = 0\.1 is below the 2\.33334 its first phase"):
        registry.make_policy("psi_sr", ctx)
    ctx, _ = _hand_ctx(HAND, [0.5, 0.1, 1.0], budget=20.0, lam=0.25)
    with pytest.raises(ValueError, match=r"cost 0.1 \(entry 1\) is outside \[lambda, 1\]"):
        registry.make_policy("copsi", ctx)


def test_copsi_schedule_unchanged_under_realized_costs():
    """Appendix A robustness protocol: CoPSI allocates with the profiling c_i in both cost modes."""
    out = {}
    for costs in ("deterministic", "random"):
        inst = L.build_instance(dataset=str(DATA), subset="identification14", rho=30.0, costs=costs, n_profile=12)
        ctx = Context.of(inst, 1)
        ident, p, _ = registry.make_policy("copsi", ctx)
        key = jax.random.PRNGKey(9)
        rec, spent, N = ident.identify(key, key, inst.params, p)[:3]
        out[costs] = (np.asarray(rec), float(spent), np.asarray(N))
    assert inst.cost_floor < float(np.min(inst.alloc_costs))  # the charged floor differs
    np.testing.assert_array_equal(out["deterministic"][2], out["random"][2])
    np.testing.assert_array_equal(out["deterministic"][0], out["random"][0])
    assert out["deterministic"][1] != pytest.approx(out["random"][1], rel=1e-6)  # but the charges differ


def test_psi_sr_equal_costs_schedule_matches_numpy_loop():
    inst = L.build_instance(dataset=str(DATA), subset="identification14", rho=20.0, costs="deterministic",
                            n_profile=12)
    ctx = Context.of(inst, 1)
    ident, p, key = registry.make_policy("psi_sr", ctx, schedule="equal_costs")
    jmax = int(p.jmax)
    c, B, lam = np.asarray(inst.alloc_costs), inst.budget, inst.cost_floor
    Lk = 1 + sum(1 / (1 + (l - 1) * lam) for l in range(2, 15))
    key = jax.random.PRNGKey(4)
    rec, spent, _ = ident.identify(key, key, inst.params, p)[:3]
    vals = np.asarray(L.pull_values(key, inst.params, jmax + 1), np.float64)
    ref, ref_spent = algorithm2_numpy(vals, c, B, lambda r, k, C: math.floor(B / (Lk * k * c.mean())))
    np.testing.assert_array_equal(np.asarray(rec), ref)
    assert float(spent) == pytest.approx(ref_spent, rel=1e-4)
    with pytest.raises(ValueError, match=r"schedule must be one of \['sr', 'equal_costs'\], got 'fast'"):
        registry.make_policy("psi_sr", ctx, schedule="fast")


def test_identifiers_share_budget_and_cost_units():
    """Every identifier of the seed-002 spec gets the same B = rho K c_bar and is charged c_i per pull."""
    inst = L.build_instance("piqa", "identification14", 50, "deterministic", c_max="arm_mean")
    ctx = Context.of(inst, 1)
    costs = np.asarray(inst.alloc_costs, np.float64)
    K = len(costs)
    B = 50 * K * costs.mean()
    keys = jax.random.split(jax.random.PRNGKey(7), 6)
    for name, opts in (("copsi", {}), ("psi_sr", {}), ("uniform_alloc", {}), ("psi_sr", {"schedule": "equal_costs"})):
        ident, params, _ = registry.make_policy(name, ctx, **opts)
        assert float(params.budget) == pytest.approx(B, rel=1e-6), name
        np.testing.assert_allclose(np.asarray(params.costs), costs, rtol=1e-6, err_msg=name)
        res = jax.jit(jax.vmap(lambda k: ident.identify(k, k, inst.params, params)))(keys)
        pulls = np.asarray(res.pulls, np.float64)
        np.testing.assert_allclose(np.asarray(res.spent), pulls @ costs, rtol=1e-4, err_msg=name)
        assert np.all(np.asarray(res.spent) <= B * (1 + 1e-6)), name
        assert np.all(pulls.sum(1) > K), name


def test_c_max_readings_change_lambda_not_the_token_budget():
    """``c_max = "arm_mean"``: max_i c_i = 1 and lambda = min/max arm mean tokens; B in tokens is unchanged."""
    a = L.build_instance("gsm8k", "identification14", 100, "deterministic", c_max="instance")
    b = L.build_instance("gsm8k", "identification14", 100, "deterministic", c_max="arm_mean")
    tok = np.asarray(a.info["prof_tokens"], np.float64)
    assert b.info["c_max"] == pytest.approx(tok.max())
    np.testing.assert_allclose(b.alloc_costs, tok / tok.max())
    assert b.cost_floor == pytest.approx(tok.min() / tok.max())
    assert a.info["c_max"] > tok.max() and a.cost_floor == pytest.approx(tok.min() / a.info["c_max"])
    assert a.info["budget_tokens"] == pytest.approx(b.info["budget_tokens"]) == pytest.approx(100 * 14 * tok.mean())
    with pytest.raises(ValueError, match="env.c_max must be 'instance', or 'arm_mean' with costs = 'deterministic'"):
        L.build_instance("gsm8k", "identification14", 100, "random", c_max="arm_mean")


@pytest.mark.parametrize("dataset, c_max", [("gsm8k", "instance"), ("piqa", "arm_mean"), ("piqa", "instance")])
def test_uniform_alloc_affords_rho_rounds_despite_rounding(dataset, c_max):
    """B / sum_i c_i = rho is 9.999999999999998 in float64 for the first two: still 10 complete rounds."""
    inst = L.build_instance(dataset, "all", 10, "deterministic", c_max=c_max)
    _, p, key = registry.make_policy("uniform_alloc", Context.of(inst, 1))
    assert int(p.jmax) == 10 and dict(key[1:])["length"] == I.table_length(10) == 16


@pytest.mark.parametrize("name", ["copsi", "psi_sr", "uniform_alloc"])
def test_longer_tables_give_the_same_run(name):
    """The static table length only bounds what is drawn: budgets that share a length share a program,
    and a run on a longer table is the same run, bit for bit."""
    inst = L.build_instance(dataset=str(DATA), subset="identification14", rho=30.0, costs="deterministic",
                            n_profile=12)
    ctx = Context.of(inst, 1)
    _, p, key = registry.make_policy(name, ctx)
    length = dict(key[1:])["length"]
    assert length == I.table_length(int(p.jmax)) >= int(p.jmax) and length & (length - 1) == 0
    factory = {"copsi": I.copsi, "psi_sr": lambda *a: I.psi_sr(*a, schedule=I.SCHEDULES[0]),
               "uniform_alloc": I.uniform_alloc}[name]
    runs = [jax.jit(factory(14, n, L.prefix_table).identify) for n in (length, 4 * length + 5)]
    for seed in range(3):
        k = jax.random.PRNGKey(seed)
        a, b = (run(k, k, inst.params, p) for run in runs)
        for x, y in zip(a, b, strict=False):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_psi_sr_unit_pulls_are_rho_k_in_every_setting_of_the_identification_spec():
    """T = floor(B / c_bar) with B = rho K c_bar is rho K exactly (float32 in the program gave rho K - 1 in 23 of
    the 32 settings); the successive-rejects targets, the pull bound and PSI-SR's pulls follow from it."""
    from mobandit_jax.runner import plans
    from mobandit_jax.runner import spec as cfg

    plan = plans.build(cfg.load(Path(__file__).parents[2] / "configs" / "cost_aware" / "identification.toml"))
    K, lb = 14, 0.5 + sum(1 / i for i in range(2, 15))
    seen = set()
    for g in [g for g in plan.groups if g.label == "PSI-SR"]:
        for gi, params in zip(g.members, g.params, strict=False):
            rho = plan.grid["PSI-SR"][gi].setting["rho"]
            p = params.policy
            assert isinstance(rho, int) and int(p.unit_pulls) == rho * K, (gi, rho)
            targets = [math.ceil((rho * K - K) / (lb * (K + 1 - r))) for r in range(1, K)]  # Kone et al., EGE-SR
            assert int(p.jmax) == targets[-1], (gi, rho)
            seen.add(gi)
    assert seen == set(range(32))
    # the pulls of one setting: the arm removed in phase r has n_r pulls, the last two n_{K-1} (budget not binding)
    inst = L.build_instance("gsm8k", "identification14", 20, "deterministic", c_max="arm_mean")
    ident, p, _ = registry.make_policy("psi_sr", Context.of(inst, 1))
    assert float(jnp.floor(p.budget / jnp.mean(p.costs))) == 279.0  # what the program computed before
    N = np.sort(np.asarray(ident.identify(jax.random.PRNGKey(1), jax.random.PRNGKey(1), inst.params, p).pulls))
    targets = [math.ceil((20 * K - K) / (lb * (K + 1 - r))) for r in range(1, K)]
    np.testing.assert_array_equal(N, sorted(targets + targets[-1:]))


def test_uniform_alloc_batched_returns_the_empirical_pareto_set_of_its_means():
    """Uniform allocation over 200 seeds in one compiled batch (42 leaderboard models, 7 objectives, identity cone,
    Bernoulli rewards): each seed's set is the empirical Pareto set (numpy) of the means of the pulls it made. Built
    for AVX2 (an AVX2 CPU, or XLA_FLAGS=--xla_cpu_max_isa=AVX2 on an AVX-512 one), XLA computes the means as sums
    times 1 / N and contracts that product into the pairwise differences (FMA), so two equal means differed there and
    arms tied in an objective were read as dominated (681 of 8,400 sets); dominance is now compared, not read off
    the differences."""
    from mobandit_jax.problems.budget import with_budget
    from mobandit_jax.problems.cone import apply_cone

    inst = apply_cone(with_budget(registry.make_env({"kind": "llm_leaderboard", "noise": "bernoulli",
                                                     "costs": "model_size"}, {}), {"rho": 10}), np.eye(7))
    ctx = Context.of(inst, 1)
    policy, params, _ = registry.make_policy("uniform_alloc", ctx)
    keys = jax.random.split(jax.random.PRNGKey(5), 200)
    out = jax.jit(jax.vmap(policy.identify, in_axes=(0, 0, None, None)))(keys, keys, inst.params, params)
    length = int(params.jmax)
    tables = jax.jit(jax.vmap(lambda k: dense(ctx.env.prefix_table(k, inst.params, length), length)))(keys)
    pulls = np.asarray(out.pulls)
    assert np.all(pulls == length)  # rho complete sweeps
    means = np.asarray(tables)[:, :, length, :-1].astype(np.float64) / length  # the last column is the cost
    beaten = np.any(np.all(means[:, None, :, :] > means[:, :, None, :], axis=-1), axis=2)
    np.testing.assert_array_equal(np.asarray(out.recommended), ~beaten)
