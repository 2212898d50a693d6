"""The step-wise forms of the fixed-budget identifiers recommend what their bulk runs recommend on the same pulls."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mobandit_jax as mb
import mobandit_jax.metrics  # noqa: F401  (fills the family registry)
from mobandit_jax.policies.pac_stepwise import pull_sampler
from mobandit_jax.registry import family_of


def _stepwise_loop(step, params, values, budget):
    """Drive ``step`` in plain Python: sweeps of one pull of each arm that ``select`` wants, drawn from the
    per-pull ``values (K, n, d + 1)``; ``short`` at the first sweep whose cost would exceed the budget."""
    K = values.shape[0]
    d = values.shape[2] - 1
    step = step._replace(**{f: jax.jit(getattr(step, f)) for f in ("init", "select", "update", "short", "stopped")})
    state, N, spent, key = step.init(params), np.zeros(K, int), 0.0, jax.random.PRNGKey(0)
    for _ in range(100_000):
        if bool(step.stopped(state, params)):
            break
        need = np.asarray(step.select(key, state, params))
        sweep = need > 0
        rows = values[np.arange(K), np.minimum(N, values.shape[1] - 1)]
        cost = float(np.sum(np.where(sweep, rows[:, d], 0.0), dtype=np.float32))
        if np.float32(spent + cost) > budget:
            state = step.short(state, params)
            continue
        pulls = sweep.astype(np.int32)
        state = step.update(state, jnp.asarray(pulls), jnp.asarray(np.where(sweep[:, None], rows[:, :d], 0.0)),
                            jnp.asarray(np.where(sweep, rows[:, d], 0.0)), params)
        N, spent = N + pulls, np.float32(spent + cost)
    return np.asarray(step.recommend(state, params)), N


@pytest.mark.parametrize("name", ["psi_sr", "uniform_alloc", "copsi", "ege_sh"])
def test_stepwise_matches_bulk(name):
    agree = 0
    for seed in range(2):
        ctx = family_of("identification").example(seed)
        ident, params, _ = mb.make_policy(name, ctx)
        assert ident.stepwise is not None
        key_env, key_pol = jax.random.PRNGKey(seed), jax.random.PRNGKey(100 + seed)
        env_params = ctx.instance.params
        bulk = ident.identify(key_env, key_pol, env_params, params)
        length = int(params.jmax)
        P = ctx.env.prefix_table(key_env, env_params, length)
        tiles = np.asarray(P.levels[0])
        values = tiles.reshape(tiles.shape[0], -1, tiles.shape[-1])
        rec, N = _stepwise_loop(ident.stepwise, params, values, float(params.budget))
        np.testing.assert_array_equal(N, np.asarray(bulk.pulls))
        np.testing.assert_array_equal(rec, np.asarray(bulk.recommended))
        agree += 1
    assert agree == 2


def _round_loop(step, params, sample, key_env, key_pol, env_params, K, cap=100_000):
    """Drive a round-based ``step`` in plain Python: round ``t`` pulls the arms ``select`` names, once each, pull
    ``counts[i]`` of arm ``i`` at round ``t`` (the bulk runs' draws); no budget."""
    jit = {f: jax.jit(getattr(step, f)) for f in ("init", "select", "update", "stopped", "recommend")}
    draw = jax.jit(jax.vmap(lambda i, j, t: sample(key_env, i, j, t, env_params), in_axes=(0, 0, None)))
    state, counts = jit["init"](params), np.zeros(K, np.int32)
    for t in range(cap):
        if bool(jit["stopped"](state, params)):
            break
        pulls = np.asarray(jit["select"](jax.random.fold_in(key_pol, t), state, params))
        y, c = draw(jnp.arange(K), jnp.asarray(counts), t)
        mask = pulls > 0
        state = jit["update"](state, jnp.asarray(pulls), jnp.where(mask[:, None], y, 0.0), jnp.where(mask, c, 0.0),
                              params)
        counts += pulls
    return np.asarray(jit["recommend"](state, params)), counts


@pytest.mark.parametrize("name", ["paveba", "naive_elimination", "ape", "auer",
                                  pytest.param("track_and_stop", marks=pytest.mark.slow)])
def test_round_based_stepwise_matches_bulk(name):
    ctx = family_of("pac").example(0)
    ctx = mb.Context.of(ctx.instance, 20, ctx.W)  # a round cap of 20: both forms stop there, or earlier alike
    options = {"L": 6} if name == "naive_elimination" else {}
    ident, params, _ = mb.make_policy(name, ctx, **options)
    key_env, key_pol = jax.random.PRNGKey(3), jax.random.PRNGKey(4)
    bulk = ident.identify(key_env, key_pol, ctx.instance.params, params)
    stepwise_draws = name in ("ape", "auer", "track_and_stop")  # from the environment's counter stream
    sample = pull_sampler(ctx.env.sample) if stepwise_draws else ctx.env.sample
    rec, counts = _round_loop(ident.stepwise, params, sample, key_env, key_pol, ctx.instance.params, ctx.num_arms)
    np.testing.assert_array_equal(counts, np.asarray(bulk.pulls))
    np.testing.assert_array_equal(rec, np.asarray(bulk.recommended))
