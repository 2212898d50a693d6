"""Prefix sums read one count at a time: the tiled summation order, against a numpy loop and XLA's cumsum."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mobandit_jax.kernels.prefix import dense, prefix_at, prefix_sums, tiled_length

LENGTHS = [1, 2, 15, 16, 17, 31, 32, 33, 255, 256, 257, 300, 4097, 8301]


def _tiled_cumsum_loop(x):
    """Inclusive running sums of a 1-D float array in the tiled order, one scalar addition at a time.

    Tiles of 16 are summed left to right; each tile adds the exclusive prefix of the tile totals,
    taken the same way when there are more than 16 tiles (a sequential sum otherwise).
    """
    x = [x.dtype.type(v) for v in x]
    zero = type(x[0])(0)
    if len(x) <= 16:
        out, acc = [], None
        for v in x:
            acc = v if acc is None else acc + v
            out.append(acc)
        return out
    tiles = [x[i:i + 16] + [zero] * (16 - len(x[i:i + 16])) for i in range(0, len(x), 16)]
    within = [_tiled_cumsum_loop(np.array(t)) for t in tiles]
    totals = np.array([w[-1] for w in within])
    if len(tiles) <= 16:
        before, acc = [], zero
        for v in totals:
            before.append(acc)
            acc = acc + v
    else:
        inclusive = _tiled_cumsum_loop(totals)
        before = [zero] + inclusive[:-1]
    return [before[t] + w for t, tile in enumerate(within) for w in tile][:len(x)]


def _values(rng, n, dtype=np.float32):
    return (rng.random((3, n, 2)) * rng.integers(1, 1000, (3, n, 2))).astype(dtype)


@pytest.mark.parametrize("n", LENGTHS)
def test_every_prefix_is_the_tiled_loop_and_xla_cumsum_bit_for_bit(n):
    rng = np.random.default_rng(n)
    x = _values(rng, n)
    table = np.asarray(jax.jit(dense, static_argnums=1)(prefix_sums(jnp.asarray(x)), n))
    loop = np.array([[_tiled_cumsum_loop(x[i, :, c]) for c in range(2)] for i in range(3)]).transpose(0, 2, 1)
    np.testing.assert_array_equal(table[:, 0], 0.0)
    np.testing.assert_array_equal(table[:, 1:], loop)
    if jax.default_backend() == "cpu":
        np.testing.assert_array_equal(table[:, 1:], np.asarray(jnp.cumsum(jnp.asarray(x), axis=1)))
    np.testing.assert_allclose(table[:, 1:], np.cumsum(x.astype(np.float64), axis=1), rtol=1e-5)
    if n > 300:  # not a sequential sum: the order is the tiled one
        assert not np.array_equal(table[:, 1:], np.cumsum(x, axis=1))


def test_lookups_at_random_counts_per_arm():
    rng = np.random.default_rng(1)
    n = 1000
    x = _values(rng, tiled_length(n))  # pulls drawn to the end of the last tile; only the first n are read
    P = jax.jit(prefix_sums)(jnp.asarray(x))
    counts = jnp.asarray(rng.integers(0, n + 1, (64, 3)))
    both = np.asarray(jax.jit(jax.vmap(lambda c: prefix_at(P, c)))(counts))
    table = np.asarray(jnp.concatenate([jnp.zeros((3, 1, 2)), jnp.cumsum(jnp.asarray(x[:, :n]), axis=1)], 1))
    want = table[np.arange(3)[None, :], np.asarray(counts)]
    assert both.shape == (64, 3, 2)
    if jax.default_backend() == "cpu":
        np.testing.assert_array_equal(both, want)
    np.testing.assert_allclose(both, want, rtol=1e-6)


def test_float64_sums_keep_float64():
    with jax.enable_x64(True):
        rng = np.random.default_rng(2)
        x = _values(rng, 700, np.float64)
        table = np.asarray(dense(prefix_sums(jnp.asarray(x)), 700))
        assert table.dtype == np.float64
        loop = np.array([[_tiled_cumsum_loop(x[i, :, c]) for c in range(2)] for i in range(3)]).transpose(0, 2, 1)
        np.testing.assert_array_equal(table[:, 1:], loop)
