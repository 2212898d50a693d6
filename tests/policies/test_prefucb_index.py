"""PrefUCB's stored KL-UCB indices along a trajectory against a float64 root finder (scipy brentq).

The policy keeps every arm's index of the next round and refines the unpulled arms' from their last
value (PDMOB, Eq. 3 with beta_t = log t); here they are checked after every update against fresh
float64 roots of the same ``min_k S_k(r_hat(a))`` and level ``log(t + 1) / n(a)``.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _kl_reference import ref_upper

from mobandit_jax.policies.preference import REFINE_MIN_ARMS, cone_params, prefucb
from mobandit_jax.types import Observation

EXTREME = [[0.999, 0.998, 0.9995], [0.001, 0.002, 0.0], [1.0, 1.0, 1.0], [0.5, 0.5, 0.5]]


@pytest.mark.parametrize("num_arms", [REFINE_MIN_ARMS - 4, REFINE_MIN_ARMS, 13])
def test_stored_indices_are_the_klucb_roots_of_the_next_round(num_arms):
    rng = np.random.default_rng(num_arms)
    means = np.concatenate([EXTREME, rng.uniform(0, 1, (max(num_arms - 4, 0), 3))])[:num_arms]
    params = cone_params(np.eye(3))
    policy = prefucb(num_arms, 3)
    update = jax.jit(policy.update)
    state = policy.init(params)
    worst = 0.0
    for t in range(400):  # forced rounds, then pulls piled on three arms so the others age
        arm = t if t < num_arms else int(rng.integers(0, 3) if rng.random() < 0.9 else rng.integers(num_arms))
        y = (rng.random(3) < means[arm]).astype(np.float32) if rng.random() < 0.5 else means[arm].astype(np.float32)
        state = update(state, jnp.int32(arm), Observation(jnp.asarray(y), jnp.float32(0)), params)
        if t >= num_arms - 1 and (t < 60 or t % 11 == 0):
            low, n = np.asarray(state.low), np.asarray(state.counts.counts)
            level = np.log(np.float32(t + 2)) / n  # rounds played t + 1, next round t + 2
            ref = np.array([ref_upper(float(p), float(v)) for p, v in zip(low, level, strict=False)])
            worst = max(worst, float(np.abs(np.asarray(state.index, np.float64) - ref).max()))
    assert worst < 1.5e-7
