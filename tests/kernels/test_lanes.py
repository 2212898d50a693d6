"""kernels.lanes.packed_indices against a plain numpy listing of a mask's True entries."""
import jax
import numpy as np
import pytest

from mobandit_jax.kernels.lanes import packed_indices


@pytest.mark.parametrize("pad", [0, 3, 16])
def test_packed_indices_lists_the_true_entries_first_then_out_of_range(pad):
    rng = np.random.default_rng(pad)
    packed = jax.jit(packed_indices, static_argnums=1)
    for n, p in [(1, 0.5), (7, 0.0), (7, 1.0), (40, 0.3), (40, 0.9)]:
        mask = rng.random(n) < p
        want = np.full(n + pad, n, np.int32)
        want[:mask.sum()] = np.flatnonzero(mask)
        np.testing.assert_array_equal(np.asarray(packed(mask, pad)), want)


def test_packed_indices_batched_per_lane():
    masks = np.array([[True, False, True, False], [False, False, False, True], [False] * 4])
    got = np.asarray(jax.vmap(lambda m: packed_indices(m, 2))(masks))
    np.testing.assert_array_equal(got, [[0, 2, 4, 4, 4, 4], [3, 4, 4, 4, 4, 4], [4, 4, 4, 4, 4, 4]])
