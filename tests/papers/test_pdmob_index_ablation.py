"""PDMOB W = I ablation: the ``index`` options of PrefUCB and ParetoUCB against numpy references."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mobandit_jax import registry
from mobandit_jax.kernels import klucb_upper, normalized_projections
from mobandit_jax.kernels.counts import CountState
from mobandit_jax.policies.preference import PrefUCBState
from mobandit_jax.types import Context

# 4 arms, 2 objectives, W = I: arm 0 (0.9, 0.1) and arm 1 (0.1, 0.9) are far apart, arm 2 is a
# well-sampled middling arm, arm 3 is pulled less (a wider radius)
MEANS = np.array([[0.9, 0.1], [0.1, 0.9], [0.5, 0.45], [0.3, 0.2]])
COUNTS = np.array([50.0, 40.0, 400.0, 30.0])
T = 493  # rounds played


def _state(name, params):
    counts = CountState(jnp.int32(T), jnp.asarray(COUNTS, jnp.float32),
                        jnp.asarray(MEANS * COUNTS[:, None], jnp.float32))
    if name != "prefucb":
        return counts
    # PrefUCB also keeps min_k S_k of each arm's empirical mean and the next round's KL-UCB index
    low = jnp.min(normalized_projections(jnp.asarray(MEANS, jnp.float32), params.W), axis=1)
    return PrefUCBState(counts, low, klucb_upper(low, jnp.log(jnp.float32(T + 1)) / counts.counts))


def _kl(p, q):
    p, q = min(max(p, 1e-12), 1 - 1e-12), min(max(q, 1e-12), 1 - 1e-12)
    return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


def _klucb(p, level):
    lo, hi = p, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _kl(p, mid) <= level else (lo, mid)
    return lo


def _radius(mu, n, t, d):
    front = sum(not any(np.all(mu[j] >= mu[i]) and np.any(mu[j] > mu[i]) for j in range(len(mu)))
                for i in range(len(mu)))
    return np.sqrt(2 * np.log(t * (d * front) ** 0.25) / n)


def _front(U):
    return {i for i in range(len(U)) if not any(np.all(U[j] >= U[i]) and np.any(U[j] > U[i]) for j in range(len(U)))}


def _picks(name, index):
    ctx = Context.make(num_arms=4, dim=2, horizon=1000, means=MEANS, W=np.eye(2))
    pol, params, _ = registry.make_policy(name, ctx, index=index)
    keys = jax.random.split(jax.random.PRNGKey(0), 400)
    return set(np.asarray(jax.vmap(lambda k: pol.select(k, _state(name, params), params))(keys)).tolist())


def test_prefucb_with_pareto_ucb1_radius_plays_the_best_min_plus_radius():
    U = MEANS.min(1) + _radius(MEANS, COUNTS, T + 1, 2)
    assert _picks("prefucb", "pareto_ucb1") == {int(np.argmax(U))}
    U_kl = [_klucb(m, math.log(T + 1) / n) for m, n in zip(MEANS.min(1), COUNTS, strict=False)]
    assert _picks("prefucb", "klucb") == {int(np.argmax(U_kl))}
    assert np.argmax(U) != np.argmax(U_kl)  # the case separates the two indices


def test_pareto_ucb_with_klucb_bounds_plays_uniformly_on_the_klucb_front():
    U = np.array([[_klucb(m, math.log(T + 1) / n) for m in row] for row, n in zip(MEANS, COUNTS, strict=False)])
    assert _picks("preference/pareto_ucb", "klucb") == _front(U)
    H = MEANS + _radius(MEANS, COUNTS, T + 1, 2)[:, None]
    assert _picks("preference/pareto_ucb", "pareto_ucb1") == _front(H)
    assert _front(U) != _front(H)


def test_unknown_index_is_named():
    ctx = Context.make(num_arms=4, dim=2, horizon=10, means=MEANS, W=np.eye(2))
    with pytest.raises(ValueError, match=r"prefucb: option index must be one of \['klucb', 'pareto_ucb1'\], got 'ucb'"):
        registry.make_policy("prefucb", ctx, index="ucb")
