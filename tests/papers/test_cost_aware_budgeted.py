"""Xue et al. online selection: CoHV-UCB and baselines against the numpy loop; budgeted metrics."""
from __future__ import annotations

import math
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mobandit_jax import engine, registry, types
from mobandit_jax.bench.reference.cohv_ucb_numpy import run_cohv_ucb
from mobandit_jax.policies import budgeted as B
from mobandit_jax.problems import llm_configs as L
from mobandit_jax.types import Context

DATA = Path(__file__).parents[1] / "data" / "llm_configs_small.csv"
NAMES = {"cohv_ucb": "cohv", "hv_ucb": "hv", "acc_cost_ucb": "acc_cost", "budgeted/uniform": "uniform"}


def _ctx(inst):
    return Context.of(inst, inst.horizon)


@pytest.fixture(scope="module")
def inst():
    return L.build_instance(dataset=str(DATA), rho=8.0, costs="random", n_profile=12)


def _play(inst, policy, pparams, key_env, key_pol, budget, horizon):
    """The engine's round semantics, returning the actions and which rounds were played."""
    env, ep = inst.env, inst.params

    def step(carry, t):
        state, pulls, spent, done = carry
        a = policy.select(jax.random.fold_in(key_pol, t), state, pparams)
        r, c = env.sample(key_env, a, pulls[a], t, ep)
        active = ~done & (spent + c <= budget)
        new = policy.update(state, a, types.Observation(r, c), pparams)
        state = jax.tree_util.tree_map(lambda n, o: jnp.where(active, n, o), new, state)
        return (state, pulls.at[a].add(active.astype(jnp.int32)), spent + jnp.where(active, c, 0.0),
                done | ~active), (a, active)

    init = (policy.init(pparams), jnp.zeros(env.num_arms, jnp.int32), jnp.zeros((), jnp.float32),
            jnp.zeros((), bool))
    _, (acts, active) = jax.lax.scan(step, init, jnp.arange(horizon))
    acts, active = np.asarray(acts), np.asarray(active)
    return acts[active]


@pytest.mark.parametrize("name", list(NAMES))
@pytest.mark.parametrize("seed", [0, 1])
def test_actions_match_numpy_loop(inst, name, seed):
    ctx = _ctx(inst)
    policy, pparams, _ = registry.make_policy(name, ctx)
    key_env, key_pol = jax.random.PRNGKey(100 + seed), jax.random.PRNGKey(200 + seed)
    horizon = inst.horizon
    jax_actions = _play(inst, policy, pparams, key_env, key_pol, inst.budget, horizon)
    vals = np.asarray(L.pull_values(key_env, inst.params, horizon), np.float64)
    ref = run_cohv_ucb(lambda a, j: (vals[a, j, :2], vals[a, j, 2]), inst.env.num_arms, 2, inst.budget,
                       inst.cost_floor, inst.alloc_costs, horizon, n_init=1, index=NAMES[name])
    n = min(len(jax_actions), len(ref["actions"]))
    assert n > 3 * inst.env.num_arms
    np.testing.assert_array_equal(jax_actions[:n], ref["actions"][:n])
    assert abs(len(jax_actions) - len(ref["actions"])) <= 1  # float32 vs float64 budget boundary
    if name == "cohv_ucb":
        # the reference is not a disguised round robin: it concentrates on a few arms
        assert np.bincount(ref["actions"], minlength=16).max() > 2 * len(ref["actions"]) / 16


def test_engine_regret_equals_reference_sum(inst):
    ctx = _ctx(inst)
    policy, pparams, _ = registry.make_policy("cohv_ucb", ctx)
    mset, mp = registry.make_metrics("budgeted", ctx)
    horizon = inst.horizon
    run = engine.make_run(inst.env, policy, mset, horizon, record_every=horizon)
    seed_key = jax.random.PRNGKey(5)
    out = run(engine.RunParams(inst.params, pparams, mp, jnp.float32(inst.budget)), seed_key)
    key_env = jax.random.fold_in(seed_key, 0)
    vals = np.asarray(L.pull_values(key_env, inst.params, horizon), np.float64)
    ref = run_cohv_ucb(lambda a, j: (vals[a, j, :2], vals[a, j, 2]), inst.env.num_arms, 2, inst.budget,
                       inst.cost_floor, inst.alloc_costs, horizon)
    H = np.prod(inst.means, 1)
    nu = H / inst.mean_costs
    gaps = nu.max() - nu
    assert int(out["rounds"][-1]) == len(ref["actions"])
    assert float(out["hv_efficiency_regret"][-1]) == pytest.approx(gaps[ref["actions"]].sum(), rel=1e-4)
    assert float(out["hv_regret"][-1]) == pytest.approx((inst.mean_costs * gaps)[ref["actions"]].sum(), rel=1e-4)
    assert float(out["spent"][-1]) == pytest.approx(ref["spent"], rel=1e-5)


