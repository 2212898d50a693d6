"""The reference a study's state is checked against: its told events replayed one by one, in the order written, through
the policy's own ``init`` and ``update`` (no snapshot, no batching, no constant liar)."""
import json

import jax
import jax.numpy as jnp
import numpy as np

from mobandit_jax.types import Observation


def assert_serial_replay(study):
    """Assert that an online study's policy state equals the serial replay of its told events (single-arm tickets,
    no costs), leaf by leaf and bit for bit."""
    built = study._built
    update = jax.jit(built.policy.update)
    state = built.policy.init(built.params)
    dtype = study._driver.dtype  # the dtype the study feeds its policy
    for e in study._store.events():
        if e.kind == "tell":
            reward = jnp.asarray(built.to_policy(json.loads(e.vals)), dtype)
            state = update(state, jnp.int32(e.arm), Observation(reward, jnp.asarray(0.0, dtype)), built.params)
    for a, b in zip(jax.tree_util.tree_leaves(state), jax.tree_util.tree_leaves(study._driver.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
