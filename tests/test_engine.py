"""Engine: chunk invariance, resume after interruption, one compilation per group, budgets, CRN."""
import json
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mobandit_jax import engine
from mobandit_jax.engine import RunParams, make_run, seed_keys
from mobandit_jax.problems.stochastic import make_stochastic
from mobandit_jax.runner import execution, plans
from mobandit_jax.runner import spec as cfg
from mobandit_jax.types import Env, Metric, MetricSet, Policy


def _run(spec, out, **exp):
    spec["experiment"].update(exp)
    plan = plans.build(cfg.validate(spec))
    execution.execute(plan, out, progress=False)
    return np.load(Path(out) / "finals.npz"), json.loads((Path(out) / "summary.json").read_text())


def test_seed_results_do_not_depend_on_chunking(small_spec, tmp_path):
    a, _ = _run(small_spec, tmp_path / "a", chunk=6)
    b, _ = _run(small_spec, tmp_path / "b", chunk=4)
    for k in a.files:
        np.testing.assert_array_equal(a[k], b[k])
    assert a["PrefUCB|0|regret_indicator"].shape == (6,)


def test_interrupted_run_resumes_to_the_same_summary(small_spec, tmp_path):
    out = tmp_path / "run"
    _, full = _run(small_spec, out, chunk=2)
    # Simulate a kill: one chunk lost, another truncated mid-write, a stray temporary file.
    chunks = sorted((out / "chunks").glob("chunk_*.npz"))
    chunks[1].unlink()
    chunks[2].write_bytes(chunks[2].read_bytes()[:50])
    (out / "chunks" / ".chunk_00001.npz.x.tmp").write_bytes(b"partial")
    (out / "summary.json").unlink()
    _, again = _run(small_spec, out, chunk=2)
    assert again == full


def test_resume_refuses_a_different_experiment(small_spec, tmp_path):
    _run(small_spec, tmp_path / "r", chunk=3)
    small_spec["experiment"]["horizon"] = 100
    try:
        _run(small_spec, tmp_path / "r", chunk=3)
    except RuntimeError as err:
        assert "different experiment" in str(err)
    else:
        raise AssertionError("a changed spec must not reuse old chunks")


def test_one_compilation_per_group_across_chunks(small_spec, tmp_path):
    plan = plans.build(cfg.validate({**small_spec, "experiment": {**small_spec["experiment"], "chunk": 2}}))
    traces = []
    for g in plan.groups:
        inner = g.run

        def counted(params, key, inner=inner, label=g.label):
            traces.append(label)
            return inner(params, key)

        g.run = counted
    execution.execute(plan, tmp_path / "c", progress=False)  # 3 chunks
    assert sorted(traces) == sorted(g.label for g in plan.groups)


def _counting_policy(K):
    def init(params):
        return jnp.zeros((), jnp.int32)

    def select(key, state, params):
        return (state % K).astype(jnp.int32)

    def update(state, action, obs, params):
        return state + 1

    return Policy(init, select, update)


def test_budget_stops_a_lane_and_budgets_batch():
    def sample(key, arm, j, t, params):
        return jnp.zeros((1,)), jnp.asarray(0.3, jnp.float32)

    env = Env(sample, num_arms=2, dim=1)
    mset = MetricSet((Metric("one", "sum"),), lambda mp, a, obs: {"one": jnp.ones(())})
    run = make_run(env, _counting_policy(2), mset, horizon=10, record_every=5)
    budgets = jnp.array([1.0, 0.29, 2.0, jnp.inf])
    params = RunParams(None, None, None, budgets)
    out = jax.vmap(lambda b: run(params._replace(budget=b), jax.random.PRNGKey(0)))(budgets)
    np.testing.assert_array_equal(np.asarray(out["rounds"])[:, -1], [3, 0, 6, 10])
    np.testing.assert_allclose(np.asarray(out["spent"])[:, -1], [0.9, 0.0, 1.8, 3.0], rtol=1e-6)
    np.testing.assert_array_equal(np.asarray(out["one"])[:, -1], [3, 0, 6, 10])


def test_common_random_numbers_per_arm_and_pull():
    inst = make_stochastic([[0.3, 0.6], [0.5, 0.5]])
    key = jax.random.PRNGKey(3)
    a = inst.env.sample(key, 1, 4, 0, inst.params)[0]
    b = inst.env.sample(key, 1, 4, 77, inst.params)[0]  # same arm and pull index, another round
    c = inst.env.sample(key, 1, 5, 0, inst.params)[0]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_seed_keys_are_fold_in_of_the_index():
    k = seed_keys(5, [0, 3])
    np.testing.assert_array_equal(k[1], jax.random.fold_in(jax.random.PRNGKey(5), 3))


