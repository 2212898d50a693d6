"""A seed's run of Auer et al. and APE does not depend on its batch (issue 55's rule): the same seeds alone, mapped
by ``vmap``, in a batch of their own, inside a larger batch among other seeds and through the seed queue with fewer
lanes than seeds give each seed the same pulls, cost, stop and recommendation, bit for bit, on Bernoulli and
Gaussian arms with two and three objectives; and the counter stream gives each pull the same reward whatever the
batch it is drawn in."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import mobandit_jax.policies  # noqa: F401  (importing fills the policy registry)
from mobandit_jax import engine
from mobandit_jax.problems.stochastic import make_stochastic
from mobandit_jax.registry import make_policy
from mobandit_jax.types import Context

K, SEEDS, OTHERS = 10, 12, 28


def _means(d: int):
    """``(K, d)``: four arms on a concave front and six below it, gaps of about 0.1 to 0.3 (a run of a few hundred to
    a few thousand pulls at delta = 0.1)."""
    angles = np.linspace(0.15, np.pi / 2 - 0.15, 4)
    front = np.stack([np.cos(angles), np.sin(angles)], 1) * 0.7 + 0.15
    if d == 3:
        front = np.concatenate([front, np.linspace(0.75, 0.45, 4)[:, None]], 1)
    below = np.clip(front[[0, 1, 2, 3, 1, 2]] - np.array([0.15, 0.2, 0.25, 0.3, 0.4, 0.35])[:, None], 0.05, 0.95)
    return np.concatenate([front, below])


def _streams(seeds):
    keys = engine.seed_keys(0, np.asarray(seeds))
    return jax.vmap(lambda k: jax.random.fold_in(k, 0))(keys), jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys)


def _setup(method: str, noise: str, d: int):
    inst = make_stochastic(_means(d), noise=noise, sigma=0.5, clip=noise != "gaussian")
    policy, params, _ = make_policy(method, Context.of(inst, 100_000), delta=0.1)
    return inst, policy, params


def _fields(result, rows=None):
    """The seeds' runs as numpy arrays (``rows`` of them; None: all): pulls, cost, stop and recommendation."""
    out = {f: np.asarray(getattr(result, f)) for f in ("pulls", "spent", "stopped", "recommended")}
    return out if rows is None else {f: v[rows] for f, v in out.items()}


@pytest.mark.parametrize("noise", ["bernoulli", "gaussian"])
@pytest.mark.parametrize("d", [2, pytest.param(3, marks=pytest.mark.slow)])  # d = 3: two to five minutes each
@pytest.mark.parametrize("method", ["auer", "ape"])
def test_a_seeds_run_is_the_same_in_every_batch(method, d, noise):
    inst, policy, params = _setup(method, noise, d)
    ours = np.arange(SEEDS)
    # our seeds scattered among others: a batch of 40 whose lanes take them at other times and places
    mixed = np.concatenate([np.arange(100, 100 + OTHERS), ours])
    np.random.default_rng(d).shuffle(mixed)
    where = np.array([np.flatnonzero(mixed == s)[0] for s in ours])

    def in_turn(seeds, lanes):
        env, pol = _streams(seeds)
        env_params = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (len(seeds),) + jnp.shape(x)), inst.params)
        return jax.jit(policy.identify_in_turn, static_argnums=4)(env, pol, env_params, params, lanes)

    one = jax.jit(policy.identify)
    env, pol = _streams(ours)
    alone = [_fields(one(env[s], pol[s], inst.params, params)) for s in range(SEEDS)]
    runs = {
        "vmap": _fields(jax.jit(jax.vmap(policy.identify, in_axes=(0, 0, None, None)))(env, pol, inst.params, params)),
        "batch of 12 on 12 lanes": _fields(in_turn(ours, SEEDS)),
        "batch of 12 on 5 lanes": _fields(in_turn(ours, 5)),
        "batch of 40 on 7 lanes": _fields(in_turn(mixed, 7), where),
    }
    assert np.mean([a["stopped"] for a in alone]) > 0.9  # the runs end by the rule, not the round cap
    assert len({int(a["pulls"].sum()) for a in alone}) > 1  # the seeds' runs differ
    for name, run in runs.items():
        for s in range(SEEDS):
            for field, value in alone[s].items():
                np.testing.assert_array_equal(run[field][s], value, err_msg=f"{name}, seed {s}, {field}")


@pytest.mark.parametrize("noise", ["bernoulli", "gaussian"])
@pytest.mark.parametrize("d", [2, 3])
def test_counter_stream_draws_a_pull_the_same_in_any_batch(d, noise):
    """Each pull's reward drawn for 1, 12 or 40 seeds at once (lanes last) equals the one-pull sampler's."""
    inst = make_stochastic(_means(d), noise=noise, sigma=0.5, clip=noise != "gaussian")
    sample = inst.env.sample
    rng = np.random.default_rng(1)
    for lanes in (1, 12, 40):
        env, _ = _streams(np.arange(lanes))
        arms = rng.integers(0, K, (6, lanes))
        index = rng.integers(0, 10_000, (6, lanes))
        env_params = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (lanes,) + jnp.shape(x)), inst.params)
        y, _ = jax.jit(sample.counter_lanes)(env, jnp.asarray(arms), jnp.asarray(index), env_params)
        one = jax.jit(sample.counter_sampler)
        for n in range(arms.shape[0]):
            for lane in range(lanes):
                expected = one(env[lane], arms[n, lane], index[n, lane], 0, inst.params)[0]
                np.testing.assert_array_equal(np.asarray(y[n, :, lane]), np.asarray(expected))
