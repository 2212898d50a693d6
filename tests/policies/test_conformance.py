"""Every registered policy honours the protocol of ``mobandit_jax.types`` under ``jit`` and ``vmap``.

Each policy runs on its family's example contexts (:func:`mobandit_jax.registry.register_family`, ``example``):
two params points (seeds 0 and 1: different means, horizons and budgets) are stacked and run for a few rounds.
The state keeps its structure, shapes and dtypes across updates, ``select`` traces once, and actions are valid
(an arm in range; a slate of k distinct arms in range). Identifiers return an :class:`IdentifyResult` of the
right shapes and, where the family keeps its own spend within the budget, spend at most ``B``. The family's
``recommended`` reads a ``(K,)`` bool mask from how the run ended. No compiled program holds an ``rsqrt``: XLA
rewrites ``a / sqrt(b)`` to ``a * rsqrt(b)``, whose last bits come from the CPU's approximate reciprocal square
root and differ between CPU makers, so a policy that holds one reproduces its numbers on one kind of CPU only.
"""
import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mobandit_jax.metrics  # noqa: F401  (importing fills the registries, whichever test file runs first)
from mobandit_jax.engine import stack_params
from mobandit_jax.registry import FAMILIES, IDENTIFIER, POLICIES, family_of
from mobandit_jax.registry import make_policy as make
from mobandit_jax.types import Final, Identifier, IdentifyResult, Observation, Policy

ROUNDS = 4


def _compiled(fn, *args):
    """``jit(fn)`` compiled for ``args``, checked to hold no ``rsqrt`` (CPU-dependent last bits)."""
    compiled = jax.jit(fn).lower(*args).compile()
    text = compiled.as_text()
    assert " rsqrt(" not in text, "an rsqrt in the compiled program: write sqrt(a / b), not a / sqrt(b)"
    return compiled


def _recommended(family, ctx, result, action, pulls, means):
    """The family's recommended set of one lane, checked to be a (K,) bool mask."""
    rec = np.asarray(family.recommended(Final(result, action, pulls, means), ctx))
    assert rec.shape == (ctx.num_arms,) and rec.dtype == bool
    return rec


@pytest.mark.parametrize("name", sorted(POLICIES))
def test_policy_protocol(name):
    family = family_of(POLICIES[name].family)
    contexts = [family.example(seed) for seed in (0, 1)]
    K, D = contexts[0].num_arms, contexts[0].dim
    built = [make(name, ctx) for ctx in contexts]
    (policy, params_a, key_a), (_, params_b, key_b) = built
    assert key_a == key_b  # both points share one compiled function
    params = stack_params([params_a, params_b])
    lane = lambda tree, i: jax.tree_util.tree_map(lambda x: x[i], tree)  # noqa: E731
    if family.kind == IDENTIFIER:
        assert isinstance(policy, Identifier)
        env_params = stack_params([ctx.instance.params for ctx in contexts])
        keys = jax.random.split(jax.random.PRNGKey(0), 2)
        out = _compiled(jax.vmap(policy.identify), keys, keys, env_params, params)(keys, keys, env_params, params)
        assert out._fields[:len(IdentifyResult._fields)] == IdentifyResult._fields  # pac: PacResult adds epsilon
        chex.assert_shape([out.recommended, out.spent, out.pulls, out.stopped], [(2, K), (2,), (2, K), (2,)])
        chex.assert_type([out.recommended, out.pulls], [bool, jnp.int32])
        if family.budget == "own":
            budgets = [ctx.budget if ctx.budget is not None else np.inf for ctx in contexts]
            assert np.all(np.asarray(out.spent) <= np.asarray(budgets) + 1e-6)
        for i, ctx in enumerate(contexts):
            result = lane(out, i)
            rec = _recommended(family, ctx, result, result.recommended, result.pulls, jnp.zeros((K, D)))
            np.testing.assert_array_equal(rec, np.asarray(result.recommended))
        return
    assert isinstance(policy, Policy)
    k = policy.slate_size
    assert (k > 0) == (contexts[0].slate_size > 0) and k in (0, contexts[0].slate_size)
    state0 = state = jax.vmap(policy.init, axis_size=2)(params)
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    select = _compiled(jax.vmap(policy.select), keys, state, params)  # one program: every round's shapes equal
    shape = (2, k) if k else (2,)
    obs = Observation(jnp.zeros(shape + (D,), jnp.float32), jnp.ones(shape, jnp.float32))
    update = _compiled(jax.vmap(policy.update), state, jnp.zeros(shape, jnp.int32), obs, params)
    rng = np.random.default_rng(3)
    pulls, sums = np.zeros((2, K), int), np.zeros((2, K, D))
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
        reward = rng.uniform(0, 1, shape + (D,))
        obs = Observation(jnp.asarray(reward, jnp.float32), jnp.asarray(rng.uniform(0.3, 1.0, shape), jnp.float32))
        state = update(state, jnp.asarray(action), obs, params)
        chex.assert_trees_all_equal_shapes_and_dtypes(state, state0)
        for i in range(2):
            for arm, r in zip(np.reshape(action[i], -1), np.reshape(reward[i], (-1, D)), strict=False):
                pulls[i, arm] += 1
                sums[i, arm] += r
    for i, ctx in enumerate(contexts):
        means = sums[i] / np.maximum(pulls[i], 1)[:, None]
        rec = _recommended(family, ctx, lane(state, i), jnp.asarray(action[i]), jnp.asarray(pulls[i]),
                           jnp.asarray(means))
        if k:  # the slate family recommends its final slate
            assert sorted(np.flatnonzero(rec)) == sorted(action[i].tolist())
        else:  # the empirical C-optimal set among the pulled arms: brute force over pairs
            W = np.eye(D) if ctx.W is None else np.asarray(ctx.W)
            S = means @ W.T
            want = [pulls[i, a] > 0 and not any(pulls[i, b] > 0 and b != a and np.all(S[b] - S[a] >= 0)
                                                 for b in range(K)) for a in range(K)]
            np.testing.assert_array_equal(rec, want)


def test_every_family_has_an_example():
    assert sorted(FAMILIES) == sorted({e.family for e in POLICIES.values()})
    for family in FAMILIES.values():
        assert family.example is not None, family.name
