"""Random choices against exact frequencies: uniform within a mask, argmax with random ties."""
import jax
import jax.numpy as jnp
import numpy as np

from mobandit_jax.kernels import argmax_random_tie, uniform_from_mask

KEYS = jax.random.split(jax.random.PRNGKey(0), 60_000)


def _frequencies(fn, x):
    picks = np.asarray(jax.jit(jax.vmap(fn, in_axes=(0, None)))(KEYS, jnp.asarray(x)))
    return np.bincount(picks, minlength=len(x)) / len(KEYS)


def test_uniform_over_true_entries_only():
    mask = np.array([False, True, False, True, True, False, False, True, True])
    freq = _frequencies(uniform_from_mask, mask)
    assert np.all(freq[~mask] == 0)
    # 5 candidates: each 0.2; binomial std at n = 60,000 is 0.0016, so 5 std is 0.008.
    np.testing.assert_allclose(freq[mask], 0.2, atol=0.008)


def test_single_candidate_and_empty_mask():
    one = np.zeros(7, bool)
    one[4] = True
    assert np.all(_frequencies(uniform_from_mask, one)[4] == 1.0)
    assert _frequencies(uniform_from_mask, np.zeros(7, bool))[0] == 1.0  # documented: index 0


def test_argmax_ties_split_evenly():
    values = np.array([0.3, 0.9, 0.1, 0.9, 0.5, 0.9], np.float32)
    freq = _frequencies(argmax_random_tie, values)
    np.testing.assert_allclose(freq[[1, 3, 5]], 1 / 3, atol=0.01)
    assert freq[[0, 2, 4]].sum() == 0
