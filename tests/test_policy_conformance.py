"""Every registered policy honours the protocol of ``mobandit_jax.types`` under ``jit`` and ``vmap``.

Two params points (two contexts with different means, horizons and budgets) are stacked and run for a
few rounds: the state keeps its structure, shapes and dtypes across updates, ``select`` traces once,
and actions are valid (an arm in range; a slate of k distinct arms in range). Identifiers return an
:class:`IdentifyResult` of the right shapes.
"""
import chex
import numpy as np
import pytest
import jax
import jax.numpy as jnp

import mobandit_jax.policies  # noqa: F401  (importing fills the registry, whichever test file runs first)
from mobandit_jax.engine import stack_params
from mobandit_jax.registry import POLICIES, make_policy as make
from mobandit_jax.problems import llm_configs as L
from mobandit_jax.problems.stochastic import make_stochastic
from mobandit_jax.types import Context, Env, Identifier, IdentifyResult, Observation, Policy

K, D, SLATE, ROUNDS = 6, 2, 2, 4
W = np.array([[1.0, 0.0], [0.5, 0.5]])


def _context(family: str, seed: int) -> Context:
    rng = np.random.default_rng(seed)
    means = rng.uniform(0.1, 0.9, (K, D))
    costs = np.random.default_rng(7).uniform(0.3, 1.0, K)
    horizon = 20 + 10 * seed
    budget = 6.0 if family == "identification" else 6.0 + seed  # an identifier's pull bound depends on B
    if family == "slate":
        return Context(K, D, horizon, means, ref=np.zeros(D), slate_size=SLATE, noise_sigma=0.1)
    if family == "preference":
        return Context(K, D, horizon, means, W=W)
    if family == "pac":  # any real rewards, Gaussian noise of a known sigma
        return Context.of(make_stochastic(means, noise="gaussian", sigma=0.1, clip=False), horizon, W)
    env = Env(sample=L.sample, num_arms=K, dim=D, prefix_table=L.prefix_table)
    return Context(K, D, horizon, means, mean_costs=costs, budget=budget, cost_floor=float(costs.min()),
                   alloc_costs=costs, min_costs=costs, budget_ratio=budget / (K * costs.mean()), env=env)


def _env_params(ctx: Context):
    if ctx.noise_sigma is not None:  # the pac family's stochastic environment
        return make_stochastic(ctx.means, noise="gaussian", sigma=0.1, clip=False).params
    table = np.concatenate([np.repeat(ctx.means[:, None, :], 3, 1),
                            np.repeat(ctx.alloc_costs[:, None, None], 3, 1)], -1)
    return L.LLMParams(jnp.asarray(table, jnp.float32))


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_policy_protocol(name):
    family = POLICIES[name].family
    built = [make(name, _context(family, seed)) for seed in (0, 1)]
    (policy, params_a, key_a), (_, params_b, key_b) = built
    assert key_a == key_b  # both points share one compiled function
    params = stack_params([params_a, params_b])
    if family in ("identification", "pac"):
        assert isinstance(policy, Identifier)
        env_params = stack_params([_env_params(_context(family, s)) for s in (0, 1)])
        keys = jax.random.split(jax.random.PRNGKey(0), 2)
        out = jax.jit(jax.vmap(policy.identify))(keys, keys, env_params, params)
        assert out._fields[:len(IdentifyResult._fields)] == IdentifyResult._fields  # pac: PacResult adds epsilon
        chex.assert_shape([out.recommended, out.spent, out.pulls], [(2, K), (2,), (2, K)])
        chex.assert_type([out.recommended, out.pulls], [bool, jnp.int32])
        if family == "pac":
            chex.assert_shape([out.stopped, out.epsilon], [(2,), (2,)])
            chex.assert_type(out.stopped, bool)
        assert np.all(np.asarray(out.spent) <= np.asarray(params.budget) + 1e-6)
        return
    assert isinstance(policy, Policy)
    k = policy.slate_size
    assert k == (SLATE if family == "slate" else 0)
    select = jax.jit(jax.vmap(chex.assert_max_traces(policy.select, n=1)))
    update = jax.jit(jax.vmap(policy.update))
    state0 = state = jax.vmap(policy.init, axis_size=2)(params)
    rng = np.random.default_rng(3)
    for t in range(ROUNDS):
        keys = jax.random.split(jax.random.PRNGKey(t), 2)
        action = np.asarray(select(keys, state, params))
        assert action.dtype == np.int32
        if k:
            assert action.shape == (2, k)
            assert all(len(set(row)) == k for row in action.tolist())
        else:
            assert action.shape == (2,)
        assert np.all((action >= 0) & (action < K))
        shape = (2, k) if k else (2,)
        obs = Observation(jnp.asarray(rng.uniform(0, 1, shape + (D,)), jnp.float32),
                          jnp.asarray(rng.uniform(0.3, 1.0, shape), jnp.float32))
        state = update(state, jnp.asarray(action), obs, params)
        chex.assert_trees_all_equal_shapes_and_dtypes(state, state0)
    chex.clear_trace_counter()