def test_max_memory_sets_the_chunk(small_spec):
    small_spec["experiment"]["seeds"] = 64
    plan = plans.build(cfg.validate(small_spec))
    per_seed = execution.bytes_per_seed(plan)
    assert per_seed > 0
    execution.fit_chunk(plan, int(per_seed * 5.5))
    assert plan.chunk == 5
    assert cfg.parse_bytes("2GiB") == 2 * 2**30 and cfg.parse_bytes("512MB") == 512 * 10**6


def test_batch_maps_one_grid_point_as_each_point_of_a_grid():
    """``batch`` on a one-point grid (mapped over the seeds only) gives the values of that point in a grid
    of several points, and of a plain per-seed loop, in ``(G, S, ...)`` outputs."""
    from mobandit_jax.engine import batch, stack_params
    from mobandit_jax.metrics.preference import preference_metrics, preference_truth
    from mobandit_jax.policies.preference import cone_params, prefucb

    W = [[1.0, 0.0], [0.0, 1.0]]
    envs = [make_stochastic(m) for m in ([[0.3, 0.6], [0.5, 0.5], [0.7, 0.2]], [[0.6, 0.3], [0.2, 0.8], [0.4, 0.4]])]
    params = [RunParams(e.params, cone_params(W), preference_truth(e.means, W), jnp.inf) for e in envs]
    run = make_run(envs[0].env, prefucb(3, 2), preference_metrics(2), horizon=40, record_every=10)
    keys = seed_keys(0, range(3))
    one = jax.jit(batch(run))(stack_params(params[1:]), keys)
    two = jax.jit(batch(run))(stack_params(params), keys)
    for name, value in one.items():
        assert value.shape == (1, 3) + two[name].shape[2:]
        np.testing.assert_array_equal(value[0], two[name][1])
        for s in range(3):
            np.testing.assert_array_equal(value[0, s], jax.jit(run)(params[1], keys[s])[name])


def test_leaves_equal_at_every_point_are_stacked_once():
    """``stack_grid`` stacks a leaf equal at every grid point once (leading axis 1) and ``batch`` does not map
    it: the outputs are each point's own (a one-point grid of it). Identical points keep the grid's size."""
    from mobandit_jax.engine import batch, stack_grid, stack_params
    from mobandit_jax.metrics.preference import preference_metrics, preference_truth
    from mobandit_jax.policies.preference import cone_params, prefucb

    W = [[1.0, 0.0], [0.0, 1.0]]
    envs = [make_stochastic(m) for m in ([[0.3, 0.6], [0.5, 0.5], [0.7, 0.2]], [[0.6, 0.3], [0.2, 0.8], [0.4, 0.4]])]
    params = [RunParams(e.params, cone_params(W), preference_truth(e.means, W), jnp.inf) for e in envs]
    run = jax.jit(batch(make_run(envs[0].env, prefucb(3, 2), preference_metrics(2), horizon=40, record_every=10)))
    keys = seed_keys(0, range(3))
    stacked = stack_grid(params)
    lead = [x.shape[0] for x in jax.tree_util.tree_leaves(stacked)]
    assert stacked.env.means.shape[0] == 2 and stacked.policy.W.shape[0] == 1 and set(lead) == {1, 2}
    assert {x.shape[0] for x in jax.tree_util.tree_leaves(stack_params(params))} == {2}
    both = run(stacked, keys)
    for i in range(2):
        alone = run(stack_params(params[i:i + 1]), keys)
        for name, value in alone.items():
            np.testing.assert_array_equal(both[name][i], value[0])
    twice = stack_grid([params[0], params[0]])
    assert {x.shape[0] for x in jax.tree_util.tree_leaves(twice)} == {2}
    out = run(twice, keys)
    for value in out.values():
        assert value.shape[0] == 2
        np.testing.assert_array_equal(value[0], value[1])


@pytest.mark.parametrize("seeds", [100, 130, 1000, 1031])
def test_lanes_in_turn_hand_every_seed_its_own_outputs_in_order(seeds):
    """The seeds are handed over in order, with ceil(S / seeds_per_lane(S)) lanes to share: a function that reads each
    seed's key gives outputs in the seeds' order."""
    keys = engine.seed_keys(3, np.arange(seeds))
    per_lane = engine.seeds_per_lane(seeds)
    assert per_lane == max(1, min(16, seeds // 64))
    pool = lambda params, keys, lanes: {"first": keys[:, 0] + params, "lanes": jnp.full(keys.shape[0], lanes)}
    out = engine.lanes_in_turn(pool, jnp.uint32(1), keys)
    np.testing.assert_array_equal(np.asarray(out["first"]), np.asarray(keys)[:, 0] + 1)
    assert np.all(np.asarray(out["lanes"]) == -(-seeds // per_lane))
