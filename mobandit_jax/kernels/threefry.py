"""Threefry-2x32 (Salmon, Moraes, Dror & Shaw, SC 2011) as straight-line array code, and random numbers drawn by
counter from it.

:func:`threefry2x32` is JAX's hash (the same bits as ``jax.extend.random.threefry_2x32``) written as 20 rounds of
elementwise integer operations, so that XLA fuses it with what reads it into one vectorized loop (JAX lowers it on
the CPU as a rolled loop of five steps, a loop of small kernels per call). Hashing a counter pair under a key gives
random words that are a pure function of ``(key, counter)``, whatever the batch they are computed in, as Random123's
counter-based generators are used; :func:`unit_uniform` turns such a word into a uniform number in ``[0, 1)``.

References:
- J. K. Salmon, M. A. Moraes, R. O. Dror and D. E. Shaw (2011), Parallel Random Numbers: As Easy as 1, 2, 3,
  SC 2011, https://doi.org/10.1145/2063384.2063405
"""
from __future__ import annotations

import numpy as np

# Threefry-2x32 rotation constants (two alternating groups of four rounds) and key-schedule parity.
ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
PARITY = np.uint32(0x1BD11BDA)
UNIFORM_BITS = 24  # bits of a word a uniform number keeps: exact in float32 and float64


def _rotate_left(x, r: int):
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def threefry2x32(key1, key2, x1, x2):
    """Threefry-2x32 with 20 rounds: ``(key1, key2)`` keys the hash of the counter pair ``(x1, x2)``.

    Args:
      key1: uint32 first key word (array or numpy scalar; broadcast with the others).
      key2: uint32 second key word.
      x1: uint32 first counter word.
      x2: uint32 second counter word.

    Returns:
      ``(y1, y2)``: the two uint32 words of the hash, broadcast shape of the arguments.
    """
    keys = (key1, key2, key1 ^ key2 ^ PARITY)
    x1, x2 = x1 + keys[0], x2 + keys[1]
    for block in range(5):
        for r in ROTATIONS[block % 2]:
            x1 = x1 + x2
            x2 = _rotate_left(x2, r) ^ x1
        x1 = x1 + keys[(block + 1) % 3]
        x2 = x2 + keys[(block + 2) % 3] + np.uint32(block + 1)
    return x1, x2


def unit_uniform(word, dtype):
    """A uniform number in ``[0, 1)`` on the grid of ``2**-24`` from the top 24 bits of a uint32 ``word``.

    Args:
      word: uint32 array.
      dtype: the float dtype of the result (24 bits are exact in float32 and float64).

    Returns:
      ``(word >> 8) * 2**-24`` in ``dtype``, shaped like ``word``.
    """
    return (word >> np.uint32(32 - UNIFORM_BITS)).astype(dtype) * np.asarray(2.0 ** -UNIFORM_BITS, dtype)
