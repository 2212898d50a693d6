"""Sorting by (layer, value, index) on integer keys against numpy's stable lexsort."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mobandit_jax.kernels import order


def _lexsorted(layer, x):
    """Reference: numpy's lexsort per row (last key first), which is stable in the index."""
    arm = np.stack([np.lexsort((row, layer)) for row in x])
    return np.take_along_axis(np.broadcast_to(layer, x.shape), arm, 1), np.take_along_axis(x, arm, 1), arm


def _rows(seed, d, n, levels, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = (rng.integers(-levels, levels + 1, (d, n)) / levels).astype(dtype)  # many ties, signed
    x[0, : n // 3] = -0.0  # -0.0 and 0.0 are equal values: the index decides
    x[1] = rng.standard_normal(n).astype(dtype) * 1e30  # wide range
    layer = rng.integers(0, 4, n).astype(np.int32)
    return layer, x


@pytest.mark.parametrize("seed,n,levels", [(0, 7, 2), (1, 60, 3), (2, 150, 1000)])
def test_order_matches_stable_lexsort(seed, n, levels):
    layer, x = _rows(seed, 3, n, levels)
    got = jax.jit(order.sort_by_layer_value)(jnp.asarray(layer), jnp.asarray(x))
    for g, want in zip(got, _lexsorted(layer, x), strict=False):
        np.testing.assert_array_equal(np.asarray(g), want)


def test_long_rows_take_the_three_operand_sort():
    n = order.PACKED_MAX_N + 10
    layer, x = _rows(3, 2, n, 5)
    got = jax.jit(order.sort_by_layer_value)(jnp.asarray(layer), jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(got[2]), _lexsorted(layer, x)[2])


def test_float64_keys_keep_the_low_bits():
    with jax.enable_x64(True):
        x = np.array([[1.0 + 2e-16, 1.0, 1.0 + 4e-16, -1e-300, -0.0, 1e-300]])  # equal in float32
        layer = np.zeros(6, np.int32)
        arm = np.asarray(jax.jit(order.sort_by_layer_value)(jnp.asarray(layer), jnp.asarray(x))[2])
    np.testing.assert_array_equal(arm, _lexsorted(layer, x)[2])


def test_rank_below_counts_strictly_smaller():
    keys = np.random.default_rng(4).integers(-5, 5, (4, 33)).astype(np.int32)
    want = (keys[:, None, :] < keys[:, :, None]).sum(-1)
    np.testing.assert_array_equal(np.asarray(jax.jit(order.rank_below)(jnp.asarray(keys))), want)


def _positions(x):
    """Reference: each entry's position in its row's stable sort by value."""
    pos = np.empty(x.shape, np.int64)
    for c, row in enumerate(x):
        pos[c, np.argsort(row, kind="stable")] = np.arange(x.shape[1])
    return pos


def test_key_ranks_and_their_refresh_follow_value_then_index():
    layer, x = _rows(5, 3, 40, 3)
    ranks = order.key_ranks(jnp.asarray(x))
    np.testing.assert_array_equal(np.asarray(ranks), _positions(x))
    rng = np.random.default_rng(6)
    for _ in range(15):  # a few columns change at a time; the kept ranks follow without a sort
        arms = rng.choice(40, size=int(rng.integers(1, 7)), replace=False)
        new = x.copy()
        new[:, arms] = (rng.integers(-3, 4, (3, len(arms))) / 3).astype(np.float32)
        new[0, arms[:1]] = -0.0
        ranks = order.refresh_key_ranks(ranks, jnp.asarray(x), jnp.asarray(new), jnp.asarray(arms, jnp.int32))
        x = new
        np.testing.assert_array_equal(np.asarray(ranks), _positions(x))
        got = order.sort_by_layer_value(jnp.asarray(layer), jnp.asarray(x), ranks)
        for g, want in zip(got, _lexsorted(layer, x), strict=False):
            np.testing.assert_array_equal(np.asarray(g), want)


@pytest.mark.parametrize("num_layers", [None, 4, 7])
def test_layer_counts_count_lower_and_equal_layers(num_layers):
    layer, x = _rows(8, 3, 50, 3)  # layers 0 .. 3
    below, size = jax.jit(order.layer_counts, static_argnums=1)(jnp.asarray(layer), num_layers)
    np.testing.assert_array_equal(np.asarray(below), (layer[None, :] < layer[:, None]).sum(1))
    np.testing.assert_array_equal(np.asarray(size), (layer[None, :] == layer[:, None]).sum(1))
    got = order.sort_by_layer_value(jnp.asarray(layer), jnp.asarray(x), below=below)  # the counts replace a ranking
    for g, want in zip(got, _lexsorted(layer, x), strict=False):
        np.testing.assert_array_equal(np.asarray(g), want)