def test_initial_pulls_and_radii_follow_appendix_a(inst):
    ctx = _ctx(inst)
    _, p, _ = registry.make_policy("cohv_ucb", ctx, eta=1.0)
    assert int(p.n_init) == max(1, math.floor(1.0 * 8.0))  # n_init = max(1, floor(eta rho))
    _, p, _ = registry.make_policy("cohv_ucb", ctx)
    assert int(p.n_init) == 1
    assert float(p.log_TB) == pytest.approx(math.log(math.ceil(ctx.budget / ctx.cost_floor) + 1))
    with pytest.raises(KeyError, match="unknown option"):
        registry.make_policy("cohv_ucb", ctx, beta=1.0)


def test_feasible_selection_avoids_arms_that_cannot_fit(inst):
    ctx = _ctx(inst)
    policy, p, _ = registry.make_policy("cohv_ucb", ctx)
    K = ctx.num_arms
    best = int(np.argmax(np.asarray(p.feas_cost)))  # make the most expensive arm look best
    n, sum_c = jnp.full(K, 10, jnp.int32), jnp.asarray(p.feas_cost) * 10
    sum_r = jnp.full((K, 2), 1.0).at[best].set(10.0)
    index = B.cohv_index(*B.confidence_bounds(n, sum_r, sum_c, p))
    state = policy.init(p)._replace(t=jnp.int32(10 * K), n=n, sum_r=sum_r, sum_c=sum_c, index=index)
    assert int(policy.select(None, state, p)) == best
    remaining = float(np.sort(np.asarray(p.feas_cost))[-2])  # only the most expensive arm cannot fit
    state = state._replace(spent=p.budget - remaining)
    assert int(policy.select(None, state, p)) != best


def test_invalid_budget_and_floor_raise(inst):
    ctx = _ctx(inst)
    for lam in (0.0, 1.5):
        ctx.cost_floor = lam
        with pytest.raises(ValueError, match=f"0 < lambda <= 1, got {lam}"):
            registry.make_policy("cohv_ucb", ctx)
    ctx = _ctx(inst)
    ctx.budget = 0.01
    with pytest.raises(ValueError, match="budget B=0.01 is below one pull"):
        registry.make_policy("hv_ucb", ctx)
    ctx = _ctx(inst)
    ctx.mean_costs = np.full(ctx.num_arms, 0.05)
    with pytest.raises(ValueError, match=r"cost 0.05 \(entry 0\) is outside \[lambda, 1\]"):
        registry.make_policy("acc_cost_ucb", ctx)


def test_metrics_hand_computed():
    means = np.array([[0.5, 0.4], [0.8, 0.5], [0.2, 0.9]])
    costs = np.array([0.5, 1.0, 0.3])  # H = .2, .4, .18 ; nu = .4, .4, .6
    ctx = Context.make(num_arms=3, dim=2, horizon=10, means=means, mean_costs=costs, budget=5.0,
                  cost_floor=0.3)
    mset, mp = registry.make_metrics("budgeted", ctx)
    assert mset.names == ("hv_efficiency_regret", "hv_regret", "moving_avg_regret_w50")
    assert mset.reduce == ("sum", "sum", "last50")
    vals = [np.asarray(mset.values(mp, jnp.int32(a), None)) for a in range(3)]
    np.testing.assert_allclose(vals[0], [0.2, 0.1, 0.2], atol=1e-6)
    np.testing.assert_allclose(vals[1], [0.2, 0.2, 0.2], atol=1e-6)
    np.testing.assert_allclose(vals[2], [0.0, 0.0, 0.0], atol=1e-6)


def test_report_moving_average_matches_window_mean():
    from pathlib import Path

    from mobandit_jax.runner.reproduce import load_report

    moving_average = load_report("cost_aware", Path(__file__).resolve().parents[2] / "experiments").moving_average

    rng = np.random.default_rng(0)
    gaps = rng.uniform(size=(2, 300))
    cum = np.cumsum(gaps, 1)
    rounds = np.tile(np.arange(1, 301), (2, 1))
    ma = moving_average(cum, rounds, w=50)
    for t in (10, 50, 51, 299):
        np.testing.assert_allclose(ma[:, t - 1], gaps[:, max(0, t - 50):t].mean(1))
